"""Chapter 6 (``book/06-transformer.md``): the size of multi-head attention, the positional
encoding, the causal mask, the warm-up schedule, what self-attention costs, Lin et al.'s penalty
and how many weights LSTMN and Lin et al.'s rows compute.

Each checker compares the reader's answer with what :mod:`attention.layers`,
:mod:`attention.models.transformer`, :mod:`attention.masks`, :mod:`attention.functional`,
:mod:`attention.models.lstmn` and :mod:`attention.models.selfattentive` compute, and says why a
wrong answer is wrong.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import torch
from torch import nn

from ...functional import scaled_dot_product_attention
from ...layers import MultiHeadAttention
from ...models.selfattentive import penalty
from ...models.transformer import PositionalEncoding, noam_schedule
from .base import Verdict, exercise, numbers, right, wrong

__all__ = ["E_61", "HEADS_61", "POS_62", "DIMS_62", "E_62", "E_64", "WARMUP_64", "N_65", "D_65", "A_66", "B_66"]


def _close(x: float, y: float, rel: float = 5e-3, abs_: float = 0.0) -> bool:
    return abs(x - y) <= max(abs_, rel * abs(y))


# 6.1 -------------------------------------------------------------------------------------------

E_61 = 512  # d_model of exercise 6.1
HEADS_61 = (8, 1)  # the two numbers of heads it compares


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@cache
def _parameters_61() -> tuple[int, ...]:
    """The parameter count of the package's MultiHeadAttention(E_61, h) for each h of HEADS_61."""
    return tuple(_count(MultiHeadAttention(E_61, h)) for h in HEADS_61)


@exercise(
    "6.1",
    "The size of multi-head attention",
    solution=lambda: list(_parameters_61()),
    wrong_answer=lambda: [4 * E_61 * E_61] * len(HEADS_61),
)
def multihead_parameters(answer: Any) -> Verdict:
    got, problem = numbers(
        answer, len(HEADS_61), f"the parameters with h = {HEADS_61[0]} and with h = {HEADS_61[1]} heads"
    )
    if problem:
        return wrong(problem)
    expected = _parameters_61()
    E = E_61
    if [round(g) for g in got] == list(expected):
        return right(
            f"{expected[0]:,} both times: W^Q, W^K, W^V and W^O are {E} × {E} matrices with a bias "
            f"of {E} each, 4·E² + 4·E whatever the number of heads. The heads only cut each "
            f"projection's {E} output columns into h groups of D = E/h"
        )
    n8 = got[0]
    if all(round(g) == 4 * E * E for g in got):
        return wrong(
            f"4·E² = {4 * E * E:,} counts the four matrices but not their biases: each of "
            f"W^Q, W^K, W^V, W^O adds a bias of E = {E} (bias=True, as in nn.MultiheadAttention)"
        )
    if all(round(g) == 3 * (E * E + E) for g in got):
        return wrong(
            "that counts the projections of the queries, keys and values only: the concatenated heads "
            "go through one more E × E matrix with its bias, the output projection W^O"
        )
    per_head = [h * 3 * (E * E + E) + E * E + E for h in HEADS_61]
    if [round(g) for g in got] == per_head:
        return wrong(
            f"each head does not get E × E projections of its own: head i uses D = E/h = "
            f"{E // HEADS_61[0]} columns of W^Q, W^K and W^V, so h heads together still use one "
            f"E × E matrix each"
        )
    if round(got[0]) != round(got[1]):
        return wrong(
            "the two counts differ, but the number of heads changes no matrix: with d_model fixed, "
            "every projection is E × E, split into h blocks of D = E/h columns"
        )
    return wrong(
        f"{n8:,.0f} is not it. Count W^Q, W^K, W^V and W^O, each E × E = {E} × {E}, and a bias of E = {E} for each"
    )


# 6.2 -------------------------------------------------------------------------------------------

POS_62 = 10  # the position (counting from 0) of exercise 6.2
DIMS_62 = (4, 5)  # the two columns asked for: 2i and 2i + 1 with i = 2
E_62 = 16  # d_model


def _entries_62() -> list[float]:
    """Row POS_62, columns DIMS_62 of the package's sinusoid table."""
    table = PositionalEncoding.sinusoids(POS_62 + 1, E_62)  # (P, E)
    return [float(table[POS_62, j]) for j in DIMS_62]


def _variant_62(exponent, functions=(math.sin, math.cos)) -> list[float]:
    return [f(POS_62 / 10000 ** exponent(j)) for f, j in zip(functions, DIMS_62)]


@exercise(
    "6.2", "A positional encoding by hand", solution=_entries_62, wrong_answer=lambda: _variant_62(lambda j: j / E_62)
)
def positional_entries(answer: Any) -> Verdict:
    got, problem = numbers(answer, 2, f"PE({POS_62}, {DIMS_62[0]}) and PE({POS_62}, {DIMS_62[1]})")
    if problem:
        return wrong(problem)
    expected = _entries_62()
    tol = 2e-3
    if all(abs(g - e) <= tol for g, e in zip(got, expected)):
        return right(
            f"sin(1) ≈ {expected[0]:.4f} and cos(1) ≈ {expected[1]:.4f}: columns {DIMS_62[0]} and "
            f"{DIMS_62[1]} are the pair 2i, 2i + 1 with i = 2, which share one frequency, "
            f"1/10000^(4/{E_62}) = 1/10, so at position {POS_62} the angle is {POS_62}/10 = 1 radian"
        )
    slips = [
        (
            _variant_62(lambda j: j / E_62),
            "the exponent is 2i/d_model with the pair's index i, not the column: "
            "columns 4 and 5 are the pair i = 2, both with 10000^(4/16)",
        ),
        (
            _variant_62(lambda j: 2 * j / E_62),
            "the column is already 2i (or 2i + 1): dividing by 10000^(2·col/d) "
            "doubles the exponent. Columns 4 and 5 are i = 2: 10000^(4/16) = 10",
        ),
        (
            [expected[1], expected[0]],
            "sine and cosine are swapped: even columns (2i) hold the sine, odd ones (2i + 1) the cosine",
        ),
        (_variant_62(lambda j: 4 / E_62, (math.sin, math.sin)), "the odd column 2i + 1 holds the cosine"),
        ([math.sin(math.radians(1)), math.cos(math.radians(1))], "the angle is 1 radian, not 1 degree"),
    ]
    for values, why in slips:
        if all(abs(g - v) <= tol for g, v in zip(got, values)):
            return wrong(why)
    return wrong(
        f"PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i + 1) = cos(pos / 10000^(2i/d)), "
        f"with pos = {POS_62}, d = {E_62} and i = 2 for both columns"
    )


# 6.3 -------------------------------------------------------------------------------------------

E_64 = 512  # d_model of exercise 6.3 (the paper's base model)
WARMUP_64 = 4000  # warmup_steps


@cache
def _peak_64() -> tuple[int, float]:
    """The step of the highest rate of the package's noam_schedule, and that rate."""
    rate = noam_schedule(E_64, WARMUP_64)
    steps = range(1, 4 * WARMUP_64 + 1)
    step = max(steps, key=rate)
    return step, rate(step)


@exercise(
    "6.3",
    "The peak of the warm-up schedule",
    solution=lambda: list(_peak_64()),
    wrong_answer=lambda: [WARMUP_64, WARMUP_64**-0.5],
)
def schedule_peak(answer: Any) -> Verdict:
    got, problem = numbers(answer, 2, "the step at which the learning rate is highest, and that rate")
    if problem:
        return wrong(problem)
    step, rate = _peak_64()
    g_step, g_rate = got
    if round(g_step) != step:
        if round(g_step) in (step - 1, step + 1):
            return wrong(f"off by one: both terms of the min are equal at step = warmup_steps = {step}")
        return wrong(
            "the two terms of min(step^-0.5, step · warmup^-1.5) cross where step = warmup_steps; "
            "the rate rises before that and falls after"
        )
    if _close(g_rate, rate):
        return right(
            f"step {step:,}, rate {rate:.3g}: d_model^-0.5 · warmup^-0.5 = "
            f"{E_64}^-0.5 · {WARMUP_64}^-0.5. After the peak it falls as step^-0.5, so it has "
            f"halved by step {4 * step:,}"
        )
    slips = [
        (WARMUP_64**-0.5, f"you left out the factor d_model^-0.5 = {E_64**-0.5:.4f}"),
        (
            E_64**-0.5,
            f"that is d_model^-0.5 alone; multiply by min(step^-0.5, step · warmup^-1.5) at the peak, "
            f"{WARMUP_64**-0.5:.4g}",
        ),
        (
            E_64**-0.5 * WARMUP_64**-1.5,
            f"warmup^-1.5 is the slope of the rise; at the peak it is multiplied by step = {WARMUP_64}",
        ),
        (
            1.0,
            "that is the peak of the package's warmup_factor, which is scaled so that it peaks at 1 and is "
            "multiplied by the optimiser's lr; noam_schedule is the paper's rate itself",
        ),
    ]
    for value, why in slips:
        if _close(g_rate, value):
            return wrong(why)
    return wrong(
        f"the step is right; the rate is off by a factor {g_rate / rate:.3g}. Evaluate "
        f"d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) at step = {step}"
    )


# 6.4 -------------------------------------------------------------------------------------------

N_65 = 64  # sequence length n of exercise 6.4
D_65 = 256  # state size d


@cache
def _multiply_adds_65(n: int = N_65, d: int = D_65) -> tuple[int, int]:
    """Multiply-adds of the package's scaled dot-product attention (no projections) and of a
    plain RNN layer, over n positions of size d, as PyTorch's flop counter counts them (2 per
    multiply-add)."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad():
        x = torch.randn(1, n, d)
        with FlopCounterMode(display=False) as attention:
            scaled_dot_product_attention(x, x, x)  # Q Kᵀ, then the weighted sum of V
        rnn = nn.RNN(d, d, batch_first=True)  # h_t = tanh(W_ih x_t + W_hh h_{t-1} + b)
        with FlopCounterMode(display=False) as recurrent:
            rnn(x)
    return attention.get_total_flops() // 2, recurrent.get_total_flops() // 2


def _crossing_65() -> float:
    """The n at which the two counts are equal: attention's grows as n², the RNN's as n, so from
    the counts at N_65 the crossing is N_65 · (RNN's count) / (attention's count), which is d."""
    attention, recurrent = _multiply_adds_65()
    return N_65 * recurrent / attention


def _solution_65() -> list[float]:
    return [*_multiply_adds_65(), _crossing_65()]


@exercise(
    "6.4",
    "Where self-attention becomes the dearer layer",
    solution=_solution_65,
    wrong_answer=lambda: [N_65 * N_65 * D_65, N_65 * D_65 * D_65, D_65],
)
def cost_crossing(answer: Any) -> Verdict:
    got, problem = numbers(answer, 3, "[self-attention's multiply-adds, the RNN layer's, the n where they are equal]")
    if problem:
        return wrong(problem)
    attention, recurrent = _multiply_adds_65()
    crossing = _crossing_65()
    a, r, n = got
    n_, d = N_65, D_65
    if (round(a), round(r)) == (recurrent, attention):
        return wrong(
            "the first two are swapped: self-attention's count has n² (every pair of positions), the "
            "RNN's has d² (a d × d matrix per step)"
        )
    if round(a) != attention:
        if round(a) == n_ * n_ * d:
            return wrong(
                f"n²·d = {n_ * n_ * d:,} counts Q Kᵀ only; the weighted sum of the values, weights "
                f"(n × n) times V (n × d), costs n²·d more"
            )
        if round(a) == 2 * n_ * n_ * d + 4 * n_ * d * d:
            return wrong(
                "leave out the projections W^Q, W^K, W^V, W^O here, as the question says: they cost "
                "n·d² like the RNN's matrices, and the comparison is about the n² term"
            )
        return wrong(
            f"self-attention does two n × n × d products (Q Kᵀ, then the weights times V): 2·n²·d "
            f"with n = {n_}, d = {d}"
        )
    if round(r) != recurrent:
        if round(r) == n_ * d * d:
            return wrong(
                "a plain RNN step multiplies two d × d matrices, W_ih with x_t and W_hh with h_{t−1}: 2·d² per step"
            )
        return wrong(
            f"the RNN does n steps of 2·d² multiply-adds (W_ih x_t and W_hh h_{{t−1}}): 2·n·d² with n = {n_}, d = {d}"
        )
    if _close(n, crossing, abs_=0.5):
        return right(
            f"{attention:,} against {recurrent:,}: at n = {n_} self-attention does a quarter of the "
            f"RNN's work, and the two are equal at n = d = {crossing:.0f}, where 2·n²·d = 2·n·d². "
            f"Shorter sequences than d (most sentences) favour self-attention, and its n² products "
            f"run in parallel, where the RNN's n steps must wait for one another"
        )
    if _close(n, math.sqrt(D_65), abs_=0.5):
        return wrong("set 2·n²·d equal to 2·n·d² and divide both sides by 2·n·d: n = d, not √d")
    return wrong(f"the counts are right; set 2·n²·d = 2·n·d² and solve for n (d = {d})")


# 6.5 -------------------------------------------------------------------------------------------

A_66 = ((0.5, 0.5, 0.0), (0.0, 0.5, 0.5))  # two rows over three words that share the middle word
B_66 = ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0))  # two identical one-hot rows


def _penalties_66() -> list[float]:
    """``penalty`` of attention.models.selfattentive on A_66 and on B_66."""
    return [float(penalty(torch.tensor(m, dtype=torch.float64))) for m in (A_66, B_66)]


def _frobenius_66(matrix, subtract_identity: bool = True, part: str = "all") -> float:
    A = torch.tensor(matrix, dtype=torch.float64)
    G = A @ A.T - (torch.eye(len(A), dtype=torch.float64) if subtract_identity else 0)
    off = ~torch.eye(len(A), dtype=torch.bool)
    cells = {"all": G, "off": G[off], "diag": G.diagonal()}[part]
    return float(cells.pow(2).sum())


@exercise(
    "6.5",
    "Lin et al.'s penalty by hand",
    solution=_penalties_66,
    wrong_answer=lambda: [math.sqrt(p) for p in _penalties_66()],
)
def penalty_by_hand(answer: Any) -> Verdict:
    got, problem = numbers(answer, 2, "[P for A, P for B]")
    if problem:
        return wrong(problem)
    want = _penalties_66()
    if all(_close(g, w, abs_=1e-3) for g, w in zip(got, want)):
        return right(
            f"A Aᵀ is [[0.5, 0.25], [0.25, 0.5]] for A: the rows overlap by 0.25 on the middle word and "
            f"each has squared mass 0.5, so P = 2·0.5² + 2·0.25² = {want[0]:g}. For B, A Aᵀ is all ones: "
            f"no overlap could be larger, and P = {want[1]:g} although both rows are perfectly peaked. "
            f"The penalty punishes both ways of failing: spread rows (A) and rows on the same word (B)"
        )
    for name, k in (("A", 0), ("B", 1)):
        if _close(got[k], want[k], abs_=1e-3):
            continue
        g, m = got[k], (A_66, B_66)[k]
        if _close(g, math.sqrt(want[k]), abs_=1e-3):
            return wrong(f"for {name}, {g:g} is the Frobenius norm itself; P is its square")
        if _close(g, _frobenius_66(m, subtract_identity=False), abs_=1e-3):
            return wrong(
                f"for {name}, that is ‖A Aᵀ‖²_F: subtract the identity first, so that a peaked row (a 1 on "
                f"the diagonal) costs nothing"
            )
        if _close(g, _frobenius_66(m, part="off"), abs_=1e-3):
            return wrong(
                f"for {name}, that counts only the overlaps off the diagonal; the diagonal entries "
                f"(A Aᵀ)_ii − 1 count too"
            )
        if _close(g, _frobenius_66(m, part="diag"), abs_=1e-3):
            return wrong(
                f"for {name}, that counts only the diagonal; the overlaps (A Aᵀ)_ij, i ≠ j, count too, "
                f"and each appears twice, as (i, j) and (j, i)"
            )
        return wrong(
            f"for {name}, compute A Aᵀ (2 × 2, the dot products of the rows), subtract I and add up the "
            f"squares of all four entries"
        )
    return wrong("check both numbers: one of them is off")
