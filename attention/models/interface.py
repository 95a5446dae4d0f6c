"""What every model of the book returns: typed results instead of dicts and bare tuples.

Shape legend: B batch, S source length, T target length, V target vocabulary,
He encoder state dim, C classes, A the number of attention maps a model exposes.

Two families (``CONTRIBUTING.md``, "Adding a model"):

* **sequence models** (translation, captioning) are decoded token by token. They implement
  :class:`attention.models.base.SequenceModel`: ``encode(src, src_lengths) -> Encoded`` once
  per sentence, then ``step(y_prev, state, memory) -> Step`` once per output token. Greedy and
  beam search (:mod:`attention.models.decoding`) and teacher forcing are written once, against
  that interface, for every such model.
* **classifiers and memory networks** (HAN, structured self-attention, LSTMN, MemN2N ...)
  implement ``forward(...) -> ClassifierOutput``: the logits *and* the attention weights the
  chapter draws, by name.

A decoder ``state`` is whatever the model needs between steps: a tensor, or a tuple, dict or
dataclass of tensors whose first dimension is the batch; :func:`select_rows` picks rows of any
of them (beam search reorders hypotheses with it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from torch import Tensor

__all__ = [
    "EncoderMemory",
    "Encoded",
    "Step",
    "SequenceOutput",
    "Translation",
    "ClassifierOutput",
    "TaggerOutput",
    "select_rows",
]


def select_rows(x: Any, index: Tensor) -> Any:
    """Rows ``index`` (along dim 0) of a tensor, or of every tensor inside a tuple, list, dict
    or dataclass (``None`` and non-tensor leaves are kept as they are)."""
    if isinstance(x, Tensor):
        return x.index_select(0, index)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # NamedTuple
        return type(x)(*(select_rows(v, index) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(select_rows(v, index) for v in x)
    if isinstance(x, dict):
        return {k: select_rows(v, index) for k, v in x.items()}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.replace(
            x, **{f.name: select_rows(getattr(x, f.name), index) for f in dataclasses.fields(x) if f.init}
        )
    return x


@dataclass
class EncoderMemory:
    """What a decoder reads at every step, batch first.

    ``states`` and ``mask`` are always there; a model fills the optional fields it uses.
    """

    states: Tensor  # (B, S, He) encoder states h_i: the keys and values of attention
    mask: Tensor  # (B, S) bool, True = a real source token (keep mask)
    lengths: Tensor  # (B,) source lengths
    context: Tensor | None = None  # (B, He) the one fixed vector c of a model without attention
    keys: Tensor | None = None  # (B, S, A) keys projected once per sentence (U_a h_i)

    def select(self, index: Tensor) -> "EncoderMemory":
        """The memory of sentences ``index`` (repeats allowed: one copy per beam)."""
        return select_rows(self, index)


class Encoded(NamedTuple):
    """``encode``'s result: the memory, and the decoder's first state."""

    memory: EncoderMemory
    state: Any


class Step(NamedTuple):
    """``step``'s result for one output position."""

    logits: Tensor  # (B, V) scores of the next token, before the softmax
    state: Any  # the decoder state after this step
    weights: Tensor | None  # (B, S) attention over the source; None without attention


@dataclass
class SequenceOutput:
    """Teacher forcing over a whole target sentence."""

    logits: Tensor  # (B, T, V)
    attention: Tensor | None  # (B, T, S) alignment matrix, None without attention (or not asked)


@dataclass
class Translation:
    """What greedy and beam search return."""

    tokens: Tensor  # (B, T') ids, EOS included when emitted, padded with pad_id
    attention: Tensor | None  # (B, T', S); None without attention
    scores: Tensor | None = None  # (B,) total log-probability of each output (beam search)


@dataclass
class ClassifierOutput:
    """What a classifier (or a memory network answering a question) returns from ``forward``."""

    logits: Tensor  # (B, C) class scores before the softmax
    attention: dict[str, Tensor] = field(default_factory=dict)  # name -> weights, shapes documented by the model

    @property
    def prediction(self) -> Tensor:
        """``(B,)`` the most probable class."""
        return self.logits.argmax(-1)


@dataclass
class TaggerOutput:
    """What a token tagger (chapter 4's coupled multi-layer attention) returns from ``forward``:
    one set of logits per tag set, by name, and the attention weights the chapter draws."""

    logits: dict[str, Tensor]  # tag set -> (B, T, K) per-token scores before the softmax
    attention: dict[str, Tensor] = field(default_factory=dict)  # name -> weights, shapes documented by the model

    @property
    def prediction(self) -> dict[str, Tensor]:
        """tag set -> ``(B, T)`` the most probable tag of each token."""
        return {k: v.argmax(-1) for k, v in self.logits.items()}
