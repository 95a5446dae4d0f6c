"""Attention layers: a generic ``Attention``, ``MultiHeadAttention`` and ``MultiDimensionalAttention``.

Shape legend: B batch, H heads, L query length, S key length, E model dim,
D head dim (E = H·D), Eq/Ek/Ev query/key/value dims.

Masks mirror ``nn.MultiheadAttention`` (``key_padding_mask`` True = padding,
bool ``attn_mask`` True = blocked, ``is_causal``); :func:`attention.masks.to_keep_mask`
converts them once for the functional core. Layers return ``(output, weights)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .functional import attend, masked_softmax, scaled_dot_product_attention
from .masks import to_keep_mask
from .scores import Score, check_query_key, make_score

__all__ = ["Attention", "MultiHeadAttention", "MultiDimensionalAttention"]


class Attention(nn.Module):
    """Score, normalise, average: ``c_t = Σ_i softmax_i(score(s_t, h_i)) v_i``.

    The survey's general form (§3-§4, §7): any score function by name or module.

    Args:
        score: a name from :data:`attention.scores.SCORES` or a :class:`Score` module.
        query_dim, key_dim, hidden_dim, max_len: sizes for scores with parameters.
        dropout: dropout on the attention weights.
        score_options: extra arguments for the score (``scale=``, ``beta=``…).

    Shape:
        query ``(B, L, Eq)``, key ``(B, S, Ek)``, value ``(B, S, Ev)`` (defaults to key);
        key_padding_mask ``(B, S)``; attn_mask ``(L, S)`` or ``(B, L, S)``.

    Returns:
        ``(output (B, L, Ev), weights (B, L, S))``.
    """

    def __init__(
        self,
        score: str | Score = "dot",
        *,
        query_dim: int | None = None,
        key_dim: int | None = None,
        hidden_dim: int | None = None,
        max_len: int | None = None,
        dropout: float = 0.0,
        **score_options,
    ):
        super().__init__()
        key_dim = query_dim if key_dim is None else key_dim
        self.score = make_score(
            score, query_dim=query_dim, key_dim=key_dim, hidden_dim=hidden_dim, max_len=max_len, **score_options
        )
        self.dropout = dropout

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor]:
        value = key if value is None else value
        check_query_key(query, key, name="Attention")
        if value.dim() != 3 or value.shape[:2] != key.shape[:2]:
            raise ValueError(
                f"value must be (B, S, Ev) with the key's B and S; "
                f"got key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        B, L, _ = query.shape
        S = key.shape[1]
        if attn_mask is not None and attn_mask.dim() == 3:
            attn_mask = attn_mask[:, None]  # (B, L, S) -> (B, 1, L, S)
        keep = to_keep_mask(
            key_padding_mask, attn_mask, is_causal, batch_size=B, L=L, S=S, device=query.device
        )  # (B, 1, L, S) or None
        scores = self.score(query, key)  # (B, L, S)
        if keep is not None:
            keep = keep[:, 0]  # (B, L, S)
        return attend(scores, value, keep, self.dropout, self.training)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017, §3.2.2), batch first.

    ``MultiHead(Q, K, V) = Concat(head_1, …, head_H) W^O``,
    ``head_h = softmax(Q W_h^Q (K W_h^K)ᵀ / √D) V W_h^V``.

    Same arguments and masks as ``nn.MultiheadAttention(batch_first=True)``,
    with separate ``q_proj``/``k_proj``/``v_proj`` (chapter 6 copies weights from
    PyTorch's module and checks the outputs agree).

    Args:
        embed_dim: E. num_heads: H (must divide E).
        dropout: dropout on the attention weights.
        bias: biases in the projections.
        kdim, vdim: key/value input dims (default E).
        fused: compute with ``F.scaled_dot_product_attention`` when no weights are
            needed (the readable explicit path is used whenever ``need_weights``).

    Shape:
        query ``(B, L, E)``, key ``(B, S, kdim)``, value ``(B, S, vdim)``;
        key_padding_mask ``(B, S)``; attn_mask ``(L, S)`` or ``(B*H, L, S)``.

    Returns:
        output ``(B, L, E)`` and weights ``(B, L, S)`` if ``average_attn_weights``,
        else ``(B, H, L, S)``; ``None`` when ``need_weights=False``.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        fused: bool = False,
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout, self.fused = dropout, fused
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(kdim or embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(vdim or embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
        weights_hook: Callable[[Tensor], Tensor] | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """``weights_hook`` (default None): ``weights (B, H, L, S) -> (B, H, L, S)``, other weights in
        place of the softmax's, before they weigh the values (:func:`~attention.functional.attend`;
        the explicit path; the Transformer's decoder steers its cross-attention with it)."""
        self._check(query, key, value)
        B, L, E = query.shape
        S, H, D = key.shape[1], self.num_heads, self.head_dim
        fused = self.fused and not need_weights and weights_hook is None
        # causal and nothing else: the fused kernel gets PyTorch's is_causal flag, not a mask
        flag_only = fused and is_causal and key_padding_mask is None and attn_mask is None
        keep = to_keep_mask(
            key_padding_mask,
            attn_mask,
            is_causal and not flag_only,
            batch_size=B,
            num_heads=H,
            L=L,
            S=S,
            device=query.device,
        )  # (B, H or 1, L, S) or None

        q = self.q_proj(query).view(B, L, H, D).transpose(1, 2)  # (B, H, L, D)
        k = self.k_proj(key).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        v = self.v_proj(value).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)

        if fused:
            heads, weights = scaled_dot_product_attention(
                q, k, v, attn_mask=keep, is_causal=flag_only, dropout_p=self.dropout, training=self.training, fused=True
            )
        else:
            # readable path: scores, masked softmax, weighted sum
            scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, L, S)
            heads, weights = attend(scores, v, keep, self.dropout, self.training, weights_hook)
        out = heads.transpose(1, 2).reshape(B, L, E)  # (B, L, H*D) = (B, L, E)
        out = self.out_proj(out)
        if not need_weights:
            return out, None
        return out, weights.mean(dim=1) if average_attn_weights else weights

    def _check(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        if query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
            raise ValueError(f"MultiHeadAttention expects 3-D batch-first inputs; got {shapes}")
        if query.shape[-1] != self.embed_dim:
            raise ValueError(f"query's last dim must be embed_dim={self.embed_dim}; got {shapes}")
        if key.shape[-1] != self.k_proj.in_features or value.shape[-1] != self.v_proj.in_features:
            raise ValueError(
                f"key/value last dims must be kdim={self.k_proj.in_features}, "
                f"vdim={self.v_proj.in_features}; got {shapes}"
            )
        if not (query.shape[0] == key.shape[0] == value.shape[0]) or key.shape[1] != value.shape[1]:
            raise ValueError(f"query, key, value must share B, and key/value S; got {shapes}")

    @torch.no_grad()
    def load_torch_weights(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy weights from a ``nn.MultiheadAttention`` with the same sizes.

        Refuses (``ValueError``) a module this layer cannot reproduce: other sizes, other
        biases, ``add_bias_kv`` or ``add_zero_attn`` (extra key/value rows this layer does not have).
        """
        E = self.embed_dim
        problems = []
        if mha.bias_k is not None or mha.bias_v is not None:
            problems.append("add_bias_kv=True (learned extra key/value rows)")
        if mha.add_zero_attn:
            problems.append("add_zero_attn=True (an extra zero key/value row)")
        theirs = (mha.embed_dim, mha.num_heads, mha.kdim, mha.vdim)
        ours = (E, self.num_heads, self.k_proj.in_features, self.v_proj.in_features)
        if theirs != ours:
            problems.append(f"sizes (embed_dim, num_heads, kdim, vdim) = {theirs}, this layer has {ours}")
        if (mha.in_proj_bias is not None) != (self.q_proj.bias is not None) or (
            (mha.out_proj.bias is not None) != (self.out_proj.bias is not None)
        ):
            problems.append(f"bias={mha.in_proj_bias is not None}, this layer has bias={self.q_proj.bias is not None}")
        if problems:
            raise ValueError("cannot copy this nn.MultiheadAttention: " + "; ".join(problems))
        if mha._qkv_same_embed_dim:
            w_q, w_k, w_v = mha.in_proj_weight.split(E)
        else:
            w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
        for proj, w in ((self.q_proj, w_q), (self.k_proj, w_k), (self.v_proj, w_v)):
            proj.weight.copy_(w)
        if mha.in_proj_bias is not None:
            for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_bias.split(E)):
                proj.bias.copy_(b)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        if mha.out_proj.bias is not None:
            self.out_proj.bias.copy_(mha.out_proj.bias)
        return self


class MultiDimensionalAttention(nn.Module):
    """Multi-dimensional (feature-wise) attention pooling (Shen et al. 2018, DiSAN, §3.1 and §4.2).

    Scalar attention gives each position ``i`` one weight, shared by all ``E`` features of
    ``x_i``. Multi-dimensional attention scores every feature separately:

        f(x_i) = W₂ᵀ elu(W₁ x_i + b₁) + b₂ ∈ ℝ^E         # one score per feature
        P_{k,i} = softmax_i(f(x_i)_k)                      # over positions, for each feature k
        s = Σ_i P_{·,i} ⊙ x_i                              # s_k = Σ_i P_{k,i} x_{i,k}

    so feature ``k`` of the summary can be read from other words than feature ``j``. With
    ``features=False`` the same layer is the scalar form: ``W₂`` has one output, and its single
    score is shared by every feature (chapter 4, ``book/04-scores.md``, derives both).

    Args:
        dim: E, the size of each ``x_i``.
        hidden_dim: the size of ``elu(W₁ x_i + b₁)`` (default E).
        features: True = one score per feature (multi-dimensional); False = one per position.

    Shape:
        x ``(B, T, E)``; key_padding_mask ``(B, T)``, True = padding (``nn.MultiheadAttention``'s
        convention, converted once by :func:`~attention.masks.to_keep_mask`).

    Returns:
        ``(s (B, E), P (B, T, F))`` with F = E (features) or 1 (scalar). Every column of ``P``
        sums to 1 over the real positions and is exactly 0 on padding; a sequence with no real
        position gets ``P = 0`` and ``s = 0``.
    """

    def __init__(self, dim: int, hidden_dim: int | None = None, features: bool = True):
        super().__init__()
        hidden_dim = dim if hidden_dim is None else hidden_dim
        if dim < 1 or hidden_dim < 1:
            raise ValueError(f"MultiDimensionalAttention needs dim >= 1 and hidden_dim >= 1; got {dim}, {hidden_dim}")
        self.dim, self.features = dim, features
        self.hidden = nn.Linear(dim, hidden_dim)  # W₁, b₁
        self.out = nn.Linear(hidden_dim, dim if features else 1)  # W₂, b₂: E scores, or one

    def scores(self, x: Tensor) -> Tensor:
        """``f(x_i)`` for every position: ``(B, T, E)`` -> ``(B, T, F)``."""
        return self.out(F.elu(self.hidden(x)))

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if x.dim() != 3 or x.shape[-1] != self.dim:
            raise ValueError(f"MultiDimensionalAttention expects x (B, T, E={self.dim}); got {tuple(x.shape)}")
        B, T, E = x.shape
        keep = to_keep_mask(key_padding_mask, batch_size=B, L=1, S=T, device=x.device)  # (B, 1, 1, T) or None
        if keep is not None:
            keep = keep[:, 0, 0, :, None]  # (B, T, 1): the same positions for every feature
        P = masked_softmax(self.scores(x), keep, dim=1)  # (B, T, F): a softmax over T per feature
        return (P * x).sum(1), P  # (B, E): s_k = Σ_i P_{i,k} x_{i,k} (F = 1 broadcasts)
