"""Multi-dimensional (feature-wise) attention (chapter 4): the layer, the sentence classifier that
pools with it, and the recorded comparison with scalar attention and mean pooling."""

import json
import shutil

import pytest
import torch

from attention import experiments as ex
from attention import results
from attention.data import Vocab
from attention.layers import MultiDimensionalAttention
from attention.models import AttentionPooling, AttentionPoolingConfig, build, count_parameters, model_name
from attention.studies import multidim
from attention.studies.base import run_study, study_status
from attention.studies.intra import build_intra, match_hidden, matched_hidden
from attention.tasks import ClassificationData, Example, sentiment_data


def padded(device, B=3, T=6, E=5):
    x = torch.randn(B, T, E, device=device)
    lengths = torch.tensor([T, 2, 4][:B], device=device)
    padding = torch.arange(T, device=device)[None] >= lengths[:, None]  # (B, T) True = padding
    return x, lengths, padding


@pytest.mark.parametrize("features", [True, False], ids=["features", "scalar"])
def test_weights_sum_to_one_over_positions_per_feature_and_skip_padding(device, features):
    x, lengths, padding = padded(device)
    layer = MultiDimensionalAttention(5, 7, features=features).to(device)
    s, P = layer(x, key_padding_mask=padding)
    assert s.shape == (3, 5) and P.shape == (3, 6, 5 if features else 1)
    torch.testing.assert_close(P.sum(1), torch.ones(3, P.shape[-1], device=device))  # every feature: a distribution
    assert (P.masked_select(padding[:, :, None].expand_as(P)) == 0).all()  # padding: exactly zero
    torch.testing.assert_close(s, (P * x).sum(1))
    # padding does not change anything: the same sentence cut to its length gives the same summary
    s1, _ = layer(x[1:2, :2])
    torch.testing.assert_close(s1, s[1:2])


def test_features_really_attend_separately(device):
    layer = MultiDimensionalAttention(4, 6).to(device)
    x, _, padding = padded(device, E=4)
    _, P = layer(x, key_padding_mask=padding)
    assert not torch.allclose(P[0, :, 0], P[0, :, 1])  # untied features: different distributions


def test_tied_features_reduce_to_scalar_attention(device):
    """With every row of W₂ (and every entry of b₂) equal, all features share one score: the layer
    is scalar attention with that row."""
    scalar = MultiDimensionalAttention(5, 7, features=False).to(device)
    tied = MultiDimensionalAttention(5, 7, features=True).to(device)
    with torch.no_grad():
        tied.hidden.load_state_dict(scalar.hidden.state_dict())
        tied.out.weight.copy_(scalar.out.weight.expand(5, -1))  # (E, Da): one row, repeated
        tied.out.bias.copy_(scalar.out.bias.expand(5))
    x, _, padding = padded(device)
    s_scalar, p_scalar = scalar(x, key_padding_mask=padding)
    s_tied, p_tied = tied(x, key_padding_mask=padding)
    torch.testing.assert_close(s_tied, s_scalar)
    torch.testing.assert_close(p_tied, p_scalar.expand_as(p_tied))


def test_a_sequence_with_no_real_position_gets_zeros_not_nan(device):
    layer = MultiDimensionalAttention(3).to(device)
    x = torch.randn(2, 4, 3, device=device, requires_grad=True)
    padding = torch.tensor([[True] * 4, [False, False, True, True]], device=device)
    s, P = layer(x, key_padding_mask=padding)
    assert (s[0] == 0).all() and (P[0] == 0).all() and torch.isfinite(s).all()
    s.sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[0] == 0).all()


def test_bad_input_is_refused_with_the_shapes():
    layer = MultiDimensionalAttention(5)
    with pytest.raises(ValueError, match=r"expects x \(B, T, E=5\); got \(2, 3, 4\)"):
        layer(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, S\) = \(2, 3\), got \(2, 4\)"):
        layer(torch.randn(2, 3, 5), key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="dim >= 1"):
        MultiDimensionalAttention(0)


def test_attention_pooling_model_shapes_masks_and_config(device):
    model = AttentionPooling(AttentionPoolingConfig(20, 3, embed_dim=8, hidden_dim=6, attention_dim=5, mlp_dim=8)).to(
        device
    )
    assert model_name(model) == "attention-pooling"
    tokens = torch.randint(1, 20, (3, 6), device=device)
    lengths = torch.tensor([6, 2, 4], device=device)
    tokens = tokens.masked_fill(torch.arange(6, device=device)[None] >= lengths[:, None], 0)
    out = model(tokens, lengths)
    P = out.attention["features"]
    assert out.logits.shape == (3, 3) and P.shape == (3, 6, 12)
    assert (P[1, 2:] == 0).all() and torch.allclose(P[1, :2].sum(0), torch.ones(12, device=device))
    scalar = build(
        "attention-pooling",
        {
            "vocab": 20,
            "classes": 3,
            "embed_dim": 8,
            "hidden_dim": 6,
            "attention_dim": 5,
            "mlp_dim": 8,
            "pool": "scalar",
        },
    ).to(device)
    assert scalar(tokens, lengths).attention["features"].shape == (3, 6, 1)
    with pytest.raises(ValueError, match=r"pool must be one of \('features', 'scalar'\); got 'max'"):
        AttentionPoolingConfig(20, 3, pool="max")


def tiny_task(n=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    words = ["good", "bad", "film", "plot", "the", "a", "very", "not"]
    examples = []
    for i in range(n):
        ids = torch.randint(0, len(words), (int(torch.randint(2, 7, (1,), generator=g)),), generator=g)
        examples.append(Example(tuple(words[int(j)] for j in ids), i % 2))
    vocab = Vocab.build([e.tokens for e in examples])
    return ClassificationData("tiny", examples, examples, examples, vocab, ["a", "b"], seed)


@pytest.mark.parametrize("pool", ["features", "scalar"])
def test_attention_pooling_overfits_a_tiny_set(device, pool):
    data = tiny_task()
    model = AttentionPooling(
        AttentionPoolingConfig(len(data.vocab), 2, embed_dim=16, hidden_dim=16, attention_dim=16, mlp_dim=16, pool=pool)
    ).to(device)
    before = ex.evaluate(model, data, data.train)["accuracy"]
    ex.fit(model, data, epochs=40, batch_size=16, lr=3e-2, patience=40, progress=False)
    after = ex.evaluate(model, data, data.train)["accuracy"]
    assert after == 1.0 and before < 0.9, (before, after)


def test_feature_spread_by_hand():
    P = torch.tensor([[0.9, 0.1, 0.5], [0.1, 0.9, 0.5], [0.0, 0.0, 0.0]])  # (T=3, F=3), last row padding
    distinct, peak = multidim.feature_spread(P, 2)
    assert distinct == 2 and peak == pytest.approx((0.9 + 0.9 + 0.5) / 3)


def test_variants_are_sized_to_the_reference():
    data = sentiment_data("vader")
    recipe = multidim.MULTIDIM | {"hidden_dim": 16, "attention_dim": 16}
    target = count_parameters(build_intra("features", data, 16, recipe, variants=multidim.VARIANTS))
    hidden = matched_hidden(data, recipe, multidim.VARIANTS)
    assert set(hidden) == set(multidim.VARIANTS) and hidden["features"] == 16  # the reference keeps its size
    for v in multidim.VARIANTS:
        assert hidden[v] == match_hidden(v, data, target, recipe, variants=multidim.VARIANTS)
        got = count_parameters(build_intra(v, data, hidden[v], recipe, variants=multidim.VARIANTS))
        assert abs(got - target) < 0.02 * target, (v, got, target)


def test_run_multidim_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    full = sentiment_data("vader")
    small = type(full)(full.name, full.train[:60], full.valid[:20], full.test[:20], full.vocab, full.labels, full.seed)
    monkeypatch.setattr(multidim, "sentiment_data", lambda *a, **k: small)
    study = multidim.STUDY.with_recipe(
        seeds=[0, 1], variants=["features", "mean"], max_epochs=1, hidden_dim=8, embed_dim=8, attention_dim=8
    )
    assert study_status(study, tmp_path)["done"] == []
    assert run_study(study, tmp_path, only=["*/seed1"]) is None  # seed 1 only: no record, no kept model yet
    assert study_status(study, tmp_path)["done"] == ["features/seed1", "mean/seed1"]
    assert not results.model_path("multidim-attention", "features", tmp_path).exists()
    record = run_study(study, tmp_path)
    cell = record["metrics"]["summary"]["features"]
    assert 1 <= cell["distinct_maxima"]["mean"] <= 16 and 0 < cell["peak_weight"]["mean"] <= 1
    assert cell["hidden_dim"] == 8 and cell["accuracy"]["n"] == 2
    assert "distinct_maxima" not in record["metrics"]["summary"]["mean"]
    assert results.load_result("multidim-attention", tmp_path)["command"] == "python -m attention multidim"
    # seed 0's features model is kept under its old name; the mean pooling is not
    assert results.model_path("multidim-attention", "features", tmp_path).exists()
    assert not results.model_path("multidim-attention", "mean", tmp_path).exists()
    assert study_status(study, tmp_path)["missing"] == []


def test_the_record_regenerates_from_its_rows_alone(tmp_path):
    """The record's metrics, rebuilt from its own rows (no partial file, nothing trained), are the
    recorded ones: the study's summary is the one that wrote it."""
    recorded = results.load_result("multidim-attention")
    shutil.copy(results.RESULTS_DIR / "multidim-attention.json", tmp_path)
    assert study_status(multidim.STUDY, tmp_path) == {
        "done": [p.key for p in multidim.STUDY.pieces(multidim.MULTIDIM)],
        "missing": [],
    }
    again = run_study(multidim.STUDY, tmp_path, write=False)
    assert again["recipe"] == recorded["recipe"] == json.loads(json.dumps(multidim.MULTIDIM))
    assert again["metrics"] == recorded["metrics"]
    assert (again["wall_seconds"], again["notes"], again["command"]) == (
        recorded["wall_seconds"],
        recorded["notes"],
        recorded["command"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["multidim-attention.json"]  # nothing written
    assert multidim.STUDY.model_path("features") == results.model_path("multidim-attention", "features")


def test_the_recorded_comparison_is_complete_and_converged():
    record = results.load_result("multidim-attention")
    summary = record["metrics"]["summary"]
    assert set(summary) == set(multidim.VARIANTS) and record["seeds"] == [0, 1, 2, 3, 4]
    sizes = [cell["parameters"] for cell in summary.values()]
    assert max(sizes) - min(sizes) < 0.01 * max(sizes)  # matched parameter counts
    assert all(cell["converged"] for cell in summary.values())
    assert summary["scalar"]["distinct_maxima"]["mean"] == 1.0  # one distribution, one maximum
    assert summary["features"]["distinct_maxima"]["mean"] > 1.0
