"""Chapter 6's recorded runs (attention/studies/comparison.py), on a seconds-long stand-in recipe."""

import dataclasses
import shutil

import pytest

from attention import results
from attention.experiments import build_model, dates_data
from attention.models import build, count_parameters
from attention.studies import comparison
from attention.studies.base import run_study, study_status

TINY = comparison.COMPARISON | {
    "pairs": ["hsk"],
    "seeds": [0, 1],
    "max_epochs": 1,
    "budget_seconds": 60,
    "rnnsearch": {"lr": 3e-3, "embed_dim": 8, "hidden_dim": 8, "dropout": 0.0},
}


@pytest.fixture
def tiny(monkeypatch):
    data = dates_data(n=120)
    monkeypatch.setattr(comparison, "_data", lambda pair, recipe: data)  # every pair: the dates
    return data


@pytest.fixture
def studies(tiny):
    comp = comparison.COMPARISON_STUDY.with_recipe(**TINY)
    heads = comparison.HEADS_STUDY.with_recipe(heads=[1, 2], seeds=[0], budget_seconds=60, comparison=TINY)
    return comp, heads


def _never(study, piece, data, device):
    pytest.fail(f"ran {piece.key}, which the registry holds")


def test_the_transformer_is_sized_to_rnnsearchs_parameter_count(tiny):
    rnn = build_model(tiny, attention="additive", embed_dim=8, hidden_dim=8)
    target = count_parameters(rnn)
    d = comparison.match_transformer(tiny, target, TINY)

    def count(d):
        return count_parameters(build("transformer", comparison.transformer_config(tiny, d, TINY)))

    assert d % 8 == 0 and abs(count(d) - target) <= min(abs(count(d + 8) - target), abs(count(max(d - 8, 8)) - target))


def test_comparison_resumes_and_records_once_every_run_is_done(tiny, studies, tmp_path):
    comp, heads = studies
    assert study_status(comp, tmp_path)["done"] == []
    assert run_study(comp, tmp_path, only=["*/seed0"]) is None  # half the runs: no record yet
    assert (tmp_path / "partial" / "transformer-comparison-hsk.jsonl").exists()  # one partial file per pair
    ran = []

    def counting(study, piece, data, device):
        ran.append(piece.key)
        return comparison._comparison_run(study, piece, data, device)

    record = run_study(dataclasses.replace(comp, run=counting), tmp_path)
    assert ran == ["hsk/RNNsearch/seed1", "hsk/Transformer/seed1"]  # seed 0 was kept, not run again
    summary = record["metrics"]["summary"]["hsk"]
    assert set(summary) == {"RNNsearch", "Transformer"} and summary["Transformer"]["bleu"]["n"] == 2
    assert (
        abs(summary["Transformer"]["parameters"] - summary["RNNsearch"]["parameters"])
        < 0.2 * summary["RNNsearch"]["parameters"]
    )
    rnn = build_model(tiny, attention="additive", embed_dim=8, hidden_dim=8)
    assert summary["Transformer"]["d_model"] == comparison.match_transformer(tiny, count_parameters(rnn), TINY)
    assert summary["RNNsearch"]["parameters"] == count_parameters(rnn)
    assert [(r["model"], r["seed"]) for r in record["metrics"]["runs"]] == [
        ("RNNsearch", 0),
        ("Transformer", 0),
        ("RNNsearch", 1),
        ("Transformer", 1),
    ]
    assert results.load_result("transformer-comparison", tmp_path)["command"] == "python -m attention transformer"
    status = study_status(comp, tmp_path)
    assert len(status["done"]) == 4 and status["missing"] == []
    assert study_status(heads, tmp_path)["missing"] == ["h2/seed0", "h1/seed0"]  # the other record's runs


def test_heads_sweep_keeps_d_model_and_varies_the_heads(studies, tmp_path):
    _, heads = studies
    record = run_study(heads, tmp_path)
    s = record["metrics"]["summary"]
    assert set(s) == {"1", "2"} and s["1"]["d_k"] == 2 * s["2"]["d_k"] == record["metrics"]["d_model"]
    assert s["1"]["parameters"] == s["2"]["parameters"]  # heads split d_model: same size
    assert record["recipe"]["comparison"] == TINY and record["command"] == "python -m attention transformer --heads"
    assert [r["num_heads"] for r in record["metrics"]["runs"]] == [2, 1]


@pytest.mark.parametrize("name", ["COMPARISON_STUDY", "HEADS_STUDY"])
def test_the_records_regenerate_from_themselves(name, tmp_path):
    study = getattr(comparison, name)
    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", tmp_path)  # the record alone: no partial files
    record = results.load_result(study.name, tmp_path)
    status = study_status(study, tmp_path)
    assert status["missing"] == [] and len(status["done"]) == len(study.pieces(study.recipe))
    again = run_study(dataclasses.replace(study, run=_never), tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["recipe"], again["seeds"], again["command"]) == (record["recipe"], record["seeds"], record["command"])
    assert again["wall_seconds"] == record["wall_seconds"] and again.get("notes") == record.get("notes")
