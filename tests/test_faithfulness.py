"""Faithfulness tests of attention (attention/explain.py): running a pooling classifier with
other weights, the perturbations, adversarial weights, input × gradient."""

import math

import pytest
import torch
import torch.nn.functional as F

from attention import explain as fa
from attention.data import Vocab
from attention.models import AttentionPooling, AttentionPoolingConfig
from attention.tasks import ClassificationData, Example


def model_and_batch(device, pool="scalar"):
    torch.manual_seed(0)
    model = (
        AttentionPooling(
            AttentionPoolingConfig(20, 2, embed_dim=8, hidden_dim=6, attention_dim=5, mlp_dim=8, pool=pool)
        )
        .to(device)
        .eval()
    )
    tokens = torch.randint(1, 20, (3, 6), device=device)
    lengths = torch.tensor([6, 3, 1], device=device)
    tokens = tokens.masked_fill(torch.arange(6, device=device)[None] >= lengths[:, None], 0)
    return model, tokens, lengths


@pytest.mark.parametrize("pool", ["scalar", "features"])
def test_own_weights_give_the_models_own_logits(device, pool):
    model, tokens, lengths = model_and_batch(device, pool)
    out = model(tokens, lengths)
    torch.testing.assert_close(fa.logits_with_weights(model, tokens, lengths, out.attention["features"]), out.logits)


def test_weights_are_checked(device):
    model, tokens, lengths = model_and_batch(device)
    good = fa.uniform(torch.zeros(3, 6, 1, device=device), lengths)
    with pytest.raises(ValueError, match=r"weights must be \(B, T, F\)"):
        fa.logits_with_weights(model, tokens, lengths, good[:, :5])
    bad = good.clone()
    bad[1, 4] = 0.1
    with pytest.raises(ValueError, match="zero on padding"):
        fa.logits_with_weights(model, tokens, lengths, bad)
    with pytest.raises(ValueError, match="sum to 1"):
        fa.logits_with_weights(model, tokens, lengths, good * 2)


def test_perturbations_keep_distributions_over_the_real_words(device):
    _, _, lengths = model_and_batch(device)
    w = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.0, 0.0]], device=device)[:, :, None]  # (1, T, 1)
    n = torch.tensor([4], device=device)
    p = fa.permuted(w, n, torch.Generator().manual_seed(1))
    assert sorted(p[0, :4, 0].tolist()) == pytest.approx([0.1, 0.2, 0.3, 0.4]) and (p[0, 4:] == 0).all()
    torch.testing.assert_close(fa.uniform(w, n)[0, :, 0], torch.tensor([0.25] * 4 + [0, 0], device=device))
    torch.testing.assert_close(
        fa.without_top(w, n)[0, :, 0], torch.tensor([1 / 6, 2 / 6, 3 / 6, 0, 0, 0], device=device)
    )
    one = torch.tensor([[1.0, 0.0]], device=device)[:, :, None]
    torch.testing.assert_close(fa.without_top(one, torch.tensor([1], device=device)), one)  # nothing else to read


def test_distances_by_hand():
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert fa.tvd(p, q).item() == 1.0 and fa.tvd(p, p).item() == 0.0
    assert fa.jsd(p, q).item() == pytest.approx(math.log(2)) and fa.jsd(p, p).item() == pytest.approx(0.0)


def test_adversarial_weights_move_far_but_keep_the_output(device):
    model, tokens, lengths = model_and_batch(device)
    with torch.no_grad():
        out = model(tokens, lengths)
    w = out.attention["features"]
    adv = fa.adversarial(model, tokens, lengths, w, eps=0.02, steps=60)
    real = torch.arange(6, device=device)[None, :, None] < lengths[:, None, None]
    assert (adv.masked_select(~real.expand_as(adv)) == 0).all()
    torch.testing.assert_close(adv.sum(1), torch.ones(3, 1, device=device))
    with torch.no_grad():
        moved = fa.tvd(F.softmax(fa.logits_with_weights(model, tokens, lengths, adv), -1), F.softmax(out.logits, -1))
    assert (moved <= 0.02 + 1e-6).all()
    assert fa.jsd(adv, w, dim=1).mean() > 0.05  # it found something different
    assert fa.jsd(adv[2:], w[2:], dim=1).item() == pytest.approx(0.0, abs=1e-6)  # one word: nothing to move


def test_input_x_gradient_by_hand(device):
    model, tokens, lengths = model_and_batch(device)
    attribution = fa.input_x_gradient(model, tokens, lengths)
    assert attribution.shape == (3, 6) and (attribution[1, 3:] == 0).all() and (attribution >= 0).all()
    # the same for sentence 0 with autograd directly on its embeddings
    x = model.encoder.embed(tokens[:1]).detach().requires_grad_(True)
    states, _ = model.encoder.rnn(x)
    s, _ = model.attention(states)
    z = model.classify(s)[0]
    z[z.argmax()].backward()
    torch.testing.assert_close(attribution[0], (x * x.grad).sum(-1).abs()[0])
    agree = fa.attribution_agreement(torch.rand(3, 6, 1, device=device), attribution, lengths)
    assert len(agree) == 3 and agree[2] is None and all(-1 <= r <= 1 for r in agree[:2])


def test_perturbation_report_on_a_tiny_set():
    words = ["good", "bad", "film", "the"]
    examples = [Example(tuple(words[(i + j) % 4] for j in range(2 + i % 3)), i % 2) for i in range(12)]
    data = ClassificationData(
        "tiny", examples, examples, examples, Vocab.build([e.tokens for e in examples]), ["a", "b"]
    )
    torch.manual_seed(0)
    model = AttentionPooling(
        AttentionPoolingConfig(len(data.vocab), 2, embed_dim=8, hidden_dim=6, attention_dim=5, mlp_dim=8, pool="scalar")
    )
    report = fa.perturbation_report(model, data, examples, batch_size=5)
    assert report["n"] == 12 and set(report) >= {"permuted", "uniform", "without top", "adversarial"}
    assert all(0 <= report[k]["flip_rate"] <= 1 and 0 <= report[k]["tvd"] <= 1 for k in ("permuted", "uniform"))
    assert report["adversarial"]["tvd"] <= report["eps"] + 1e-6 and 0 <= report["adversarial"]["jsd"] <= math.log(2)
    assert -1 <= report["attention_vs_gradient"]["spearman"] <= 1


def test_run_faithfulness_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    from attention import results
    from attention.studies import faithfulness as evaluation
    from attention.studies.base import run_study, study_status
    from attention.tasks import sentiment_data

    full = sentiment_data("vader")
    small = type(full)(full.name, full.train[:60], full.valid[:20], full.test[:20], full.vocab, full.labels, full.seed)
    monkeypatch.setattr(evaluation, "sentiment_data", lambda *a, **k: small)
    study = evaluation.STUDY.with_recipe(seeds=[0], max_epochs=1, hidden_dim=8, embed_dim=8, attention_dim=8)
    assert study_status(study, tmp_path) == {"done": [], "missing": ["scalar/seed0", "features/seed0"]}
    assert run_study(study, tmp_path, only=["features/*"]) is None  # one piece of two: no record yet
    assert study_status(study, tmp_path)["done"] == ["features/seed0"]
    record = run_study(study, tmp_path)
    cell = record["metrics"]["summary"]["features"]
    assert set(cell) >= {"permuted", "uniform", "without top", "adversarial", "attention_vs_gradient", "accuracy"}
    assert cell["adversarial"]["tvd"]["mean"] <= evaluation.FAITHFULNESS["eps"] + 1e-6
    assert record["metrics"]["data"] == {"name": small.name, "train": 60, "valid": 20, "test": 20}
    assert results.load_result("faithfulness", tmp_path)["command"] == "python -m attention faithfulness"
    assert "measurements are not in it" in record["notes"]
    # seed 0's scalar classifier is kept under its old name (chapter 10's notebook loads it); the other is not
    assert results.model_path("faithfulness", "scalar", tmp_path).exists()
    assert not results.model_path("faithfulness", "features", tmp_path).exists()
    assert study_status(study, tmp_path)["missing"] == []


def test_the_recorded_run_regenerates_from_its_rows_alone(tmp_path):
    """The record's metrics, rebuilt from its own rows (no partial file, nothing trained), are the
    recorded ones: the study's summary is the one that wrote it."""
    import json
    import shutil

    from attention import results
    from attention.studies import faithfulness as evaluation
    from attention.studies.base import run_study, study_status

    recorded = results.load_result("faithfulness")
    shutil.copy(results.RESULTS_DIR / "faithfulness.json", tmp_path)
    assert study_status(evaluation.STUDY, tmp_path) == {
        "done": [p.key for p in evaluation.STUDY.pieces(evaluation.FAITHFULNESS)],
        "missing": [],
    }
    again = run_study(evaluation.STUDY, tmp_path, write=False)
    assert again["recipe"] == recorded["recipe"] == json.loads(json.dumps(evaluation.FAITHFULNESS))
    assert again["metrics"] == recorded["metrics"]
    assert (again["wall_seconds"], again["notes"], again["command"]) == (
        recorded["wall_seconds"],
        recorded["notes"],
        recorded["command"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["faithfulness.json"]  # nothing written


def test_the_decoders_hook_keeps_its_own_decoding_and_the_transforms_matter(monkeypatch):
    from attention import experiments as ex
    from attention.data import collate
    from attention.models import decoding

    dates = ex.dates_data(n=300, seed=0)
    torch.manual_seed(0)
    model = ex.build_model(dates, attention="additive", embed_dim=16, hidden_dim=16, dropout=0.0)
    ex.fit(model, dates, epochs=2, batch_size=32, lr=3e-3, progress=False)
    model.eval()
    batch = collate(list(dates.test), dates.src_vocab, dates.tgt_vocab)
    own = decoding.greedy(model, batch.src, batch.src_lengths, max_len=40, weights_hook=lambda w, t: w)
    reference = model.greedy(batch.src, batch.src_lengths, max_len=40)
    assert torch.equal(own.tokens, reference.tokens)  # the same tokens as Seq2Seq.step gives
    torch.testing.assert_close(own.attention, reference.attention, atol=1e-6, rtol=0)
    monkeypatch.setitem(fa.TRANSFORMS, "identity", lambda w, n, g: w)
    report = fa.decoder_report(model, dates)
    assert report["n"] == len(dates.test) and report["own"]["changed"] == 0.0
    assert report["identity"] == report["own"]  # the hook, left alone, is the model's own decoding
    assert set(report) >= set(fa.TRANSFORMS) and all(0 <= report[k]["changed"] <= 1 for k in fa.TRANSFORMS)
    w = torch.tensor([[0.7, 0.2, 0.1, 0.0]])
    n = torch.tensor([3])
    torch.testing.assert_close(fa.TRANSFORMS["uniform"](w, n, None), torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0]]))
    torch.testing.assert_close(fa.TRANSFORMS["without top"](w, n, None), torch.tensor([[0.0, 2 / 3, 1 / 3, 0.0]]))
