"""Yang et al. (2016), "Hierarchical Attention Networks for Document Classification": chapter 5.

Shape legend: B batch (documents), N sentences per document, T words per sentence,
E embedding dim, U GRU state per direction (states are 2U wide), Da attention dim, C classes.

A document is read bottom-up, at two levels, with the same construction at each (§2.2):

    h_it = BiGRU(W_e w_it)                                   # (B, N, T, 2U) words in context
    u_it = tanh(W_w h_it + b_w)                              # (B, N, T, Da)
    α_it = softmax_t(u_itᵀ u_w)                              # (B, N, T)  word attention
    s_i  = Σ_t α_it h_it                                     # (B, N, 2U) sentence vectors

    h_i  = BiGRU(s_1 … s_L)                                  # (B, N, 2U) sentences in context
    u_i  = tanh(W_s h_i + b_s)                               # (B, N, Da)
    α_i  = softmax_i(u_iᵀ u_s)                               # (B, N)     sentence attention
    v    = Σ_i α_i h_i                                       # (B, 2U)    document vector
    p    = softmax(W_c v + b_c)                              # (B, C)

``u_w`` and ``u_s`` are learned vectors, a query that asks "which word (sentence) is
informative?" and is the same for every document. Padded words and padded sentences are
masked and get exactly zero weight (``masked_softmax``). The paper's baselines with the same
encoders replace each attention by a fixed rule: ``pool="mean"`` (HN-AVE) averages the states,
``pool="max"`` (HN-MAX) takes each feature's maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..functional import masked_softmax
from ..masks import lengths_to_mask
from .checks import check_ids, check_special_id
from .interface import ClassifierOutput
from .pooling import check_dropout, check_sizes
from .registry import register_model

__all__ = ["HANConfig", "HANClassifier", "AttentionPool", "POOLS", "check_documents"]

#: how each level turns its states into one vector: HAN, HN-AVE, HN-MAX
POOLS = ("attention", "mean", "max")


@dataclass
class HANConfig:
    vocab: int  # vocabulary size (id pad_id = <pad>)
    classes: int  # C
    embed_dim: int = 64  # E
    hidden_dim: int = 32  # U, GRU state per direction at both levels
    attention_dim: int = 64  # Da, width of u_it and of the context vectors u_w, u_s
    pool: str = "attention"  # "attention" (HAN), "mean" (HN-AVE) or "max" (HN-MAX), at both levels
    dropout: float = 0.0  # on the embeddings and on the document vector
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "HANConfig",
            vocab=self.vocab,
            classes=self.classes,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            attention_dim=self.attention_dim,
        )
        check_dropout("HANConfig", self.dropout)
        if self.pool not in POOLS:
            raise ValueError(f"HANConfig.pool must be one of {POOLS}; got {self.pool!r}")
        check_special_id("HANConfig", "pad_id", self.pad_id, vocab=self.vocab)


def check_documents(tokens: Tensor, lengths: Tensor) -> None:
    """``tokens (B, N, T)`` and ``lengths (B, N)`` in 0..T, real sentences first, or a ValueError."""
    if tokens.dim() != 3 or lengths.shape != tokens.shape[:2]:
        raise ValueError(
            f"expected tokens (B, N, T) and lengths (B, N); got tokens {tuple(tokens.shape)}, "
            f"lengths {tuple(lengths.shape)}"
        )
    if lengths.dtype.is_floating_point or bool(((lengths < 0) | (lengths > tokens.shape[2])).any()):
        raise ValueError(f"lengths must be integers in 0..T = {tokens.shape[2]}; got {lengths.tolist()}")
    real = lengths > 0
    if bool((real[:, 1:] & ~real[:, :-1]).any()):
        raise ValueError(f"a real sentence follows a padded one (length 0); lengths {lengths.tolist()}")
    if not bool(real[:, 0].all()):
        raise ValueError(f"every document needs at least one sentence; lengths {lengths.tolist()}")


class BiGRU(nn.Module):
    """A bidirectional GRU over padded sequences: ``(B, L, D), lengths (B,) -> (B, L, 2U)``, zeros on padding."""

    def __init__(self, input_dim: int, hidden_dim: int):
        super().__init__()
        self.rnn = nn.GRU(input_dim, hidden_dim, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, _ = self.rnn(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=x.shape[1])
        return states


class AttentionPool(nn.Module):
    """One level of HAN: ``u = tanh(W h + b)``, ``α = softmax(uᵀ u_ctx)`` over the real positions,
    ``Σ α h``; or the HN-AVE / HN-MAX rule in its place.

    ``forward(states (B, L, 2U), keep (B, L) bool)`` returns ``(pooled (B, 2U), weights (B, L))``;
    for ``"mean"`` the weights are uniform over the real positions, for ``"max"`` they are None.
    """

    def __init__(self, state_dim: int, attention_dim: int, pool: str = "attention"):
        super().__init__()
        self.pool = pool
        if pool == "attention":
            self.project = nn.Linear(state_dim, attention_dim)  # W, b
            self.context = nn.Parameter(torch.randn(attention_dim) * attention_dim**-0.5)  # u_ctx

    def attend(self, states: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """HAN's attention at one level: states (B, L, 2U), keep (B, L) -> (Σ α h (B, 2U), α (B, L))."""
        u = torch.tanh(self.project(states))  # (B, L, Da)
        alpha = masked_softmax(u @ self.context, keep)  # (B, L); padding exactly 0
        return (alpha.unsqueeze(-1) * states).sum(1), alpha

    def forward(self, states: Tensor, keep: Tensor) -> tuple[Tensor, Tensor | None]:
        if self.pool == "attention":
            return self.attend(states, keep)
        if self.pool == "mean":
            weights = keep.to(states.dtype) / keep.sum(1, keepdim=True).clamp(min=1)  # (B, L)
            return (weights.unsqueeze(-1) * states).sum(1), weights
        masked = states.masked_fill(~keep.unsqueeze(-1), float("-inf"))
        pooled = masked.max(1).values
        return pooled.masked_fill(~keep.any(1, keepdim=True), 0.0), None


@register_model("han")
class HANClassifier(nn.Module):
    """Word encoder + word attention -> sentence vectors; sentence encoder + sentence attention ->
    document vector -> classes (see the module docstring).

    ``forward(tokens (B, N, T), lengths (B, N))`` returns ``ClassifierOutput(logits (B, C),
    {"word": (B, N, T), "sentence": (B, N)})`` for ``pool="attention"`` and ``"mean"`` (uniform
    weights), no weights for ``"max"``. Every row of weights sums to 1 over its real positions
    and is exactly 0 on padded words and padded sentences (a padded sentence's word row is all 0).
    Only the real sentences run through the word encoder, so a document's output does not depend
    on the other documents of its batch.
    """

    config_class = HANConfig

    def __init__(self, cfg: HANConfig):
        super().__init__()
        self.cfg = cfg
        U2 = 2 * cfg.hidden_dim
        self.embed = nn.Embedding(cfg.vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.word_encoder = BiGRU(cfg.embed_dim, cfg.hidden_dim)
        self.word_pool = AttentionPool(U2, cfg.attention_dim, cfg.pool)
        self.sentence_encoder = BiGRU(U2, cfg.hidden_dim)
        self.sentence_pool = AttentionPool(U2, cfg.attention_dim, cfg.pool)
        self.drop = nn.Dropout(cfg.dropout)
        self.classify = nn.Linear(U2, cfg.classes)

    def sentence_vectors(self, tokens: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor | None]:
        """Word level: tokens (B, N, T), lengths (B, N) -> s (B, N, 2U) and word weights (B, N, T)."""
        B, N, T = tokens.shape
        real = lengths > 0  # (B, N)
        words = tokens[real]  # (R, T): the R real sentences of the batch, in order
        n_words = lengths[real]  # (R,)
        h = self.word_encoder(self.drop(self.embed(words)), n_words)  # (R, T, 2U)
        s_real, alpha_real = self.word_pool(h, lengths_to_mask(n_words, T))  # (R, 2U), (R, T)
        s = h.new_zeros(B, N, h.shape[-1])
        s[real] = s_real
        if alpha_real is None:
            return s, None
        alpha = h.new_zeros(B, N, T)
        alpha[real] = alpha_real
        return s, alpha

    def forward(self, tokens: Tensor, lengths: Tensor) -> ClassifierOutput:
        check_documents(tokens, lengths)
        check_ids(tokens, self.cfg.vocab, "tokens", "word")  # padded sentences too: they must hold ids
        s, word_weights = self.sentence_vectors(tokens, lengths)  # (B, N, 2U), (B, N, T)
        n_sentences = (lengths > 0).sum(1)  # (B,)
        h = self.sentence_encoder(s, n_sentences)  # (B, N, 2U)
        v, sentence_weights = self.sentence_pool(h, lengths > 0)  # (B, 2U), (B, N)
        logits = self.classify(self.drop(v))  # (B, C)
        attention = {} if word_weights is None else {"word": word_weights, "sentence": sentence_weights}
        return ClassifierOutput(logits, attention)
