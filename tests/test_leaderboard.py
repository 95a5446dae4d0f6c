"""The leaderboard is generated from the results registry, and every record feeds it."""

import json
import shutil

import pytest

from attention import results
from attention.book import leaderboard as lb


def test_every_record_yields_rows_or_says_why_not():
    rows = lb.leaderboard()
    names = set(results.list_results())
    assert {r["record"] for r in rows} | set(lb.UNSUMMARISED) == names
    assert set(lb.UNSUMMARISED) <= names  # no stale exemption
    for r in rows:
        assert r["metric"] in lb.HEADLINE and r["n"] >= 3 and r["sd"] is not None, r
        assert isinstance(r["parameters"], int) and r["parameters"] > 0, r
        assert r["command"].startswith("python -m attention ") and r["machine"]["device"] and r["torch"], r


def test_rows_are_the_records_numbers():
    rows = {(r["record"], r["entry"]): r for r in lb.leaderboard()}
    captions = results.load_result("soft-hard-captions")["metrics"]["summary"]["soft"]
    assert rows["soft-hard-captions", "soft"]["mean"] == captions["exact_match"]["mean"]
    hsk = results.load_result("ablation-converged")["metrics"]["summary"]["hsk"]["none+feed"]
    row = rows["ablation-converged", "hsk / none+feed"]
    assert (row["metric"], row["mean"], row["attention"]) == ("bleu", hsk["bleu"]["mean"], False)
    assert (
        rows["ntm-copy", "ntm / by_length / 120"]["parameters"]
        == results.load_result("ntm-copy")["metrics"]["summary"]["ntm"]["parameters"]
    )  # inherited from the model's cell


def test_baselines_come_first_within_a_record():
    rows = [r for r in lb.leaderboard() if r["record"] == "hsk-convergence"]
    assert [r["entry"] for r in rows] == ["encoder-decoder", "RNNsearch"] and not rows[0]["attention"]


def test_a_record_without_a_summary_is_refused(tmp_path):
    shutil.copy(results.RESULTS_DIR / "multidim-attention.json", tmp_path)
    record = json.loads((tmp_path / "multidim-attention.json").read_text())
    assert len(lb.leaderboard(tmp_path)) == 3
    del record["metrics"]["summary"]
    (tmp_path / "multidim-attention.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="'multidim-attention' has no 'summary'.*UNSUMMARISED"):
        lb.leaderboard(tmp_path)
    record["metrics"]["summary"] = {"features": {"loss": results.mean_sd([1.0, 2.0])}}
    (tmp_path / "multidim-attention.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="no cell with a headline metric"):
        lb.leaderboard(tmp_path)


def test_the_table_prints_every_row():
    rows = lb.leaderboard()
    text = lb.format_leaderboard(rows)
    records = {r["record"] for r in rows}
    assert len(text.splitlines()) == 1 + len(rows) + 1 + len(records) and "± " in text
    assert all(f"{name:<24} python -m attention " in text for name in records)
