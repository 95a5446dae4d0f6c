"""The benchmark: the package's attention against PyTorch's kernels, as ratios measured in one run.

    python -m attention bench             # this machine's CPU, and its GPU when there is one
    python -m attention bench --quick     # smaller sizes, fewer repeats (the tests, the GPU check)

Every case times the forward *and* backward pass (best of a few measurements of at least 20 ms
each, ours and PyTorch's taken in turn so that the machine's drift hits both; the first row times
PyTorch's kernel against itself, the noise floor of the run) and, on CUDA, the peak memory the pass allocates.
It prints one table per device and dtype and writes the record ``benchmark`` of the results
registry (``attention/results/benchmark.json``), one section per device, so that a CPU-only run
keeps the GPU section an earlier run wrote. The book's performance appendix
(``book/13-performance.md``) reads it.

The goals (:data:`GOALS`, not asserted: these machines are noisy) are ratios ours / PyTorch's:
the fused multi-head path within 1.10x of ``F.scaled_dot_product_attention`` with a padding mask
and with ``is_causal``; the readable multi-head layer within 2x of ``nn.MultiheadAttention``
returning weights; the Transformer encoder layer within 1.2x of ``nn.TransformerEncoderLayer``.
Informational rows: additive, concat and general scores against the dot score at equal sizes;
local against global attention as the source grows (chapter 9's ``attention/cost.py``); and a
training step of every model family (``attention/book/families.py``) in tokens per second.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..cost import attention_cost
from ..functional import scaled_dot_product_attention
from ..layers import Attention, MultiHeadAttention
from ..masks import lengths_to_mask
from ..models.transformer import EncoderLayer
from ..results import load_result, record_result
from .families import EXAMPLES, example

__all__ = ["GOALS", "Row", "run_benchmark", "format_rows", "cuda_dtypes", "summary"]

#: case -> the largest ratio ours / PyTorch's the package aims for
GOALS = {
    "fused MHA, padding mask": 1.10,
    "fused MHA, is_causal": 1.10,
    "explicit MHA vs nn.MultiheadAttention": 2.0,
    "encoder layer vs nn.TransformerEncoderLayer": 1.2,
}


@dataclass
class Row:
    """One measured case: our time (and peak memory on CUDA) beside the reference's."""

    group: str  # "kernels", "scores", "local", "models"
    case: str
    size: str
    dtype: str
    ours_ms: float
    ref_ms: float | None = None  # the reference's time (PyTorch's kernel, or our dot score / global attention)
    ours_mb: float | None = None  # CUDA peak memory, or the bytes autograd saves (local vs global)
    ref_mb: float | None = None
    tokens_per_s: float | None = None
    reference: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.ref_ms is None else self.ours_ms / self.ref_ms

    @property
    def goal(self) -> float | None:
        return GOALS.get(self.case)

    def as_dict(self) -> dict:
        d = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}
        d["ratio"] = None if self.ratio is None else round(self.ratio, 3)
        d["goal"] = self.goal
        d["met"] = None if self.goal is None else bool(self.ratio <= self.goal)
        return d


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _fwd_bwd(fn: Callable[[], torch.Tensor], leaves: list[torch.Tensor]) -> Callable[[], None]:
    """A pass of ``fn`` and the backward pass of its sum, the gradients dropped afterwards."""

    def run():
        fn().float().sum().backward()
        for t in leaves:
            t.grad = None

    return run


#: the shortest a timed measurement may be: fast calls are repeated inside it
MIN_MEASURE_S = 0.02


def _calls_per_measure(fn: Callable[[], None], device) -> int:
    """How many calls of ``fn`` make one measurement of at least :data:`MIN_MEASURE_S`."""
    fn()  # warm-up
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    once = max(time.perf_counter() - start, 1e-6)
    return max(1, min(1000, round(MIN_MEASURE_S / once)))


def _measure(fn: Callable[[], None], device, calls: int) -> float:
    _sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / calls


def _time_pair(ours: Callable[[], None], ref: Callable[[], None], device, repeat: int) -> tuple[float, float]:
    """Best seconds per call of each, measured in turn, so the machine's drift hits both."""
    calls = [_calls_per_measure(fn, device) for fn in (ours, ref)]
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((ours, ref)):
            best[i] = min(best[i], _measure(fn, device, calls[i]))
    return best[0], best[1]


def _peak_mb(fn: Callable[[], None], device: torch.device) -> float | None:
    """MiB the pass allocates above what was allocated before it (CUDA only)."""
    if device.type != "cuda":
        return None
    _sync(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    _sync(device)
    return (torch.cuda.max_memory_allocated(device) - base) / 2**20


def _pair(group, case, size, dtype, ours, ref, device, repeat, reference) -> Row:
    t_ours, t_ref = _time_pair(ours, ref, device, repeat)
    return Row(
        group,
        case,
        size,
        str(dtype).replace("torch.", ""),
        t_ours * 1e3,
        t_ref * 1e3,
        _peak_mb(ours, device),
        _peak_mb(ref, device),
        reference=reference,
    )


def kernel_rows(device: torch.device, dtype: torch.dtype, B: int, H: int, L: int, E: int, repeat: int) -> list[Row]:
    """Fused and explicit multi-head attention and the encoder layer against PyTorch's modules."""
    g = torch.Generator().manual_seed(0)
    D, size = E // H, f"B={B} H={H} L={L} E={E}"
    q, k, v = (torch.randn(B, H, L, D, generator=g).to(device, dtype).requires_grad_() for _ in range(3))
    lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
    keep = lengths_to_mask(lengths, L).to(device)[:, None, None, :]  # (B, 1, 1, L)
    pad = ~keep[:, 0, 0]  # (B, L) True = padding
    x = torch.randn(B, L, E, generator=g).to(device, dtype).requires_grad_()
    theirs = nn.MultiheadAttention(E, H, batch_first=True).to(device, dtype)
    ours = MultiHeadAttention(E, H).to(device, dtype).load_torch_weights(theirs)
    their_layer = nn.TransformerEncoderLayer(E, H, 4 * E, dropout=0.0, batch_first=True).to(device, dtype)
    our_layer = EncoderLayer(E, H, 4 * E, fused=True).to(device, dtype).load_torch_weights(their_layer)
    qkv = [q, k, v]
    cases = [
        (
            "noise floor: F.sdpa vs itself",
            "F.scaled_dot_product_attention",
            lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
            lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
            qkv,
        ),
        (
            "fused MHA, padding mask",
            "F.scaled_dot_product_attention",
            lambda: scaled_dot_product_attention(q, k, v, attn_mask=keep, fused=True)[0],
            lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
            qkv,
        ),
        (
            "fused MHA, is_causal",
            "F.scaled_dot_product_attention",
            lambda: scaled_dot_product_attention(q, k, v, is_causal=True, fused=True)[0],
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            qkv,
        ),
        (
            "explicit MHA vs nn.MultiheadAttention",
            "nn.MultiheadAttention (weights)",
            lambda: ours(x, x, x, key_padding_mask=pad)[0],
            lambda: theirs(x, x, x, key_padding_mask=pad)[0],
            [x],
        ),
        (
            "encoder layer vs nn.TransformerEncoderLayer",
            "nn.TransformerEncoderLayer",
            lambda: our_layer(x, key_padding_mask=pad)[0],
            lambda: their_layer(x, src_key_padding_mask=pad),
            [x],
        ),
    ]
    params = [p for m in (ours, theirs, our_layer, their_layer) for p in m.parameters()]
    rows = []
    for case, reference, mine, ref, leaves in cases:
        rows.append(
            _pair(
                "kernels",
                case,
                size,
                dtype,
                _fwd_bwd(mine, leaves + params),
                _fwd_bwd(ref, leaves + params),
                device,
                repeat,
                reference,
            )
        )
    return rows


def score_rows(device: torch.device, dtype: torch.dtype, B: int, L: int, E: int, repeat: int) -> list[Row]:
    """Every score with parameters against the dot score, as an ``Attention`` layer at one size."""
    g = torch.Generator().manual_seed(1)
    q = torch.randn(B, L, E, generator=g).to(device, dtype).requires_grad_()
    k = torch.randn(B, L, E, generator=g).to(device, dtype).requires_grad_()
    pad = ~lengths_to_mask(torch.randint(L // 2, L + 1, (B,), generator=g), L).to(device)
    dot = Attention("dot", query_dim=E).to(device, dtype)
    ref = _fwd_bwd(lambda: dot(q, k, key_padding_mask=pad)[0], [q, k])
    rows = []
    for name in ("general", "additive", "concat"):
        layer = Attention(name, query_dim=E, key_dim=E, hidden_dim=E).to(device, dtype)
        mine = _fwd_bwd(lambda layer=layer: layer(q, k, key_padding_mask=pad)[0], [q, k, *layer.parameters()])
        rows.append(
            _pair(
                "scores",
                f"{name} score vs dot",
                f"B={B} L=S={L} E=A={E}",
                dtype,
                mine,
                ref,
                device,
                repeat,
                "the dot score",
            )
        )
    return rows


def local_rows(device: torch.device, sizes: list[int], repeat: int) -> list[Row]:
    """Local (D = 10) against global attention as the source grows; memory = bytes saved for backward."""
    rows = []
    for S in sizes:
        glob = attention_cost("global", S, device=device, repeat=repeat)
        loc = attention_cost("local", S, device=device, repeat=repeat)
        rows.append(
            Row(
                "local",
                "local vs global attention",
                f"L=S={S} E=64 D=10",
                "float32",
                loc["seconds"] * 1e3,
                glob["seconds"] * 1e3,
                loc["saved_bytes"] / 2**20,
                glob["saved_bytes"] / 2**20,
                reference="global attention",
            )
        )
    return rows


def model_rows(device: torch.device, repeat: int) -> list[Row]:
    """A training step (forward, backward) of every model family's small example, in tokens per second."""
    rows = []
    for name in sorted(EXAMPLES):
        ex = example(name).to(device)
        ex.model.train()
        step = _fwd_bwd(ex.loss, list(ex.model.parameters()))
        calls = _calls_per_measure(step, device)
        best = min(_measure(step, device, calls) for _ in range(repeat))
        rows.append(
            Row(
                "models",
                name,
                f"batch of {ex.tokens} positions",
                "float32",
                best * 1e3,
                ours_mb=_peak_mb(step, device),
                tokens_per_s=ex.tokens / best,
            )
        )
    return rows


def cuda_dtypes() -> list[torch.dtype]:
    """float32, and the half types this GPU computes natively."""
    dtypes = [torch.float32, torch.float16]
    if torch.cuda.is_bf16_supported():
        dtypes.append(torch.bfloat16)
    return dtypes


def run_benchmark(
    devices: list[str] | None = None, quick: bool = False, record: bool = True, directory=None, progress: bool = True
) -> dict[str, list[Row]]:
    """Measure every case on each device; print the tables; write the record ``benchmark``.

    Returns ``{device: [Row, ...]}``. ``quick`` uses smaller sizes and fewer repeats.
    """
    if devices is None:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    repeat = 3 if quick else 7
    results: dict[str, list[Row]] = {}
    start = time.perf_counter()
    for name in devices:
        device = torch.device(name)
        rows: list[Row] = []
        kernel_sizes = [(8, 4, 128, 256)] if quick else [(8, 4, 128, 256), (4, 8, 512, 512)]
        dtypes = cuda_dtypes() if device.type == "cuda" else [torch.float32]
        if device.type == "cuda" and not quick:
            kernel_sizes.append((8, 16, 2048, 1024))
        for dtype in dtypes:
            for B, H, L, E in kernel_sizes:
                rows += kernel_rows(device, dtype, B, H, L, E, repeat)
            rows += score_rows(device, dtype, 8, 64 if quick else 128, 128, repeat)
        local_sizes = [64, 256] if quick else [64, 256, 1024, 4096]
        rows += local_rows(device, local_sizes, repeat)
        rows += model_rows(device, repeat)
        results[name] = rows
        if progress:
            print(format_rows(rows, _device_label(device)))
    wall = time.perf_counter() - start
    if record:
        _record(results, quick, repeat, wall, directory)
    return results


def _device_label(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"cpu: {torch.get_num_threads()} thread(s)"


def _record(results: dict[str, list[Row]], quick: bool, repeat: int, wall: float, directory) -> dict:
    """Write ``benchmark``, keeping the sections of devices this run did not measure."""
    metrics = {}
    try:
        metrics = dict(load_result("benchmark", directory)["metrics"])
    except FileNotFoundError:
        pass
    for name, rows in results.items():
        label = _device_label(torch.device(name))
        metrics[name] = {
            "label": label,
            "quick": quick,
            "threads": torch.get_num_threads(),
            "rows": [r.as_dict() for r in rows],
        }
    device = "cuda" if "cuda" in results else "cpu"
    return record_result(
        "benchmark",
        command="python -m attention bench" + (" --quick" if quick else ""),
        recipe={"goals": GOALS, "repeat": repeat, "timing": "best of repeat, fwd+bwd"},
        seeds=[0],
        metrics=metrics,
        wall_seconds=wall,
        device=device,
        directory=directory,
        notes="ratios are ours / the reference's; memory: CUDA peak above the allocation "
        "before the pass, or (local rows) the bytes autograd saves",
    )


def format_rows(rows: list[Row], label: str) -> str:
    """The table ``python -m attention bench`` prints."""
    lines = [
        f"\n{label}",
        f"{'case':<46} {'size':<22} {'dtype':<9} {'ours ms':>9} {'ref ms':>9} {'ratio':>6} {'goal':>5} "
        f"{'mem x':>6} {'tok/s':>9}",
    ]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:6.2f}"
        goal = "" if r.goal is None else f"{r.goal:5.2f}"
        mem = f"{r.ours_mb / r.ref_mb:6.2f}" if r.ours_mb is not None and r.ref_mb else ""
        tok = "" if r.tokens_per_s is None else f"{r.tokens_per_s:9.0f}"
        ref = "" if r.ref_ms is None else f"{r.ref_ms:9.2f}"
        mark = "" if r.goal is None else ("  ok" if r.ratio <= r.goal else f"  missed by {r.ratio / r.goal - 1:.0%}")
        lines.append(
            f"{r.case:<46} {r.size:<22} {r.dtype:<9} {r.ours_ms:9.2f} {ref:>9} {ratio:>6} {goal:>5} "
            f"{mem:>6} {tok:>9}{mark}"
        )
    return "\n".join(lines)


def summary(rows: list[dict]) -> dict[str, float]:
    """case -> the median ratio over its sizes (the appendix's headline per goal)."""
    by_case: dict[str, list[float]] = {}
    for r in rows:
        if r["ratio"] is not None:
            by_case.setdefault(r["case"], []).append(r["ratio"])
    return {case: statistics.median(v) for case, v in by_case.items()}
