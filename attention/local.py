"""Local attention (Luong et al. 2015, §3.2): look only at a window around a position.

Shape legend: B batch, L query (target) length, S source length, W = 2D+1 window
width, Eq/Ek/Ev query/key/value dims.

Global attention scores all S source states for every target step: cost L·S.
Local attention picks an aligned position ``p_t`` and attends to the window
``[p_t − D, p_t + D]`` only, with weights shaped by a Gaussian around ``p_t``::

    a_t(s) = align(h_t, h̄_s) · exp(−(s − p_t)² / 2σ²),   σ = D/2        (Luong Eq. 10)

* **local-m** (monotonic): ``p_t = t``, plain softmax inside the window (Eq. 7).
* **local-p** (predictive): ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` (Eq. 9), where S
  is the sentence's own source length, and the Gaussian above (Eq. 10).

:func:`local_attention` *gathers* the W keys of each window, so time and memory grow
with L·W, not L·S. :func:`local_attention_reference` scores everything and masks;
it is the readable definition, and a test proves the two agree (values and gradients).
Chapter 9 (``book/09-global-local.md``) teaches this.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .functional import masked_softmax
from .masks import lengths_to_mask

__all__ = ["local_attention", "local_attention_reference", "window_positions", "PredictivePosition"]


class PredictivePosition(nn.Module):
    """local-p's aligned position ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` (Luong Eq. 9)."""

    def __init__(self, query_dim: int, hidden_dim: int):
        super().__init__()
        self.W_p = nn.Linear(query_dim, hidden_dim, bias=False)
        self.v_p = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query: Tensor, src_lengths: Tensor) -> Tensor:
        """query ``(B, L, Eq)``, src_lengths ``(B,)`` -> positions ``(B, L)`` in ``[0, S_b]``."""
        gate = torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(-1)  # (B, L)
        return src_lengths[:, None].to(gate.dtype) * gate


def window_positions(centers: Tensor, D: int) -> Tensor:
    """Integer source positions of each window: ``round(p_t) + [-D … D]``, shape ``(B, L, 2D+1)``."""
    offsets = torch.arange(-D, D + 1, device=centers.device)  # (W,)
    return torch.round(centers).long()[..., None] + offsets  # (B, L, W)


def _check(query, key, value, centers, src_lengths, D):
    B, L, _ = query.shape
    if key.dim() != 3 or value.dim() != 3 or key.shape[:2] != value.shape[:2] or key.shape[0] != B:
        raise ValueError(
            f"local attention expects query (B, L, Eq), key (B, S, Ek), value (B, S, Ev); "
            f"got query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        )
    if centers.shape != (B, L):
        raise ValueError(f"centers must be (B, L) = {(B, L)}, got {tuple(centers.shape)}")
    if src_lengths.shape != (B,):
        raise ValueError(f"src_lengths must be (B,) = ({B},), got {tuple(src_lengths.shape)}")
    if D < 0:
        raise ValueError(f"window half-width D must be >= 0, got {D}")


def local_attention(
    score,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    centers: Tensor,
    src_lengths: Tensor,
    D: int,
    gaussian: bool = True,
    sigma: float | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Attend to ``2D+1`` keys around each centre, gathering only those keys.

    Args:
        score: a score module ``(B', L', Eq), (B', S', Ek) -> (B', L', S')`` (content-based:
            dot, general, scaled_dot, additive, concat, cosine -- not "location").
        query: ``(B, L, Eq)``; key ``(B, S, Ek)``; value ``(B, S, Ev)``.
        centers: ``(B, L)`` aligned positions ``p_t`` (real-valued for local-p).
        src_lengths: ``(B,)``: keys at or beyond a sentence's length are never attended.
        D: window half-width. gaussian: multiply by ``exp(−(s − p_t)²/2σ²)``, ``σ = D/2``.

    Returns:
        ``(output (B, L, Ev), weights (B, L, W), positions (B, L, W))``; weights outside
        the sentence are exactly zero (and so are rows whose window holds no key).
    """
    _check(query, key, value, centers, src_lengths, D)
    B, L, Eq = query.shape
    S, W = key.shape[1], 2 * D + 1
    positions = window_positions(centers, D)  # (B, L, W)
    inside = (positions >= 0) & (positions < src_lengths[:, None, None])  # (B, L, W)
    index = positions.clamp(0, max(S - 1, 0)).reshape(B, L * W)  # (B, L·W)

    def gather(x):  # (B, S, E) -> (B·L, W, E): each query's own window of keys
        picked = x.gather(1, index[..., None].expand(B, L * W, x.shape[-1]))  # (B, L·W, E)
        return picked.reshape(B * L, W, x.shape[-1])

    scores = score(query.reshape(B * L, 1, Eq), gather(key))  # (B·L, 1, W)
    weights = masked_softmax(scores.reshape(B, L, W), inside)  # (B, L, W)
    if gaussian and D > 0:  # with D = 0 the window is one position: nothing to shape
        sigma = D / 2 if sigma is None else sigma
        weights = weights * torch.exp(-((positions - centers[..., None]) ** 2) / (2 * sigma**2))
    output = (weights.reshape(B * L, 1, W) @ gather(value)).reshape(B, L, value.shape[-1])  # (B, L, Ev)
    return output, weights, positions


def local_attention_reference(
    score,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    centers: Tensor,
    src_lengths: Tensor,
    D: int,
    gaussian: bool = True,
    sigma: float | None = None,
) -> tuple[Tensor, Tensor]:
    """The same thing the slow, obvious way: score all S keys, mask outside the window.

    Returns ``(output (B, L, Ev), weights (B, L, S))``. Costs L·S, like global attention.
    """
    _check(query, key, value, centers, src_lengths, D)
    S = key.shape[1]
    s = torch.arange(S, device=key.device)  # (S,)
    lo = torch.round(centers).long()[..., None] - D  # (B, L, 1)
    keep = (s >= lo) & (s <= lo + 2 * D) & lengths_to_mask(src_lengths, S)[:, None, :]  # (B, L, S)
    weights = masked_softmax(score(query, key), keep)  # (B, L, S)
    if gaussian and D > 0:
        sigma = D / 2 if sigma is None else sigma
        weights = weights * torch.exp(-((s - centers[..., None]) ** 2) / (2 * sigma**2))
    return weights @ value, weights
