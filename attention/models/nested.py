"""Ji et al. (2017): a nested attention neural hybrid model (word level + character level).

Shape legend: B batch, S source length (words), T target length (words), V target word
vocabulary, C character vocabulary, L characters of a source word, K characters of a target word
(+1 for ``<bos>``/``<eos>``), N the words handled at the character level in a batch, E word
embedding dim, Ec character embedding dim, He = 2H word encoder state, Hd = He word decoder state,
Hc = 2·char_hidden_dim character encoder state (and character decoder state).

A word-level RNNsearch (Bahdanau et al. 2015, as :class:`attention.models.seq2seq.Seq2Seq`):

    h_i = BiGRU(x_i)                                           (B, S, He)
    α_{t,i} = softmax_i v_aᵀ tanh(W_a s_{t-1} + U_a h_i)          (B, T, S)
    c_t = Σ_i α_{t,i} h_i,   s_t = GRU([y_{t-1}; c_t], s_{t-1})
    p(y_t) = softmax(W_o tanh(L [s_t; c_t; y_{t-1}]))            (B, T, V)

With ``char_level=True`` two character-level pieces handle what the word level cannot
(Ji et al. 2017, §3; chapter 5, hierarchical attention):

* **hybrid encoder** (§3.1): a source word that is ``<unk>`` in the word vocabulary gets
  ``x_i = W_h [→g_L; ←g_1]``, the last states of a bidirectional character GRU ``g`` over its
  characters, instead of the ``<unk>`` embedding. The character encoder runs on exactly those
  words (``oov``), no others.
* **nested attention decoder** (§3.2-3.3): where the word decoder's target is ``<unk>`` (in
  training) or it emits ``<unk>`` (in decoding), a character GRU decoder writes the word. It
  starts from ``d_0 = tanh(W_d [s_t; c_t])`` and, at each character step k, attends over the
  character encoder states ``g_1 … g_L`` of the source word ``j* = argmax_i α_{t,i}`` that the
  word-level attention weights most at that step:

      β_{k,l} = softmax_l u_bᵀ tanh(W_b d_{k-1} + U_b g_l)        (N, K, L)
      e_k = Σ_l β_{k,l} g_l,  d_k = GRU([z_{k-1}; e_k], d_{k-1}),  p(z_k) = softmax(W_z [d_k; e_k])

  The character encoder is run again, here, on those N selected words only.

Training adds the two cross-entropies (word tokens, and characters of the ``<unk>`` target
words). Both attentions use :func:`attention.functional.attend`, so padded words and padded
characters get exactly zero weight. The task is :mod:`attention.tasks.spelling`; the recorded
run :mod:`attention.studies.nested`. The model has its own ``forward`` and ``greedy`` (they take the
characters too); ``step`` keeps the word level's :class:`~attention.models.interface.Step` shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..functional import attend
from ..masks import lengths_to_mask
from ..scores import make_score
from .checks import check_ids
from .decoding import check_max_len, in_eval_mode
from .interface import Encoded, EncoderMemory, Step
from .registry import register_model

__all__ = ["NestedConfig", "NestedSeq2Seq", "NestedMemory", "NestedOutput", "NestedDecoded", "CharEncoder"]


@dataclass
class NestedConfig:
    src_vocab: int  # source word vocabulary size
    tgt_vocab: int  # V, target word vocabulary size
    char_vocab: int  # C, characters (one vocabulary for source and target words)
    char_level: bool = True  # hybrid encoder + nested character decoder; False: words only
    embed_dim: int = 48  # E, word embeddings
    hidden_dim: int = 64  # word encoder state per direction (He = Hd = 2 * hidden_dim)
    char_embed_dim: int = 24  # Ec, character embeddings
    char_hidden_dim: int = 48  # character encoder state per direction (Hc = 2 * char_hidden_dim)
    attention_dim: int | None = None  # A of the additive scores (default: hidden_dim)
    dropout: float = 0.2  # on word embeddings and before the word output layer
    max_word_len: int = 24  # the most characters the character decoder writes when decoding
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self):
        for name in ("src_vocab", "tgt_vocab", "char_vocab"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 4:
                raise ValueError(
                    f"{name} must be an int > 4 (four special tokens and at least one more), got {value!r}"
                )
        for name in ("embed_dim", "hidden_dim", "char_embed_dim", "char_hidden_dim", "max_word_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.attention_dim is not None and (not isinstance(self.attention_dim, int) or self.attention_dim < 1):
            raise ValueError(f"attention_dim must be None or a positive int, got {self.attention_dim!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not isinstance(self.char_level, bool):
            raise ValueError(f"char_level must be True or False, got {self.char_level!r}")
        ids = (self.pad_id, self.unk_id, self.bos_id, self.eos_id)
        if len(set(ids)) != 4 or min(ids) < 0 or max(ids) >= min(self.tgt_vocab, self.src_vocab, self.char_vocab):
            raise ValueError(f"pad_id, unk_id, bos_id, eos_id must be distinct ids inside every vocabulary, got {ids}")


@dataclass
class NestedMemory(EncoderMemory):
    """The word memory, plus the source characters the nested attention reads."""

    chars: Tensor | None = None  # (B, S, L) character ids of every source word, 0-padded
    char_lengths: Tensor | None = None  # (B, S) characters per word, 0 for padding words


@dataclass
class NestedOutput:
    """Teacher forcing over a whole target sentence."""

    logits: Tensor  # (B, T, V) word scores
    attention: Tensor  # (B, T, S) word-level attention α
    char_logits: Tensor | None  # (N, K, C) character scores of the <unk> target words; None: words only
    char_attention: Tensor | None  # (N, K, L) nested attention β over the selected source word's characters
    char_rows: Tensor | None  # (B, T) bool, the target positions the N rows belong to (row-major order)
    char_source: Tensor | None  # (N,) the source position j* each row attended over
    oov: Tensor | None = None  # (B, S) bool, the source words read by the character encoder


@dataclass
class NestedDecoded:
    """What :meth:`NestedSeq2Seq.greedy` returns."""

    tokens: Tensor  # (B, T') word ids, EOS included when emitted, padded with pad_id
    attention: Tensor  # (B, T', S)
    char_tokens: Tensor | None  # (B, T', K) characters written where tokens is <unk> (EOS included), else pad


class CharEncoder(nn.Module):
    """Embeds characters and runs a bidirectional GRU over each word: ``g_l`` and ``[→g_L; ←g_1]``."""

    def __init__(self, cfg: NestedConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.char_vocab, cfg.char_embed_dim, padding_idx=cfg.pad_id)
        self.rnn = nn.GRU(cfg.char_embed_dim, cfg.char_hidden_dim, batch_first=True, bidirectional=True)

    def forward(self, chars: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """chars ``(N, L)``, lengths ``(N,)`` (>= 1) -> states ``(N, L, Hc)``, summary ``(N, Hc)``."""
        N, L = chars.shape
        x = self.embed(chars)  # (N, L, Ec)
        # pack_padded_sequence wants the lengths on the CPU (the one sync of this module)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, final = self.rnn(packed)  # final (2, N, Hc / 2)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=L)  # (N, L, Hc)
        return states, final.transpose(0, 1).reshape(N, -1)  # (N, Hc)


@register_model("nested")
class NestedSeq2Seq(nn.Module):
    """Word-level RNNsearch with a hybrid encoder and a nested character decoder; see the module docstring."""

    config_class = NestedConfig

    def __init__(self, cfg: NestedConfig):
        super().__init__()
        self.cfg = cfg
        E, H = cfg.embed_dim, cfg.hidden_dim
        self.encoder_dim = He = 2 * H
        self.decoder_dim = Hd = He
        self.src_embed = nn.Embedding(cfg.src_vocab, E, padding_idx=cfg.pad_id)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, E, padding_idx=cfg.pad_id)
        self.init_state = nn.Linear(He, Hd)  # s_0 = tanh(W_s [→h_S; ←h_1])
        self.cell = nn.GRUCell(E + He, Hd)  # s_t = GRU([y_{t-1}; c_t], s_{t-1})
        self.score = make_score("additive", query_dim=Hd, key_dim=He, hidden_dim=cfg.attention_dim or H)
        self.pre_output = nn.Linear(Hd + He + E, E)  # deep output L [s_t; c_t; y_{t-1}]
        self.output = nn.Linear(E, cfg.tgt_vocab)
        self.dropout = nn.Dropout(cfg.dropout)
        if cfg.char_level:
            Hc = 2 * cfg.char_hidden_dim
            self.char_encoder = CharEncoder(cfg)
            self.char_to_word = nn.Linear(Hc, E)  # x_i = W_h [→g_L; ←g_1] for an <unk> source word
            self.char_init = nn.Linear(Hd + He, Hc)  # d_0 = tanh(W_d [s_t; c_t])
            self.char_cell = nn.GRUCell(cfg.char_embed_dim + Hc, Hc)  # d_k = GRU([z_{k-1}; e_k], d_{k-1})
            self.char_score = make_score("additive", query_dim=Hc, key_dim=Hc, hidden_dim=cfg.char_hidden_dim)
            self.char_output = nn.Linear(2 * Hc, cfg.char_vocab)  # W_z [d_k; e_k]

    # --- checks --------------------------------------------------------------------------
    def _check(
        self, src: Tensor, src_lengths: Tensor, chars: Tensor | None, char_lengths: Tensor | None, oov: Tensor | None
    ) -> None:
        if src.dim() != 2 or src_lengths.shape != src.shape[:1]:
            raise ValueError(
                f"src must be (B, S) with src_lengths (B,); got src {tuple(src.shape)}, "
                f"src_lengths {tuple(src_lengths.shape)}"
            )
        if src_lengths.dtype.is_floating_point or (src_lengths < 1).any() or (src_lengths > src.shape[1]).any():
            raise ValueError(f"src_lengths must be integers in 1..S = 1..{src.shape[1]}; got {src_lengths.tolist()}")
        if oov is not None and (oov.shape != src.shape or oov.dtype != torch.bool):
            raise ValueError(f"oov must be a bool (B, S) = {tuple(src.shape)} mask; got {oov.dtype} {tuple(oov.shape)}")
        check_ids(src, self.cfg.src_vocab, "src", "source")
        if not self.cfg.char_level:
            return
        if chars is None or char_lengths is None:
            raise ValueError("char_level=True needs chars (B, S, L) and char_lengths (B, S)")
        if chars.dim() != 3 or chars.shape[:2] != src.shape or char_lengths.shape != src.shape:
            raise ValueError(
                f"chars must be (B, S, L) and char_lengths (B, S) for src {tuple(src.shape)}; "
                f"got chars {tuple(chars.shape)}, char_lengths {tuple(char_lengths.shape)}"
            )
        real = lengths_to_mask(src_lengths, src.shape[1])  # (B, S)
        if (char_lengths[real] < 1).any() or (char_lengths > chars.shape[2]).any():
            raise ValueError(
                f"every real source word needs 1..L = 1..{chars.shape[2]} characters; "
                f"got char_lengths {char_lengths.tolist()}"
            )
        check_ids(chars, self.cfg.char_vocab, "chars", "character")

    # --- encoding ------------------------------------------------------------------------
    def encode(
        self,
        src: Tensor,
        src_lengths: Tensor,
        chars: Tensor | None = None,
        char_lengths: Tensor | None = None,
        oov: Tensor | None = None,
    ) -> Encoded:
        """Read the source once: word states ``(B, S, He)`` (hybrid embeddings for OOV words) and ``s_0``.

        ``oov (B, S)``: the words read by the character encoder; default ``src == unk_id``.
        """
        self._check(src, src_lengths, chars, char_lengths, oov)
        B, S = src.shape
        mask = lengths_to_mask(src_lengths, S)  # (B, S), True = a real word
        x = self.src_embed(src)  # (B, S, E)
        if self.cfg.char_level:
            oov = ((src == self.cfg.unk_id) if oov is None else oov) & mask  # (B, S)
            if oov.any():
                _, summary = self.char_encoder(chars[oov], char_lengths[oov])  # (N, Hc), N = oov.sum()
                x = x.index_put(oov.nonzero(as_tuple=True), self.char_to_word(summary))  # (B, S, E)
        x = self.dropout(x)
        # pack_padded_sequence wants the lengths on the CPU (the one sync of the forward pass)
        packed = pack_padded_sequence(x, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, final = self.encoder(packed)  # final (2, B, H)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=S)  # (B, S, He)
        s0 = torch.tanh(self.init_state(final.transpose(0, 1).reshape(B, -1)))  # (B, Hd)
        memory = NestedMemory(
            states, mask, src_lengths, keys=self.score.project_keys(states), chars=chars, char_lengths=char_lengths
        )
        return Encoded(memory, s0)

    # --- one word step -----------------------------------------------------------------------
    def _step(self, y_prev: Tensor, state: Tensor, memory: NestedMemory) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """-> logits ``(B, V)``, ``s_t (B, Hd)``, ``α_t (B, S)``, ``c_t (B, He)``."""
        scores = self.score.score_projected(state[:, None, :], memory.keys)  # (B, 1, S)
        context, weights = attend(scores, memory.states, memory.mask[:, None, :])  # (B, 1, He), (B, 1, S)
        context, weights = context[:, 0], weights[:, 0]  # (B, He), (B, S)
        y = self.dropout(self.tgt_embed(y_prev))  # (B, E)
        state = self.cell(torch.cat([y, context], dim=-1), state)  # (B, Hd)
        hidden = torch.tanh(self.pre_output(torch.cat([state, context, y], dim=-1)))  # (B, E)
        return self.output(self.dropout(hidden)), state, weights, context

    def step(self, y_prev: Tensor, state: Tensor, memory: NestedMemory) -> Step:
        """``y_{t-1}`` ``(B,)``, ``s_{t-1}`` -> logits ``(B, V)``, ``s_t``, weights ``(B, S)``."""
        check_ids(y_prev, self.cfg.tgt_vocab, "y_prev", "target")
        logits, state, weights, _ = self._step(y_prev, state, memory)
        return Step(logits, state, weights)

    # --- the nested character decoder -------------------------------------------------------
    def _char_memory(self, memory: NestedMemory, rows: Tensor, weights: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Character states ``(N, L, Hc)``, keep mask ``(N, L)`` and ``j* (N,)`` of the source word
        each row (sentence ``rows (N,)``, word attention ``weights (N, S)``) attends most."""
        source = weights.argmax(-1)  # (N,) j* = argmax_i α_{t,i}; padding has weight 0
        chars = memory.chars[rows, source]  # (N, L)
        lengths = memory.char_lengths[rows, source]  # (N,)
        states, _ = self.char_encoder(chars, lengths)  # (N, L, Hc)
        return states, lengths_to_mask(lengths, chars.shape[1]), source

    def _char_step(self, z_prev: Tensor, d: Tensor, states: Tensor, keys: Tensor, mask: Tensor):
        """One character: ``z_{k-1} (N,)``, ``d_{k-1} (N, Hc)`` -> logits ``(N, C)``, ``d_k``, ``β_k (N, L)``."""
        scores = self.char_score.score_projected(d[:, None, :], keys)  # (N, 1, L)
        context, weights = attend(scores, states, mask[:, None, :])  # (N, 1, Hc), (N, 1, L)
        context = context[:, 0]  # (N, Hc)
        d = self.char_cell(torch.cat([self.char_encoder.embed(z_prev), context], dim=-1), d)  # (N, Hc)
        return self.char_output(torch.cat([d, context], dim=-1)), d, weights[:, 0]

    def decode_chars(
        self, memory: NestedMemory, rows: Tensor, s: Tensor, c: Tensor, weights: Tensor, chars_in: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Write N words character by character (nested attention).

        Args:
            rows: ``(N,)`` the sentence of each word; ``s (N, Hd)``, ``c (N, He)``, ``weights (N, S)``:
                the word decoder's state, context and attention at that word's step.
            chars_in: ``(N, K)`` ``<bos>`` + characters (teacher forcing); None: greedy, up to
                ``max_word_len`` characters.

        Returns:
            ``(char logits (N, K, C)`` when teacher forcing, else character ids ``(N, K)``,
            ``β (N, K, L)``, ``j* (N,))``.
        """
        states, mask, source = self._char_memory(memory, rows, weights)  # (N, L, Hc), (N, L), (N,)
        keys = self.char_score.project_keys(states)  # (N, L, A)
        d = torch.tanh(self.char_init(torch.cat([s, c], dim=-1)))  # (N, Hc)
        logits, maps = [], []
        if chars_in is not None:
            for k in range(chars_in.shape[1]):
                step_logits, d, beta = self._char_step(chars_in[:, k], d, states, keys, mask)
                logits.append(step_logits)
                maps.append(beta)
            return torch.stack(logits, 1), torch.stack(maps, 1), source  # (N, K, C), (N, K, L)
        z = torch.full_like(rows, self.cfg.bos_id)  # (N,)
        done = torch.zeros_like(rows, dtype=torch.bool)
        out = []
        for _ in range(self.cfg.max_word_len):
            step_logits, d, beta = self._char_step(z, d, states, keys, mask)
            z = step_logits.argmax(-1).masked_fill(done, self.cfg.pad_id)  # (N,)
            out.append(z)
            maps.append(beta)
            done = done | (z == self.cfg.eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, 1), torch.stack(maps, 1), source  # (N, K), (N, K, L)

    # --- teacher forcing ------------------------------------------------------------------------
    def forward(
        self,
        src: Tensor,
        src_lengths: Tensor,
        tgt_in: Tensor,
        chars: Tensor | None = None,
        char_lengths: Tensor | None = None,
        oov: Tensor | None = None,
        tgt_unk: Tensor | None = None,
        tgt_chars_in: Tensor | None = None,
    ) -> NestedOutput:
        """Teacher forcing. ``tgt_in (B, T)`` = ``<bos> y_1 … y_{T-1}``; with ``char_level``,
        ``tgt_unk (B, T)`` marks the positions whose *next* word (``tgt_out``) is ``<unk>`` and
        ``tgt_chars_in (B, T, K)`` holds ``<bos>`` + that word's characters."""
        if tgt_in.dim() != 2 or tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"tgt_in must be (B, T) with B = {src.shape[0]}; got {tuple(tgt_in.shape)}")
        check_ids(tgt_in, self.cfg.tgt_vocab, "tgt_in", "target")
        if self.cfg.char_level:
            if tgt_unk is None or tgt_chars_in is None:
                raise ValueError("char_level=True needs tgt_unk (B, T) and tgt_chars_in (B, T, K) for teacher forcing")
            if (
                tgt_unk.shape != tgt_in.shape
                or tgt_unk.dtype != torch.bool
                or tgt_chars_in.dim() != 3
                or tgt_chars_in.shape[:2] != tgt_in.shape
            ):
                raise ValueError(
                    f"tgt_unk must be bool (B, T) and tgt_chars_in (B, T, K) for tgt_in "
                    f"{tuple(tgt_in.shape)}; got tgt_unk {tgt_unk.dtype} {tuple(tgt_unk.shape)}, "
                    f"tgt_chars_in {tuple(tgt_chars_in.shape)}"
                )
            check_ids(tgt_chars_in, self.cfg.char_vocab, "tgt_chars_in", "character")
        memory, state = self.encode(src, src_lengths, chars, char_lengths, oov)
        logits, maps, states, contexts = [], [], [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, weights, context = self._step(tgt_in[:, t], state, memory)
            logits.append(step_logits)
            maps.append(weights)
            states.append(state)
            contexts.append(context)
        attention = torch.stack(maps, 1)  # (B, T, S)
        out = NestedOutput(torch.stack(logits, 1), attention, None, None, None, None)
        if not self.cfg.char_level:
            return out
        out.oov = ((src == self.cfg.unk_id) if oov is None else oov) & memory.mask
        rows = tgt_unk.nonzero(as_tuple=True)  # (N,), (N,) sentence and target position
        out.char_rows = tgt_unk
        if len(rows[0]) == 0:
            K, L = tgt_chars_in.shape[2], memory.chars.shape[2]
            out.char_logits = attention.new_zeros(0, K, self.cfg.char_vocab)
            out.char_attention = attention.new_zeros(0, K, L)
            out.char_source = rows[0]
            return out
        s, c = torch.stack(states, 1)[rows], torch.stack(contexts, 1)[rows]  # (N, Hd), (N, He)
        out.char_logits, out.char_attention, out.char_source = self.decode_chars(
            memory, rows[0], s, c, attention[rows], tgt_chars_in[rows]
        )
        return out

    # --- greedy decoding ------------------------------------------------------------------------
    @torch.no_grad()
    @in_eval_mode
    def greedy(
        self,
        src: Tensor,
        src_lengths: Tensor,
        chars: Tensor | None = None,
        char_lengths: Tensor | None = None,
        oov: Tensor | None = None,
        max_len: int | None = None,
    ) -> NestedDecoded:
        """Greedy words (up to ``max_len``, default S + 1); with ``char_level`` every emitted ``<unk>``
        is spelt by the character decoder. Runs in eval mode (dropout off; the model's mode is restored
        after)."""
        memory, state = self.encode(src, src_lengths, chars, char_lengths, oov)
        B, S = src.shape
        max_len = S + 1 if max_len is None else max_len
        check_max_len(max_len)
        y = src.new_full((B,), self.cfg.bos_id)  # (B,)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        tokens, maps, states, contexts = [], [], [], []
        for _ in range(max_len):
            logits, state, weights, context = self._step(y, state, memory)
            y = logits.argmax(-1).masked_fill(done, self.cfg.pad_id)  # (B,)
            tokens.append(y)
            maps.append(weights)
            states.append(state)
            contexts.append(context)
            done = done | (y == self.cfg.eos_id)
            if bool(done.all()):
                break
        tokens, attention = torch.stack(tokens, 1), torch.stack(maps, 1)  # (B, T'), (B, T', S)
        if not self.cfg.char_level:
            return NestedDecoded(tokens, attention, None)
        unk = tokens == self.cfg.unk_id  # (B, T')
        char_tokens = tokens.new_zeros(*tokens.shape, 1)  # (B, T', 1)
        if unk.any():
            rows = unk.nonzero(as_tuple=True)
            written, _, _ = self.decode_chars(
                memory, rows[0], torch.stack(states, 1)[rows], torch.stack(contexts, 1)[rows], attention[rows]
            )  # (N, K)
            char_tokens = tokens.new_zeros(*tokens.shape, written.shape[1])  # (B, T', K)
            char_tokens[rows] = written
        return NestedDecoded(tokens, attention, char_tokens)
