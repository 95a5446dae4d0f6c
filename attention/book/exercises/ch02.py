"""Exercises of chapter 2 (Seq2Seq): the decoder's size, a padded reversal, greedy against beam
search, and the length penalty.

Shape legend: B batch, S source length, V vocabulary of a toy decoder.

The checkers compare with what the package computes: ``nn.GRUCell``'s parameters,
:func:`attention.models.reverse_padded`, and :func:`attention.models.decoding.greedy` and
:func:`~attention.models.decoding.beam_search` run on :class:`ToyDecoder`, a "model" whose
next-token probabilities come from a small table (book chapter 2, "Decoding").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...models import decoding
from ...models.interface import Encoded, EncoderMemory, Step, Translation
from ...models.seq2seq import reverse_padded
from .base import Verdict, exercise, returned, right, wrong

__all__ = ["ToyDecoder", "GREEDY_VS_BEAM", "LENGTH_PENALTY", "SHORT", "LONG"]


# --------------------------------------------------------------------------- a decoder from a table


@dataclass
class ToyConfig:
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2


class ToyDecoder:
    """A decoder whose next-token probabilities are read from ``table``: words so far -> {word: p}.

    A prefix the table does not list ends the sentence (``<eos>`` with probability 1). It has
    ``cfg``, ``encode`` and ``step``, so :func:`~attention.models.decoding.greedy` and
    :func:`~attention.models.decoding.beam_search` decode it as they decode a trained model.
    """

    def __init__(self, table: dict[tuple[str, ...], dict[str, float]]):
        self.cfg = ToyConfig()
        self.table = table
        self.words = ["<pad>", "<bos>", "<eos>"] + sorted({w for d in table.values() for w in d} - {"<eos>"})
        self.ids = {w: i for i, w in enumerate(self.words)}

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        B, S = src.shape
        mask = torch.ones(B, S, dtype=torch.bool, device=src.device)  # (B, S)
        memory = EncoderMemory(src.new_zeros(B, S, 1, dtype=torch.float), mask, src_lengths)  # no source to read
        return Encoded(memory, src.new_zeros(B, 0))  # the state: the tokens read so far, (B, 0)

    def step(self, y_prev: Tensor, state: Tensor, memory: EncoderMemory) -> Step:
        state = torch.cat([state, y_prev[:, None]], 1)  # (B, t)
        logits = torch.full((len(state), len(self.words)), float("-inf"))  # (B, V): log p, -inf = impossible
        for b, row in enumerate(state.tolist()):
            prefix = tuple(self.words[i] for i in row if i not in (self.cfg.pad_id, self.cfg.bos_id))
            for word, p in self.table.get(prefix, {"<eos>": 1.0}).items():
                logits[b, self.ids[word]] = math.log(p)
        return Step(logits, state, None)

    def words_of(self, translation: Translation) -> list[str]:
        """The first sentence of ``translation`` as words, without ``<eos>`` and padding."""
        out = []
        for i in translation.tokens[0].tolist():
            if i == self.cfg.eos_id:
                break
            out.append(self.words[i])
        return out

    def probability(self, words: list[str]) -> float:
        """p(words <eos>) under the table."""
        p = 1.0
        for t, word in enumerate(list(words) + ["<eos>"]):
            p *= self.table.get(tuple(words[:t]), {"<eos>": 1.0}).get(word, 0.0)
        return p

    def decode(self, beam_size: int | None = None, length_penalty: float = 0.0) -> tuple[list[str], float]:
        """Greedy (``beam_size=None``) or beam search; the words and their score."""
        src, lengths = torch.ones(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)
        if beam_size is None:
            out = decoding.greedy(self, src, lengths)
            words = self.words_of(out)
            return words, math.log(self.probability(words))
        out = decoding.beam_search(self, src, lengths, beam_size=beam_size, length_penalty=length_penalty)
        return self.words_of(out), float(out.scores[0])


def _words(answer, what: str) -> list[str] | str:
    """A list of words (a trailing "<eos>" dropped), or the reason it is not one."""
    if isinstance(answer, str):
        answer = answer.split()
    if not isinstance(answer, (list, tuple)) or not all(isinstance(w, str) for w in answer):
        return f"{what} should be a list of words like ['the', 'cat'], got {answer!r}"
    answer = [w for w in answer if w != "<bos>"]
    return answer[:-1] if answer and answer[-1] == "<eos>" else answer


# --------------------------------------------------------------------------- 2.1 the decoder's size

E, HE, HD = 128, 256, 256  # the chapter's model: embeddings, c = [→h_S; ←h_1], decoder state


def _gru_cell_parameters(inputs: int, hidden: int) -> int:
    return sum(p.numel() for p in nn.GRUCell(inputs, hidden).parameters())


@exercise(
    "2.1",
    "Parameters of the decoder's GRU cell",
    solution=lambda: 3 * ((E + HE) * HD + HD * HD + 2 * HD),
    wrong_answer=lambda: 3 * (E * HD + HD * HD + 2 * HD),
)
def decoder_cell_parameters(answer) -> Verdict:
    expected = _gru_cell_parameters(E + HE, HD)
    try:
        got = int(answer)
    except (TypeError, ValueError):
        return wrong(f"the answer should be a whole number of parameters, got {answer!r}")
    if got == expected:
        return right(
            f"{got:,} parameters, as nn.GRUCell({E + HE}, {HD}) has: 3 blocks (reset, update, "
            f"candidate), each with input weights ({E + HE}·{HD}), recurrent weights ({HD}·{HD}) "
            f"and two biases ({HD} each)"
        )
    hints = {
        3 * (E * HD + HD * HD + 2 * HD): f"that is a cell whose input is the embedding alone ({E}): the decoder "
        f"reads [E_y y_(t-1); c], E + He = {E + HE} numbers (or, the same "
        f"number here, a cell without its recurrent weights U, H·H per block)",
        3 * (HE * HD + HD * HD + 2 * HD): f"that is an input of {HE} numbers; the input is [E_y y_(t-1); c]: "
        f"the embedding ({E}) and c, which holds both directions of the "
        f"encoder ({HE}), E + He = {E + HE} numbers",
        3 * ((E + HE) * HD + HD * HD): "no biases: PyTorch's GRUCell has two bias vectors per block, b_ih and b_hh",
        3 * ((E + HE) * HD + HD * HD + HD): "one bias per block; PyTorch's GRUCell has two, b_ih and b_hh "
        "(the candidate's b_hh sits inside r ⊙ (U h + b_hh))",
        4 * ((E + HE) * HD + HD * HD + 2 * HD): "four blocks is an LSTM cell (input, forget, cell, output); "
        "a GRU has three",
        (E + HE) * HD + HD * HD + 2 * HD: "that is one block; a GRU has three (reset gate, update gate, "
        "candidate state), each with its own weights",
    }
    if got in hints:
        return wrong(f"{got:,}: {hints[got]}")
    return wrong(
        f"{got:,} is off by {got - expected:+,}; per block: in·H input weights, H·H recurrent "
        f"weights, 2H biases, with in = E + He = {E + HE} and H = Hd = {HD}"
    )


# --------------------------------------------------------------------------- 2.2 reversing a padded batch


def _reverse_by_hand(x: Tensor, lengths: Tensor) -> Tensor:
    out = x.clone()
    for b, n in enumerate(lengths.tolist()):
        out[b, :n] = x[b, :n].flip(0)
    return out


@exercise(
    "2.2",
    "Reverse a padded batch",
    solution=lambda: _reverse_by_hand,
    wrong_answer=lambda: lambda x, lengths: x.flip(1),
)
def reverse_a_padded_batch(answer) -> Verdict:
    if not callable(answer):
        return wrong(f"the answer should be a function f(x, lengths), got {type(answer).__name__}")
    g = torch.Generator().manual_seed(2)
    B, S = 6, 7
    lengths = torch.tensor([7, 1, 4, 2, 6, 3])  # (B,): one full row, one of length 1
    x = torch.randint(4, 100, (B, S), generator=g)  # (B, S) token ids, 0 = <pad>
    x[torch.arange(S) >= lengths[:, None]] = 0
    given = x.clone()
    expected = reverse_padded(x, lengths)  # (B, S)
    got = answer(given, lengths.clone())
    if not torch.equal(given, x):
        return wrong("your function changed x in place; return a new tensor and leave the batch as it was")
    got, problem = returned(got, expected, "your function")
    if problem:
        return wrong(problem)
    if got.shape != expected.shape:
        return wrong(
            f"the function returned shape {tuple(got.shape)}; the batch is {tuple(expected.shape)} "
            "and the reversed batch keeps that shape"
        )
    if torch.equal(got, expected):
        return right(
            "each sentence reversed within its own length, padding left at the end; it equals "
            "attention.models.reverse_padded on a random batch"
        )
    if torch.equal(got, x.flip(1)):
        return wrong(
            "you reversed whole rows, padding included: a short sentence now starts with <pad>, "
            "and the encoder would read the padding first. Reverse only the first lengths[b] entries"
        )
    if torch.equal(got, x):
        return wrong("the batch came back unchanged")
    real = torch.arange(S) < lengths[:, None]  # (B, S), True = a real token
    if torch.equal(got[real], expected[real]):
        return wrong("the real tokens are right, but the padding positions changed; leave them as they were")
    b = next(i for i in range(B) if not torch.equal(got[i], expected[i]))
    return wrong(
        f"row {b} (length {lengths[b].item()}) is {got[b].tolist()}; reversed within its length it "
        f"is {expected[b].tolist()}"
    )


# --------------------------------------------------------------------------- 2.3 greedy against beam search

#: words so far -> next-word probabilities; any other prefix ends with <eos> (probability 1)
GREEDY_VS_BEAM: dict[tuple[str, ...], dict[str, float]] = {
    (): {"the": 0.5, "a": 0.4, "cat": 0.1},
    ("the",): {"cat": 0.4, "dog": 0.35, "<eos>": 0.25},
    ("a",): {"dog": 0.9, "cat": 0.1},
}


@exercise(
    "2.3",
    "Greedy or beam search",
    solution=lambda: (["the", "cat"], ["a", "dog"]),
    wrong_answer=lambda: (["the", "cat"], ["the", "cat"]),
)
def greedy_or_beam(answer) -> Verdict:
    toy = ToyDecoder(GREEDY_VS_BEAM)
    greedy, _ = toy.decode()
    beam, _ = toy.decode(beam_size=2)
    if not isinstance(answer, (list, tuple)) or len(answer) != 2:
        return wrong(
            "the answer should be a pair: (greedy's words, beam search's words), e.g. (['a', 'cat'], ['the', 'dog'])"
        )
    got = [_words(a, what) for a, what in zip(answer, ("greedy's output", "beam search's output"))]
    for g in got:
        if isinstance(g, str):
            return wrong(g)
    got_greedy, got_beam = got

    def p(words):
        return f"p({' '.join(words + ['<eos>'])}) = {toy.probability(words):.3g}"

    if got_greedy == beam and got_beam == greedy:
        return wrong("the two are swapped: the first is greedy's output, the second beam search's")
    if got_greedy != greedy:
        return wrong(
            f"greedy takes the most probable word at each step, from the words it has already "
            f"chosen: {' → '.join(greedy + ['<eos>'])}, {p(greedy)}; you wrote {' '.join(got_greedy)}"
        )
    if got_beam != beam:
        if got_beam == greedy:
            return wrong(
                f"with K = 2 the beam keeps a second hypothesis after step 1, and at step 2 the "
                f"candidates of both are compared: {p(greedy)} loses to one that starts with a "
                f"less probable first word"
            )
        return wrong(
            f"{p(got_beam)}; follow the 2 best hypotheses step by step: after step 1 they are "
            f"'the' (0.5) and 'a' (0.4); extend both, keep the 2 best of the extensions, and so on"
        )
    return right(
        f"greedy writes '{' '.join(greedy)}' ({p(greedy)}); beam search with K = 2 keeps "
        f"'{beam[0]}' after step 1 and finds '{' '.join(beam)}' ({p(beam)}), as "
        f"attention.models.decoding.beam_search does"
    )


# --------------------------------------------------------------------------- 2.4 the length penalty

SHORT = (("thanks", 0.5), ("!", 0.6), ("<eos>", 0.9))  # (word, p(word | words before, x))
LONG = (("thank", 0.4), ("you", 0.8), ("very", 0.8), ("much", 0.7), ("<eos>", 0.9))

#: a decoder under which the two hypotheses above are what beam search with K = 2 finishes
LENGTH_PENALTY: dict[tuple[str, ...], dict[str, float]] = {
    (): {"thanks": 0.5, "thank": 0.4, "ok": 0.1},
    ("thanks",): {"!": 0.6, ".": 0.4},
    ("thanks", "!"): {"<eos>": 0.9, "!": 0.1},
    ("thank",): {"you": 0.8, "god": 0.2},
    ("thank", "you"): {"very": 0.8, ".": 0.2},
    ("thank", "you", "very"): {"much": 0.7, "well": 0.3},
    ("thank", "you", "very", "much"): {"<eos>": 0.9, ".": 0.1},
}


def _ranks(log=math.log, count_eos: bool = True) -> list[float]:
    """[short α=0, long α=0, short α=1, long α=1]."""
    out = []
    for alpha in (0, 1):
        for hyp in (SHORT, LONG):
            n = len(hyp) if count_eos else len(hyp) - 1
            out.append(sum(log(p) for _, p in hyp) / n**alpha)
    return out


@exercise("2.4", "Why a length penalty", solution=lambda: _ranks(), wrong_answer=lambda: _ranks(count_eos=False))
def length_penalty(answer) -> Verdict:
    expected = _ranks()
    names = [
        "short hypothesis at α = 0",
        "long hypothesis at α = 0",
        "short hypothesis at α = 1",
        "long hypothesis at α = 1",
    ]
    try:
        got = [float(v) for v in answer]
    except (TypeError, ValueError):
        return wrong(f"the answer should be four numbers [short α=0, long α=0, short α=1, long α=1], got {answer!r}")
    if len(got) != 4:
        return wrong(f"the answer should be four numbers [short α=0, long α=0, short α=1, long α=1], got {len(got)}")
    tol = 0.005
    if all(abs(g - e) <= tol for g, e in zip(got, expected)):
        toy = ToyDecoder(LENGTH_PENALTY)
        plain, _ = toy.decode(beam_size=2, length_penalty=0.0)
        penalised, _ = toy.decode(beam_size=2, length_penalty=1.0)
        return right(
            f"without a penalty the short one ranks higher ({expected[0]:.3f} > {expected[1]:.3f}), "
            f"per token the long one does ({expected[3]:.3f} > {expected[2]:.3f}); beam_search with "
            f"K = 2 returns '{' '.join(plain)}' with length_penalty=0 and '{' '.join(penalised)}' "
            f"with length_penalty=1"
        )
    if all(g > 0 for g in got):
        return wrong(
            "log-probabilities of probabilities below 1 are negative; did you drop the minus sign "
            "or give probabilities?"
        )
    for other, why in (
        (_ranks(count_eos=False), "|y| counts <eos> too: the short hypothesis has 3 tokens, the long one 5"),
        (_ranks(log=math.log10), "use the natural logarithm (math.log), not log10"),
    ):
        if all(abs(g - o) <= tol for g, o in zip(got, other)):
            return wrong(why)
    for g, e, name in zip(got, expected, names):
        if abs(g - e) > tol:
            return wrong(
                f"your rank of the {name}, {g:.4g}, is off by {g - e:+.3g}; "
                f"rank = (Σ_t log p_t) / |y|^α, natural log, |y| counting <eos>"
            )
    return wrong("not yet")  # pragma: no cover - every wrong answer differs in some entry
