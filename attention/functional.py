"""The functional core: masked softmax and ``attend``.

Shape legend: B batch, H heads, L query length, S key length, Dv value dim.
Any number of leading dims (``...``) is allowed as long as they broadcast.

Every attention variant in this package ends the same way (survey §3, §7):

    alpha = softmax(scores)           # a distribution over the S keys
    output = alpha @ value            # c_t = sum_i alpha_{t,i} v_i

Masks follow ``F.scaled_dot_product_attention``: bool True = may attend, or a
float mask added to the scores. A query whose keys are all blocked gets zero
weights and zero output -- never NaN -- and finite (zero) gradients.
Chapter 4 (``book/04-scores.md``) derives this; chapter 7 reads it as memory addressing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from .masks import causal_mask

__all__ = ["masked_softmax", "attend", "scaled_dot_product_attention"]


def masked_softmax(scores: Tensor, mask: Tensor | None = None, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` that ignores blocked positions.

    Args:
        scores: ``(..., L, S)`` raw scores ``e_{t,i}``.
        mask: broadcastable to ``scores``: bool True = may attend, or float added.

    Returns:
        Weights of the same shape; rows with no admissible key are all zero.
    """
    if mask is not None:
        _check_broadcast(mask.shape, scores.shape, "mask", "scores")
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        elif mask.dtype.is_floating_point:
            scores = scores + mask.to(scores.dtype)  # never promote float16 scores
        else:
            raise ValueError(f"mask must be bool or float, got dtype {mask.dtype}")
    # A row whose every entry is -inf would give 0/0 = NaN. Replace such rows by
    # zeros before the softmax (masked_fill passes no gradient to what it
    # overwrites, so gradients stay finite) and zero their weights afterwards.
    empty = (scores == float("-inf")).all(dim=dim, keepdim=True)  # (..., L, 1)
    weights = torch.softmax(scores.masked_fill(empty, 0.0), dim=dim)
    return weights.masked_fill(empty, 0.0)


def attend(
    scores: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
    weights_hook: Callable[[Tensor], Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """Turn scores into weights and weights into a weighted sum of values.

    Args:
        scores: ``(..., L, S)``.
        value: ``(..., S, Dv)``.
        mask: keep mask broadcastable to ``scores`` (see module docstring).
        dropout_p: dropout on the weights (Vaswani et al. 2017, §5.4).
        weights_hook: ``weights (..., L, S) -> (..., L, S)``, other weights in place of the
            softmax's, between the softmax and the product (unchecked here: the callers that take
            one from a reader check it; chapter 10 and the playground steer a decoder with it).
            None, the default, changes nothing.

    Returns:
        ``(output (..., L, Dv), weights (..., L, S))``; the weights are the
        ones before dropout, the distribution a chapter plots (the hook's, when given).
    """
    if value.dim() < 2 or scores.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"scores (..., L, S) and value (..., S, Dv) disagree on S: "
            f"scores {tuple(scores.shape)}, value {tuple(value.shape)}"
        )
    weights = masked_softmax(scores, mask)  # (..., L, S)
    if weights_hook is not None:
        weights = weights_hook(weights)  # (..., L, S)
    used = F.dropout(weights, p=dropout_p, training=training) if dropout_p > 0 else weights
    output = used @ value  # (..., L, Dv)
    return output, weights


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
    fused: bool = False,
    weights_hook: Callable[[Tensor], Tensor] | None = None,
) -> tuple[Tensor, Tensor | None]:
    """``softmax(Q Kᵀ / √d) V`` (Vaswani et al. 2017, Eq. 1), explicit or fused.

    Args:
        query: ``(..., L, D)``; key: ``(..., S, D)``; value: ``(..., S, Dv)``.
        attn_mask: keep mask broadcastable to ``(..., L, S)`` (True = may attend) or float.
        is_causal: block keys after the query (top-left aligned, like PyTorch). Fused and with
            no ``attn_mask``, it reaches ``F.scaled_dot_product_attention(is_causal=True)``
            as the flag, not as a mask; otherwise the mask is built (:func:`~attention.masks.causal_mask`).
        scale: defaults to ``1 / sqrt(D)``.
        fused: use ``F.scaled_dot_product_attention`` (no weights returned).
        weights_hook: other weights in place of the softmax's (:func:`attend`); explicit path only.

    Returns:
        ``(output (..., L, Dv), weights (..., L, S) or None when fused)``.
    """
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query (..., L, D) and key (..., S, D) need the same D: query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    if fused and weights_hook is not None:
        raise ValueError("weights_hook replaces the weights, which the fused path never forms: use fused=False")
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    p = dropout_p if training else 0.0
    if fused and attn_mask is None:
        # No mask to build: PyTorch's own causal flag, the only way its fastest (flash,
        # memory-efficient) kernels are chosen for a causal model. Every row keeps key 0.
        return F.scaled_dot_product_attention(query, key, value, dropout_p=p, is_causal=is_causal, scale=scale), None
    if is_causal:
        causal = causal_mask(L, S, device=query.device)  # (L, S), the same top-left alignment
        attn_mask = causal if attn_mask is None else _intersect(attn_mask, causal)
    if not fused:
        scores = (query @ key.transpose(-2, -1)) * scale  # (..., L, S)
        return attend(scores, value, attn_mask, dropout_p, training, weights_hook)
    _check_broadcast(attn_mask.shape, query.shape[:-1] + (S,), "attn_mask", "(..., L, S)")
    # PyTorch's kernels return NaN for a query with no admissible key. Open one
    # key for such rows so the kernel stays finite, then zero their output.
    allowed = attn_mask if attn_mask.dtype == torch.bool else attn_mask != float("-inf")
    empty = ~allowed.any(dim=-1, keepdim=True)  # (..., L, 1)
    if not bool(empty.any()):  # the usual case: the mask goes to the kernel as it is
        return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=p, scale=scale), None
    if attn_mask.dtype == torch.bool:
        safe_mask = attn_mask | empty
    else:
        safe_mask = attn_mask.masked_fill(empty, 0.0)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=safe_mask, dropout_p=p, scale=scale)
    return out.masked_fill(empty, 0.0), None


def _intersect(mask: Tensor, keep: Tensor) -> Tensor:
    if mask.dtype == torch.bool:
        return mask & keep
    return mask.masked_fill(~keep, float("-inf"))


def _check_broadcast(mask_shape, target_shape, mask_name: str, target_name: str) -> None:
    """Masks may broadcast *to* the scores, never enlarge them (no silent broadcast)."""
    try:
        shape = torch.broadcast_shapes(mask_shape, target_shape)
    except RuntimeError:
        shape = None
    if shape != torch.Size(target_shape):
        raise ValueError(
            f"{mask_name} of shape {tuple(mask_shape)} does not broadcast to "
            f"{target_name} of shape {tuple(target_shape)}"
        )
