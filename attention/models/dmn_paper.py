"""Kumar et al. (2016), "Ask Me Anything: Dynamic Memory Networks for NLP", §2, as the paper writes
it: chapter 7's paper DMN, beside the book's variant :mod:`attention.models.dmn`.

Shape legend: B batch, M memory slots (sentences of the story), J words per sentence (and per
question), N = M·J word positions of the joined story, D embedding dim, H hidden dim (GRU states,
facts, memory), G gate hidden dim, P passes (episodes), A answers.

Input module (§2.1). One GRU reads the whole story's words in order, across the sentences; the
facts are its states at the end of each sentence (the paper's end-of-sentence markers):

    h_i = GRU(L w_i, h_{i-1})          over the story's words w_1 … w_N, in order
    c_t = h_{end of sentence t}        (B, M, H)   facts; an empty slot gives no fact (0)

Question module (§2.2): the same embedding L and the same GRU over the question, ``q`` its last
state ``(B, H)``.

Episodic memory (§2.3), P passes, m⁰ = q. In pass p a gate per fact, from the feature vector

    z(c, m, q) = [c, m, q, c∘q, c∘m, |c−q|, |c−m|, cᵀW_b q, cᵀW_b m]          (B, M, 7H + 2)
    g_t = σ(W2 tanh(W1 z(c_t, m, q) + b1) + b2)                               (B, M)  0 on empty slots

(independent sigmoids: the gates of a pass need not sum to 1). The episode is the last state of
the attention-gated GRU over the facts,

    h_t = g_t GRU(c_t, h_{t−1}) + (1 − g_t) h_{t−1},   h_0 = 0,   e = h_T       (B, H)

(T the last real fact; a gate of exactly 0 leaves h unchanged, so the empty slots after T change
nothing), and the memory is updated by one GRU shared by the passes:

    mᵖ = GRU(e, mᵖ⁻¹)                                                           (B, H)

Answer module: ``logits = W_a [mᴾ; q]`` ``(B, A)``.

The gates are the attention chapter 7 draws: ``out.attention["hops"] (B, P, M)``, one row per
pass, as :mod:`attention.models.dmn` returns them, so :meth:`attention.tasks.qa.QAData.evaluate`
counts how often each pass's largest gate is on a supporting fact. The paper's gate supervision
(§3, the gates' cross-entropy against the supporting facts) is
:func:`attention.tasks.qa.binary_gate_supervision_loss`, the binary cross-entropy of each sigmoid
gate.

How this differs from the paper:

* the answer module is one linear layer on ``[mᴾ; q]``: bAbI answers are one word here, where the
  paper's answer module is a GRU that can write several;
* the number of passes is fixed (``passes``), as for the paper's bAbI runs without its stopping
  criterion (a special end-of-passes fact the gates may choose);
* the story's words are joined in a batch-first tensor and the GRU reads the padding after the
  last real word too; the facts are read at the real sentence ends only, and a causal GRU's state
  there does not depend on what follows, so the padding changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .checks import check_special_id
from .dmn import check_story, last_state
from .interface import ClassifierOutput
from .pooling import check_dropout, check_sizes
from .registry import register_model

__all__ = ["PaperDMNConfig", "PaperDMN"]


@dataclass
class PaperDMNConfig:
    vocab: int  # V, words of stories and questions (id pad_id = <pad>)
    answers: int  # A, size of the answer vocabulary
    embed_dim: int = 32  # D
    hidden_dim: int = 64  # H, GRU states, facts and memory
    gate_dim: int = 64  # G, hidden layer of the gate network
    passes: int = 3  # P, episodes (passes over the facts)
    dropout: float = 0.0  # on the facts and the question
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "PaperDMNConfig",
            vocab=self.vocab,
            answers=self.answers,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            gate_dim=self.gate_dim,
            passes=self.passes,
        )
        check_dropout("PaperDMNConfig", self.dropout)
        check_special_id("PaperDMNConfig", "pad_id", self.pad_id, vocab=self.vocab)


@register_model("dmn-paper")
class PaperDMN(nn.Module):
    """Kumar et al.'s dynamic memory network as the paper writes it; see the module docstring.

    ``forward(story (B, M, J), question (B, J))`` (word ids, ``pad_id`` = padding; a sentence of all
    padding is an empty slot, the real sentences come first, oldest first, and each sentence's real
    words come first) returns ``ClassifierOutput(logits (B, answers), {"hops": (B, P, M)})``: row p
    is pass p's sigmoid gates over the facts, in (0, 1) on the real ones and exactly 0 on empty slots.
    """

    config_class = PaperDMNConfig

    def __init__(self, cfg: PaperDMNConfig):
        super().__init__()
        self.cfg = cfg
        V, D, H, G = cfg.vocab, cfg.embed_dim, cfg.hidden_dim, cfg.gate_dim
        self.embedding = nn.Embedding(V, D, padding_idx=cfg.pad_id)  # L, shared by story and question
        self.rnn = nn.GRU(D, H, batch_first=True)  # the input GRU, shared by story and question
        self.bilinear = nn.Parameter(torch.empty(H, H))  # W_b of cᵀW_b q and cᵀW_b m
        nn.init.xavier_uniform_(self.bilinear)
        self.gate_hidden = nn.Linear(7 * H + 2, G)  # W1, b1
        self.gate_out = nn.Linear(G, 1)  # W2, b2
        self.episode_cell = nn.GRUCell(H, H)  # the attention-gated GRU over the facts
        self.memory_cell = nn.GRUCell(H, H)  # mᵖ = GRU(e, mᵖ⁻¹), one cell for every pass
        self.answer = nn.Linear(2 * H, cfg.answers)  # W_a
        self.drop = nn.Dropout(cfg.dropout)

    # --- the modules, each usable on its own (the tests re-derive them) ---------------------------
    def facts(self, story: Tensor, keep: Tensor) -> Tensor:
        """The input module: one GRU over the joined story, read at each sentence's end:
        ``story (B, M, J)``, ``keep (B, M)`` -> facts ``c (B, M, H)``, 0 on empty slots."""
        B, M, J = story.shape
        real = story != self.cfg.pad_id  # (B, M, J)  each sentence's real words come first
        lengths = real.sum(-1)  # (B, M)
        ends = lengths.cumsum(-1)  # (B, M)  one past each sentence's last word in the joined story
        where = (ends - lengths)[..., None] + torch.arange(J, device=story.device)  # (B, M, J)
        where = where.masked_fill(~real, M * J)  # padding goes to a spare last column
        joined = story.new_full((B, M * J + 1), self.cfg.pad_id)  # (B, N + 1)
        joined.scatter_(1, where.reshape(B, -1), story.reshape(B, -1))
        states, _ = self.rnn(self.embedding(joined[:, :-1]))  # (B, N, H)
        index = (ends - 1).clamp(min=0)[..., None].expand(-1, -1, states.shape[-1])  # (B, M, H)
        c = states.gather(1, index)  # (B, M, H)  the state at each sentence's end
        return self.drop(c) * keep[..., None].to(c.dtype)

    def question(self, question: Tensor) -> Tensor:
        """The question module: ``(B, J) -> q (B, H)``, the input module's embedding and GRU."""
        lengths = (question != self.cfg.pad_id).sum(-1)  # (B,)
        return self.drop(last_state(self.rnn, self.embedding(question), lengths))

    def gates(self, c: Tensor, q: Tensor, m: Tensor, keep: Tensor) -> Tensor:
        """g = σ(W2 tanh(W1 z(c, m, q) + b1) + b2): facts ``c (B, M, H)``, ``q, m (B, H)``,
        ``keep (B, M)`` -> ``(B, M)`` in (0, 1), exactly 0 on empty slots."""
        cWq = (c @ self.bilinear * q[:, None]).sum(-1, keepdim=True)  # (B, M, 1)  cᵀW_b q
        cWm = (c @ self.bilinear * m[:, None]).sum(-1, keepdim=True)  # (B, M, 1)  cᵀW_b m
        q, m = q[:, None].expand_as(c), m[:, None].expand_as(c)  # (B, M, H)
        z = torch.cat([c, m, q, c * q, c * m, (c - q).abs(), (c - m).abs(), cWq, cWm], -1)  # (B, M, 7H + 2)
        g = torch.sigmoid(self.gate_out(torch.tanh(self.gate_hidden(z))))[..., 0]  # (B, M)
        return g * keep.to(g.dtype)

    def episode(self, c: Tensor, g: Tensor) -> Tensor:
        """The attention-gated GRU over the facts, h_t = g_t GRU(c_t, h_{t−1}) + (1 − g_t) h_{t−1}:
        ``c (B, M, H)``, ``g (B, M)`` -> ``e (B, H)``, the state after the last real fact."""
        h = c.new_zeros(c.shape[0], c.shape[2])  # (B, H)  h_0
        for t in range(c.shape[1]):
            gt = g[:, t, None]  # (B, 1)
            h = gt * self.episode_cell(c[:, t], h) + (1 - gt) * h  # (B, H)
        return h

    def forward(self, story: Tensor, question: Tensor) -> ClassifierOutput:
        keep = check_story(story, question, self.cfg.vocab, self.cfg.pad_id)  # (B, M)
        c = self.facts(story, keep)  # (B, M, H)
        q = self.question(question)  # (B, H)
        m, passes = q, []  # m⁰ = q
        for _ in range(self.cfg.passes):
            g = self.gates(c, q, m, keep)  # (B, M)
            e = self.episode(c, g)  # (B, H)
            m = self.memory_cell(e, m)  # (B, H)  mᵖ = GRU(e, mᵖ⁻¹)
            passes.append(g)
        logits = self.answer(torch.cat([m, q], -1))  # (B, answers)
        return ClassifierOutput(logits, {"hops": torch.stack(passes, 1)})  # (B, P, M)
