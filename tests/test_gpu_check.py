"""``python -m attention gpu-check``: on this CPU-only machine it runs its CPU parts and says which
parts were skipped and why; on a CUDA machine the same command checks the GPU against the CPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attention.book import families, gpu_check
from attention.book.bench import GOALS
from attention.book.families import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpu") / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "attention", "gpu-check", "--quick", "--report", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "gpu-check passed" in done.stdout
    return json.loads(path.read_text()), done.stdout


def test_every_model_family_and_variant_passes_on_every_device(report):
    rep, _ = report
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    fam = rep["parts"]["families"]
    assert fam["status"] == "passed"
    assert {(r["variant"], r["device"]) for r in fam["results"]} == {(n, d) for n in EXAMPLES for d in devices}
    variants = rep["parts"]["variants"]
    assert variants["status"] == "passed"
    names = {r["variant"] for r in variants["results"]}
    assert {"score additive", "score concat", "local-m", "local-p", "multi-head explicit + fused"} <= names
    bench = rep["parts"]["benchmark"]["results"][0]["detail"]
    assert set(GOALS) <= set(bench) and all(v > 0 for v in bench.values())
    assert rep["versions"]["torch"] == torch.__version__ and rep["passed"] is True


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a CUDA machine these parts run")
def test_without_cuda_the_gpu_parts_are_skipped_with_the_reason(report):
    rep, stdout = report
    for part in ("package tests on CUDA", "notebooks on the GPU"):
        assert rep["parts"][part]["status"] == "skipped"
        assert "no CUDA device" in rep["parts"][part]["reason"]
        assert f"== {part}: skipped (no CUDA device" in stdout


def test_a_failing_family_is_reported_and_fails_the_check(monkeypatch):
    def broken(seed=0):
        raise RuntimeError("this family is broken")

    monkeypatch.setitem(families.EXAMPLES, "seq2seq", broken)
    rows = gpu_check.check_families([torch.device("cpu")])
    bad = [r for r in rows if not r["ok"]]
    assert [r["variant"] for r in bad] == ["seq2seq"] and "this family is broken" in bad[0]["detail"]
    assert sum(r["ok"] for r in rows) == len(EXAMPLES) - 1


def test_one_notebook_per_chapter():
    paths = gpu_check.chapter_notebooks()
    numbers = [p.name[:2] for p in paths]
    assert numbers == sorted(set(numbers)) and {"01", "03", "06", "09", "11"} <= set(numbers)
    assert all(p.exists() for p in paths)
