"""Chapter 5's controlled task: documents in which one rated sentence sets the label."""

import pytest
import torch
from conftest import load_or_skip, regenerated

from attention.data.sentiment import Sentence
from attention.studies import decisive
from attention.tasks.documents import decisive_data, decisive_documents


def _sentence(word: str, rating: float) -> Sentence:
    return Sentence((word,), int(rating > 0), {"rating": rating})


FILLERS = [_sentence(f"meh{i}", r) for i, r in enumerate((0.5, -0.5, 0.2, -0.9))]
DECISIVE = [_sentence("great", 3.0), _sentence("awful", -3.1), _sentence("superb", 2.8)]


def test_one_sentence_sets_the_label_and_the_documents_are_balanced():
    docs = decisive_documents(FILLERS, DECISIVE, 40, 5, seed=0)
    assert [d.label for d in docs] == [i % 2 for i in range(40)]
    positions = set()
    for d in docs:
        assert len(d.sentences) == 5 and len(d.meta["ratings"]) == 5
        where = d.meta["decisive"]
        positions.add(where)
        rating = d.meta["ratings"][where]
        assert abs(rating) >= 2.5 and int(rating > 0) == d.label
        assert all(abs(r) < 1 for i, r in enumerate(d.meta["ratings"]) if i != where)
    assert positions == set(range(5))  # the decisive sentence is not always in one place
    assert decisive_documents(FILLERS, DECISIVE, 40, 5, seed=0) == docs


def test_bad_pools_and_sizes_are_refused():
    with pytest.raises(ValueError, match="at least one other"):
        decisive_documents(FILLERS, DECISIVE, 4, 1)
    with pytest.raises(ValueError, match=r"decisive sentences of both labels \(1 negative, 0 positive\)"):
        decisive_documents(FILLERS, DECISIVE[1:2], 4, 3)


def test_decisive_attention_reads_the_weight_on_the_decisive_sentence():
    docs = decisive_documents(FILLERS, DECISIVE, 2, 4, seed=1)
    weights = []
    for d in docs:
        w = torch.full((6,), 0.0)  # padded to six sentences, as a batch pads
        w[:4] = 0.1
        w[d.meta["decisive"]] = 0.7
        weights.append(w)
    assert decisive.decisive_attention(weights, docs) == pytest.approx({"mass": 0.7, "top": 1.0, "uniform": 0.25})
    with pytest.raises(ValueError):
        decisive.decisive_attention(weights[:1], docs)


def test_the_splits_share_no_sentence():
    data = load_or_skip(decisive_data)
    sentences = {name: {s for d in getattr(data, name) for s in d.sentences} for name in ("train", "valid", "test")}
    assert not sentences["test"] & sentences["train"] and not sentences["valid"] & sentences["train"]
    assert sum(d.label for d in data.test) * 2 == len(data.test)


def test_the_record_regenerates_from_itself(tmp_path):
    record, again = regenerated(decisive.STUDY, tmp_path)
    assert again["metrics"] == record["metrics"]
    summary = record["metrics"]["summary"]
    assert record["seeds"] == [0, 1, 2, 3, 4] and all(c["accuracy"]["n"] == 5 for c in summary.values())
    assert record["metrics"]["baselines"] == {"chance": 0.5, "majority": 0.5, "uniform_mass": 1 / 6}
