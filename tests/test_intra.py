"""The recorded run of attention inside one sentence (attention/studies/intra.py), on a seconds-long stand-in."""
import pytest
import torch

from attention import results

from attention.studies import intra
from attention.tasks.classification import sentiment_data


def test_row_redundancy_and_lexicon_mass_by_hand():
    A = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])  # 3 rows, 4th word padding
    overlap, distinct = intra.row_redundancy(A, 3)
    assert overlap == pytest.approx((0.5 + 0.0 + 0.0) / 3) and distinct == 2  # rows 1 and 2 both peak at word 0
    mass, share = intra.lexicon_mass(A, ["great", "plot", "awful"], {"great": 3.1, "awful": -2.0})
    assert mass == pytest.approx((1.5 + 1.0) / 3) and share == pytest.approx(2 / 3)


def test_variants_are_sized_to_the_reference(monkeypatch):
    data = sentiment_data("vader")
    recipe = intra.INTRA | {"hidden_dim": 16}
    target = intra._count(intra.build_intra("lin+penalty", data, 16, recipe))
    for v in intra.VARIANTS:
        got = intra._count(intra.build_intra(v, data, intra.match_hidden(v, data, target, recipe), recipe))
        assert abs(got - target) < 0.1 * target, (v, got, target)


def test_run_intra_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    full = sentiment_data("vader")
    small = type(full)(full.name, full.train[:60], full.valid[:20], full.test[:20], full.vocab, full.labels, full.seed)
    monkeypatch.setattr(intra, "sentiment_data", lambda *a, **k: small)
    monkeypatch.setattr(intra, "INTRA", intra.INTRA | {"seeds": [0], "variants": ["lin+penalty", "bilstm-max"],
                                                        "max_epochs": 1, "hidden_dim": 8, "embed_dim": 8})
    record = intra.run_intra(tmp_path)
    lin = record["metrics"]["summary"]["lin+penalty"]
    assert 0 <= lin["row_overlap"]["mean"] <= 1 and 1 <= lin["distinct_maxima"]["mean"] <= intra.INTRA["rows"]
    assert "row_overlap" not in record["metrics"]["summary"]["bilstm-max"]
    assert results.load_result("intra-attention", tmp_path)["command"] == "python -m attention intra"
    assert intra.intra_status(tmp_path)["missing"] == []
