"""One command that shows the package runs the same on a GPU: ``python -m attention gpu-check``.

    python -m attention gpu-check                    # < 5 minutes on a CUDA machine
    python -m attention gpu-check --quick            # the CPU parts only take seconds (CI runs this)
    python -m attention gpu-check --report gpu-check.json

Parts, each with a pass/fail per variant in the report (device, versions, ratios):

1. **families**: every registered model family (one small example each, ``attention/book/families.py``)
   runs forward and backward on every available device with a finite loss and finite gradients;
   on CUDA, the same weights and inputs give the CPU's loss and attention weights (parity).
2. **variants**: every score function, explicit and fused multi-head attention (with padding and
   ``is_causal``), local-m and local-p attention and multi-dimensional attention, on every device,
   against the explicit CPU computation.
3. **package tests on CUDA**: ``pytest -k cuda`` over the package tests (their ``device`` fixture
   adds a CUDA case to every test that builds a module).
4. **benchmark**: :func:`attention.book.bench.run_benchmark` (ratios against PyTorch's kernels); on
   CUDA it records the GPU section of ``benchmark``. It runs before parts 3 and 5, alone.
5. **notebooks on the GPU**: the first notebook of every chapter, executed with
   ``ATTENTION_DEVICE=cuda``, several at once, while part 3 runs.

On a machine without CUDA, parts 1, 2 and 4 run on the CPU and parts 3 and 5 are reported as
skipped, with the reason. The exit status is 1 when anything failed, else 0.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from .. import __version__
from ..layers import Attention, MultiDimensionalAttention, MultiHeadAttention
from ..local import local_attention
from ..masks import lengths_to_mask
from ..scores import SCORES, make_score
from .bench import run_benchmark, summary
from .families import EXAMPLES, example

__all__ = ["run_gpu_check", "check_families", "check_variants", "chapter_notebooks"]

REPO_ROOT = Path(__file__).resolve().parents[2]
NO_CUDA = "no CUDA device here (torch.cuda.is_available() is False)"


def _devices() -> list[torch.device]:
    return [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])


def _finite(*tensors) -> bool:
    return all(t is None or bool(torch.isfinite(t).all()) for t in tensors)


def _result(name: str, device: torch.device, fn) -> dict:
    """``{"variant", "device", "ok", "detail"}``: ``fn()`` returns a detail string or raises."""
    start = time.perf_counter()
    try:
        detail, ok = fn(), True
    except Exception as e:  # a failing variant is reported, and the others still run
        detail, ok = f"{type(e).__name__}: {e}", False
    return {
        "variant": name,
        "device": device.type,
        "ok": ok,
        "detail": detail,
        "seconds": round(time.perf_counter() - start, 3),
    }


def check_families(devices: list[torch.device] | None = None) -> list[dict]:
    """Every model family forward + backward on each device; CUDA against the CPU (parity)."""
    rows = []
    for device in devices or _devices():
        for name in sorted(EXAMPLES):
            rows.append(_result(name, device, lambda name=name, device=device: _family(name, device)))
    return rows


def _family(name: str, device: torch.device) -> str:
    ex = example(name).to(device)
    ex.model.train()
    loss = ex.loss()
    loss.backward()
    grads = [p.grad for p in ex.model.parameters() if p.requires_grad]
    if not _finite(loss, *grads):
        raise AssertionError(f"non-finite loss {loss.item()} or gradient")
    if all(g is None or not g.any() for g in grads):
        raise AssertionError("no parameter received a gradient")
    weights = ex.attention()  # in eval mode
    detail = f"loss {loss.item():.4f}"
    if device.type != "cpu":  # the same example on the CPU: the same loss, the same attention
        ref = example(name)
        ref.model.train()
        cpu_loss = ref.loss().item()
        gap = abs(loss.item() - cpu_loss) / max(1.0, abs(cpu_loss))
        if gap > 1e-3:
            raise AssertionError(f"loss {loss.item():.6f} on {device.type}, {cpu_loss:.6f} on cpu")
        detail += f"; loss within {gap:.1e} of the CPU's"
        if weights is not None:
            err = _close(weights, ref.attention(), "attention weights")
            detail += f"; weights within {err:.1e} of the CPU's"
    return detail


def check_variants(devices: list[torch.device] | None = None) -> list[dict]:
    """Every score, multi-head (explicit, fused, causal), local and multi-dimensional attention on
    each device, against the explicit computation on the CPU."""
    rows = []
    for device in devices or _devices():
        for name in sorted(SCORES):
            rows.append(_result(f"score {name}", device, lambda n=name, d=device: _score(n, d)))
        rows.append(_result("multi-head explicit + fused", device, lambda d=device: _multi_head(d)))
        for kind in ("local-m", "local-p"):
            rows.append(_result(kind, device, lambda k=kind, d=device: _local(k, d)))
        rows.append(_result("multi-dimensional", device, lambda d=device: _multidim(d)))
    return rows


def _inputs(device, B=3, L=5, S=7, E=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(B, L, E, generator=g), torch.randn(B, S, E, generator=g), torch.randn(B, S, E, generator=g)
    pad = ~lengths_to_mask(torch.tensor([S, S - 2, 1]), S)
    return [t.to(device) for t in (q, k, v, pad)], (q, k, v, pad)


def _close(a, b, what: str, tol: float = 1e-4) -> float:
    err = (a.float().cpu() - b.float().cpu()).abs().max().item()
    if not err <= tol:
        raise AssertionError(f"{what} differs from the CPU's by {err:.2e}")
    return err


def _score(name: str, device) -> str:
    (q, k, v, pad), cpu = _inputs(device)
    torch.manual_seed(0)
    layer = Attention(name, query_dim=8, key_dim=8, hidden_dim=8, max_len=7)
    ref_out, ref_w = layer(*cpu[:3], key_padding_mask=cpu[3])
    layer = layer.to(device)
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out, w = layer(q, k, v, key_padding_mask=pad)
    out.sum().backward()
    if not _finite(out, w, q.grad, k.grad, v.grad, *(p.grad for p in layer.parameters())):
        raise AssertionError("non-finite output, weights or gradient")
    err = max(_close(out, ref_out, "output"), _close(w, ref_w, "weights"))
    return f"within {err:.1e} of the CPU"


def _multi_head(device) -> str:
    (q, k, v, pad), cpu = _inputs(device, L=7)
    torch.manual_seed(0)
    explicit = MultiHeadAttention(8, 2)
    ref, _ = explicit(cpu[0], cpu[0], cpu[0], key_padding_mask=cpu[3], is_causal=True)
    fused = MultiHeadAttention(8, 2, fused=True)
    fused.load_state_dict(explicit.state_dict())
    explicit, fused = explicit.to(device), fused.to(device)
    errs = []
    for causal, padding in ((True, pad), (True, None), (False, pad)):
        a, _ = explicit(q, q, q, key_padding_mask=padding, is_causal=causal)
        b, _ = fused(q, q, q, key_padding_mask=padding, is_causal=causal, need_weights=False)
        errs.append(_close(a, b, f"fused vs explicit (is_causal={causal}, padding={padding is not None})"))
    a, _ = explicit(q, q, q, key_padding_mask=pad, is_causal=True)
    errs.append(_close(a, ref, "explicit vs the CPU"))
    return f"fused within {max(errs):.1e} of explicit; both of the CPU"


def _local(kind: str, device) -> str:
    (q, k, v, pad), cpu = _inputs(device, L=6, S=9)
    lengths = torch.tensor([9, 7, 1])
    centers = torch.tensor([[0.0, 1.5, 3.0, 4.5, 6.0, 8.0]]).expand(3, 6)
    if kind == "local-m":
        centers = torch.arange(6.0).expand(3, 6)
    score = make_score("dot")
    ref_out, ref_w, _ = local_attention(score, cpu[0], cpu[1], cpu[2], centers, lengths, 2, gaussian=kind == "local-p")
    out, w, _ = local_attention(score, q, k, v, centers.to(device), lengths.to(device), 2, gaussian=kind == "local-p")
    if not _finite(out, w):
        raise AssertionError("non-finite output or weights")
    err = max(_close(out, ref_out, "output"), _close(w, ref_w, "weights"))
    return f"within {err:.1e} of the CPU"


def _multidim(device) -> str:
    (q, _, _, pad), cpu = _inputs(device, L=7, S=7)
    torch.manual_seed(0)
    layer = MultiDimensionalAttention(8)
    ref_s, ref_p = layer(cpu[0], key_padding_mask=cpu[3])
    layer = layer.to(device)
    s, p = layer(q, key_padding_mask=pad)
    err = max(_close(s, ref_s, "summary"), _close(p, ref_p, "weights"))
    return f"within {err:.1e} of the CPU"


def chapter_notebooks(root: Path = REPO_ROOT) -> list[Path]:
    """The first notebook of every chapter (``notebooks/NN-*.ipynb``, one per NN)."""
    first: dict[str, Path] = {}
    for path in sorted((root / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        first.setdefault(path.name[:2], path)
    return list(first.values())


def _run_notebook(path: Path, device: str) -> dict:
    env = {**os.environ, "ATTENTION_DEVICE": device}
    env.pop("ATTENTION_BOOK_STATIC", None)
    start = time.perf_counter()
    code = (
        "import sys, nbformat; from nbclient import NotebookClient; nb = nbformat.read(sys.argv[1], 4); "
        "NotebookClient(nb, timeout=600, kernel_name='python3', "
        "resources={'metadata': {'path': sys.argv[2]}}).execute()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), str(path.parent)], env=env, capture_output=True, text=True
    )
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {
        "variant": path.name,
        "device": device,
        "ok": done.returncode == 0,
        "detail": "executed" if done.returncode == 0 else " | ".join(tail),
        "seconds": round(time.perf_counter() - start, 1),
    }


def _package_tests() -> dict:
    start = time.perf_counter()
    ignore = ["test_site.py", "test_notebook_outputs.py", "test_notebooks.py"]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO_ROOT / "tests"),
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "cuda",
        *(f"--ignore={REPO_ROOT / 'tests' / name}" for name in ignore),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|error|errors|skipped)", last))
    return {
        "variant": "pytest -k cuda",
        "device": "cuda",
        "ok": done.returncode == 0,
        "detail": last,
        "counts": counts,
        "seconds": round(time.perf_counter() - start, 1),
    }


def run_gpu_check(
    quick: bool = False, notebooks: bool = True, jobs: int = 6, report: str | Path | None = None, progress: bool = True
) -> dict:
    """Run every part; return (and write to ``report``, when given) the report."""
    cuda = torch.cuda.is_available()
    start = time.perf_counter()
    parts: dict[str, dict] = {}

    def part(name, fn, skipped: str | None = None):
        if skipped:
            parts[name] = {"status": "skipped", "reason": skipped, "results": []}
        else:
            t = time.perf_counter()
            results = fn()
            ok = all(r["ok"] for r in results)
            parts[name] = {
                "status": "passed" if ok else "failed",
                "results": results,
                "seconds": round(time.perf_counter() - t, 1),
            }
        if progress:
            _print_part(name, parts[name])

    part("families", check_families)
    part("variants", check_variants)
    bench_rows = {}

    def bench():
        bench_rows.update(run_benchmark(quick=quick or not cuda, record=cuda, progress=progress))
        return [
            {
                "variant": f"benchmark ({device})",
                "device": device,
                "ok": True,
                "detail": {case: round(r, 3) for case, r in summary([row.as_dict() for row in rows]).items()},
            }
            for device, rows in bench_rows.items()
        ]

    part("benchmark", bench)  # first of the long parts: nothing else runs on the GPU while it times
    checkout = (REPO_ROOT / "tests").is_dir() and (REPO_ROOT / "notebooks").is_dir()
    no_checkout = (
        f"no repository checkout at {REPO_ROOT} (tests/ and notebooks/ ship with the repository, not the package)"
    )
    skip_tests = f"{NO_CUDA}; the CPU cases run in scripts/test.sh" if not cuda else None if checkout else no_checkout
    skip_nb = (
        f"{NO_CUDA}; the site build executes every notebook on the CPU"
        if not cuda
        else no_checkout
        if not checkout
        else None
        if notebooks
        else "--no-notebooks"
    )
    # the notebooks (several kernels at once) run while the package tests run, to stay within minutes
    pool = ThreadPoolExecutor(max_workers=1)
    running = pool.submit(_notebooks_parallel, jobs) if skip_nb is None else None
    part("package tests on CUDA", lambda: [_package_tests()], skipped=skip_tests)
    part("notebooks on the GPU", lambda: running.result(), skipped=skip_nb)
    pool.shutdown()
    result = {
        "device": torch.cuda.get_device_name(0) if cuda else f"cpu ({platform.processor() or platform.machine()})",
        "versions": {
            "attention": __version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cuda": torch.version.cuda,
        },
        "passed": all(p["status"] != "failed" for p in parts.values()),
        "seconds": round(time.perf_counter() - start, 1),
        "parts": parts,
    }
    if report:
        Path(report).write_text(json.dumps(result, indent=1, default=str) + "\n")
    if progress:
        print(
            f"\ngpu-check {'passed' if result['passed'] else 'FAILED'} in {result['seconds']:.0f} s on "
            f"{result['device']}" + (f"; report: {report}" if report else "")
        )
    return result


def _notebooks_parallel(jobs: int) -> list[dict]:
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda p: _run_notebook(p, "cuda"), chapter_notebooks()))


def _print_part(name: str, part: dict) -> None:
    print(f"\n== {name}: {part['status']}" + (f" ({part['reason']})" if part["status"] == "skipped" else ""))
    for r in part["results"]:
        if not r["ok"] or name not in ("families", "variants"):
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['variant']:<28} {r['device']:<5} {r['detail']}")
    if name in ("families", "variants") and part["results"]:
        n_ok = sum(r["ok"] for r in part["results"])
        print(f"  {n_ok} of {len(part['results'])} passed on {sorted({r['device'] for r in part['results']})}")
