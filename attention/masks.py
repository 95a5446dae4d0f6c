"""Masks: which keys each query may look at.

Shape legend: B batch, H heads, L query length, S key/source length.

Two conventions live in this project, one per level (``CONTRIBUTING.md``, "Package conventions"):

* **Functional core** (``attention.functional``) follows
  :func:`torch.nn.functional.scaled_dot_product_attention`: a *keep* mask,
  boolean ``True`` = may attend, or a float mask *added* to the scores
  (``-inf`` blocks).
* **Layers** (``attention.layers``) mirror :class:`torch.nn.MultiheadAttention`:
  ``key_padding_mask`` ``(B, S)`` with ``True`` = padding, boolean ``attn_mask``
  ``(L, S)`` or ``(B*H, L, S)`` / ``(B, H, L, S)`` with ``True`` = blocked, and
  ``is_causal``.

:func:`to_keep_mask` is the one converter from the layer convention to the
functional one. The helpers below all build *keep* masks.
Chapter 4 (``book/04-scores.md``) explains masking; chapter 6 uses the causal mask.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["lengths_to_mask", "causal_mask", "window_mask", "to_keep_mask"]


def lengths_to_mask(lengths: Tensor, max_len: int | None = None) -> Tensor:
    """Keep mask from sequence lengths: ``mask[b, s] = s < lengths[b]``.

    Args:
        lengths: ``(B,)`` integer tensor of true lengths.
        max_len: S; defaults to ``lengths.max()``.

    Returns:
        ``(B, S)`` bool, True = real token (may attend). Its negation is a
        ``key_padding_mask`` in the ``nn.MultiheadAttention`` convention.
    """
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,), got shape {tuple(lengths.shape)}")
    if lengths.dtype.is_floating_point:
        raise ValueError(f"lengths must be integers, got dtype {lengths.dtype}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    S = int(lengths.max()) if max_len is None else max_len
    if (lengths > S).any():
        raise ValueError(f"a length exceeds max_len={S}: {lengths.tolist()}")
    positions = torch.arange(S, device=lengths.device)  # (S,)
    return positions[None, :] < lengths[:, None]  # (B, S)


def causal_mask(L: int, S: int | None = None, device=None) -> Tensor:
    """Keep mask where query ``i`` may see keys ``j <= i``.

    Same alignment as ``F.scaled_dot_product_attention(is_causal=True)``: the top-left
    corner, ``mask = ones(L, S).tril()``, with no ``S - L`` offset (a decoder that caches
    ``S - L`` earlier keys must shift the mask itself).

    Returns:
        ``(L, S)`` bool, True = may attend.
    """
    S = L if S is None else S
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()  # (L, S)


def window_mask(L: int, S: int, centers: Tensor | None = None, before: int = 0, after: int = 0, device=None) -> Tensor:
    """Keep mask of a window ``[c - before, c + after]`` around a centre per query.

    Args:
        centers: ``(L,)`` or ``(B, L)`` integer centre positions; defaults to
            ``arange(L)`` (the diagonal, Luong's local-m ``p_t = t``).
        before, after: how many keys left / right of the centre are kept.

    Returns:
        ``(L, S)`` or ``(B, L, S)`` bool, True = may attend.
    """
    if before < 0 or after < 0:
        raise ValueError(f"window sizes must be >= 0, got before={before}, after={after}")
    if centers is None:
        centers = torch.arange(L, device=device)
    if centers.shape[-1] != L:
        raise ValueError(f"centers has shape {tuple(centers.shape)}, last dim must be L={L}")
    keys = torch.arange(S, device=centers.device)  # (S,)
    offset = keys - centers[..., None]  # (..., L, S)
    return (offset >= -before) & (offset <= after)


def to_keep_mask(
    key_padding_mask: Tensor | None = None,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    *,
    batch_size: int,
    num_heads: int = 1,
    L: int,
    S: int,
    device=None,
) -> Tensor | None:
    """Convert ``nn.MultiheadAttention``-style masks to one functional keep mask.

    This is the **only** place where the two conventions meet.

    Args:
        key_padding_mask: ``(B, S)``, bool True = padding, or float (added).
        attn_mask: ``(L, S)``, ``(B*H, L, S)`` or ``(B, H, L, S)``; bool True =
            blocked, or float (added to the scores).
        is_causal: also block keys after the query position.
        batch_size, num_heads, L, S: the sizes the masks must agree with.

    Returns:
        ``None`` when nothing is masked; otherwise ``(B, H, L, S)`` (H may be 1):
        bool True = may attend, or float when a float mask was given.
    """
    B, H = batch_size, num_heads
    parts: list[Tensor] = []
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (B, S):
            raise ValueError(f"key_padding_mask must have shape (B, S) = {(B, S)}, got {tuple(key_padding_mask.shape)}")
        parts.append(_blocked_to_keep(key_padding_mask)[:, None, None, :])  # (B, 1, 1, S)
    if attn_mask is not None:
        shape = tuple(attn_mask.shape)
        if shape == (L, S):
            m = attn_mask[None, None]  # (1, 1, L, S)
        elif shape == (B * H, L, S):
            m = attn_mask.reshape(B, H, L, S)  # (B, H, L, S)
        elif shape == (B, H, L, S) or shape == (B, 1, L, S):
            m = attn_mask
        else:
            raise ValueError(
                f"attn_mask must have shape (L, S) = {(L, S)}, (B*H, L, S) = {(B * H, L, S)} "
                f"or (B, H, L, S) = {(B, H, L, S)}; got {shape}"
            )
        parts.append(_blocked_to_keep(m))
    if is_causal:
        parts.append(causal_mask(L, S, device=device)[None, None])  # (1, 1, L, S)
    if not parts:
        return None
    keep = parts[0]
    for part in parts[1:]:
        keep = _combine(keep, part)
    return keep.expand(B, keep.shape[1], L, S)


def _blocked_to_keep(mask: Tensor) -> Tensor:
    """Bool True = blocked becomes True = keep; float masks are additive either way."""
    if mask.dtype == torch.bool:
        return ~mask
    if not mask.dtype.is_floating_point:
        raise ValueError(f"masks must be bool or float, got dtype {mask.dtype}")
    return mask


def _combine(a: Tensor, b: Tensor) -> Tensor:
    """Intersect two keep masks; a float mask turns the result into a float mask of its dtype
    (a float16 mask stays float16, so it never promotes float16 scores to float32)."""
    if a.dtype == torch.bool and b.dtype == torch.bool:
        return a & b
    floats = [m.dtype for m in (a, b) if m.dtype != torch.bool]
    dtype = floats[0] if len(floats) == 1 else torch.promote_types(*floats)
    return _as_additive(a, dtype) + _as_additive(b, dtype)


def _as_additive(mask: Tensor, dtype: torch.dtype) -> Tensor:
    if mask.dtype == torch.bool:
        zeros = torch.zeros(mask.shape, device=mask.device, dtype=dtype)
        return zeros.masked_fill(~mask, float("-inf"))
    return mask.to(dtype)
