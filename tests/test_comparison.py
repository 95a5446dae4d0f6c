"""Chapter 6's recorded runs (attention/studies/comparison.py), on a seconds-long stand-in recipe."""
import pytest

from attention import results

from attention.studies import comparison
from attention.experiments import dates_data


@pytest.fixture
def tiny(monkeypatch):
    data = dates_data(n=120)
    monkeypatch.setattr(comparison, "_data", lambda pair, recipe: data)
    recipe = comparison.COMPARISON | {"pairs": ["hsk"], "seeds": [0, 1], "max_epochs": 1, "budget_seconds": 60,
                                      "rnnsearch": {"lr": 3e-3, "embed_dim": 8, "hidden_dim": 8, "dropout": 0.0}}
    monkeypatch.setattr(comparison, "COMPARISON", recipe)
    monkeypatch.setattr(comparison, "HEADS", comparison.HEADS | {"heads": [1, 2], "seeds": [0], "budget_seconds": 60})
    return data


def test_the_transformer_is_sized_to_rnnsearchs_parameter_count(tiny):
    from attention.experiments import build_model
    rnn = build_model(tiny, attention="additive", embed_dim=8, hidden_dim=8)
    target = comparison._count(rnn)
    d = comparison.match_transformer(tiny, target, comparison.COMPARISON)
    count = lambda d: comparison._count(comparison.build("transformer", comparison.transformer_config(tiny, d, comparison.COMPARISON)))
    assert d % 8 == 0 and abs(count(d) - target) <= min(abs(count(d + 8) - target), abs(count(max(d - 8, 8)) - target))


def test_comparison_resumes_and_records_once_every_run_is_done(tiny, tmp_path):
    assert comparison.comparison_status(tmp_path)["done"] == []
    record = comparison.run_comparison(directory=tmp_path)
    summary = record["metrics"]["summary"]["hsk"]
    assert set(summary) == {"RNNsearch", "Transformer"} and summary["Transformer"]["bleu"]["n"] == 2
    assert abs(summary["Transformer"]["parameters"] - summary["RNNsearch"]["parameters"]) < 0.2 * summary["RNNsearch"]["parameters"]
    assert results.load_result("transformer-comparison", tmp_path)["command"] == "python -m attention transformer"
    status = comparison.comparison_status(tmp_path)
    assert len(status["done"]) == 4 and status["missing"] == ["h1/seed0", "h2/seed0"]


def test_heads_sweep_keeps_d_model_and_varies_the_heads(tiny, tmp_path):
    record = comparison.run_heads(tmp_path)
    s = record["metrics"]["summary"]
    assert set(s) == {"1", "2"} and s["1"]["d_k"] == 2 * s["2"]["d_k"] == record["metrics"]["d_model"]
    assert s["1"]["parameters"] == s["2"]["parameters"]  # heads split d_model: same size
