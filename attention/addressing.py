"""Graves et al. (2014), "Neural Turing Machines", §3.3: how a head decides where in memory to read
or write (chapter 7). Four steps turn the controller's outputs into a weighting over N slots:

    w^c_t = softmax_i(β_t · cos(k_t, M_t(i)))            content addressing          (Eq. 5-6)
    w^g_t = g_t w^c_t + (1 − g_t) w_{t−1}               interpolation with the last (Eq. 7)
    w̃_t(i) = Σ_j w^g_t(j) s_t(i − j mod N)            circular shift              (Eq. 8)
    w_t(i) = w̃_t(i)^γ_t / Σ_j w̃_t(j)^γ_t              sharpening, γ_t ≥ 1          (Eq. 9)

Shape legend: B batch, N memory slots, W slot width, S shift offsets (odd; offset −(S−1)/2 … (S−1)/2).

The content step is chapter 4's cosine score (:class:`attention.scores.CosineScore`) followed by a
softmax: attention over the memory's rows with the key as query. The other three steps let a head
keep its place (g), move by a learned offset (s) and refocus after the shift blurs it (γ): what
lets an NTM copy a sequence longer than any it was trained on. Each function takes and returns
batch-first tensors and names the shapes it was given when they do not fit.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .functional import masked_softmax
from .scores import CosineScore

__all__ = ["content_weights", "interpolate", "shift", "sharpen", "address", "ADDRESSING_STEPS"]

#: the four stages :func:`address` returns, in order
ADDRESSING_STEPS = ("content", "interpolated", "shifted", "sharpened")


def _per_row(name: str, value, like: Tensor, what: str, low: float, high: float = math.inf) -> Tensor:
    """``value`` (a number, or one per row ``(B,)``, in ``[low, high]``) as a column ``(B, 1)`` or
    ``(1, 1)`` in the dtype and device of ``like`` (the ``(B, ...)`` input named ``what``). Any other
    shape would broadcast into rows it does not belong to; NaN would pass every comparison."""
    B = like.shape[0]
    t = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    if t.dim() > 1 or (t.dim() == 1 and t.shape[0] != B):
        raise ValueError(
            f"{name} must be a number or one value per row, (B,) = ({B},); got shape "
            f"{tuple(t.shape)} for a batch of {B} ({what} {tuple(like.shape)})"
        )
    if not bool((torch.isfinite(t) & (t >= low) & (t <= high)).all()):
        bounds = f">= {low:g}" if high == math.inf else f"in [{low:g}, {high:g}]"
        raise ValueError(f"{name} must be {bounds} and finite; got {t.flatten().tolist()}")
    return t.reshape(-1, 1)  # (B, 1) or (1, 1)


def content_weights(memory: Tensor, key: Tensor, beta) -> Tensor:
    """``softmax_i(β · cos(k, M(i)))``: memory (B, N, W), key (B, W), β (B,) or a number -> (B, N)."""
    if memory.dim() != 3 or key.dim() != 2 or key.shape != (memory.shape[0], memory.shape[2]):
        raise ValueError(
            f"expected memory (B, N, W) and key (B, W); got memory {tuple(memory.shape)}, key {tuple(key.shape)}"
        )
    beta = _per_row("the key strength β", beta, key, "key", low=0)  # (B, 1) or (1, 1)
    cosine = CosineScore(beta=1.0)(key[:, None, :], memory)[:, 0]  # (B, N), in [-1, 1]
    return masked_softmax(beta * cosine)


def interpolate(content: Tensor, previous: Tensor, gate) -> Tensor:
    """``g · w^c + (1 − g) · w_{t−1}``: both (B, N), g (B,) or a number in [0, 1] -> (B, N)."""
    if content.shape != previous.shape or content.dim() != 2:
        raise ValueError(f"expected two (B, N) weightings; got {tuple(content.shape)} and {tuple(previous.shape)}")
    g = _per_row("the interpolation gate g", gate, content, "weights", low=0, high=1)  # (B, 1) or (1, 1)
    return g * content + (1 - g) * previous


def _check_distribution(kernel: Tensor) -> None:
    """A shift kernel (B, S) is a distribution over the offsets: entries >= 0, each row summing to 1
    (within the rounding of its dtype, e.g. a float16 softmax)."""
    total = kernel.sum(-1)  # (B,)
    tolerance = max(1e-4, 2 * kernel.shape[1] * torch.finfo(kernel.dtype).eps)
    finite, nonnegative = torch.isfinite(kernel).all(), (kernel >= 0).all()
    if bool(finite & nonnegative & ((total - 1).abs() <= tolerance).all()):
        return
    problem = (
        "has entries that are not finite"
        if not bool(finite)
        else "has negative entries"
        if not bool(nonnegative)
        else f"has rows that do not sum to 1 (sums {[round(x, 6) for x in total.tolist()[:8]]})"
    )
    rows = kernel.detach().cpu().tolist()[:4]
    raise ValueError(
        f"the shift kernel must be a distribution over the offsets (entries >= 0, each row summing "
        f"to 1, e.g. a softmax); the kernel {tuple(kernel.shape)} {problem}: "
        f"{rows}{' ...' if kernel.shape[0] > 4 else ''}"
    )


def shift(weights: Tensor, kernel: Tensor) -> Tensor:
    """Circular convolution ``w̃(i) = Σ_j w(j) s(i − j mod N)``: weights (B, N), kernel (B, S) or (S,),
    S odd, a distribution over the offsets −(S−1)/2 … (S−1)/2 -> (B, N)."""
    if kernel.dim() == 1:
        kernel = kernel.expand(weights.shape[0], -1)
    if weights.dim() != 2 or kernel.dim() != 2 or kernel.shape[0] != weights.shape[0] or kernel.shape[1] % 2 == 0:
        raise ValueError(
            f"expected weights (B, N) and an odd-length kernel (B, S); got weights "
            f"{tuple(weights.shape)}, kernel {tuple(kernel.shape)}"
        )
    if kernel.shape[1] > weights.shape[1]:
        raise ValueError(
            f"a shift kernel of {kernel.shape[1]} offsets needs at least as many slots; "
            f"the memory has {weights.shape[1]}"
        )
    _check_distribution(kernel)
    half = kernel.shape[1] // 2
    out = torch.zeros_like(weights)
    for index, offset in enumerate(range(-half, half + 1)):
        out = out + kernel[:, index : index + 1] * torch.roll(
            weights, shifts=offset, dims=1
        )  # weight at j moves to j + offset
    return out


def sharpen(weights: Tensor, gamma) -> Tensor:
    """``w̃^γ / Σ w̃^γ``: weights (B, N), γ (B,) or a number ≥ 1 -> (B, N).

    When every ``w̃(i)^γ`` is small, the powers underflow (``(1/128)^20`` is below float32's
    smallest normal number, ``(1/20)^5`` below float16's) and the row would sum to less than 1, or
    to 0. Such a row is computed as ``(w̃ / max w̃)^γ / Σ (w̃ / max w̃)^γ`` instead, the same number
    with its largest term 1; every other row exactly as the formula reads."""
    if weights.dim() != 2:
        raise ValueError(f"expected weights (B, N); got {tuple(weights.shape)}")
    g = _per_row("the sharpening exponent γ", gamma, weights, "weights", low=1)  # (B, 1) or (1, 1)
    w = weights.clamp_min(0)
    tiny = torch.finfo(weights.dtype).tiny
    powered = w**g  # (B, N)
    plain = powered / powered.sum(-1, keepdim=True).clamp_min(tiny)  # (B, N), Eq. 9 as written
    top = w.detach().amax(-1, keepdim=True)  # (B, 1); a constant factor, which the ratio cancels
    scaled = (w / torch.where(top > 0, top, torch.ones_like(top))) ** g  # (B, N), the largest entry is 1
    rescaled = scaled / scaled.sum(-1, keepdim=True).clamp_min(1.0)  # each sum is >= 1, or 0 for a zero row
    # a row whose largest power is a normal number at least 1/eps times over keeps every term that matters
    underflows = powered.detach().amax(-1, keepdim=True) < tiny / torch.finfo(weights.dtype).eps  # (B, 1)
    return torch.where(underflows, rescaled, plain)


def address(memory: Tensor, key: Tensor, beta, gate, previous: Tensor, kernel: Tensor, gamma) -> dict:
    """All four steps; returns ``{step: (B, N)}`` for each of :data:`ADDRESSING_STEPS`, the last
    one being the head's weighting ``w_t``."""
    content = content_weights(memory, key, beta)
    interpolated = interpolate(content, previous, gate)
    shifted = shift(interpolated, kernel)
    return dict(zip(ADDRESSING_STEPS, (content, interpolated, shifted, sharpen(shifted, gamma))))
