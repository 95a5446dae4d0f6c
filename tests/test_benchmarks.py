"""The benchmark (``python -m attention bench``) and chapter 9's local-attention benchmark keep
running; their timings are printed and recorded, never asserted (these machines are noisy)."""

import subprocess
import sys
from pathlib import Path

import pytest

from attention import results
from attention.book import bench
from attention.book.families import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def quick_record(tmp_path_factory):
    """A quick CPU run written into a registry that already holds a (made-up) CUDA section."""
    directory = tmp_path_factory.mktemp("registry")
    earlier = results.record_result(
        "benchmark",
        command="python -m attention bench",
        recipe={},
        seeds=[0],
        metrics={"cuda": {"label": "cuda: an earlier GPU", "rows": []}},
        wall_seconds=1.0,
        directory=directory,
    )
    assert earlier["metrics"]["cuda"]
    rows = bench.run_benchmark(["cpu"], quick=True, directory=directory, progress=False)
    return rows, results.load_result("benchmark", directory)


def test_every_goal_and_every_model_family_is_measured(quick_record):
    rows, record = quick_record
    cpu = record["metrics"]["cpu"]["rows"]
    assert [r.as_dict() for r in rows["cpu"]] == cpu
    cases = {r["case"] for r in cpu}
    assert set(bench.GOALS) <= cases
    assert {r["case"] for r in cpu if r["group"] == "models"} == set(EXAMPLES)
    for r in cpu:
        assert r["ours_ms"] > 0, r
        if r["group"] == "models":
            assert r["tokens_per_s"] > 0 and r["ratio"] is None, r
        else:
            assert r["ref_ms"] > 0 and r["ratio"] == pytest.approx(r["ours_ms"] / r["ref_ms"], rel=1e-2), r
        if r["case"] in bench.GOALS:
            assert r["goal"] == bench.GOALS[r["case"]] and r["met"] == (r["ratio"] <= r["goal"]), r
    assert {"kernels", "scores", "local", "models"} == {r["group"] for r in cpu}


def test_a_cpu_run_keeps_the_gpu_section_of_the_record(quick_record):
    _, record = quick_record
    assert record["metrics"]["cuda"]["label"] == "cuda: an earlier GPU"
    assert record["command"] == "python -m attention bench --quick"


def test_the_table_marks_goals_met_and_missed():
    met = bench.Row("kernels", "fused MHA, is_causal", "B=1", "float32", 1.0, 1.0)
    missed = bench.Row("kernels", "fused MHA, padding mask", "B=1", "float32", 1.5, 1.0)
    table = bench.format_rows([met, missed], "cpu")
    assert table.splitlines()[-2].endswith("  ok") and table.splitlines()[-1].endswith("missed by 36%")


def test_the_recorded_benchmark_covers_the_current_goals():
    """The appendix reads the committed record: it must hold every goal of the code."""
    record = results.load_result("benchmark")
    cpu = record["metrics"]["cpu"]
    assert not cpu["quick"], "record the full benchmark: python -m attention bench"
    assert set(bench.GOALS) <= {r["case"] for r in cpu["rows"]}
    assert {r["case"] for r in cpu["rows"] if r["group"] == "models"} == set(EXAMPLES)


def test_local_attention_benchmark_runs_and_its_memory_checks_hold():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_local.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "local memory grew" in done.stdout
