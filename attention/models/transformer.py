"""The Transformer (Vaswani et al. 2017, "Attention Is All You Need"): chapter 6.

Shape legend: B batch, S source length, T target length, L query length, H heads,
E model dim (d_model), D head dim (E / H), F feed-forward dim (d_ff), V vocabulary.

One small unit per formula of the paper:

* :class:`PositionalEncoding` -- §3.5, the sinusoids (or a learned table);
* :class:`FeedForward` -- §3.3, Eq. 2, ``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2``;
* :class:`Residual` -- §3.1 and §5.4, ``LayerNorm(x + Dropout(Sublayer(x)))`` (post-LN, the
  paper's) or ``x + Dropout(Sublayer(LayerNorm(x)))`` (pre-LN);
* :class:`EncoderLayer`, :class:`DecoderLayer` -- §3.1 and Figure 1, built from
  :class:`~attention.layers.MultiHeadAttention` (§3.2.2);
* :class:`Transformer` -- embeddings scaled by ``√E`` (§3.4), the two stacks, the output layer;
* :func:`noam_schedule` -- §5.3, Eq. 3, the warm-up learning rate.

The layers do what ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer`` and
``nn.Transformer`` (``batch_first=True``) do, sublayer for sublayer and dropout for dropout,
and copy their weights (``load_torch_weights``), so chapter 6 can show that the outputs agree.
Teacher forcing computes every target position at once under a causal mask; decoding
(greedy, beam search) feeds one token per :meth:`Transformer.step` and keeps each decoder
layer's keys and values in a :class:`TransformerState`.

``Transformer.step(..., weights_hook=f, hook_at=(layer, head))`` puts other weights in place of one
cross-attention head's (or, ``head=None``, every head's of that layer), between the softmax and the
product with the values, as ``Seq2Seq.step`` does for RNNsearch (chapter 10, the playground);
``decoder_stack(..., cross_weights_hook=)`` does it for every position of a prefix.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import scaled_dot_product_attention
from ..layers import MultiHeadAttention
from ..masks import lengths_to_mask, to_keep_mask
from .base import SequenceModel
from .checks import check_ids, check_special_id
from .interface import Encoded, EncoderMemory, SequenceOutput, Step
from .registry import register_model
from .seq2seq import WeightsHook, check_weights

__all__ = [
    "TransformerConfig",
    "Transformer",
    "TransformerOutput",
    "TransformerMaps",
    "TransformerState",
    "KeyValues",
    "PositionalEncoding",
    "FeedForward",
    "Residual",
    "EncoderLayer",
    "DecoderLayer",
    "noam_schedule",
]


@dataclass
class TransformerConfig:
    src_vocab: int  # source vocabulary size
    tgt_vocab: int  # V, target vocabulary size
    d_model: int = 64  # E, embeddings and every sublayer's output
    num_heads: int = 4  # H, must divide d_model
    num_layers: int = 2  # N, layers in the encoder and in the decoder
    d_ff: int = 256  # F, inner size of the feed-forward sublayer
    dropout: float = 0.1  # residual, embedding, attention-weight and feed-forward dropout (§5.4)
    norm_first: bool = False  # False: post-LN (the paper); True: pre-LN (LayerNorm inside the residual)
    positional: str = "sinusoidal"  # "sinusoidal" (§3.5) or "learned"
    max_len: int = 256  # longest source or target the positional table covers
    tie_embeddings: bool = False  # the output layer shares the target embeddings' weight (§3.4)
    share_embeddings: bool = False  # source and target share one embedding (needs src_vocab == tgt_vocab)
    num_encoder_layers: int | None = None  # overrides num_layers for the encoder
    num_decoder_layers: int | None = None  # overrides num_layers for the decoder
    fused: bool = False  # attention with F.scaled_dot_product_attention when no weights are asked for
    pad_id: int = 0  # padding, in both vocabularies (the embeddings' padding_idx)
    bos_id: int = 2  # the first target token fed when decoding, a target id
    eos_id: int = 3  # ends a decoded sentence (an id the model never emits: decoding runs max_len steps)

    def __post_init__(self):
        sizes = dict(
            src_vocab=self.src_vocab,
            tgt_vocab=self.tgt_vocab,
            d_model=self.d_model,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            d_ff=self.d_ff,
            max_len=self.max_len,
            num_encoder_layers=self.encoder_layers,
            num_decoder_layers=self.decoder_layers,
        )
        bad = {k: v for k, v in sizes.items() if not isinstance(v, int) or v < 1}
        if bad:
            raise ValueError(f"TransformerConfig sizes must be positive integers; got {bad}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1); got {self.dropout}")
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned'; got {self.positional!r}")
        if self.share_embeddings and self.src_vocab != self.tgt_vocab:
            raise ValueError(
                f"share_embeddings needs one vocabulary; got src_vocab={self.src_vocab}, tgt_vocab={self.tgt_vocab}"
            )
        check_special_id("TransformerConfig", "pad_id", self.pad_id, src_vocab=self.src_vocab, tgt_vocab=self.tgt_vocab)
        check_special_id("TransformerConfig", "bos_id", self.bos_id, tgt_vocab=self.tgt_vocab)
        check_special_id("TransformerConfig", "eos_id", self.eos_id)

    @property
    def encoder_layers(self) -> int:
        return self.num_layers if self.num_encoder_layers is None else self.num_encoder_layers

    @property
    def decoder_layers(self) -> int:
        return self.num_layers if self.num_decoder_layers is None else self.num_decoder_layers


@dataclass
class TransformerMaps:
    """Every attention map of one forward pass, per head: lists over layers, first layer first."""

    encoder_self: list[Tensor]  # (B, H, S, S) each
    decoder_self: list[Tensor]  # (B, H, T, T) each, zero above the diagonal (causal)
    cross: list[Tensor]  # (B, H, T, S) each, decoder queries over the encoder output


@dataclass
class TransformerOutput(SequenceOutput):
    """:class:`SequenceOutput` plus every map: ``attention`` is the last layer's cross-attention
    averaged over heads ``(B, T, S)``, like the RNN models'; ``maps`` holds all of them."""

    maps: TransformerMaps | None = None  # None unless return_attention=True


@dataclass
class KeyValues:
    """Keys and values already projected and split into heads (the decoding cache)."""

    keys: Tensor  # (B, H, S, D)  K W^K, per head
    values: Tensor  # (B, H, S, D)  V W^V, per head


@dataclass
class TransformerState:
    """The decoder state between two steps (batch first, so beam search can reorder it)."""

    self_attn: list[KeyValues]  # per decoder layer: the t target positions fed so far (S = t)
    cross_attn: list[KeyValues]  # per decoder layer: the encoder output, projected once per sentence

    @property
    def position(self) -> int:
        """How many target tokens were fed so far: the position of the next one."""
        return self.self_attn[0].keys.shape[2]


class PositionalEncoding(nn.Module):
    """Adds the position of each token to its embedding (§3.5).

    Sinusoidal (the paper's): ``PE(pos, 2i) = sin(pos / 10000^(2i/E))`` and
    ``PE(pos, 2i+1) = cos(pos / 10000^(2i/E))``, a fixed table kept as a buffer (it follows
    ``.to(device)``; not saved in checkpoints, since it is recomputed). ``learned=True``
    trains a ``(max_len, E)`` table instead (§3.5 found "nearly identical results").

    Shape: ``x (B, L, E)`` -> ``(B, L, E)``; the positions are ``start, …, start + L - 1``.
    """

    def __init__(self, d_model: int, max_len: int = 256, learned: bool = False):
        super().__init__()
        self.max_len = max_len
        if learned:
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)  # (P, E)
        else:
            self.register_buffer("table", self.sinusoids(max_len, d_model), persistent=False)

    @staticmethod
    def sinusoids(max_len: int, d_model: int) -> Tensor:
        """The ``(max_len, E)`` table of §3.5."""
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (P, 1)
        inv_freq = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)  # (⌈E/2⌉,)
        table = torch.zeros(max_len, d_model)  # (P, E)
        table[:, 0::2] = torch.sin(pos * inv_freq)  # even dims 2i
        table[:, 1::2] = torch.cos(pos * inv_freq)[:, : d_model // 2]  # odd dims 2i+1
        return table

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        L = x.shape[1]
        if start + L > self.max_len:
            raise ValueError(
                f"positions {start}..{start + L - 1} exceed max_len={self.max_len}; "
                f"got a sequence of shape {tuple(x.shape)} (raise TransformerConfig.max_len)"
            )
        return x + self.table[start : start + L]  # (B, L, E)


class FeedForward(nn.Module):
    """Position-wise feed-forward network (§3.3, Eq. 2): ``max(0, x W_1 + b_1) W_2 + b_2``.

    Dropout sits after the ReLU, where ``nn.TransformerEncoderLayer`` puts it.
    Shape: ``(B, L, E)`` -> ``(B, L, E)``, through ``(B, L, F)``.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)  # W_1, b_1
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)  # W_2, b_2

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class Residual(nn.Module):
    """A residual connection around a sublayer, with layer normalisation (§3.1) and dropout (§5.4).

    Post-LN (the paper): ``LayerNorm(x + Dropout(Sublayer(x)))``. Pre-LN (``norm_first``,
    Xiong et al. 2020): ``x + Dropout(Sublayer(LayerNorm(x)))``. ``sublayer`` returns
    ``(output, extra)``; ``extra`` (attention weights, a cache, ``None``) is handed back as it is.
    """

    def __init__(self, d_model: int, dropout: float = 0.0, norm_first: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], tuple]) -> tuple:
        if self.norm_first:
            out, extra = sublayer(self.norm(x))
            return x + self.dropout(out), extra
        out, extra = sublayer(x)
        return self.norm(x + self.dropout(out)), extra


def project_heads(attn: MultiHeadAttention, key: Tensor, value: Tensor) -> KeyValues:
    """``K W^K`` and ``V W^V`` of ``attn``, split into heads: what decoding computes only once."""
    B, S, _ = key.shape
    H, D = attn.num_heads, attn.head_dim
    k = attn.k_proj(key).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
    v = attn.v_proj(value).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
    return KeyValues(k, v)


def attend_cached(
    attn: MultiHeadAttention,
    query: Tensor,
    kv: KeyValues,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = False,
    weights_hook: Callable[[Tensor], Tensor] | None = None,
) -> tuple[Tensor, Tensor | None]:
    """``attn``'s forward pass with keys and values already projected (:func:`project_heads`);
    ``weights_hook`` as in :meth:`MultiHeadAttention.forward <attention.layers.MultiHeadAttention.forward>`.

    Returns ``(output (B, L, E), weights (B, H, L, S) or None)``.
    """
    B, L, E = query.shape
    H, D, S = attn.num_heads, attn.head_dim, kv.keys.shape[2]
    keep = to_keep_mask(key_padding_mask, batch_size=B, L=L, S=S, device=query.device)  # (B, 1, L, S)
    q = attn.q_proj(query).view(B, L, H, D).transpose(1, 2)  # (B, H, L, D)
    heads, weights = scaled_dot_product_attention(
        q,
        kv.keys,
        kv.values,
        attn_mask=keep,
        dropout_p=attn.dropout,
        training=attn.training,
        fused=attn.fused and not need_weights and weights_hook is None,
        weights_hook=weights_hook,
    )
    out = attn.out_proj(heads.transpose(1, 2).reshape(B, L, E))  # (B, L, H*D) = (B, L, E)
    return out, weights


class EncoderLayer(nn.Module):
    """One encoder layer (§3.1): self-attention, then the feed-forward network, each in a
    :class:`Residual`; what ``nn.TransformerEncoderLayer(batch_first=True)`` computes.

    Shape: ``x (B, S, E)``, key_padding_mask ``(B, S)`` True = padding -> ``(B, S, E)`` and the
    self-attention weights ``(B, H, S, S)`` (``None`` unless ``need_weights``).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        fused: bool = False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, fused=fused)
        self.attn_residual = Residual(d_model, dropout, norm_first)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.ff_residual = Residual(d_model, dropout, norm_first)

    def forward(
        self,
        x: Tensor,
        key_padding_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        def self_attention(h):
            return self.self_attn(
                h,
                h,
                h,
                key_padding_mask=key_padding_mask,
                attn_mask=attn_mask,
                is_causal=is_causal,
                need_weights=need_weights,
                average_attn_weights=False,
            )

        x, weights = self.attn_residual(x, self_attention)  # (B, S, E), (B, H, S, S)
        x, _ = self.ff_residual(x, lambda h: (self.feed_forward(h), None))
        return x, weights

    @torch.no_grad()
    def load_torch_weights(self, layer: nn.TransformerEncoderLayer) -> "EncoderLayer":
        """Copy the weights of a ``nn.TransformerEncoderLayer`` (refused, ``ValueError``, when it differs)."""
        _check_torch_layer(self, layer)
        self.self_attn.load_torch_weights(layer.self_attn)
        _copy_linears_and_norms(
            self, layer, [(self.attn_residual.norm, layer.norm1), (self.ff_residual.norm, layer.norm2)]
        )
        return self


class DecoderLayer(nn.Module):
    """One decoder layer (§3.1): causal self-attention, attention over the encoder output
    (cross-attention), the feed-forward network, each in a :class:`Residual`; what
    ``nn.TransformerDecoderLayer(batch_first=True)`` computes.

    Shape: ``x (B, T, E)``, memory ``(B, S, E)``, memory_key_padding_mask ``(B, S)`` True = padding
    -> ``(B, T, E)``, self weights ``(B, H, T, T)``, cross weights ``(B, H, T, S)`` (``None``
    unless ``need_weights``).

    ``cross_weights_hook`` (default None), in :meth:`forward` and :meth:`step`: ``weights (B, H, T,
    S) -> (B, H, T, S)``, the cross-attention weights that weigh the memory instead of the
    softmax's (unchecked here; :meth:`Transformer.step` and :meth:`Transformer.decoder_stack` check).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        fused: bool = False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, fused=fused)
        self.self_residual = Residual(d_model, dropout, norm_first)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, fused=fused)
        self.cross_residual = Residual(d_model, dropout, norm_first)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.ff_residual = Residual(d_model, dropout, norm_first)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        need_weights: bool = False,
        cross_weights_hook: Callable[[Tensor], Tensor] | None = None,
    ):
        def self_attention(h):
            return self.self_attn(
                h,
                h,
                h,
                key_padding_mask=tgt_key_padding_mask,
                attn_mask=tgt_mask,
                is_causal=tgt_is_causal,
                need_weights=need_weights,
                average_attn_weights=False,
            )

        def cross_attention(h):
            return self.cross_attn(
                h,
                memory,
                memory,
                key_padding_mask=memory_key_padding_mask,
                need_weights=need_weights,
                average_attn_weights=False,
                weights_hook=cross_weights_hook,
            )

        x, self_weights = self.self_residual(x, self_attention)  # (B, T, E), (B, H, T, T)
        x, cross_weights = self.cross_residual(x, cross_attention)  # (B, T, E), (B, H, T, S)
        x, _ = self.ff_residual(x, lambda h: (self.feed_forward(h), None))
        return x, self_weights, cross_weights

    def step(
        self,
        x: Tensor,
        cache: KeyValues,
        cross: KeyValues,
        memory_key_padding_mask: Tensor | None = None,
        cross_weights_hook: Callable[[Tensor], Tensor] | None = None,
    ) -> tuple[Tensor, KeyValues, Tensor]:
        """:meth:`forward` for one new position ``x (B, 1, E)``: its key and value join ``cache``
        (no mask needed: every cached position comes before it); ``cross`` holds the encoder
        output's keys and values. Returns ``(B, 1, E)``, the longer cache, cross weights ``(B, H, 1, S)``."""

        def self_attention(h):
            new = project_heads(self.self_attn, h, h)  # (B, H, 1, D) each
            kv = KeyValues(torch.cat([cache.keys, new.keys], 2), torch.cat([cache.values, new.values], 2))
            return attend_cached(self.self_attn, h, kv)[0], kv  # the cache rides along as the extra

        def cross_attention(h):
            return attend_cached(
                self.cross_attn, h, cross, memory_key_padding_mask, need_weights=True, weights_hook=cross_weights_hook
            )

        x, cache = self.self_residual(x, self_attention)
        x, weights = self.cross_residual(x, cross_attention)
        x, _ = self.ff_residual(x, lambda h: (self.feed_forward(h), None))
        return x, cache, weights

    @torch.no_grad()
    def load_torch_weights(self, layer: nn.TransformerDecoderLayer) -> "DecoderLayer":
        """Copy the weights of a ``nn.TransformerDecoderLayer`` (refused, ``ValueError``, when it differs)."""
        _check_torch_layer(self, layer)
        self.self_attn.load_torch_weights(layer.self_attn)
        self.cross_attn.load_torch_weights(layer.multihead_attn)
        _copy_linears_and_norms(
            self,
            layer,
            [
                (self.self_residual.norm, layer.norm1),
                (self.cross_residual.norm, layer.norm2),
                (self.ff_residual.norm, layer.norm3),
            ],
        )
        return self


def _check_torch_layer(ours: EncoderLayer | DecoderLayer, theirs: nn.Module) -> None:
    """Name every way a PyTorch layer differs from ``ours`` (sizes, norm_first, activation, eps, bias)."""
    name = type(theirs).__name__
    expected = nn.TransformerEncoderLayer if isinstance(ours, EncoderLayer) else nn.TransformerDecoderLayer
    if not isinstance(theirs, expected):
        raise ValueError(f"{type(ours).__name__} copies a {expected.__name__}, got {name}")
    mine = (ours.self_attn.embed_dim, ours.self_attn.num_heads, ours.feed_forward.linear1.out_features)
    other = (theirs.self_attn.embed_dim, theirs.self_attn.num_heads, theirs.linear1.out_features)
    problems = []
    if mine != other:
        problems.append(f"sizes (d_model, nhead, dim_feedforward) = {other}, this layer has {mine}")
    if theirs.norm_first != ours.ff_residual.norm_first:
        problems.append(f"norm_first={theirs.norm_first}, this layer has norm_first={ours.ff_residual.norm_first}")
    if not (theirs.activation is F.relu or isinstance(theirs.activation, nn.ReLU)):
        problems.append(f"activation {theirs.activation!r}, this layer uses ReLU (§3.3)")
    if theirs.linear1.bias is None or theirs.norm1.bias is None:
        problems.append("bias=False, this layer has biases")
    if theirs.norm1.eps != ours.ff_residual.norm.eps:
        problems.append(f"layer_norm_eps={theirs.norm1.eps}, this layer has {ours.ff_residual.norm.eps}")
    if problems:
        raise ValueError(f"cannot copy this {name}: " + "; ".join(problems))


def _copy_linears_and_norms(ours, theirs, norms: list[tuple[nn.LayerNorm, nn.LayerNorm]]) -> None:
    pairs = [(ours.feed_forward.linear1, theirs.linear1), (ours.feed_forward.linear2, theirs.linear2), *norms]
    for mine, other in pairs:
        mine.weight.copy_(other.weight)
        mine.bias.copy_(other.bias)


@register_model("transformer")
class Transformer(SequenceModel):
    """The encoder–decoder Transformer (§3, Figure 1), batch first; see the module docstring.

    Shape: ``src (B, S)``, ``src_lengths (B,)``, ``tgt_in (B, T)`` (``<bos> y_1 … y_{T-1}``)
    -> logits ``(B, T, V)``.
    """

    config_class = TransformerConfig

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        E, H, Fd, p = cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.dropout
        self.src_embed = nn.Embedding(cfg.src_vocab, E, padding_idx=cfg.pad_id)
        self.tgt_embed = (
            self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.tgt_vocab, E, padding_idx=cfg.pad_id)
        )
        self.positions = PositionalEncoding(E, cfg.max_len, learned=cfg.positional == "learned")  # both sides
        self.dropout = nn.Dropout(p)  # on embeddings + positions (§5.4)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(E, H, Fd, p, cfg.norm_first, cfg.fused) for _ in range(cfg.encoder_layers)
        )
        self.encoder_norm = nn.LayerNorm(E)  # after the stack, as nn.Transformer has
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(E, H, Fd, p, cfg.norm_first, cfg.fused) for _ in range(cfg.decoder_layers)
        )
        self.decoder_norm = nn.LayerNorm(E)
        self.output = nn.Linear(E, cfg.tgt_vocab)  # the pre-softmax linear transformation
        self._reset_parameters()
        if cfg.tie_embeddings:
            self.output.weight = self.tgt_embed.weight  # (V, E), shared (§3.4)

    def _reset_parameters(self) -> None:
        """Xavier for the layers' matrices (as ``nn.Transformer``); embeddings ``N(0, 1/E)``, so that
        after the ``√E`` scale they are ``N(0, 1)``, the size of the positional encodings."""
        for layer in [*self.encoder_layers, *self.decoder_layers]:
            for p in layer.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
        for embed in [self.src_embed] + ([] if self.cfg.share_embeddings else [self.tgt_embed]):
            nn.init.normal_(embed.weight, std=self.cfg.d_model**-0.5)
            with torch.no_grad():
                embed.weight[self.cfg.pad_id].zero_()

    def embed(self, tokens: Tensor, table: nn.Embedding, start: int = 0) -> Tensor:
        """``Dropout(Embedding(tokens)·√E + PE)`` (§3.4, §3.5, §5.4): ``(B, L)`` -> ``(B, L, E)``."""
        return self.dropout(self.positions(table(tokens) * math.sqrt(self.cfg.d_model), start))

    def encoder_stack(
        self, x: Tensor, padding: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, list]:
        """The N encoder layers and the final LayerNorm: ``x (B, S, E)``, padding ``(B, S)`` True = pad
        -> states ``(B, S, E)`` and the per-layer self-attention weights ``(B, H, S, S)``."""
        maps = []
        for layer in self.encoder_layers:
            x, weights = layer(x, key_padding_mask=padding, need_weights=need_weights)
            maps.append(weights)
        return self.encoder_norm(x), maps

    def decoder_stack(
        self,
        y: Tensor,
        memory: Tensor,
        memory_padding: Tensor | None = None,
        need_weights: bool = False,
        cross_weights_hook: Callable[[Tensor, int], Tensor] | None = None,
    ) -> tuple[Tensor, list, list]:
        """The N decoder layers (causal) and the final LayerNorm: ``y (B, T, E)``, memory ``(B, S, E)``
        -> ``(B, T, E)``, self weights ``(B, H, T, T)`` and cross weights ``(B, H, T, S)`` per layer.

        ``cross_weights_hook(weights (B, H, T, S), layer) -> (B, H, T, S)`` (default None): layer
        ``layer``'s (0, 1, ...) cross-attention weights in place of its own, a distribution over the
        real source positions in every row (checked, :func:`~attention.models.seq2seq.check_weights`);
        the playground's exported step steers one head at one position this way."""
        self_maps, cross_maps = [], []
        for i, layer in enumerate(self.decoder_layers):
            hook = (
                None
                if cross_weights_hook is None
                else functools.partial(_checked, cross_weights_hook, i, memory_padding)
            )
            y, self_w, cross_w = layer(
                y,
                memory,
                memory_key_padding_mask=memory_padding,
                tgt_is_causal=True,
                need_weights=need_weights,
                cross_weights_hook=hook,
            )
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        return self.decoder_norm(y), self_maps, cross_maps

    def forward(
        self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor, return_attention: bool = False
    ) -> TransformerOutput:
        """Teacher forcing, every target position at once (the causal mask keeps it honest)."""
        self._check_inputs(src, src_lengths, tgt_in)
        padding = ~lengths_to_mask(src_lengths, src.shape[1])  # (B, S), True = padding
        memory, enc_maps = self.encoder_stack(self.embed(src, self.src_embed), padding, return_attention)
        hidden, self_maps, cross_maps = self.decoder_stack(
            self.embed(tgt_in, self.tgt_embed), memory, padding, return_attention
        )
        logits = self.output(hidden)  # (B, T, V)
        if not return_attention:
            return TransformerOutput(logits, None)
        maps = TransformerMaps(enc_maps, self_maps, cross_maps)
        return TransformerOutput(logits, cross_maps[-1].mean(1), maps)  # attention (B, T, S)

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """Run the encoder once; the first state holds empty self-attention caches and the
        cross-attention keys and values of every decoder layer."""
        self._check_inputs(src, src_lengths)
        mask = lengths_to_mask(src_lengths, src.shape[1])  # (B, S), True = a real token
        states, _ = self.encoder_stack(self.embed(src, self.src_embed), ~mask)  # (B, S, E)
        B, H, D = src.shape[0], self.cfg.num_heads, self.cfg.d_model // self.cfg.num_heads
        empty = states.new_zeros(B, H, 0, D)  # (B, H, 0, D) nothing fed yet
        state = TransformerState(
            self_attn=[KeyValues(empty, empty) for _ in self.decoder_layers],
            cross_attn=[project_heads(layer.cross_attn, states, states) for layer in self.decoder_layers],
        )
        return Encoded(EncoderMemory(states, mask, src_lengths), state)

    def step(
        self,
        y_prev: Tensor,
        state: TransformerState,
        memory: EncoderMemory,
        weights_hook: WeightsHook | None = None,
        hook_at: tuple[int, int] | None = None,
    ) -> Step:
        """Feed ``y_prev (B,)`` at position ``state.position``: logits ``(B, V)``, the state with one
        more cached position, the last layer's cross-attention averaged over heads ``(B, S)``.

        ``weights_hook`` (default None: the model's own attention): ``weights (B, S) -> (B, S)``, the
        cross-attention weights of one head, ``hook_at = (layer, head)`` (0-based; a negative layer
        counts from the top; ``head=None``: every head of the layer, each through the hook), in
        place of its own, between the softmax and the product with the values (checked,
        :func:`~attention.models.seq2seq.check_weights`); the other heads and layers compute as
        before, and the state caches what the edited step computed."""
        check_ids(y_prev, self.cfg.tgt_vocab, "y_prev", "target")
        x = self.embed(y_prev[:, None], self.tgt_embed, start=state.position)  # (B, 1, E)
        padding = ~memory.mask  # (B, S), True = padding
        at = None if weights_hook is None else self._check_hook_at(hook_at)
        caches = []
        for i, (layer, cache, cross) in enumerate(zip(self.decoder_layers, state.self_attn, state.cross_attn)):
            hook = None
            if at is not None and i == at[0]:
                hook = functools.partial(_replace_head, weights_hook, at[1], memory.mask)
            x, cache, weights = layer.step(x, cache, cross, padding, cross_weights_hook=hook)
            caches.append(cache)
        logits = self.output(self.decoder_norm(x[:, 0]))  # (B, V)
        return Step(logits, TransformerState(caches, state.cross_attn), weights.mean(1)[:, 0])  # (B, S)

    def _check_hook_at(self, hook_at) -> tuple[int, int | None]:
        """``(layer, head)`` of the cross-attention a hook replaces, the layer made non-negative."""
        N, H = self.cfg.decoder_layers, self.cfg.num_heads
        ok = isinstance(hook_at, tuple) and len(hook_at) == 2 and isinstance(hook_at[0], int)
        ok = ok and (hook_at[1] is None or (isinstance(hook_at[1], int) and 0 <= hook_at[1] < H))
        if not ok or not -N <= hook_at[0] < N:
            raise ValueError(
                f"weights_hook on the Transformer needs hook_at=(layer, head) with -{N} <= layer < {N} "
                f"and 0 <= head < {H} or None for every head (the cross-attention it replaces); "
                f"got hook_at={hook_at!r}"
            )
        return hook_at[0] % N, hook_at[1]

    def _check_inputs(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor | None = None) -> None:
        shapes = f"src {tuple(src.shape)}, src_lengths {tuple(src_lengths.shape)}"
        shapes += "" if tgt_in is None else f", tgt_in {tuple(tgt_in.shape)}"
        if src.dim() != 2 or src_lengths.shape != src.shape[:1]:
            raise ValueError(f"src must be (B, S) with src_lengths (B,); got {shapes}")
        if tgt_in is not None and (tgt_in.dim() != 2 or tgt_in.shape[0] != src.shape[0]):
            raise ValueError(f"tgt_in must be (B, T) with the source's B; got {shapes}")
        check_ids(src, self.cfg.src_vocab, "src", "source")
        if tgt_in is not None:
            check_ids(tgt_in, self.cfg.tgt_vocab, "tgt_in", "target")

    @torch.no_grad()
    def load_torch_weights(self, model: nn.Transformer) -> "Transformer":
        """Copy the encoder and decoder stacks of a ``nn.Transformer`` (layers and final norms);
        embeddings and the output layer, which ``nn.Transformer`` does not have, are left alone."""
        if not isinstance(model, nn.Transformer):
            raise ValueError(f"load_torch_weights copies a nn.Transformer, got {type(model).__name__}")
        theirs = (len(model.encoder.layers), len(model.decoder.layers))
        mine = (len(self.encoder_layers), len(self.decoder_layers))
        if theirs != mine:
            raise ValueError(
                f"cannot copy this nn.Transformer: (encoder, decoder) layers = {theirs}, this model has {mine}"
            )
        if model.encoder.norm is None or model.decoder.norm is None:
            raise ValueError("cannot copy this nn.Transformer: it has no final encoder/decoder norm")
        for ours, other in zip(
            [*self.encoder_layers, *self.decoder_layers], [*model.encoder.layers, *model.decoder.layers]
        ):
            ours.load_torch_weights(other)
        for ours, other in ((self.encoder_norm, model.encoder.norm), (self.decoder_norm, model.decoder.norm)):
            ours.weight.copy_(other.weight)
            ours.bias.copy_(other.bias)
        return self


def _replace_head(weights_hook: WeightsHook, head: int | None, keep: Tensor, weights: Tensor) -> Tensor:
    """``weights (B, H, 1, S)`` with head ``head``'s row (every head's, when None) replaced by
    ``weights_hook``'s (checked against ``keep (B, S)``, True = a real source position); the other
    heads are kept bit for bit."""
    rows = []
    for h in range(weights.shape[1]):
        if head is None or h == head:
            new = weights_hook(weights[:, h, 0])  # (B, S)
            check_weights(new, keep, weights.dtype)
            rows.append(new[:, None, None])  # (B, 1, 1, S)
        else:
            rows.append(weights[:, h : h + 1])
    return torch.cat(rows, 1)  # (B, H, 1, S)


def _checked(hook: Callable[[Tensor, int], Tensor], layer: int, padding: Tensor | None, weights: Tensor) -> Tensor:
    """``hook(weights (B, H, T, S), layer)``, checked to be a distribution over the real source
    positions (``padding (B, S)``, True = padding, or None) in every row."""
    new = hook(weights, layer)
    if torch.jit.is_tracing():  # a traced graph cannot raise (the playground's export): nothing to check
        return new
    B, H, T, S = weights.shape
    keep = torch.ones(B, S, dtype=torch.bool, device=weights.device) if padding is None else ~padding  # (B, S)
    if not isinstance(new, Tensor) or new.shape != weights.shape:
        shape = tuple(new.shape) if isinstance(new, Tensor) else type(new).__name__
        raise ValueError(f"cross_weights_hook must return weights (B, H, T, S) = {tuple(weights.shape)}; got {shape}")
    rows = keep[:, None, None].expand(B, H, T, S).reshape(-1, S)  # (B·H·T, S)
    check_weights(new.reshape(-1, S), rows, weights.dtype, what="cross_weights_hook")
    return new


def noam_schedule(d_model: int, warmup: int = 4000) -> Callable[[int], float]:
    """The learning rate of §5.3, Eq. 3: ``d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)``.

    Rises linearly for ``warmup`` steps, peaks at ``step == warmup``, then decays as ``step^-0.5``.
    Returns ``step -> factor`` for ``torch.optim.lr_scheduler.LambdaLR`` (with the optimizer's
    ``lr=1.0`` the factor is the learning rate; the paper uses Adam with betas (0.9, 0.98), eps 1e-9).
    Steps count from 1; ``LambdaLR`` asks for step 0 before the first update, which gets step 1's rate.
    """
    if d_model < 1 or warmup < 1:
        raise ValueError(f"noam_schedule needs d_model >= 1 and warmup >= 1; got d_model={d_model}, warmup={warmup}")

    def factor(step: int) -> float:
        step = max(step, 1)
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)

    return factor
