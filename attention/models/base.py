"""The base class of every model decoded token by token (translation, captioning).

Shape legend: B batch, S source length, T target length, V target vocabulary.

A subclass sets ``self.cfg`` (a dataclass with ``tgt_vocab``, ``pad_id``, ``bos_id``, ``eos_id``) and
writes two methods; teacher forcing, greedy decoding and beam search come with the base:

* ``encode(src (B, S), src_lengths (B,)) -> Encoded(memory, state)``: read the source once;
  ``memory`` (:class:`~attention.models.interface.EncoderMemory`) is what every step reads,
  ``state`` the decoder's first state.
* ``step(y_prev (B,), state, memory) -> Step(logits (B, V), state, weights (B, S) | None)``:
  one output position.

Both check their ids first (:func:`attention.models.checks.check_ids`), so that an id outside a
vocabulary is a ValueError naming it, not an embedding's ``IndexError``.

``CONTRIBUTING.md`` ("Adding a model") shows the whole recipe: subclass, config dataclass,
``@register_model``, tests.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import decoding
from .checks import check_ids
from .interface import Encoded, SequenceOutput, Step, Translation

__all__ = ["SequenceModel"]


class SequenceModel(nn.Module):
    """Encode once, then ``step`` per output token; see the module docstring."""

    cfg: object  # a config dataclass with tgt_vocab, pad_id, bos_id, eos_id

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} must implement encode(src, src_lengths)")

    def step(self, y_prev: Tensor, state, memory) -> Step:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} must implement step(y_prev, state, memory)")

    def forward(
        self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor, return_attention: bool = False
    ) -> SequenceOutput:
        """Teacher forcing: ``tgt_in`` ``(B, T)`` = ``<bos> y_1 … y_{T-1}``; logits ``(B, T, V)``."""
        check_ids(tgt_in, self.cfg.tgt_vocab, "tgt_in", "target")
        memory, state = self.encode(src, src_lengths)
        logits, maps = [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, weights = self.step(tgt_in[:, t], state, memory)
            logits.append(step_logits)
            maps.append(weights)
        attention = torch.stack(maps, 1) if return_attention and maps and maps[0] is not None else None
        return SequenceOutput(torch.stack(logits, 1), attention)  # (B, T, V), (B, T, S)

    def greedy(self, src: Tensor, src_lengths: Tensor, max_len: int = 50) -> Translation:
        """:func:`attention.models.decoding.greedy` with this model."""
        return decoding.greedy(self, src, src_lengths, max_len=max_len)

    def beam_search(
        self, src: Tensor, src_lengths: Tensor, beam_size: int = 5, max_len: int = 50, length_penalty: float = 0.0
    ) -> Translation:
        """:func:`attention.models.decoding.beam_search` with this model."""
        return decoding.beam_search(
            self, src, src_lengths, beam_size=beam_size, max_len=max_len, length_penalty=length_penalty
        )
