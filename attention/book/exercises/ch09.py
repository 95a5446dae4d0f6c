"""Chapter 9 (``book/09-global-local.md``): local attention's window, local-p's position, the cost.

Each checker compares the reader's answer with what :mod:`attention.local` and
:mod:`attention.functional` compute, and says why a wrong answer is wrong.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import torch

from ...functional import attend
from ...local import PredictivePosition, local_attention, window_positions
from ...scores import make_score
from .base import Verdict, close_to, exercise, right, wrong

__all__ = [
    "P_91",
    "D_91",
    "H_92",
    "W_P_92",
    "V_P_92",
    "S_92",
    "L_93",
    "S_93",
    "D_93",
    "E_93",
    "DOCUMENT_94",
    "E_94",
    "D_94",
    "PLACEMENTS_94",
]


# 9.1 -------------------------------------------------------------------------------------------

P_91 = 6.6  # the aligned position p_t of exercise 9.1
D_91 = 2  # its half-width D (sigma = D / 2 = 1)


def _window_91() -> list[tuple[int, float]]:
    """The package's window and Gaussian factors for p_t = P_91, D = D_91.

    The Gaussian is read off ``local_attention`` itself: with every score equal, the softmax over
    the window is uniform, so the weights with the Gaussian divided by those without it are the
    Gaussian's factors.
    """
    S = 20  # a source long enough to hold the whole window
    centers = torch.tensor([[P_91]], dtype=torch.float64)  # (B, L) = (1, 1)
    query = torch.zeros(1, 1, 1, dtype=torch.float64)  # every dot score is 0
    keys = torch.zeros(1, S, 1, dtype=torch.float64)
    lengths = torch.tensor([S])
    dot = make_score("dot")
    _, shaped, positions = local_attention(dot, query, keys, keys, centers, lengths, D_91, gaussian=True)
    _, plain, _ = local_attention(dot, query, keys, keys, centers, lengths, D_91, gaussian=False)
    factors = (shaped / plain)[0, 0]  # (W,)
    return [(int(p), float(g)) for p, g in zip(positions[0, 0], factors)]


def _gaussian(positions: list[int], center: float, sigma: float, two: float = 2.0) -> list[float]:
    return [math.exp(-((s - center) ** 2) / (two * sigma**2)) for s in positions]


def _pairs(answer: Any) -> tuple[list[tuple[float, float]] | None, str | None]:
    if isinstance(answer, dict):
        answer = sorted(answer.items())
    try:
        items = list(answer)
    except TypeError:
        return None, f"answer with a list of (position, factor) pairs, e.g. [(5, 0.28), ...]; got {answer!r}"
    if items and all(isinstance(x, (int, float)) for x in items):
        return None, (
            "answer with (position, factor) pairs, one per window position, "
            "e.g. [(5, 0.28), (6, 0.84), ...], not a flat list"
        )
    try:
        pairs = [(float(p), float(g)) for p, g in items]
    except (TypeError, ValueError):
        return None, f"each item should be a pair (position, factor); got {items!r}"
    return pairs, None


def _close(xs: list[float], ys: list[float], tol: float = 2e-3) -> bool:
    return len(xs) == len(ys) and all(abs(x - y) <= tol for x, y in zip(xs, ys))


@exercise(
    "9.1",
    "The window and its Gaussian",
    solution=_window_91,
    wrong_answer=lambda: [(s, math.exp(-((s - 7) ** 2) / 2)) for s in range(5, 10)],
)
def window_and_gaussian(answer: Any) -> Verdict:
    pairs, problem = _pairs(answer)
    if problem:
        return wrong(problem)
    expected = _window_91()
    positions = [p for p, _ in expected]
    W, sigma = 2 * D_91 + 1, D_91 / 2
    got_pos, got_g = [p for p, _ in pairs], [g for _, g in pairs]
    if len(pairs) != W:
        return wrong(
            f"the window holds 2D + 1 = {W} positions (the centre and D = {D_91} on each side); you gave {len(pairs)}"
        )
    if got_pos != positions:
        floor = [math.floor(P_91) + k for k in range(-D_91, D_91 + 1)]
        if got_pos == floor:
            return wrong(
                f"you cut p_t = {P_91} down to {math.floor(P_91)}: the window is centred on "
                f"round(p_t) = {round(P_91)}, so it holds {positions}"
            )
        return wrong(
            f"the window holds the integer positions round(p_t) + (−D … D), here {positions[0]:g} … "
            f"{positions[-1]:g}; yours are {got_pos}"
        )
    factors = [g for _, g in expected]
    if _close(got_g, factors):
        shown = ", ".join(f"{p}: {g:.3f}" for p, g in expected)
        return right(
            f"{shown}. The window is cut at round(p_t) = {round(P_91)}, but the Gaussian is centred "
            f"on the real p_t = {P_91}, so it is lopsided: position {positions[0]} keeps more than "
            f"position {positions[-1]}. That real p_t in the exponent is what carries the gradient to "
            f"W_p and v_p"
        )
    if _close(got_g, _gaussian(positions, round(P_91), sigma)):
        return wrong(
            f"you centred the Gaussian on round(p_t) = {round(P_91)}. Only the window is cut from the "
            f"rounded position; the Gaussian uses the real p_t = {P_91} (rounding has no gradient, "
            f"the Gaussian is how local-p learns where to look)"
        )
    if _close(got_g, _gaussian(positions, P_91, D_91)):
        return wrong(
            f"σ is D/2 = {sigma:g}, not D = {D_91}: Luong et al. put the window's edge two standard "
            f"deviations from its centre"
        )
    if _close(got_g, _gaussian(positions, P_91, sigma, two=1.0)):
        return wrong("the exponent is −(s − p_t)² / (2σ²): the factor 2 in the denominator is missing")
    if _close(got_g, [math.exp(-abs(s - P_91) / (2 * sigma**2)) for s in positions]):
        return wrong("the distance to p_t is squared in the exponent: −(s − p_t)² / (2σ²)")
    worst = max(abs(a - b) for a, b in zip(got_g, factors))
    return wrong(
        f"the positions are right; the factors are off by up to {worst:.3g}. Each factor is "
        f"exp(−(s − p_t)² / (2σ²)) with p_t = {P_91} and σ = D/2 = {sigma:g}"
    )


# 9.2 -------------------------------------------------------------------------------------------

H_92 = [1.0, -1.0]  # h_t of exercise 9.2 (H_d = 2)
W_P_92 = [[1.0, 2.0], [0.0, -1.0]]  # W_p, shape (A, H_d) = (2, 2)
V_P_92 = [1.0, 2.0]  # v_p, shape (A,)
S_92 = 10  # the sentence's source length S


def _position_92() -> float:
    """p_t from the package's PredictivePosition with W_p, v_p set to the exercise's values."""
    predict = PredictivePosition(query_dim=len(H_92), hidden_dim=len(V_P_92)).double()
    with torch.no_grad():
        predict.W_p.weight.copy_(torch.tensor(W_P_92))  # nn.Linear(H_d, A) stores (A, H_d)
        predict.v_p.weight.copy_(torch.tensor([V_P_92]))  # (1, A)
        h = torch.tensor([[H_92]], dtype=torch.float64)  # (B, L, H_d) = (1, 1, 2)
        return float(predict(h, torch.tensor([S_92]))[0, 0])


def _variant_92(tanh: bool = True, sigmoid: bool = True, length: float = S_92, transpose: bool = False) -> float:
    W = torch.tensor(W_P_92, dtype=torch.float64)
    W = W.T if transpose else W
    hidden = W @ torch.tensor(H_92, dtype=torch.float64)  # (A,)
    hidden = torch.tanh(hidden) if tanh else hidden
    x = float(torch.tensor(V_P_92, dtype=torch.float64) @ hidden)
    return length * (1 / (1 + math.exp(-x)) if sigmoid else x)


@exercise("9.2", "Where local-p looks", solution=_position_92, wrong_answer=lambda: _variant_92(tanh=False))
def predicted_position(answer: Any) -> Verdict:
    expected = _position_92()
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return wrong(f"p_t should be a number, got {answer!r}")
    tol = 0.01
    verdict = close_to(got, expected, tol, "p_t")
    if verdict.correct:
        return right(
            f"p_t = S · σ(v_pᵀ tanh(W_p h_t)) = {expected:.3f}, as PredictivePosition computes: the "
            f"window is cut at round(p_t) = {round(expected)}, the Gaussian is centred on {expected:.3f}"
        )
    slips = [
        (_variant_92(tanh=False), "you left out the tanh: W_p h_t goes through tanh before v_p"),
        (_variant_92(length=1), f"that is σ(…), a number in (0, 1): multiply by the source length S = {S_92}"),
        (_variant_92(sigmoid=False), "without the sigmoid p_t is not confined to [0, S]: S · σ(v_pᵀ tanh(W_p h_t))"),
        (
            _variant_92(transpose=True),
            "W_p is used transposed: W_p ∈ ℝ^{A×H_d} multiplies h_t as W_p h_t (row i of W_p dotted with h_t)",
        ),
        (_variant_92(length=S_92 - 1), f"you multiplied by S − 1 = {S_92 - 1}; the formula scales by S itself"),
    ]
    for value, why in slips:
        if abs(got - value) <= tol:
            return wrong(why)
    return wrong(
        f"{verdict.message}. Compute W_p h_t, then tanh, then the dot product with v_p, "
        f"the sigmoid, and multiply by S = {S_92}"
    )


# 9.3 -------------------------------------------------------------------------------------------

L_93 = 1000  # target length L of exercise 9.3
S_93 = 1000  # source length S
D_93 = 10  # window half-width D
E_93 = 64  # state size E (keys and values)


@cache
def _weight_counts_93() -> tuple[int, int]:
    """The number of attention weights each kind produces, read off the package's own outputs."""
    with torch.no_grad():
        query = torch.zeros(1, L_93, 1)  # (B, L, E): E = 1 is enough to count weights
        keys = torch.zeros(1, S_93, 1)  # (B, S, E)
        dot = make_score("dot")
        _, global_weights = attend(dot(query, keys), keys)  # (1, L, S)
        centers = torch.linspace(0, S_93 - 1, L_93)[None]  # (1, L)
        _, local_weights, _ = local_attention(dot, query, keys, keys, centers, torch.tensor([S_93]), D_93)
    return global_weights.numel(), local_weights.numel()  # L·S, L·(2D+1)


def _crossing_93() -> float:
    """S where 2·L·S (global's scores and weights) = 2·L·W + 2·L·W·E (local's, plus its gathered copies)."""
    W = window_positions(torch.zeros(1, 1), D_93).shape[-1]  # 2D + 1
    return float(W * (E_93 + 1))


def _solution_93() -> list[float]:
    return [*_weight_counts_93(), _crossing_93()]


@exercise(
    "9.3",
    "What each keeps for the backward pass",
    solution=_solution_93,
    wrong_answer=lambda: [L_93 * S_93, L_93 * 2 * D_93, (2 * D_93 + 1) * E_93],
)
def memory_counts(answer: Any) -> Verdict:
    try:
        got = [float(a) for a in answer]
    except (TypeError, ValueError):
        return wrong(
            f"answer with three numbers: [global's weights, local's weights, the S where the counts "
            f"are equal]; got {answer!r}"
        )
    if len(got) != 3:
        return wrong(f"answer with three numbers: [global's weights, local's weights, S]; got {len(got)}")
    n_global, n_local = _weight_counts_93()
    crossing = _crossing_93()
    W = 2 * D_93 + 1
    g, loc, s = got
    if (g, loc) == (n_local, n_global):
        return wrong("the first two are swapped: global attention is the one with a weight for every source position")
    if g != n_global:
        return wrong(
            f"global attention gives each of the L = {L_93} queries a weight for each of the S = {S_93} "
            f"keys: L·S weights, here {n_global:,}"
        )
    if loc != n_local:
        if loc == L_93 * 2 * D_93:
            return wrong(f"a window holds 2D + 1 = {W} positions, the centre included, not 2D")
        if loc == n_global:
            return wrong(
                f"that is global attention's count; local attention gives each query one weight per "
                f"window position, 2D + 1 = {W} of them"
            )
        return wrong(f"local attention gives each of the L = {L_93} queries 2D + 1 = {W} weights; you have {loc:,.0f}")
    if abs(s - crossing) <= 1.5:
        return right(
            f"{n_global:,} against {n_local:,} weights, yet the counts are equal only at S = W·(E + 1) = "
            f"{crossing:,.0f}: with L = S, 2·S² = 2·S·W + 2·S·W·E. The copies of the window's keys and "
            f"values, not the weights, decide. Compare with where the notebook's measured curves cross"
        )
    if abs(s - W * E_93) <= 1.5:
        return wrong(
            f"W·E = {W * E_93} is the chapter's estimate, which counts only the gathered keys and "
            f"values; the question also counts local attention's own scores and weights, 2·L·W"
        )
    if abs(s - W) <= 1.5:
        return wrong(
            f"counting weights alone, local attention keeps fewer as soon as S > 2D + 1 = {W}; but it "
            f"also keeps copies of the window's keys and values, 2·L·W·E numbers"
        )
    if abs(s - 2 * crossing) <= 3 or abs(s - crossing / 2) <= 1.5:
        return wrong(
            "off by a factor 2: both sides keep two tensors (global: scores and weights; local: scores "
            "and weights, and keys and values)"
        )
    return wrong(
        f"the weights are right. For S: with L = S, set 2·L·S equal to 2·L·W + 2·L·W·E "
        f"(W = {W}, E = {E_93}) and solve for S"
    )


# 9.4 -------------------------------------------------------------------------------------------

DOCUMENT_94 = 5000  # source and target length of exercise 9.4, in tokens
E_94 = 64  # the state size
D_94 = 10  # the window half-width
PLACEMENTS_94 = ("global", "local-m", "local-p")


@exercise("9.4", "A document of 5,000 tokens", solution=lambda: "local-p", wrong_answer=lambda: "local-m")
def placement_for_documents(answer: Any) -> Verdict:
    choice = str(answer).strip().lower().replace("_", "-").replace(" ", "-")
    if choice not in PLACEMENTS_94:
        return wrong(f"choose one of {', '.join(repr(p) for p in PLACEMENTS_94)}; got {answer!r}")
    n, W = DOCUMENT_94, 2 * D_94 + 1
    global_numbers = 2 * n * n  # scores and weights, L = S = n
    local_numbers = 2 * n * W * (E_94 + 1)  # scores, weights and the gathered keys and values
    crossing = W * (E_94 + 1)
    drift = n // 10  # a translation 10 % longer than its source, at its end
    if choice == "global":
        return wrong(
            f"global attention keeps 2·L·S = {global_numbers:,} numbers per document and attention "
            f"layer for the backward pass, against local attention's {local_numbers:,}: {n:,} is far "
            f"past where the two cross (S = W·(E + 1) = {crossing:,}), and the gap grows with S², "
            f"so a document twice as long costs global attention four times as much"
        )
    if choice == "local-m":
        return wrong(
            f"local-m bets that target step t aligns with source position t. Over a sentence the "
            f"drift stays inside the window; over {n:,} tokens it does not: a translation only 10 % "
            f"longer than its source is about {drift:,} positions off by its end, far outside a "
            f"window of 2D + 1 = {W}, and local-m never looks there"
        )
    return right(
        f"local-p: at {n:,} tokens local attention keeps far less than global ({local_numbers:,} "
        f"numbers against {global_numbers:,}, and linear in the length rather than quadratic), and "
        f"over a whole document target step t drifts far from source position t, so the window has "
        f"to be placed by a prediction from h_t, not by p_t = t"
    )
