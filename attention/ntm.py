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

import torch
from torch import Tensor

from .functional import masked_softmax
from .scores import CosineScore

__all__ = ["content_weights", "interpolate", "shift", "sharpen", "address", "ADDRESSING_STEPS"]

#: the four stages :func:`address` returns, in order
ADDRESSING_STEPS = ("content", "interpolated", "shifted", "sharpened")


def content_weights(memory: Tensor, key: Tensor, beta) -> Tensor:
    """``softmax_i(β · cos(k, M(i)))``: memory (B, N, W), key (B, W), β (B,) or a number -> (B, N)."""
    if memory.dim() != 3 or key.dim() != 2 or key.shape != (memory.shape[0], memory.shape[2]):
        raise ValueError(f"expected memory (B, N, W) and key (B, W); got memory {tuple(memory.shape)}, "
                         f"key {tuple(key.shape)}")
    beta = torch.as_tensor(beta, dtype=memory.dtype, device=memory.device)
    if bool((beta < 0).any()):
        raise ValueError(f"the key strength β must be >= 0; got {beta.tolist()}")
    cosine = CosineScore(beta=1.0)(key[:, None, :], memory)[:, 0]  # (B, N), in [-1, 1]
    return masked_softmax(beta.reshape(-1, 1) * cosine)


def interpolate(content: Tensor, previous: Tensor, gate) -> Tensor:
    """``g · w^c + (1 − g) · w_{t−1}``: both (B, N), g (B,) or a number in [0, 1] -> (B, N)."""
    if content.shape != previous.shape or content.dim() != 2:
        raise ValueError(f"expected two (B, N) weightings; got {tuple(content.shape)} and {tuple(previous.shape)}")
    g = torch.as_tensor(gate, dtype=content.dtype, device=content.device).reshape(-1, 1)
    if bool(((g < 0) | (g > 1)).any()):
        raise ValueError(f"the interpolation gate g must be in [0, 1]; got {g.flatten().tolist()}")
    return g * content + (1 - g) * previous


def shift(weights: Tensor, kernel: Tensor) -> Tensor:
    """Circular convolution ``w̃(i) = Σ_j w(j) s(i − j mod N)``: weights (B, N), kernel (B, S) or (S,),
    S odd, a distribution over the offsets −(S−1)/2 … (S−1)/2 -> (B, N)."""
    if kernel.dim() == 1:
        kernel = kernel.expand(weights.shape[0], -1)
    if weights.dim() != 2 or kernel.dim() != 2 or kernel.shape[0] != weights.shape[0] or kernel.shape[1] % 2 == 0:
        raise ValueError(f"expected weights (B, N) and an odd-length kernel (B, S); got weights "
                         f"{tuple(weights.shape)}, kernel {tuple(kernel.shape)}")
    if kernel.shape[1] > weights.shape[1]:
        raise ValueError(f"a shift kernel of {kernel.shape[1]} offsets needs at least as many slots; "
                         f"the memory has {weights.shape[1]}")
    half = kernel.shape[1] // 2
    out = torch.zeros_like(weights)
    for index, offset in enumerate(range(-half, half + 1)):
        out = out + kernel[:, index:index + 1] * torch.roll(weights, shifts=offset, dims=1)  # weight at j moves to j + offset
    return out


def sharpen(weights: Tensor, gamma) -> Tensor:
    """``w̃^γ / Σ w̃^γ``: weights (B, N), γ (B,) or a number ≥ 1 -> (B, N)."""
    g = torch.as_tensor(gamma, dtype=weights.dtype, device=weights.device).reshape(-1, 1)
    if bool((g < 1).any()):
        raise ValueError(f"the sharpening exponent γ must be >= 1; got {g.flatten().tolist()}")
    powered = weights.clamp_min(0) ** g
    return powered / powered.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


def address(memory: Tensor, key: Tensor, beta, gate, previous: Tensor, kernel: Tensor, gamma) -> dict:
    """All four steps; returns ``{step: (B, N)}`` for each of :data:`ADDRESSING_STEPS`, the last
    one being the head's weighting ``w_t``."""
    content = content_weights(memory, key, beta)
    interpolated = interpolate(content, previous, gate)
    shifted = shift(interpolated, kernel)
    return dict(zip(ADDRESSING_STEPS, (content, interpolated, shifted, sharpen(shifted, gamma))))
