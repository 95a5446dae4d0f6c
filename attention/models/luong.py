"""Luong et al. (2015): global and local attention, with input feeding.

Shape legend: B batch, S source length, V target vocabulary, E embedding dim,
He encoder state dim, Hd decoder state dim, W = 2D+1 local window.

Differences from Bahdanau's decoder (chapter 3), all in :meth:`LuongSeq2Seq.step`:

* attention is computed from the *current* state ``h_t`` (after the RNN step),
  not from ``s_{t-1}``;
* the attentional hidden state ``h̃_t = tanh(W_c [c_t; h_t])`` (Eq. 5) feeds the
  output layer ``p(y_t) = softmax(W_s h̃_t)`` (Eq. 6);
* **input feeding** (§3.3): ``h̃_{t-1}`` is concatenated to the next input, so the
  model knows where it looked before;
* attention may be **global** (every source state) or **local** (``local-m`` / ``local-p``,
  see :mod:`attention.local`), with any score function of chapter 4 by name.

With global attention, ``step(..., weights_hook=f)`` puts other weights in place of the model's,
between the softmax and ``c_t``, as :meth:`Seq2Seq.step <attention.models.seq2seq.Seq2Seq.step>`
does (:func:`~attention.models.seq2seq.override_attention`). Local attention refuses it: local-p's
weights are scaled by a Gaussian and do not sum to 1, and its context is read from the window.

The encoder, the cell and the score are built by :class:`~attention.models.seq2seq.RNNEncoderDecoder`;
teacher forcing, greedy and beam search come with every :class:`~attention.models.base.SequenceModel`.
Chapter 9 (``book/09-global-local.md``) teaches this; the ablation compares the variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..functional import attend
from ..local import PredictivePosition, local_attention
from ..scores import is_content_based
from .checks import check_ids
from .interface import Encoded, EncoderMemory, Step
from .registry import register_model
from .seq2seq import RNNEncoderDecoder, Seq2SeqConfig, WeightsHook, override_attention

__all__ = ["LuongConfig", "LuongSeq2Seq", "LuongState"]


@dataclass
class LuongConfig(Seq2SeqConfig):
    attention: str | None = "general"  # a score name, or None (no attention: h̃_t = tanh(W_c h_t))
    local: str | None = None  # None = global; "m" = local-m (p_t = t); "p" = local-p (predicted p_t)
    window: int = 10  # D: the local window is [p_t - D, p_t + D]; sigma = D / 2 (Luong §3.2)
    input_feeding: bool = True  # feed h̃_{t-1} with y_{t-1} (Luong §3.3)


@dataclass
class LuongState:
    """The decoder state between two steps (batch first, so beams can reorder it)."""

    rnn: object  # the cell's state: h_t (B, Hd), or (h_t, c_t) for an LSTM
    feed: Tensor  # (B, Hd) h̃_{t-1}, fed back with the next input (zeros at the start)
    t: Tensor  # (B,) long, the step number (local-m's p_t = t)


@register_model("luong")
class LuongSeq2Seq(RNNEncoderDecoder):
    """Encoder–decoder with Luong-style attention; see the module docstring."""

    config_class = LuongConfig

    def __init__(self, cfg: LuongConfig):
        if cfg.local not in (None, "m", "p"):
            raise ValueError(f"local must be None, 'm' or 'p', got {cfg.local!r}")
        if cfg.local and (cfg.attention is None or not is_content_based(cfg.attention)):
            raise ValueError(
                f"local attention needs a content-based score, got attention={cfg.attention!r} "
                "(the location score predicts absolute positions; use it globally)"
            )
        super().__init__(cfg)
        H, He, Hd = cfg.hidden_dim, self.encoder_dim, self.decoder_dim
        self.position = PredictivePosition(Hd, cfg.attention_dim or H) if cfg.local == "p" else None
        self.W_c = nn.Linear((He if self.score is not None else 0) + Hd, Hd, bias=False)  # Eq. 5
        self.output = nn.Linear(Hd, cfg.tgt_vocab)  # W_s, Eq. 6
        if cfg.tie_embeddings:
            self.tie_output_to_embeddings(self.output)  # needs embed_dim == the decoder size

    def decoder_input_dim(self) -> int:
        feed = self.decoder_dim if self.cfg.input_feeding else 0
        return self.cfg.embed_dim + feed  # [y_{t-1}; h̃_{t-1}]

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """The source states (no fixed context vector: Luong's decoder always attends)."""
        memory, _, s0 = self.read_source(src, src_lengths)
        h0 = s0[0] if isinstance(s0, tuple) else s0  # (B, Hd)
        state = LuongState(
            rnn=s0,
            feed=torch.zeros_like(h0),  # h̃_0 = 0
            t=torch.zeros(h0.shape[0], dtype=torch.long, device=h0.device),
        )
        return Encoded(memory, state)

    def attend_to_source(self, h: Tensor, memory: EncoderMemory, t: Tensor):
        """Global or local attention from ``h_t`` ``(B, Hd)``: context ``(B, He)``, weights ``(B, S)``."""
        states, S = memory.states, memory.states.shape[1]
        query = h[:, None, :]  # (B, 1, Hd)
        if self.cfg.local is None:
            context, weights = attend(self.score(query, states), states, memory.mask[:, None, :])
            return context[:, 0], weights[:, 0]
        if self.cfg.local == "m":
            centers = t[:, None].to(h.dtype)  # p_t = t  (B, 1)
        else:
            centers = self.position(query, memory.lengths)  # p_t = S·σ(v_pᵀ tanh(W_p h_t))  (B, 1)
        context, w, positions = local_attention(
            self.score, query, states, states, centers, memory.lengths, self.cfg.window, gaussian=self.cfg.local == "p"
        )  # Eq. 10 is local-p's
        # spread the window's weights back onto the source positions, for plots and AER
        weights = h.new_zeros(h.shape[0], S + 2 * self.cfg.window + 1)
        index = (positions[:, 0] + self.cfg.window).clamp(0, weights.shape[1] - 1)  # (B, W)
        weights.scatter_add_(1, index, w[:, 0])
        return context[:, 0], weights[:, self.cfg.window : self.cfg.window + S]  # (B, He), (B, S)

    def step(
        self, y_prev: Tensor, state: LuongState, memory: EncoderMemory, weights_hook: WeightsHook | None = None
    ) -> Step:
        """``y_{t-1}``, state -> logits ``(B, V)``, new state, weights ``(B, S)`` or None.

        ``weights_hook`` (default None), global attention only: ``weights (B, S) -> (B, S)``, the
        weights that make ``c_t`` instead of the model's (checked); the step returns those."""
        check_ids(y_prev, self.cfg.tgt_vocab, "y_prev", "target")
        if weights_hook is not None and (self.score is None or self.cfg.local is not None):
            raise ValueError(
                f"weights_hook needs global attention; this LuongSeq2Seq has attention={self.cfg.attention!r}, "
                f"local={self.cfg.local!r}"
            )
        y = self.dropout(self.tgt_embed(y_prev))  # (B, E)
        x = torch.cat([y, state.feed], dim=-1) if self.cfg.input_feeding else y
        rnn = self.cell(x, state.rnn)
        h = rnn[0] if isinstance(rnn, tuple) else rnn  # h_t (B, Hd)
        if self.score is None:
            weights = None
            h_tilde = torch.tanh(self.W_c(h))
        else:
            context, weights = self.attend_to_source(h, memory, state.t)
            if weights_hook is not None:  # other weights in place of the model's (chapter 10)
                context, weights = override_attention(weights_hook, weights, memory)
            h_tilde = torch.tanh(self.W_c(torch.cat([context, h], dim=-1)))  # h̃_t = tanh(W_c[c_t; h_t])
        logits = self.output(self.dropout(h_tilde))  # softmax(W_s h̃_t) before the softmax
        return Step(logits, LuongState(rnn=rnn, feed=h_tilde, t=state.t + 1), weights)
