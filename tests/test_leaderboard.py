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


def test_t_quantiles_are_students():
    # Student's t, two-sided 95 %: the printed tables' values
    for dof, want in [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042)]:
        assert lb.t_quantile(0.975, dof) == pytest.approx(want, abs=1e-3), dof
    assert lb.t_quantile(0.975, 3.5) == pytest.approx(2.9, abs=0.1)  # Welch's degrees are not whole
    with pytest.raises(ValueError, match="0.5 < p < 1"):
        lb.t_quantile(0.3, 4)


def test_attention_gains_pair_each_model_with_its_baseline_and_welchs_interval():
    def row(record, entry, mean, sd, n=3, attention=True):
        return {
            "record": record,
            "entry": entry,
            "metric": "bleu",
            "mean": mean,
            "sd": sd,
            "n": n,
            "attention": attention,
        }

    rows = [
        row("r", "hsk / none+feed", 5.0, 1.0, attention=False),
        row("r", "hsk / global-dot+feed", 9.0, 1.0),
        row("r", "ding / global-dot+feed", 1.0, 1.0),  # another pair: not this baseline's
        row("other", "hsk / global-dot+feed", 9.0, 1.0),  # another record
    ]
    (gain,) = lb.attention_gains(rows)
    assert (gain["entry"], gain["baseline"], gain["difference"]) == ("hsk / global-dot+feed", "hsk / none+feed", 4.0)
    half = lb.t_quantile(0.975, 4) * (2 / 3) ** 0.5  # equal sds and seeds: Welch's dof = 2 (n - 1)
    assert gain["low"] == pytest.approx(4 - half) and gain["high"] == pytest.approx(4 + half)
    assert gain["beyond_interval"]
    gains = lb.attention_gains(lb.leaderboard())
    convergence = next(g for g in gains if g["record"] == "hsk-convergence")
    assert (convergence["entry"], convergence["baseline"]) == ("RNNsearch", "encoder-decoder")


def test_notebook_10_prints_the_registry_as_it_is_now():
    """A new record changes the leaderboard; notebook 10's committed output must follow it."""
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "10-evaluation.ipynb").read_text())
    (cell,) = [
        c for c in nb["cells"] if c["cell_type"] == "code" and "leaderboard.leaderboard()" in "".join(c["source"])
    ]
    printed = "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("output_type") == "stream")
    rows = lb.leaderboard()
    assert printed.startswith(f"{len(rows)} rows from {len({r['record'] for r in rows})} records"), (
        "notebook 10 was executed before the registry changed: re-run scripts/execute_notebooks.py on it"
    )
    assert lb.format_leaderboard(rows) in printed


def test_welch_text_gives_the_difference_its_interval_and_whether_it_holds_0():
    a, b = {"mean": 0.9, "sd": 0.05, "n": 5}, {"mean": 0.5, "sd": 0.1, "n": 5}
    diff, lo, hi = lb.welch_interval(a, b)
    assert lb.welch_text(a, b) == f"{diff:+.3f} [{lo:+.3f}, {hi:+.3f}], clear of 0" and lo > 0
    close = {"mean": 0.88, "sd": 0.1, "n": 5}
    assert lb.welch_text(a, close).endswith("holds 0") and lb.welch_text(close, a).startswith("-0.020 [")
    assert lb.welch_text(a, {"mean": 0.5, "sd": None, "n": 1}) == "+0.400 (one seed: no interval)"
    same = {"mean": 1.0, "sd": 0.0, "n": 5}
    assert lb.welch_text(same, same, digits=1) == "+0.0 [+0.0, +0.0], holds 0"


def test_welch_interval_against_a_fixed_baseline_is_students_one_sample_interval():
    # t(0.975, 4) = 2.7764: 0.8 ± 2.7764 · 0.1/√5 = 0.8 ± 0.1242, less a baseline of 0.5
    diff, lo, hi = lb.welch_interval({"mean": 0.8, "sd": 0.1, "n": 5}, 0.5)
    assert diff == pytest.approx(0.3) and lo == pytest.approx(0.3 - 0.12416, abs=1e-4)
    assert hi == pytest.approx(0.3 + 0.12416, abs=1e-4)
    assert lb.welch_text({"mean": 0.52, "sd": 0.1, "n": 5}, 0.5) == "+0.020 [-0.104, +0.144], holds 0"
    assert lb.welch_text({"mean": 0.6, "sd": None, "n": 1}, 0.5) == "+0.100 (one seed: no interval)"
    with pytest.raises(TypeError, match="must be a mean_sd summary or a number, got str"):
        lb.welch_interval({"mean": 0.8, "sd": 0.1, "n": 5}, "0.5")
