"""Chapter 7 (``book/07-memory.md``): a position-encoding weight, one memory-network hop by hand,
NTM content addressing, and an NTM shift followed by sharpening.

Each checker compares the reader's answer with what :mod:`attention.models.memn2n`,
:mod:`attention.functional` and :mod:`attention.addressing` compute, and says why a wrong answer is wrong.
"""

from __future__ import annotations

from typing import Any

import torch

from ...addressing import content_weights, sharpen, shift
from ...functional import attend
from ...models.memn2n import position_encoding
from ...scores import DotScore
from .base import Verdict, all_close, exercise, fmt_numbers, numbers, right, wrong

__all__ = [
    "J_71",
    "D_71",
    "WORD_71",
    "DIM_71",
    "KEYS_72",
    "VALUES_72",
    "QUESTION_72",
    "MEMORY_73",
    "KEY_73",
    "BETA_73",
    "WEIGHTS_74",
    "KERNEL_74",
    "GAMMA_74",
]


def _one_number(answer: Any, what: str) -> tuple[float | None, str | None]:
    if isinstance(answer, bool):
        return None, f"answer with one number, {what}; got {answer!r}"
    try:
        return float(answer), None
    except (TypeError, ValueError):
        return None, f"answer with one number, {what}; got {answer!r}"


# 7.1 -------------------------------------------------------------------------------------------

J_71 = 5  # J, words in the sentence
D_71 = 4  # D, embedding dimensions
WORD_71 = 2  # j, the word's position, counted from 1
DIM_71 = 1  # k, the embedding dimension, counted from 1


def _l(j: float, k: float, J: float = J_71, D: float = D_71) -> float:
    """The formula typed out, for the slips (the solution itself is the package's)."""
    return (1 - j / J) - (k / D) * (1 - 2 * j / J)


def _position_71() -> float:
    """The package's position_encoding(J, D) at word j, dimension k (both counted from 1)."""
    return float(position_encoding(J_71, D_71)[WORD_71 - 1, DIM_71 - 1])


@exercise("7.1", "A position-encoding weight", solution=_position_71, wrong_answer=lambda: 1.0)
def position_weight(answer: Any) -> Verdict:
    got, problem = _one_number(answer, "the weight l_kj")
    if problem:
        return wrong(problem)
    want, tol = _position_71(), 2e-3
    if abs(got - want) <= tol:
        return right(
            f"l_kj = (1 − {WORD_71}/{J_71}) − ({DIM_71}/{D_71})(1 − 2·{WORD_71}/{J_71}) = {want:.3f}. "
            f"The word's embedding is multiplied by it in dimension {DIM_71}; another word position gets "
            f"other weights, so the sentence vector Σ_j l_j ⊙ A x_j changes when the words are reordered"
        )
    slips = [
        (
            1.0,
            "1 is the bag-of-words weight, l_j = 1 for every word, which makes the sentence vector blind to "
            "word order; position encoding replaces it with l_kj = (1 − j/J) − (k/D)(1 − 2j/J)",
        ),
        (
            _l(DIM_71, WORD_71),
            "j and k are swapped: j is the word's position in the sentence (divided by J), k the "
            "embedding dimension (divided by D)",
        ),
        (
            _l(WORD_71 - 1, DIM_71 - 1),
            "that counts j and k from 0; the paper (and position_encoding) counts both from 1",
        ),
        (
            (1 - WORD_71 / J_71) + (DIM_71 / D_71) * (1 - 2 * WORD_71 / J_71),
            "the second term is subtracted: l_kj = (1 − j/J) − (k/D)(1 − 2j/J)",
        ),
    ]
    for value, why in slips:
        if abs(got - value) <= tol:
            return wrong(why)
    return wrong(
        f"{got:.4g} is not it: put j = {WORD_71}, J = {J_71}, k = {DIM_71}, D = {D_71} into (1 − j/J) − (k/D)(1 − 2j/J)"
    )


# 7.2 -------------------------------------------------------------------------------------------

KEYS_72 = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))  # m_i, the input memory of three sentences (D = 2)
VALUES_72 = ((1.0, 0.0), (0.0, 2.0), (2.0, 1.0))  # c_i, the output memory of the same sentences
QUESTION_72 = (1.0, 0.5)  # u, the question


def _hop_72(keys=KEYS_72, values=VALUES_72, softmax: bool = True) -> list[list[float]]:
    """[p, o] of one hop: DotScore of u against the keys, attend over the values (float64)."""
    u = torch.tensor([QUESTION_72], dtype=torch.float64)  # (1, D)
    k = torch.tensor([keys], dtype=torch.float64)  # (1, M, D)
    v = torch.tensor([values], dtype=torch.float64)  # (1, M, D)
    scores = DotScore()(u[:, None, :], k)  # (1, 1, M)
    if softmax:
        o, p = attend(scores, v)  # (1, 1, D), (1, 1, M)
    else:
        p, o = scores, scores @ v
    return [p[0, 0].tolist(), o[0, 0].tolist()]


@exercise("7.2", "One hop by hand", solution=_hop_72, wrong_answer=lambda: _hop_72(keys=VALUES_72))
def one_hop(answer: Any) -> Verdict:
    M, D = len(KEYS_72), len(QUESTION_72)
    try:
        parts = list(answer)
    except TypeError:
        return wrong(f"answer with [p, o]: {M} weights and the {D}-dimensional output; got {answer!r}")
    if len(parts) != 2:
        return wrong(f"answer with [p, o]: {M} weights and the {D}-dimensional output; got {len(parts)} items")
    p, problem = numbers(parts[0], M, "the weights p_i, one per sentence")
    if problem:
        return wrong(problem)
    o, problem = numbers(parts[1], D, "the output o")
    if problem:
        return wrong(problem)
    want_p, want_o = _hop_72()
    if all_close(p, want_p) and all_close(o, want_o):
        return right(
            f"p = {fmt_numbers(want_p)}, o = {fmt_numbers(want_o)}: the scores uᵀm_i are [1, 0.5, 1.5], their softmax "
            f"is p, and o = Σ p_i c_i reads the *output* memory. The next hop asks with u + o = "
            f"{fmt_numbers([a + b for a, b in zip(QUESTION_72, want_o)])}"
        )
    on_values = _hop_72(keys=VALUES_72)
    if all_close(p, on_values[0]):
        return wrong(
            "those weights match u against the output memory c_i; the question is matched against the "
            "input memory m_i (the keys), and c_i is only what is read out"
        )
    linear = _hop_72(softmax=False)
    if all_close(p, linear[0]):
        return wrong(
            "those are the raw scores uᵀm_i (the linear start); the hop turns them into weights with a "
            "softmax, so they are positive and sum to 1"
        )
    if not all_close(p, want_p):
        if abs(sum(p) - 1) > 2e-3:
            return wrong(f"your weights sum to {sum(p):.3f}; p = softmax(uᵀm_i) sums to 1")
        return wrong("the weights are not it: score each sentence with the dot product uᵀm_i, then take the softmax")
    read_keys = [sum(pi * k[d] for pi, k in zip(want_p, KEYS_72)) for d in range(D)]
    if all_close(o, read_keys):
        return wrong("the weights are right, but o sums the input memory m_i; it sums the output memory: o = Σ p_i c_i")
    if all_close(o, [a + b for a, b in zip(QUESTION_72, want_o)]):
        return wrong("that is u + o, the question of the next hop; the hop's output o is Σ p_i c_i alone")
    return wrong("the weights are right; the output is o = Σ_i p_i c_i, dimension by dimension")


# 7.3 -------------------------------------------------------------------------------------------

MEMORY_73 = ((1.0, 0.0), (0.0, 1.0), (3.0, 3.0))  # M(i), three slots of width W = 2
KEY_73 = (1.0, 0.0)  # k, the head's key
BETA_73 = 2.0  # β, the key strength


def _content_73(beta: float = BETA_73) -> list[float]:
    """The package's content_weights(M, k, β) (float64)."""
    memory = torch.tensor([MEMORY_73], dtype=torch.float64)  # (1, N, W)
    key = torch.tensor([KEY_73], dtype=torch.float64)  # (1, W)
    return content_weights(memory, key, beta)[0].tolist()


def _softmax(scores) -> list[float]:
    t = torch.softmax(torch.tensor(scores, dtype=torch.float64), -1)
    return t.tolist()


@exercise("7.3", "NTM content addressing", solution=_content_73, wrong_answer=lambda: _content_73(1.0))
def content_addressing(answer: Any) -> Verdict:
    got, problem = numbers(answer, len(MEMORY_73), "one weight per memory slot")
    if problem:
        return wrong(problem)
    want = _content_73()
    if all_close(got, want):
        return right(
            f"{fmt_numbers(want)}: the cosines of k with the slots are [1, 0, 0.707], β = {BETA_73:g} "
            f"multiplies them and a softmax normalises. Slot 3 is far longer than k but counts only by "
            f"its direction, which is what makes the key match a pattern, whatever its size"
        )
    dots = [sum(a * b for a, b in zip(KEY_73, row)) for row in MEMORY_73]
    if all_close(got, _content_73(1.0)):
        return wrong(
            f"that is the softmax of the cosines with β = 1; the key strength β = {BETA_73:g} multiplies "
            f"them first, which sharpens the weighting"
        )
    if all_close(got, _softmax([BETA_73 * d for d in dots])) or all_close(got, _softmax(dots)):
        return wrong(
            "that scores with the dot product kᵀM(i), which favours the long slot 3; NTM content "
            "addressing uses the cosine, which divides by both lengths"
        )
    if abs(sum(got) - 1) > 2e-3:
        return wrong(f"your weights sum to {sum(got):.3f}; content addressing ends with a softmax, which sums to 1")
    return wrong("compute cos(k, M(i)) for each slot, multiply by β, and take the softmax")


# 7.4 -------------------------------------------------------------------------------------------

WEIGHTS_74 = (0.1, 0.0, 0.0, 0.3, 0.6)  # w^g, an interpolated weighting over N = 5 slots
KERNEL_74 = (0.0, 0.2, 0.8)  # s over the offsets −1, 0, +1
GAMMA_74 = 2.0  # γ


def _shift_sharpen_74(kernel=KERNEL_74, order: str = "shift first") -> list[list[float]]:
    """[shifted, sharpened] from the package's shift and sharpen (float64)."""
    w = torch.tensor([WEIGHTS_74], dtype=torch.float64)  # (1, N)
    s = torch.tensor(kernel, dtype=torch.float64)  # (S,)
    if order == "shift first":
        shifted = shift(w, s)
        return [shifted[0].tolist(), sharpen(shifted, GAMMA_74)[0].tolist()]
    sharpened = sharpen(w, GAMMA_74)
    return [shift(sharpened, s)[0].tolist(), shift(sharpened, s)[0].tolist()]


@exercise(
    "7.4",
    "NTM shift and sharpening",
    solution=_shift_sharpen_74,
    wrong_answer=lambda: _shift_sharpen_74(kernel=tuple(reversed(KERNEL_74))),
)
def shift_and_sharpen(answer: Any) -> Verdict:
    N = len(WEIGHTS_74)
    try:
        rows = [list(r) for r in answer]
    except TypeError:
        return wrong(f"answer with two lists of {N} weights: [shifted, sharpened]; got {answer!r}")
    if len(rows) != 2:
        return wrong(f"answer with two lists of {N} weights: [shifted, sharpened]; got {len(rows)} items")
    shifted, problem = numbers(rows[0], N, "the shifted weighting w̃, one weight per slot")
    if problem:
        return wrong(problem)
    sharpened, problem = numbers(rows[1], N, "the sharpened weighting w, one weight per slot")
    if problem:
        return wrong(problem)
    want_shifted, want_sharpened = _shift_sharpen_74()
    if all_close(shifted, want_shifted) and all_close(sharpened, want_sharpened):
        return right(
            f"w̃ = {fmt_numbers(want_shifted)}, w = {fmt_numbers(want_sharpened)}: 80% of each slot's weight moves one "
            f"slot on and 20% stays, and the 0.6 on the last slot wraps round to the first. The shift "
            f"blurs the focus; γ = {GAMMA_74:g} squares and renormalises, so the largest weight grows "
            f"back at the expense of the small ones"
        )
    if not all_close(shifted, want_shifted):
        backwards = _shift_sharpen_74(kernel=tuple(reversed(KERNEL_74)))[0]
        if all_close(shifted, backwards):
            return wrong(
                "that moves the weight one slot *back*: s = (0, 0.2, 0.8) is over the offsets −1, 0, +1, "
                "so 0.8 goes to offset +1, from slot i to slot i + 1"
            )
        no_wrap = list(want_shifted)
        no_wrap[0] -= KERNEL_74[2] * WEIGHTS_74[-1]
        if all_close(shifted, no_wrap):
            return wrong(
                "the shift is circular: the weight that moves past the last slot comes back at the first (i − j mod N)"
            )
        if all_close(shifted, _shift_sharpen_74(order="sharpen first")[0]):
            return wrong(
                "that sharpens before shifting; the NTM shifts first and sharpens after, to undo the "
                "blur the shift causes"
            )
        if abs(sum(shifted) - 1) > 2e-3:
            return wrong(
                f"your shifted weights sum to {sum(shifted):.3f}; a shift only moves weight, so they still sum to 1"
            )
        return wrong(
            "the shifted weighting is not it: w̃(i) = Σ_j w(j) s(i − j mod N), with s(+1) = 0.8, s(0) = 0.2, s(−1) = 0"
        )
    squared = [w**GAMMA_74 for w in want_shifted]
    if all_close(sharpened, squared):
        return wrong(
            f"you raised the weights to γ = {GAMMA_74:g} but did not renormalise: divide by their sum, "
            f"so the weighting sums to 1 again"
        )
    return wrong(f"the shifted weighting is right; now raise each weight to γ = {GAMMA_74:g} and divide by the sum")
