"""Cheng et al. (2016), "Long Short-Term Memory-Networks for Machine Reading": the LSTMN, an LSTM
that attends over its own past states (intra-attention). Chapter 6, self-attention before the
Transformer.

Shape legend: B batch, T sentence length (words), E embedding dim, Hd hidden (and memory) size,
A attention hidden dim, C classes.

An LSTM keeps one state ``(h_{t-1}, c_{t-1})`` and must squeeze the whole past into it. The LSTMN
keeps every past state on two tapes, the hidden tape ``h_1 … h_{t-1}`` and the memory tape
``c_1 … c_{t-1}``, and at each word reads them with attention (§3 of the paper):

    a_i^t = vᵀ tanh(W_h h_i + W_x x_t + W_h̃ h̃_{t-1})      for the earlier words i < t
    s^t   = softmax_i(a^t)
    h̃_t  = Σ_i s_i^t h_i,   c̃_t = Σ_i s_i^t c_i           # the adaptive summary
    h_t, c_t = LSTMCell(x_t, (h̃_t, c̃_t))                 # in place of (h_{t-1}, c_{t-1})

and then writes ``h_t`` and ``c_t`` to the tapes. The score is the additive one of
:class:`~attention.scores.AdditiveScore`, with ``[x_t; h̃_{t-1}]`` as its query:
``W_a [x_t; h̃_{t-1}] = W_x x_t + W_h̃ h̃_{t-1}`` (``W_a`` split into two blocks), and
``U_a = W_h`` projects each hidden state once, when it is written to the tape.

**The first word.** It has no history: the tapes are empty, its attention row has no admissible
key, and ``masked_softmax`` gives it no weights and a zero summary, so the first step is an
ordinary LSTM step from the zero state ``(h̃_1, c̃_1) = (0, 0)``. Its row of the attention map is
zero, and every later row sums to one over the earlier words: the map is *strictly* lower
triangular, and no word ever sees itself or a later word.

A linear layer on the last hidden state (or the mean of the hidden states) classifies the
sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import attend
from ..masks import lengths_to_mask
from ..scores import AdditiveScore
from .checks import check_ids, check_special_id
from .interface import ClassifierOutput
from .pooling import check_dropout, check_sentences, check_sizes
from .registry import register_model

__all__ = ["LSTMNConfig", "LSTMNClassifier", "LSTMNTapes", "READOUTS"]

#: how :class:`LSTMNClassifier` turns the hidden tape into one sentence vector
READOUTS = ("last", "mean")


@dataclass
class LSTMNConfig:
    vocab: int  # vocabulary size (id pad_id = <pad>)
    classes: int  # C
    embed_dim: int = 64  # E, word embeddings x_t
    hidden_dim: int = 64  # Hd, h_t and c_t (both tapes)
    attention_dim: int = 64  # A, size of W_h h_i + W_x x_t + W_h̃ h̃_{t-1} inside the tanh
    readout: str = "last"  # "last": h_n of the last real word; "mean": the mean of h_1 … h_n
    dropout: float = 0.0  # on the embeddings and before the output layer
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "LSTMNConfig",
            vocab=self.vocab,
            classes=self.classes,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            attention_dim=self.attention_dim,
        )
        check_dropout("LSTMNConfig", self.dropout)
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}; got {self.readout!r}")
        check_special_id("LSTMNConfig", "pad_id", self.pad_id, vocab=self.vocab)


@dataclass
class LSTMNTapes:
    """What :meth:`LSTMNClassifier.read` returns: the two tapes and the intra-attention."""

    hidden: Tensor  # (B, T, Hd) h_1 … h_T, the hidden tape
    memory: Tensor  # (B, T, Hd) c_1 … c_T, the memory tape
    attention: Tensor  # (B, T, T) row t = s^t over the words i < t; zero on and above the diagonal


@register_model("lstmn")
class LSTMNClassifier(nn.Module):
    """The LSTMN read over a sentence, then a linear layer: Cheng et al.'s sentence classifier.

    ``forward(tokens (B, T), lengths (B,))`` returns
    ``ClassifierOutput(logits (B, C), {"intra": (B, T, T)})``: row ``t`` holds word ``t``'s weights
    over the earlier words ``i < t``; strictly lower triangular, zero for the first word and for
    padded rows and columns.
    """

    config_class = LSTMNConfig

    def __init__(self, cfg: LSTMNConfig):
        super().__init__()
        self.cfg = cfg
        E, Hd = cfg.embed_dim, cfg.hidden_dim
        self.embed = nn.Embedding(cfg.vocab, E, padding_idx=cfg.pad_id)
        # query [x_t; h̃_{t-1}] (W_x and W_h̃ as the two blocks of W_a), key h_i (U_a = W_h)
        self.score = AdditiveScore(query_dim=E + Hd, key_dim=Hd, hidden_dim=cfg.attention_dim)
        self.cell = nn.LSTMCell(E, Hd)
        self.dropout = nn.Dropout(cfg.dropout)
        self.output = nn.Linear(Hd, cfg.classes)

    def read(self, tokens: Tensor, lengths: Tensor) -> LSTMNTapes:
        """Run the LSTMN left to right over each sentence; word ``t`` sees only words ``i < t``."""
        check_sentences(tokens, lengths)
        check_ids(tokens, self.cfg.vocab, "tokens", "word")
        B, T = tokens.shape
        Hd = self.cfg.hidden_dim
        x = self.dropout(self.embed(tokens))  # (B, T, E)
        real = lengths_to_mask(lengths, T)  # (B, T), True = a real word
        hidden = x.new_zeros(B, 0, Hd)  # the hidden tape, empty before the first word
        memory = x.new_zeros(B, 0, Hd)  # the memory tape
        keys = x.new_zeros(B, 0, self.cfg.attention_dim)  # W_h h_i, projected once per word
        h_summary = x.new_zeros(B, Hd)  # h̃_{t-1}, zero before the first word
        rows = []
        for t in range(T):
            query = torch.cat([x[:, t], h_summary], -1)[:, None]  # (B, 1, E + Hd) = [x_t; h̃_{t-1}]
            scores = self.score.score_projected(query, keys)  # (B, 1, t): a_i^t for i < t
            tapes = torch.cat([hidden, memory], -1)  # (B, t, 2Hd): [h_i; c_i]
            # At t = 0 the tapes are empty: no weights and a zero summary (masked_softmax's rule for
            # a row with no admissible key), so the first word is an LSTM step from (0, 0).
            summary, weights = attend(scores, tapes, real[:, None, :t])  # (B, 1, 2Hd), (B, 1, t)
            h_summary, c_summary = summary[:, 0].split(Hd, -1)  # h̃_t, c̃_t: (B, Hd) each
            h, c = self.cell(x[:, t], (h_summary, c_summary))  # (B, Hd) each
            hidden = torch.cat([hidden, h[:, None]], 1)  # (B, t + 1, Hd)
            memory = torch.cat([memory, c[:, None]], 1)  # (B, t + 1, Hd)
            keys = torch.cat([keys, self.score.project_keys(h[:, None])], 1)  # (B, t + 1, A)
            rows.append(F.pad(weights[:, 0], (0, T - t)))  # (B, T): zero from position t on
        attention = torch.stack(rows, 1) * real[:, :, None]  # (B, T, T), padded rows zeroed
        return LSTMNTapes(hidden, memory, attention)

    def readout(self, hidden: Tensor, lengths: Tensor) -> Tensor:
        """The sentence vector (B, Hd): the last real word's ``h_n``, or the mean of ``h_1 … h_n``
        (an empty sentence gives zeros)."""
        real = lengths_to_mask(lengths, hidden.shape[1])[:, :, None]  # (B, T, 1)
        if self.cfg.readout == "mean":
            total = hidden.masked_fill(~real, 0.0).sum(1)  # (B, Hd)
            return total / lengths.clamp_min(1)[:, None].to(hidden.dtype)
        last = (lengths - 1).clamp_min(0)  # (B,) position of the last real word
        h_n = hidden[torch.arange(len(hidden), device=hidden.device), last]  # (B, Hd)
        return h_n.masked_fill((lengths == 0)[:, None], 0.0)

    def forward(self, tokens: Tensor, lengths: Tensor) -> ClassifierOutput:
        tapes = self.read(tokens, lengths)
        logits = self.output(self.dropout(self.readout(tapes.hidden, lengths)))  # (B, C)
        return ClassifierOutput(logits, {"intra": tapes.attention})
