"""Wang et al. (2017), "Coupled Multi-Layer Attentions for Co-Extraction of Aspect and Opinion
Terms" (CMLA): chapter 4, attention with two coupled queries.

Shape legend: B batch, T sentence length (words), E embedding dim, D = 2U the BiGRU state size,
K tensor slices, R the size of the GRU over the interactions, N layers.

A review sentence names *aspects* (``the acting``, ``the plot``) and *opinions* about them
(``wonderful``, ``thin``); each kind of term helps find the other. CMLA keeps one prototype
vector per kind, ``u_a`` (aspect) and ``u_p`` (opinion), and at each layer scores every word
against both at once (§3.2 of the paper):

    h_i   = BiGRU(x_1 … x_n)_i                                    # (B, T, D)
    β_i^a = tanh([h_iᵀ G^a u_a ; h_iᵀ D^a u_p])                   # (B, T, 2K): G^a, D^a are K×D×D
    β_i^p = tanh([h_iᵀ G^p u_p ; h_iᵀ D^p u_a])
    r_i^a = GRU(β^a)_i,   e_i^a = v_aᵀ r_i^a,   α^a = softmax_i(e^a)   # (B, T, R), (B, T)
    o^a   = Σ_i α_i^a h_i                                         # (B, D): what the layer read
    u_a  ← tanh(Q^a u_a) + o^a                                    # the next layer's prototype

and the same for opinions. ``h_iᵀ G^a u_a`` is a bilinear score per slice (the *tensor*
interaction); the cross term ``h_iᵀ D^a u_p`` couples the two attentions: a word is scored as an
aspect also by how it relates to the opinion prototype. ``coupled=False`` drops the cross terms
(``β_i^a = tanh(h_iᵀ G^a u_a)``, K wide). Each token is tagged from its ``r_i`` of every layer:
``aspect_i = softmax(C^a [r_i^{a,1}; …; r_i^{a,N}])`` (O or aspect), and the same for opinions.

The attention ``α`` does not tag anything itself: it decides what each layer reads into the next
layer's prototypes. With one layer, nothing reads it; with two, the second layer's prototypes carry
what the first attended to. Padded words get exactly zero weight (``masked_softmax``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..functional import masked_softmax
from ..masks import lengths_to_mask
from .checks import check_ids, check_special_id
from .interface import TaggerOutput
from .pooling import check_dropout, check_sentences, check_sizes
from .registry import register_model

__all__ = ["CMLAConfig", "CMLA", "CoupledAttentionLayer", "KINDS"]

#: the two kinds of terms, in the order of every (aspect, opinion) pair below
KINDS = ("aspect", "opinion")


@dataclass
class CMLAConfig:
    vocab: int  # vocabulary size (id pad_id = <pad>)
    embed_dim: int = 64  # E, word embeddings
    hidden_dim: int = 32  # U, BiGRU state per direction (h_i is D = 2U wide)
    slices: int = 8  # K, slices of each interaction tensor G, D
    rnn_dim: int = 32  # R, the GRU over β
    layers: int = 2  # N, attention layers (prototype updates between them)
    coupled: bool = True  # False: drop the cross terms h_iᵀ D u_other
    tags: int = 2  # tags per kind: 0 = O, 1 = the term
    dropout: float = 0.0  # on the embeddings and before the taggers
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "CMLAConfig",
            vocab=self.vocab,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            slices=self.slices,
            rnn_dim=self.rnn_dim,
            layers=self.layers,
            tags=self.tags,
        )
        check_dropout("CMLAConfig", self.dropout)
        check_special_id("CMLAConfig", "pad_id", self.pad_id, vocab=self.vocab)


class CoupledAttentionLayer(nn.Module):
    """One CMLA layer: the tensor interactions of every word with both prototypes, a GRU over them,
    attention over the words, the prototype update. Aspect and opinion each have their own
    parameters; index 0 is the aspect side, 1 the opinion side."""

    def __init__(self, dim: int, slices: int, rnn_dim: int, coupled: bool):
        super().__init__()
        self.coupled = coupled
        width = 2 * slices if coupled else slices
        scale = dim**-1.0  # keeps h_iᵀ G u near unit size at the start
        self.G = nn.Parameter(torch.randn(2, slices, dim, dim) * scale)  # G^a, G^p: own prototype
        self.D = nn.Parameter(torch.randn(2, slices, dim, dim) * scale) if coupled else None  # D^a, D^p: the other's
        self.rnn = nn.ModuleList(nn.GRU(width, rnn_dim, batch_first=True) for _ in KINDS)
        self.v = nn.ModuleList(nn.Linear(rnn_dim, 1, bias=False) for _ in KINDS)  # e_i = vᵀ r_i
        self.Q = nn.ModuleList(nn.Linear(dim, dim, bias=False) for _ in KINDS)  # u ← tanh(Q u) + o

    def interactions(self, h: Tensor, u: Tensor) -> Tensor:
        """β for both kinds: h ``(B, T, D)``, u ``(B, 2, D)`` = [u_a, u_p] -> ``(B, 2, T, W)``,
        W = 2K (coupled: own slices then cross slices) or K."""
        own = torch.einsum("btd,nkde,bne->bntk", h, self.G, u)  # h_iᵀ G^n u_n: (B, 2, T, K)
        if not self.coupled:
            return torch.tanh(own)
        other = u.flip(1)  # (B, 2, D): [u_p, u_a], the other kind's prototype
        cross = torch.einsum("btd,nkde,bne->bntk", h, self.D, other)  # h_iᵀ D^n u_other: (B, 2, T, K)
        return torch.tanh(torch.cat([own, cross], -1))  # (B, 2, T, 2K)

    def forward(self, h: Tensor, u: Tensor, keep: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """h ``(B, T, D)``, u ``(B, 2, D)``, keep ``(B, T)`` True = a real word ->
        ``(r (B, 2, T, R), alpha (B, 2, T), next u (B, 2, D))``."""
        beta = self.interactions(h, u)  # (B, 2, T, W)
        # The GRUs read left to right, so a real word's r_i never depends on the padding after it:
        # no packing needed; r is zeroed at padding.
        r = torch.stack([self.rnn[n](beta[:, n])[0] for n in range(len(KINDS))], 1)  # (B, 2, T, R)
        r = r * keep[:, None, :, None]
        scores = torch.stack([self.v[n](r[:, n])[..., 0] for n in range(len(KINDS))], 1)  # (B, 2, T)
        alpha = masked_softmax(scores, keep[:, None, :])  # (B, 2, T): over the real words
        o = alpha @ h  # (B, 2, D): o^a, o^p
        u_next = torch.stack([torch.tanh(self.Q[n](u[:, n])) for n in range(len(KINDS))], 1) + o  # (B, 2, D)
        return r, alpha, u_next


@register_model("cmla")
class CMLA(nn.Module):
    """Coupled multi-layer attention over a BiGRU; tags each word as aspect / not and opinion / not.

    ``forward(tokens (B, T), lengths (B,))`` returns ``TaggerOutput({"aspect": (B, T, 2),
    "opinion": (B, T, 2)}, {"aspect": (B, N, T), "opinion": (B, N, T)})``: the attention of each
    layer over the words, summing to 1 over the real words and zero on padding.
    """

    config_class = CMLAConfig

    def __init__(self, cfg: CMLAConfig):
        super().__init__()
        self.cfg = cfg
        D = 2 * cfg.hidden_dim
        self.embed = nn.Embedding(cfg.vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.rnn = nn.GRU(cfg.embed_dim, cfg.hidden_dim, batch_first=True, bidirectional=True)
        self.prototypes = nn.Parameter(torch.randn(len(KINDS), D) * D**-0.5)  # u_a, u_p at the first layer
        self.layers = nn.ModuleList(
            CoupledAttentionLayer(D, cfg.slices, cfg.rnn_dim, cfg.coupled) for _ in range(cfg.layers)
        )
        self.dropout = nn.Dropout(cfg.dropout)
        self.taggers = nn.ModuleList(nn.Linear(cfg.layers * cfg.rnn_dim, cfg.tags) for _ in KINDS)  # C^a, C^p

    def encode(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """The BiGRU states ``h_i``: ``(B, T, D)``, zero at padding."""
        check_sentences(tokens, lengths)
        check_ids(tokens, self.cfg.vocab, "tokens", "word")
        x = self.dropout(self.embed(tokens))  # (B, T, E)
        packed = pack_padded_sequence(x, lengths.cpu().clamp_min(1), batch_first=True, enforce_sorted=False)
        h, _ = self.rnn(packed)
        return pad_packed_sequence(h, batch_first=True, total_length=tokens.shape[1])[0]  # (B, T, D)

    def forward(self, tokens: Tensor, lengths: Tensor) -> TaggerOutput:
        B, T = tokens.shape
        keep = lengths_to_mask(lengths, T)  # (B, T), True = a real word
        h = self.encode(tokens, lengths) * keep[:, :, None]  # (B, T, D)
        u = self.prototypes.expand(B, -1, -1)  # (B, 2, D)
        rs, alphas = [], []
        for layer in self.layers:
            r, alpha, u = layer(h, u, keep)  # (B, 2, T, R), (B, 2, T), (B, 2, D)
            rs.append(r)
            alphas.append(alpha)
        r = self.dropout(torch.cat(rs, -1))  # (B, 2, T, N·R): each word's r_i of every layer
        logits = {kind: self.taggers[n](r[:, n]) for n, kind in enumerate(KINDS)}  # (B, T, tags) each
        alpha = torch.stack(alphas, 2)  # (B, 2, N, T)
        return TaggerOutput(logits, {kind: alpha[:, n] for n, kind in enumerate(KINDS)})
