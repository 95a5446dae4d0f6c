"""The benchmark script keeps running (its numbers are printed, never asserted)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_quick_run_prints_every_case():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_attention.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for case in ("sdpa explicit vs F.sdpa", "sdpa fused vs F.sdpa", "MHA explicit vs nn.MHA",
                 "MHA fused vs nn.MHA"):
        assert case in done.stdout


def test_local_attention_benchmark_runs_and_its_memory_checks_hold():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_local.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "local memory grew" in done.stdout
