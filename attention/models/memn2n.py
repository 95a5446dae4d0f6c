"""Sukhbaatar et al. (2015), "End-To-End Memory Networks": chapter 7, attention as reading a memory.

Shape legend: B batch, M memory slots (sentences of the story), J words per sentence (and per
question), D embedding dim, V vocabulary, K hops.

The story's sentences are written into two memories, one to address and one to read (§2.1):

    m_i = Σ_j l_j ⊙ A x_ij + T_A(i)        (B, M, D)   keys:   what each sentence is matched on
    c_i = Σ_j l_j ⊙ C x_ij + T_C(i)        (B, M, D)   values: what each sentence contributes
    u¹  = Σ_j l_j ⊙ B q_j                  (B, D)      the question

and the question reads them K times (§2.2), each hop with its own A^k, C^k:

    p^k_i   = softmax_i(u^kᵀ m^k_i)        (B, M)      which sentences this hop reads
    o^k     = Σ_i p^k_i c^k_i              (B, D)
    u^{k+1} = u^k + o^k                    (or H u^k + o^k with layer-wise tying)
    â       = softmax(W (o^K + u^K))       (B, V)

This is the attention of chapter 1 with the question as query, the sentences as keys and values,
and a dot-product score (:class:`attention.scores.DotScore`, :func:`attention.functional.attend`):
with one hop and ``A = C`` it *is* that attention, keys equal to values. Several hops let the
answer of one read change the question of the next: "where is the football?" first finds who
dropped it, then where that person went.

Options (§4.1-4.2 of the paper):

* ``encoding``: ``"bow"`` (``l_j = 1``, a bag of words) or ``"position"`` (position encoding
  ``l_kj = (1 - j/J) - (k/D)(1 - 2j/J)``, which lets word order matter);
* ``temporal``: add the learned ``T_A(i)``, ``T_C(i)`` for the slot's age (slot 0 = the most
  recent sentence), so that "where did she go *last*" can be answered;
* ``tying``: ``"adjacent"`` (``A^{k+1} = C^k`` and ``B = A^1``; the temporal rows are tied the
  same way) or ``"layerwise"`` (one ``A`` and one ``C`` for all hops, its own ``B``, and
  ``u^{k+1} = H u^k + o^k``). The paper also ties the answer layer to ``C^K``; here ``W`` is its
  own matrix over the answer vocabulary, which is much smaller than the word vocabulary;
* ``linear``: the *linear start* of training: no softmax in the hops (``p^k = u^kᵀ m^k`` as is),
  switched off once the loss stops falling (:meth:`MemN2N.set_linear`).

Padded sentences get exactly zero weight in every hop (``masked_softmax``; in linear mode their
scores are zeroed).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..functional import attend
from ..scores import DotScore
from .checks import check_ids, check_special_id
from .interface import ClassifierOutput
from .pooling import check_sizes
from .registry import register_model

__all__ = ["MemN2NConfig", "MemN2N", "position_encoding", "ENCODINGS", "TYINGS"]

ENCODINGS = ("bow", "position")
TYINGS = ("adjacent", "layerwise")


@dataclass
class MemN2NConfig:
    vocab: int  # V, words of stories and questions (id pad_id = <pad>)
    answers: int  # size of the answer vocabulary
    embed_dim: int = 20  # D
    hops: int = 3  # K
    memory_size: int = 50  # the largest M (temporal encoding has one row per slot)
    encoding: str = "position"  # "bow" or "position"
    temporal: bool = True
    tying: str = "adjacent"  # "adjacent" or "layerwise"
    linear: bool = False  # linear start: no softmax in the hops
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "MemN2NConfig",
            vocab=self.vocab,
            answers=self.answers,
            embed_dim=self.embed_dim,
            hops=self.hops,
            memory_size=self.memory_size,
        )
        if self.encoding not in ENCODINGS:
            raise ValueError(f"MemN2NConfig.encoding must be one of {ENCODINGS}; got {self.encoding!r}")
        if self.tying not in TYINGS:
            raise ValueError(f"MemN2NConfig.tying must be one of {TYINGS}; got {self.tying!r}")
        check_special_id("MemN2NConfig", "pad_id", self.pad_id, vocab=self.vocab)


def position_encoding(J: int, D: int, device=None, lengths: Tensor | None = None) -> Tensor:
    """``l_kj = (1 - j/J) - (k/D)(1 - 2j/J)`` with j, k counted from 1 (Sukhbaatar et al. §4.1).

    Without ``lengths``: ``(J, D)`` for sentences of J words. With ``lengths (...)`` (each sentence's
    own number of words, so that padding a batch does not change a sentence's encoding):
    ``(..., J, D)``, computed with each sentence's J and zero on its padding.
    """
    j = torch.arange(1, J + 1, device=device, dtype=torch.float32)[:, None]  # (J, 1)
    k = torch.arange(1, D + 1, device=device, dtype=torch.float32)[None, :]  # (1, D)
    if lengths is None:
        return (1 - j / J) - (k / D) * (1 - 2 * j / J)
    n = lengths.to(torch.float32).clamp(min=1)[..., None, None]  # (..., 1, 1)
    encoding = (1 - j / n) - (k / D) * (1 - 2 * j / n)  # (..., J, D)
    return encoding * (j <= n)


@register_model("memn2n")
class MemN2N(nn.Module):
    """K hops of attention over a story's sentences; see the module docstring.

    ``forward(story (B, M, J), question (B, J))`` (word ids, 0 = padding; a sentence of all padding
    is an empty slot, and the real sentences come first, oldest first) returns
    ``ClassifierOutput(logits (B, answers), {"hops": (B, K, M)})``: row k is hop k's weights over the
    sentences, exactly 0 on empty slots.
    """

    config_class = MemN2NConfig

    def __init__(self, cfg: MemN2NConfig):
        super().__init__()
        self.cfg = cfg
        V, D, K = cfg.vocab, cfg.embed_dim, cfg.hops
        n_embeddings = K + 1 if cfg.tying == "adjacent" else 2  # adjacent: A^1, C^1 = A^2, ..., C^K
        self.embeddings = nn.ModuleList(nn.Embedding(V, D, padding_idx=cfg.pad_id) for _ in range(n_embeddings))
        for e in self.embeddings:
            nn.init.normal_(e.weight, std=0.1)
            e.weight.data[cfg.pad_id].zero_()
        if cfg.temporal:
            self.temporal_embeddings = nn.Parameter(torch.randn(n_embeddings, cfg.memory_size, D) * 0.1)
        if cfg.tying == "layerwise":
            self.H = nn.Linear(D, D, bias=False)
            self.question_embedding = nn.Embedding(V, D, padding_idx=cfg.pad_id)
        self.W = nn.Linear(D, cfg.answers, bias=False)  # the answer layer, over the answer vocabulary
        self.score = DotScore()

    def set_linear(self, linear: bool) -> None:
        """Switch the linear start on (no softmax in the hops) or off."""
        self.cfg.linear = bool(linear)

    # --- which embedding each role uses ----------------------------------------------------------
    def _roles(self, hop: int) -> tuple[int, int]:
        """Indices of (A^k, C^k) in ``self.embeddings`` for hop k (from 0)."""
        return (hop, hop + 1) if self.cfg.tying == "adjacent" else (0, 1)

    def _encode(self, ids: Tensor, table: int) -> Tensor:
        """Sentences ``(..., J)`` -> ``(..., D)``: Σ_j l_j ⊙ E x_j with embedding ``table``."""
        x = self.embeddings[table](ids)  # (..., J, D)
        if self.cfg.encoding == "position":
            x = x * position_encoding(ids.shape[-1], self.cfg.embed_dim, ids.device, self._lengths(ids))
        return x.sum(-2)

    def _lengths(self, ids: Tensor) -> Tensor:
        """Words per sentence (the real words come first): ``(..., J) -> (...)``."""
        return (ids != self.cfg.pad_id).sum(-1)

    def _memory(self, story: Tensor, table: int, n_real: Tensor) -> Tensor:
        """The memory of ``story (B, M, J)`` with embedding ``table``, plus the temporal rows."""
        memory = self._encode(story, table)  # (B, M, D)
        if self.cfg.temporal:
            M = story.shape[1]
            # slot i of a story with n real sentences is (n - 1 - i) sentences old
            age = (n_real[:, None] - 1 - torch.arange(M, device=story.device)[None, :]).clamp(min=0)  # (B, M)
            memory = memory + self.temporal_embeddings[table][age]
        return memory

    def question(self, question: Tensor) -> Tensor:
        """u¹ = Σ_j l_j ⊙ B q_j: ``(B, J) -> (B, D)`` (``B = A^1`` with adjacent tying)."""
        if self.cfg.tying == "layerwise":
            x = self.question_embedding(question)
            if self.cfg.encoding == "position":
                x = x * position_encoding(
                    question.shape[-1], self.cfg.embed_dim, question.device, self._lengths(question)
                )
            return x.sum(-2)
        return self._encode(question, 0)

    def hop(self, u: Tensor, keys: Tensor, values: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """One read: ``p = softmax(uᵀ m)``, ``o = Σ p c``: u (B, D), keys/values (B, M, D), keep (B, M)."""
        scores = self.score(u[:, None, :], keys)  # (B, 1, M)
        if self.cfg.linear:
            weights = scores.masked_fill(~keep[:, None, :], 0.0)  # linear start: the scores as they are
            return (weights @ values)[:, 0], weights[:, 0]
        o, weights = attend(scores, values, keep[:, None, :])  # (B, 1, D), (B, 1, M)
        return o[:, 0], weights[:, 0]

    def forward(self, story: Tensor, question: Tensor) -> ClassifierOutput:
        if story.dim() != 3 or question.dim() != 2 or story.shape[0] != question.shape[0]:
            raise ValueError(
                f"expected story (B, M, J) and question (B, J); got story {tuple(story.shape)}, "
                f"question {tuple(question.shape)}"
            )
        if story.shape[1] > self.cfg.memory_size:
            raise ValueError(f"the story has {story.shape[1]} sentences; memory_size is {self.cfg.memory_size}")
        check_ids(story, self.cfg.vocab, "story", "word")
        check_ids(question, self.cfg.vocab, "question", "word")
        keep = (story != self.cfg.pad_id).any(-1)  # (B, M), True = a real sentence
        n_real = keep.sum(1)  # (B,)
        if bool((keep[:, 1:] & ~keep[:, :-1]).any()):
            raise ValueError("a real sentence follows an empty slot; put the story's sentences first")
        u = self.question(question)  # (B, D)
        hops = []
        for k in range(self.cfg.hops):
            a, c = self._roles(k)
            o, p = self.hop(u, self._memory(story, a, n_real), self._memory(story, c, n_real), keep)
            hops.append(p)
            u = (self.H(u) if self.cfg.tying == "layerwise" else u) + o  # u^{k+1}
        logits = self.W(u)  # â = softmax(W u^{K+1}), u^{K+1} = o^K + u^K
        return ClassifierOutput(logits, {"hops": torch.stack(hops, 1)})  # (B, answers), (B, K, M)
