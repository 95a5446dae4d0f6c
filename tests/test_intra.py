"""The recorded run of attention inside one sentence (attention/studies/intra.py), on a seconds-long stand-in."""

import json
import shutil

import pytest
import torch

from attention import results
from attention.models import count_parameters
from attention.studies import intra
from attention.studies.base import run_study, study_status
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
    target = count_parameters(intra.build_intra("lin+penalty", data, 16, recipe))
    hidden = intra.matched_hidden(data, recipe)
    assert set(hidden) == set(intra.VARIANTS) and hidden["lin+penalty"] == 16  # the reference keeps its size
    for v in intra.VARIANTS:
        assert hidden[v] == intra.match_hidden(v, data, target, recipe) and hidden[v] % 4 == 0
        got = count_parameters(intra.build_intra(v, data, hidden[v], recipe))
        assert abs(got - target) < 0.1 * target, (v, got, target)
        # the closest multiple of 4 (the smaller on a tie): the count grows with the size, so its neighbours tell
        if hidden[v] > 8:
            assert abs(count_parameters(intra.build_intra(v, data, hidden[v] - 4, recipe)) - target) > abs(got - target)
        if hidden[v] < 4 * 16:
            assert abs(count_parameters(intra.build_intra(v, data, hidden[v] + 4, recipe)) - target) >= abs(
                got - target
            )


def test_run_intra_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    full = sentiment_data("vader")
    small = type(full)(full.name, full.train[:60], full.valid[:20], full.test[:20], full.vocab, full.labels, full.seed)
    monkeypatch.setattr(intra, "sentiment_data", lambda *a, **k: small)
    study = intra.STUDY.with_recipe(
        seeds=[0], variants=["lin+penalty", "bilstm-max"], max_epochs=1, hidden_dim=8, embed_dim=8
    )
    assert study_status(study, tmp_path) == {"done": [], "missing": ["lin+penalty/seed0", "bilstm-max/seed0"]}
    assert run_study(study, tmp_path, only=["bilstm-max/*"]) is None  # one piece of two: no record yet
    assert study_status(study, tmp_path)["done"] == ["bilstm-max/seed0"]
    assert not (tmp_path / "intra-attention.json").exists()
    record = run_study(study, tmp_path)
    lin = record["metrics"]["summary"]["lin+penalty"]
    assert 0 <= lin["row_overlap"]["mean"] <= 1 and 1 <= lin["distinct_maxima"]["mean"] <= intra.INTRA["rows"]
    assert lin["hidden_dim"] == 8 and lin["accuracy"]["n"] == 1
    assert "row_overlap" not in record["metrics"]["summary"]["bilstm-max"]
    assert record["metrics"]["data"]["train"] == 60
    assert results.load_result("intra-attention", tmp_path)["command"] == "python -m attention intra"
    assert study_status(study, tmp_path)["missing"] == []


def test_the_record_regenerates_from_its_rows_alone(tmp_path):
    """The record's metrics, rebuilt from its own rows (no partial file, nothing trained), are the
    recorded ones: the study's summary is the one that wrote it."""
    recorded = results.load_result("intra-attention")
    shutil.copy(results.RESULTS_DIR / "intra-attention.json", tmp_path)
    assert study_status(intra.STUDY, tmp_path) == {
        "done": [p.key for p in intra.STUDY.pieces(intra.INTRA)],
        "missing": [],
    }
    again = run_study(intra.STUDY, tmp_path, write=False)
    assert again["recipe"] == recorded["recipe"] == json.loads(json.dumps(intra.INTRA))
    assert again["metrics"] == recorded["metrics"]
    assert (again["wall_seconds"], again["notes"], again["command"]) == (
        recorded["wall_seconds"],
        recorded["notes"],
        recorded["command"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["intra-attention.json"]  # nothing written
