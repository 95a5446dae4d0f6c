"""Encoder–decoder translation models, with and without attention.

Shape legend: B batch, S source length, T target length, V target vocabulary,
E embedding dim, He encoder state dim (2·hidden when bidirectional), Hd decoder
state dim, A attention hidden dim, K beam size.

One model class, :class:`Seq2Seq`, covers the three architectures of chapters 2–3:

* **RNN encoder–decoder** (Cho et al. 2014; chapter 2): ``attention=None``. The
  whole source is squeezed into one fixed vector ``c`` (the bottleneck), fed to
  the decoder at every step: ``s_t = GRU([y_{t-1}; c], s_{t-1})``.
* **Sutskever et al. (2014)**: ``cell="lstm", bidirectional=False,
  reverse_source=True, attention=None``: the source is read backwards so its first
  words sit close to the first target words.
* **RNNsearch** (Bahdanau et al. 2015; chapter 3): ``attention="additive"`` and a
  bidirectional encoder ``h_i = [→h_i; ←h_i]``. At each step the decoder scores every
  source state, ``α_{t,i} = softmax_i score(s_{t-1}, h_i)``, builds its own context
  ``c_t = Σ_i α_{t,i} h_i`` and updates ``s_t = GRU([y_{t-1}; c_t], s_{t-1})``.

Any score of :mod:`attention.scores` can be plugged in by name, which is how later
chapters compare them on one budget. ``step(..., weights_hook=f)`` puts other weights in place
of ``α_t``, between the softmax and the context (:func:`override_attention`; chapter 10 decodes
with permuted or uniform weights this way). :class:`RNNEncoderDecoder` is what this model and
Luong's (:mod:`attention.models.luong`) share: the encoder, the target embeddings, the
first decoder state, the decoder cell and the score. Teacher forcing, greedy and beam
search come from :class:`~attention.models.base.SequenceModel`, built on :meth:`Seq2Seq.step`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..functional import attend
from ..masks import lengths_to_mask
from ..scores import make_score
from .base import SequenceModel
from .checks import check_ids, check_special_id
from .interface import Encoded, EncoderMemory, Step
from .pooling import check_sizes
from .registry import register_model

__all__ = [
    "Seq2SeqConfig",
    "Seq2Seq",
    "RNNEncoderDecoder",
    "Encoder",
    "reverse_padded",
    "WeightsHook",
    "check_weights",
    "override_attention",
]

#: ``weights (B, S) -> weights (B, S)``: a decoder step's attention weights in, the ones to use out
WeightsHook = Callable[[Tensor], Tensor]


@dataclass
class Seq2SeqConfig:
    src_vocab: int  # source vocabulary size
    tgt_vocab: int  # target vocabulary size
    embed_dim: int = 128  # E, word embedding size (source and target)
    hidden_dim: int = 256  # recurrent state size per direction
    attention: str | None = "additive"  # a score name, or None for the plain encoder–decoder
    attention_dim: int | None = None  # A for additive/concat scores (default: hidden_dim)
    cell: str = "gru"  # "gru" (Cho, Bahdanau) or "lstm" (Sutskever)
    bidirectional: bool = True  # encoder reads both ways (Bahdanau)
    reverse_source: bool = False  # feed the source backwards (Sutskever)
    dropout: float = 0.2  # on embeddings and before the output layer
    tie_embeddings: bool = False  # output layer shares the target embeddings (Press & Wolf 2017)
    max_src_len: int = 64  # only used by the "location" score
    pad_id: int = 0  # padding, in both vocabularies (the embeddings' padding_idx)
    bos_id: int = 2  # the first target token fed when decoding, a target id
    eos_id: int = 3  # ends a decoded sentence (an id the model never emits: decoding runs max_len steps)

    def __post_init__(self):
        name = type(self).__name__  # LuongConfig inherits this check
        check_sizes(name, src_vocab=self.src_vocab, tgt_vocab=self.tgt_vocab)
        check_special_id(name, "pad_id", self.pad_id, src_vocab=self.src_vocab, tgt_vocab=self.tgt_vocab)
        check_special_id(name, "bos_id", self.bos_id, tgt_vocab=self.tgt_vocab)
        check_special_id(name, "eos_id", self.eos_id)


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Reverse each row's first ``lengths[b]`` entries, leaving the padding in place."""
    B, S = x.shape
    pos = torch.arange(S, device=x.device).expand(B, S)  # (B, S)
    rev = (lengths[:, None] - 1 - pos).clamp_min(0)
    index = torch.where(pos < lengths[:, None], rev, pos)
    return x.gather(1, index)


def check_weights(weights, mask: Tensor, dtype: torch.dtype | None = None, what: str = "weights_hook") -> None:
    """Refuse attention weights that are not a distribution over each row's real positions.

    ``mask`` is the ``(B, S)`` keep mask (True = a real source position). ``weights`` must be a
    tensor of shape ``(B, S)``, floating point (of ``dtype`` when given: the model's), on the
    mask's device, finite, non-negative, exactly zero on padding, and summing to 1 over each row's
    real positions within ``1e-4`` (``8·eps`` for a 16-bit dtype); a row with no real position
    must be all zero. Raises ``TypeError`` (not a tensor) or ``ValueError`` naming ``what``, the
    expected and given shapes, or the first offending row, position and value. The checks read
    values back (a device sync each): an analysis path, not the decoder's default. Under
    ``torch.jit`` tracing (the playground's ONNX export) it checks nothing: a traced graph cannot
    raise, and the page checks the weights it feeds.
    """
    if torch.jit.is_tracing():
        return
    B, S = mask.shape
    if not isinstance(weights, Tensor):
        raise TypeError(f"{what} must return a tensor of weights (B, S) = ({B}, {S}); got {type(weights).__name__}")
    if tuple(weights.shape) != (B, S):
        raise ValueError(f"{what} must return weights of shape (B, S) = ({B}, {S}); got {tuple(weights.shape)}")
    if not weights.dtype.is_floating_point or (dtype is not None and weights.dtype != dtype):
        raise ValueError(f"{what} must return weights of dtype {dtype or 'float'}; got {weights.dtype}")
    if weights.device != mask.device:
        raise ValueError(f"{what} must return weights on {mask.device} (the source's device); got {weights.device}")

    def first(bad: Tensor) -> str:  # bad (B, S) bool -> "row b, position i: value"
        b, i = (int(v) for v in bad.nonzero()[0])
        return f"row {b} (source length {int(mask[b].sum())}), position {i}: {weights[b, i].item()!r}"

    if not bool(torch.isfinite(weights).all()):
        raise ValueError(f"{what} returned weights that are not finite (NaN or inf); {first(~torch.isfinite(weights))}")
    if bool((weights < 0).any()):
        raise ValueError(f"{what} returned negative weights; {first(weights < 0)}")
    if bool(((weights != 0) & ~mask).any()):
        raise ValueError(f"{what} put weight on padding (S = {S}); {first((weights != 0) & ~mask)}")
    atol = 1e-4 if weights.dtype in (torch.float32, torch.float64) else 8 * torch.finfo(weights.dtype).eps
    sums = weights.float().sum(-1)  # (B,)
    ok = torch.where(mask.any(-1), (sums - 1).abs() <= atol, sums == 0)  # (B,)
    if not bool(ok.all()):
        rows = (~ok).nonzero()[:, 0].tolist()
        raise ValueError(
            f"{what} must return weights summing to 1 over each row's real positions (within {atol:g}); "
            f"got sums {[round(sums[b].item(), 6) for b in rows[:3]]} in rows {rows[:3]}"
        )


def override_attention(weights_hook: WeightsHook, weights: Tensor | None, memory: EncoderMemory):
    """Other weights in place of a decoder's own, between the softmax and the context.

    ``weights_hook(weights)`` gets the step's own weights ``(B, S)`` and returns the ones to use,
    a distribution over each sentence's real source positions (checked by :func:`check_weights`);
    the context is then ``c = Σ_i α'_i h_i`` over ``memory.states`` ``(B, S, He)``, the same
    product ``attend`` computes, so a hook that returns its argument changes nothing, bit for bit.
    Returns ``(context (B, He), weights (B, S))``: the weights used. Chapter 10 (:func:`attention.explain.decoder_report`)
    decodes RNNsearch with permuted, uniform or top-less weights this way.
    """
    if weights is None:
        raise ValueError("weights_hook replaces attention weights, and this decoder has none (attention=None)")
    new = weights_hook(weights)
    check_weights(new, memory.mask, weights.dtype)
    context = (new[:, None, :] @ memory.states)[:, 0]  # (B, 1, S) @ (B, S, He) -> (B, He), as in attend
    return context, new


class Encoder(nn.Module):
    """Embeds the source and runs a (bi)directional GRU/LSTM over it."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        rnn = nn.GRU if cfg.cell == "gru" else nn.LSTM
        self.embed = nn.Embedding(cfg.src_vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.rnn = rnn(cfg.embed_dim, cfg.hidden_dim, batch_first=True, bidirectional=cfg.bidirectional)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, src: Tensor, lengths: Tensor):
        """Returns states ``(B, S, He)`` and the final state (``(B, He)``, or ``(h, c)`` for LSTM)."""
        x = self.dropout(self.embed(src))  # (B, S, E)
        # Packing makes the backward direction start at each sentence's real end.
        # PyTorch wants the lengths on the CPU for this (the one sync of the forward pass).
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, final = self.rnn(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=src.shape[1])  # (B, S, He)

        def merge(h):  # (directions, B, hidden) -> (B, directions·hidden)
            return h.transpose(0, 1).reshape(h.shape[1], -1)

        final = tuple(merge(h) for h in final) if isinstance(final, tuple) else merge(final)
        return states, final


class RNNEncoderDecoder(SequenceModel):
    """What the RNN encoder–decoders of chapters 2, 3 and 9 share.

    Builds, in this order (the order fixes the random initial weights of a seed): the
    encoder, the target embeddings, ``init_state`` (``s_0 = tanh(W_s h_final)``), the decoder
    cell, whose input size a subclass gives with :meth:`decoder_input_dim`, and the score
    (``None`` without attention). A subclass then adds its output layers and writes
    ``encode`` (with :meth:`read_source`) and ``step``.
    """

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if cfg.cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cfg.cell!r}")
        self.cfg = cfg
        H = cfg.hidden_dim
        self.encoder_dim = He = H * (2 if cfg.bidirectional else 1)
        self.decoder_dim = Hd = He  # the decoder is as wide as the encoder's summary
        self.encoder = Encoder(cfg)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.init_state = nn.Linear(He, Hd)  # s_0 = tanh(W_s h_final)
        cell = nn.GRUCell if cfg.cell == "gru" else nn.LSTMCell
        self.cell = cell(self.decoder_input_dim(), Hd)
        self.score = (
            None
            if cfg.attention is None
            else make_score(
                cfg.attention, query_dim=Hd, key_dim=He, hidden_dim=cfg.attention_dim or H, max_len=cfg.max_src_len
            )
        )
        self.dropout = nn.Dropout(cfg.dropout)

    def decoder_input_dim(self) -> int:  # pragma: no cover - abstract
        """Size of the decoder cell's input at each step."""
        raise NotImplementedError

    def tie_output_to_embeddings(self, output: nn.Linear) -> None:
        """Share ``output``'s ``(V, E)`` weight with the target embeddings (Press & Wolf 2017)."""
        if output.weight.shape != self.tgt_embed.weight.shape:
            raise ValueError(
                f"tie_embeddings needs the output layer's weight {tuple(output.weight.shape)} "
                f"to match the target embeddings {tuple(self.tgt_embed.weight.shape)}"
            )
        output.weight = self.tgt_embed.weight

    def read_source(self, src: Tensor, src_lengths: Tensor) -> tuple[EncoderMemory, Tensor, object]:
        """Run the encoder: memory (states, mask, lengths), its summary ``(B, He)`` and ``s_0``."""
        if src.dim() != 2 or src_lengths.shape != src.shape[:1]:
            raise ValueError(
                f"src must be (B, S) with src_lengths (B,); got src {tuple(src.shape)}, "
                f"src_lengths {tuple(src_lengths.shape)}"
            )
        lengths = src_lengths.cpu()  # packing needs them on the CPU anyway
        if lengths.dtype.is_floating_point or (lengths < 1).any() or (lengths > src.shape[1]).any():
            raise ValueError(
                f"src_lengths must be integers in 1..S = 1..{src.shape[1]} (src {tuple(src.shape)}); "
                f"got {lengths.tolist()}"
            )
        check_ids(src, self.cfg.src_vocab, "src", "source")
        if self.cfg.reverse_source:
            src = reverse_padded(src, src_lengths)
        states, final = self.encoder(src, src_lengths)  # (B, S, He)
        summary = final[0] if isinstance(final, tuple) else final  # (B, He)
        memory = EncoderMemory(states, lengths_to_mask(src_lengths, src.shape[1]), src_lengths)  # mask (B, S)
        s0 = torch.tanh(self.init_state(summary))  # (B, Hd)
        state = (s0, torch.zeros_like(s0)) if self.cfg.cell == "lstm" else s0
        return memory, summary, state


@register_model("seq2seq")
class Seq2Seq(RNNEncoderDecoder):
    """Encoder–decoder with optional attention; see the module docstring."""

    config_class = Seq2SeqConfig

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__(cfg)
        He, Hd = self.encoder_dim, self.decoder_dim
        # deep output: o_t = W_o tanh(L [s_t; c_t; y_{t-1}])  (Bahdanau App. A.2.2, without maxout)
        self.pre_output = nn.Linear(Hd + He + cfg.embed_dim, cfg.embed_dim)
        self.output = nn.Linear(cfg.embed_dim, cfg.tgt_vocab)
        if cfg.tie_embeddings:
            self.tie_output_to_embeddings(self.output)  # (V, E), one matrix to learn

    def decoder_input_dim(self) -> int:
        return self.cfg.embed_dim + self.encoder_dim  # [y_{t-1}; c_t]

    # --- encoding ------------------------------------------------------------------------
    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """Everything the decoder reads at each step, batch first (so beams can index it)."""
        memory, summary, state = self.read_source(src, src_lengths)
        if self.score is None:
            memory.context = summary  # the fixed-length vector c: the bottleneck
        elif hasattr(self.score, "project_keys"):
            memory.keys = self.score.project_keys(memory.states)  # U_a h_i, once per sentence (B, S, A)
        return Encoded(memory, state)

    # --- one decoder step ------------------------------------------------------------------
    def step(self, y_prev: Tensor, state, memory: EncoderMemory, weights_hook: WeightsHook | None = None) -> Step:
        """``y_{t-1}`` ``(B,)``, ``s_{t-1}`` -> logits ``(B, V)``, ``s_t``, weights ``(B, S)`` or None.

        ``weights_hook`` (default None: the model's own attention): ``weights (B, S) -> (B, S)``,
        the weights that make ``c_t`` instead of ``α_t`` (:func:`override_attention`, checked);
        the step then returns the weights it used."""
        check_ids(y_prev, self.cfg.tgt_vocab, "y_prev", "target")
        s_prev = state[0] if isinstance(state, tuple) else state  # (B, Hd)
        if self.score is None:
            context, weights = memory.context, None  # the same c at every step
        else:
            query = s_prev[:, None, :]  # (B, 1, Hd)
            if memory.keys is not None:
                scores = self.score.score_projected(query, memory.keys)  # (B, 1, S)
            else:
                scores = self.score(query, memory.states)  # (B, 1, S)
            context, weights = attend(scores, memory.states, memory.mask[:, None, :])
            context, weights = context[:, 0], weights[:, 0]  # (B, He), (B, S)
        if weights_hook is not None:  # other weights in place of α_t (chapter 10)
            context, weights = override_attention(weights_hook, weights, memory)
        y = self.dropout(self.tgt_embed(y_prev))  # (B, E)
        state = self.cell(torch.cat([y, context], dim=-1), state)
        s = state[0] if isinstance(state, tuple) else state  # (B, Hd)
        hidden = torch.tanh(self.pre_output(torch.cat([s, context, y], dim=-1)))  # (B, E)
        return Step(self.output(self.dropout(hidden)), state, weights)
