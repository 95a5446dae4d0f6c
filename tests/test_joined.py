"""Chapter 6's controlled task: two rated sentences joined, labelled by both polarities."""

import pytest
import torch
from conftest import load_or_skip, regenerated

from attention.data.sentiment import Sentence
from attention.studies import joined
from attention.tasks.joined import PAIR_LABELS, SEPARATOR, joined_data, joined_pairs, strong_sentences


def _sentence(words: str, rating: float) -> Sentence:
    return Sentence(tuple(words.split()), int(rating > 0), {"rating": rating})


POOL = [
    _sentence("a great film", 3.0),
    _sentence("superb", 2.1),
    _sentence("loved every minute of it", 1.8),
    _sentence("awful", -3.1),
    _sentence("a dull , dull mess", -2.0),
    _sentence("boring", -1.6),
]


def test_the_label_is_both_polarities_and_the_halves_are_recorded():
    pairs = joined_pairs(POOL, 40, seed=0)
    assert [p.label for p in pairs] == [i % 4 for i in range(40)]  # balanced
    by_tokens = {s.tokens: s for s in POOL}
    for p in pairs:
        f, s = p.meta["first_length"], p.meta["second"]
        assert s == f + 1 and p.tokens[f] == SEPARATOR
        first, second = by_tokens[p.tokens[:f]], by_tokens[p.tokens[s:]]
        assert first is not second
        assert PAIR_LABELS[p.label] == "-+"[first.label] + "-+"[second.label]
        assert p.meta["ratings"] == [first.meta["rating"], second.meta["rating"]]
    assert joined_pairs(POOL, 40, seed=0) == pairs and joined_pairs(POOL, 40, seed=1) != pairs
    plain = joined_pairs(POOL, 8, seed=0, separator=None)
    assert all(p.meta["second"] == p.meta["first_length"] and SEPARATOR not in p.tokens for p in plain)


def test_bad_pools_and_ratings_are_refused():
    with pytest.raises(ValueError, match="two sentences of each polarity; got 3 negative, 1 positive"):
        joined_pairs(POOL[2:], 4)
    with pytest.raises(ValueError, match="min_rating must be > 0"):
        strong_sentences(POOL, 0)
    assert strong_sentences(POOL, 2.0) == [POOL[0], POOL[1], POOL[3], POOL[4]]
    assert strong_sentences(POOL, 2.0, max_tokens=3) == [POOL[0], POOL[1], POOL[3]]
    with pytest.raises(ValueError, match="max_tokens must be None or at least 1"):
        strong_sentences(POOL, 2.0, max_tokens=0)
    with pytest.raises(ValueError, match="multiple of 4"):
        joined_data(sizes=(10, 4, 4))


def test_half_attention_reads_the_mass_on_each_sentence():
    (pair,) = joined_pairs(POOL, 1, seed=0)  # label 0: two negative sentences
    f, s, T = pair.meta["first_length"], pair.meta["second"], len(pair.tokens)
    W = torch.zeros(2, T + 2)  # two rows, padded by two positions as a batch pads
    W[0, 0] = 1.0  # row 0: all on the first sentence
    W[1, s:T] = 1 / (T - s)  # row 1: spread over the second
    got = joined.half_attention(W, pair)
    assert got["first"].tolist() == [1.0, 0.0] and got["second"].tolist() == pytest.approx([0.0, 1.0])
    assert got["commitment"] == pytest.approx(1.0) and got["row_split"] == 1.0 and got["covers_both"]
    W[1] = 0.0
    W[1, f] = 1.0  # on the separator: neither sentence
    got = joined.half_attention(W, pair)
    assert got["commitment"] == pytest.approx(0.5) and not got["covers_both"]
    with pytest.raises(ValueError, match=r"W \(K, T\) with T >= "):
        joined.half_attention(W[:, :2], pair)


def test_the_splits_share_no_sentence_and_are_balanced():
    data = load_or_skip(joined_data)
    halves = {}
    for name in ("train", "valid", "test"):
        split = getattr(data, name)
        halves[name] = {e.tokens[: e.meta["first_length"]] for e in split} | {
            e.tokens[e.meta["second"] :] for e in split
        }
        assert all(sum(e.label == y for e in split) * 4 == len(split) for y in range(4))
        for e in split:
            assert e.tokens[e.meta["first_length"]] == SEPARATOR
            assert all(abs(r) >= 1.5 for r in e.meta["ratings"])
            assert e.meta["first_length"] <= 20 and len(e.tokens) - e.meta["second"] <= 20
    assert not halves["test"] & halves["train"] and not halves["valid"] & halves["train"]
    assert not halves["test"] & halves["valid"]
    again = joined_data()
    assert again.test == data.test and again.fingerprint() == data.fingerprint()


def test_the_record_regenerates_from_itself(tmp_path):
    record, again = regenerated(joined.STUDY, tmp_path)
    assert again["metrics"] == record["metrics"]
    summary = record["metrics"]["summary"]
    assert record["seeds"] == [0, 1, 2, 3, 4] and all(c["accuracy"]["n"] == 5 for c in summary.values())
    assert all(c["converged"] for c in summary.values())
    baselines = record["metrics"]["baselines"]
    assert baselines["chance"] == 0.25 and baselines["majority"] == 0.25
    for arm, cell in summary.items():
        if joined.VARIANTS[arm][0] == "bilstm-pooling":
            assert "first_mass" not in cell
        else:
            assert 0 < cell["first_mass"]["mean"] + cell["second_mass"]["mean"] <= 1 + 1e-6
    assert summary["lin-r1"]["rows"] == 1 and "row_overlap" not in summary["lin-r1"]
