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
chapters compare them on one budget. Decoding (greedy and beam search) is built on
one method, :meth:`Seq2Seq.step`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..functional import attend
from ..masks import lengths_to_mask
from ..scores import make_score

__all__ = ["Seq2SeqConfig", "Seq2Seq", "Seq2SeqOutput", "Translation", "reverse_padded"]


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
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3


@dataclass
class Seq2SeqOutput:
    logits: Tensor  # (B, T, V)
    attention: Tensor | None  # (B, T, S) alignment matrix, None without attention


@dataclass
class Translation:
    tokens: Tensor  # (B, T') ids, EOS included when emitted, padded with pad_id
    attention: Tensor | None  # (B, T', S)
    scores: Tensor | None = None  # (B,) total log-probability (beam search)


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Reverse each row's first ``lengths[b]`` entries, leaving the padding in place."""
    B, S = x.shape
    pos = torch.arange(S, device=x.device).expand(B, S)  # (B, S)
    rev = (lengths[:, None] - 1 - pos).clamp_min(0)
    index = torch.where(pos < lengths[:, None], rev, pos)
    return x.gather(1, index)


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


class Seq2Seq(nn.Module):
    """Encoder–decoder with optional attention; see the module docstring."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if cfg.cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cfg.cell!r}")
        self.cfg = cfg
        H = cfg.hidden_dim
        He = H * (2 if cfg.bidirectional else 1)
        Hd = He  # the decoder is as wide as the encoder's summary
        self.encoder = Encoder(cfg)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.init_state = nn.Linear(He, Hd)  # s_0 = tanh(W_s h_final)
        cell = nn.GRUCell if cfg.cell == "gru" else nn.LSTMCell
        self.cell = cell(cfg.embed_dim + He, Hd)  # input: [y_{t-1}; c_t]
        self.score = None if cfg.attention is None else make_score(
            cfg.attention, query_dim=Hd, key_dim=He, hidden_dim=cfg.attention_dim or H,
            max_len=cfg.max_src_len)
        # deep output: o_t = W_o tanh(L [s_t; c_t; y_{t-1}])  (Bahdanau App. A.2.2, without maxout)
        self.pre_output = nn.Linear(Hd + He + cfg.embed_dim, cfg.embed_dim)
        self.output = nn.Linear(cfg.embed_dim, cfg.tgt_vocab)
        if cfg.tie_embeddings:
            self.output.weight = self.tgt_embed.weight  # (V, E), one matrix to learn
        self.dropout = nn.Dropout(cfg.dropout)

    # --- encoding ------------------------------------------------------------------------
    def encode(self, src: Tensor, src_lengths: Tensor) -> dict:
        """Everything the decoder reads at each step, batch first (so beams can index it)."""
        if src.dim() != 2 or src_lengths.shape != src.shape[:1]:
            raise ValueError(f"src must be (B, S) with src_lengths (B,); got src {tuple(src.shape)}, "
                             f"src_lengths {tuple(src_lengths.shape)}")
        if self.cfg.reverse_source:
            src = reverse_padded(src, src_lengths)
        states, final = self.encoder(src, src_lengths)  # (B, S, He)
        summary = final[0] if isinstance(final, tuple) else final  # (B, He)
        memory = {"states": states, "mask": lengths_to_mask(src_lengths, src.shape[1])}  # mask (B, S)
        if self.score is None:
            memory["context"] = summary  # the fixed-length vector c: the bottleneck
        elif hasattr(self.score, "project_keys"):
            memory["keys"] = self.score.project_keys(states)  # U_a h_i, once per sentence (B, S, A)
        s0 = torch.tanh(self.init_state(summary))  # (B, Hd)
        state = (s0, torch.zeros_like(s0)) if self.cfg.cell == "lstm" else s0
        return {"memory": memory, "state": state}

    # --- one decoder step ------------------------------------------------------------------
    def step(self, y_prev: Tensor, state, memory: dict):
        """``y_{t-1}`` ``(B,)``, ``s_{t-1}`` -> logits ``(B, V)``, ``s_t``, weights ``(B, S)`` or None."""
        s_prev = state[0] if isinstance(state, tuple) else state  # (B, Hd)
        if self.score is None:
            context, weights = memory["context"], None  # the same c at every step
        else:
            query = s_prev[:, None, :]  # (B, 1, Hd)
            if "keys" in memory:
                scores = self.score.score_projected(query, memory["keys"])  # (B, 1, S)
            else:
                scores = self.score(query, memory["states"])  # (B, 1, S)
            context, weights = attend(scores, memory["states"], memory["mask"][:, None, :])
            context, weights = context[:, 0], weights[:, 0]  # (B, He), (B, S)
        y = self.dropout(self.tgt_embed(y_prev))  # (B, E)
        state = self.cell(torch.cat([y, context], dim=-1), state)
        s = state[0] if isinstance(state, tuple) else state  # (B, Hd)
        hidden = torch.tanh(self.pre_output(torch.cat([s, context, y], dim=-1)))  # (B, E)
        return self.output(self.dropout(hidden)), state, weights

    # --- training: teacher forcing -----------------------------------------------------------
    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor,
                return_attention: bool = False) -> Seq2SeqOutput:
        """Teacher forcing: ``tgt_in`` ``(B, T)`` = ``<bos> y_1 … y_{T-1}``; logits ``(B, T, V)``."""
        enc = self.encode(src, src_lengths)
        state, memory = enc["state"], enc["memory"]
        logits, maps = [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, weights = self.step(tgt_in[:, t], state, memory)
            logits.append(step_logits)
            maps.append(weights)
        attention = torch.stack(maps, 1) if return_attention and self.score is not None else None
        return Seq2SeqOutput(torch.stack(logits, 1), attention)  # (B, T, V), (B, T, S)

    # --- decoding ---------------------------------------------------------------------------
    @torch.no_grad()
    def greedy(self, src: Tensor, src_lengths: Tensor, max_len: int = 50) -> Translation:
        """Emit the most probable token at each step until EOS (or ``max_len`` tokens)."""
        enc = self.encode(src, src_lengths)
        state, memory = enc["state"], enc["memory"]
        B = src.shape[0]
        y = torch.full((B,), self.cfg.bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        tokens, maps = [], []
        for _ in range(max_len):
            logits, state, weights = self.step(y, state, memory)
            y = logits.argmax(-1).masked_fill(done, self.cfg.pad_id)  # (B,)
            tokens.append(y)
            maps.append(weights)
            done = done | (y == self.cfg.eos_id)
            if done.all():
                break
        attention = None if self.score is None else torch.stack(maps, 1)  # (B, T', S)
        return Translation(torch.stack(tokens, 1), attention)

    @torch.no_grad()
    def beam_search(self, src: Tensor, src_lengths: Tensor, beam_size: int = 5, max_len: int = 50,
                    length_penalty: float = 0.0) -> Translation:
        """Keep the ``beam_size`` best partial translations; sentence by sentence.

        Hypotheses are ranked by total log-probability divided by ``len**length_penalty``
        (0 = none). ``beam_size=1`` is greedy decoding.
        """
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}")
        results = [self._beam_one(src[b:b + 1, :int(src_lengths[b])], src_lengths[b:b + 1],
                                  beam_size, max_len, length_penalty) for b in range(src.shape[0])]
        T = max(len(toks) for toks, _, _ in results)
        S = src.shape[1]
        tokens = src.new_full((src.shape[0], T), self.cfg.pad_id)
        attention = None if self.score is None else src.new_zeros((src.shape[0], T, S), dtype=torch.float)
        scores = torch.tensor([score for _, _, score in results], device=src.device)
        for b, (toks, maps, _) in enumerate(results):
            tokens[b, :len(toks)] = torch.tensor(toks, device=src.device)
            if attention is not None and maps:
                attention[b, :len(toks), :maps[0].shape[-1]] = torch.stack(maps)
        return Translation(tokens, attention, scores)

    def _beam_one(self, src, src_lengths, K, max_len, length_penalty):
        enc = self.encode(src, src_lengths)
        state, memory = enc["state"], enc["memory"]
        device = src.device
        alive_tokens: list[list[int]] = [[]]
        alive_maps: list[list[Tensor]] = [[]]
        alive_scores = torch.zeros(1, device=device)  # (n,) log-probabilities
        finished: list[tuple[float, list[int], list[Tensor]]] = []

        def rank(score: float, length: int) -> float:
            return score / (length ** length_penalty) if length_penalty else score

        y = torch.full((1,), self.cfg.bos_id, dtype=torch.long, device=device)
        for t in range(max_len):
            n = y.shape[0]
            mem = {k: v.expand(n, *v.shape[1:]) for k, v in memory.items()}
            logits, state, weights = self.step(y, state, mem)
            logp = torch.log_softmax(logits, -1) + alive_scores[:, None]  # (n, V)
            top, flat = logp.view(-1).topk(min(K, logp.numel()))  # best K continuations
            origin, token = flat // logp.shape[1], flat % logp.shape[1]
            keep = []
            for score, o, tok in zip(top.tolist(), origin.tolist(), token.tolist()):
                toks = alive_tokens[o] + [tok]
                maps = alive_maps[o] + ([weights[o]] if weights is not None else [])
                if tok == self.cfg.eos_id or t == max_len - 1:
                    finished.append((rank(score, len(toks)), toks, maps))
                else:
                    keep.append((score, o, tok, toks, maps))
            best_finished = max((f[0] for f in finished), default=float("-inf"))
            # With no length penalty, scores only fall: stop once nothing alive can win.
            if not keep or len(finished) >= K or (
                    not length_penalty and best_finished >= max(k[0] for k in keep)):
                break
            idx = torch.tensor([k[1] for k in keep], device=device)
            state = _index_state(state, idx)
            y = torch.tensor([k[2] for k in keep], device=device)
            alive_scores = torch.tensor([k[0] for k in keep], device=device)
            alive_tokens, alive_maps = [k[3] for k in keep], [k[4] for k in keep]
        score, toks, maps = max(finished, key=lambda f: f[0])
        return toks, maps, score


def _index_state(state, idx: Tensor):
    """Pick beams ``idx`` from a decoder state: a tensor, or a tuple/dict of them."""
    if isinstance(state, tuple):
        return tuple(_index_state(s, idx) for s in state)
    if isinstance(state, dict):
        return {k: _index_state(v, idx) for k, v in state.items()}
    return state[idx]
