"""What attention costs: time and the memory kept for the backward pass, global vs local.

Memory is measured as the bytes of the tensors autograd *saves* for the backward pass
(``torch.autograd.graph.saved_tensors_hooks``): exact and the same on every machine,
unlike a process's peak RSS. On CUDA the allocator's peak is reported too. Time is
wall-clock, best of a few runs: a benchmark number, never a test assertion.
Chapter 9 plots these; ``benchmarks/bench_local.py`` prints them as ratios.
"""

from __future__ import annotations

import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from .functional import attend
from .layers import MultiHeadAttention
from .local import local_attention
from .scores import make_score

__all__ = ["attention_cost", "layer_cost"]


def _saved_bytes(fn) -> int:
    total = 0
    seen: set[int] = set()

    def pack(t):
        nonlocal total
        key = t.untyped_storage().data_ptr()
        if key not in seen:  # views of one storage count once
            seen.add(key)
            total += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return total


def attention_cost(
    kind: str,
    S: int,
    L: int | None = None,
    E: int = 64,
    D: int = 10,
    B: int = 1,
    score: str = "dot",
    device=None,
    repeat: int = 3,
) -> dict:
    """Cost of one attention call: L queries over S keys, ``kind`` "global" or "local".

    Returns ``{"seconds", "saved_bytes", "cuda_peak_bytes" (None on CPU)}``. ``L`` defaults
    to ``S`` (a target as long as its source: paragraphs, documents).
    """
    if kind not in ("global", "local"):
        raise ValueError(f"kind must be 'global' or 'local', got {kind!r}")
    L = S if L is None else L
    device = torch.device(device or "cpu")
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, L, E, generator=g).to(device).requires_grad_(True)
    k = torch.randn(B, S, E, generator=g).to(device).requires_grad_(True)
    fn_score = make_score(score, query_dim=E, key_dim=E).to(device)
    lengths = torch.full((B,), S, device=device)
    centers = torch.linspace(0, S - 1, L, device=device).expand(B, L)  # p_t along the diagonal

    def run():
        if kind == "global":
            return attend(fn_score(q, k), k)[0]
        return local_attention(fn_score, q, k, k, centers, lengths, D)[0]

    saved = _saved_bytes(run)
    peak = None
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        run().sum().backward()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
    best = float("inf")
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        run().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return {"seconds": best, "saved_bytes": saved, "cuda_peak_bytes": peak}


def layer_cost(kind: str, n: int, d: int = 128, B: int = 1, device=None, repeat: int = 3) -> dict:
    """Cost of one layer over a sequence of ``n`` positions of ``d`` dimensions, forward and
    backward: ``kind`` "self-attention" (the package's multi-head attention, one head, with its
    projections) or "rnn" (``nn.GRU``, the recurrent layer of chapters 2-3).

    Returns ``{"seconds", "saved_bytes", "flops"}``: wall-clock seconds (best of ``repeat``), the
    bytes autograd saves, and the multiply-adds of the forward pass counted by PyTorch's
    ``FlopCounterMode`` (a FLOP count is two per multiply-add). Chapter 6 plots them against
    ``n``: self-attention grows as ``n² d``, the recurrent layer as ``n d²``, and the recurrent
    layer's ``n`` steps cannot run in parallel.
    """
    if kind not in ("self-attention", "rnn"):
        raise ValueError(f"kind must be 'self-attention' or 'rnn', got {kind!r}")
    device = torch.device(device or "cpu")
    torch.manual_seed(0)
    x = torch.randn(B, n, d, device=device, requires_grad=True)
    if kind == "self-attention":
        layer = MultiHeadAttention(d, 1).to(device)

        def run():
            return layer(x, x, x, need_weights=False)[0]
    else:
        layer = torch.nn.GRU(d, d, batch_first=True).to(device)

        def run():
            return layer(x)[0]

    with FlopCounterMode(display=False) as counter:
        run()
    best = float("inf")
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        run().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return {"seconds": best, "saved_bytes": _saved_bytes(run), "flops": counter.get_total_flops() // 2}
