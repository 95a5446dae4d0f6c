"""Chapter 8 (``book/08-soft-hard.md``): a soft context by hand, the doubly stochastic penalty and
its floor, one REINFORCE estimate, and the estimator's expectation.

Each checker compares the reader's answer with what :mod:`attention.models.captioner` and
:mod:`attention.hard` compute, and says why a wrong answer is wrong.
"""

from __future__ import annotations

from typing import Any

import torch

from ...hard import reinforce_surrogate
from ...models.captioner import doubly_stochastic_penalty
from .base import Verdict, all_close, exercise, fmt_numbers, numbers, right, wrong

__all__ = [
    "WEIGHTS_81",
    "ANNOTATIONS_81",
    "BETA_81",
    "WEIGHTS_82",
    "WEIGHTS_83",
    "CHOICE_83",
    "REWARD_83",
    "BASELINE_83",
    "WEIGHTS_84",
    "REWARDS_84",
    "BASELINE_84",
]


# 8.1 -------------------------------------------------------------------------------------------

WEIGHTS_81 = (0.2, 0.5, 0.3)  # α_t over G = 3 cells
ANNOTATIONS_81 = ((1.0, 0.0), (0.0, 2.0), (2.0, 2.0))  # a_1, a_2, a_3 (D = 2)
BETA_81 = 0.5  # β_t, the gating scalar


def _context_81(weights=WEIGHTS_81, beta: float = BETA_81) -> list[float]:
    """z = β Σ_i α_i a_i, as ShowAttendTell.step computes it (float64)."""
    alpha = torch.tensor([weights], dtype=torch.float64)  # (1, G)
    a = torch.tensor([ANNOTATIONS_81], dtype=torch.float64)  # (1, G, D)
    b = torch.tensor([[beta]], dtype=torch.float64)  # (1, 1)
    return (b * (alpha[:, :, None] * a).sum(1))[0].tolist()  # (1, D) -> (D,)


@exercise("8.1", "A soft context by hand", solution=_context_81, wrong_answer=lambda: _context_81(beta=1.0))
def soft_context(answer: Any) -> Verdict:
    D = len(ANNOTATIONS_81[0])
    got, problem = numbers(answer, D, "the context vector z_t")
    if problem:
        return wrong(problem)
    want = _context_81()
    if all_close(got, want):
        return right(
            f"z = {BETA_81:g} · (0.2·(1, 0) + 0.5·(0, 2) + 0.3·(2, 2)) = {BETA_81:g} · (0.8, 1.6) = "
            f"{fmt_numbers(want)}. Every cell contributes, in proportion to its weight, so the context is a "
            f"smooth function of the scores and backpropagation reaches them"
        )
    if all_close(got, _context_81(beta=1.0)):
        return wrong(
            f"that is Σ_i α_i a_i, the expected annotation; the gating scalar β = {BETA_81:g} still multiplies it"
        )
    best = max(range(len(WEIGHTS_81)), key=lambda i: WEIGHTS_81[i])
    onehot = [float(i == best) for i in range(len(WEIGHTS_81))]
    if all_close(got, _context_81(onehot)) or all_close(got, _context_81(onehot, 1.0)):
        return wrong(
            "that reads only the most weighted cell, as hard attention at evaluation would; soft "
            "attention blends all three cells with their weights"
        )
    uniform = [1 / len(WEIGHTS_81)] * len(WEIGHTS_81)
    if all_close(got, _context_81(uniform)) or all_close(got, _context_81([1.0] * len(WEIGHTS_81))):
        return wrong("the cells are not weighted equally: multiply each a_i by its own α_i before summing")
    return wrong("compute Σ_i α_i a_i dimension by dimension, then multiply by β")


# 8.2 -------------------------------------------------------------------------------------------

WEIGHTS_82 = ((0.5, 0.3, 0.2), (0.1, 0.6, 0.3))  # α (T = 2 steps, G = 3 cells), rows sum to 1


def _penalty_82(weights=WEIGHTS_82) -> float:
    return float(doubly_stochastic_penalty(torch.tensor([weights], dtype=torch.float64))[0])


def _floor_82() -> float:
    """The penalty of uniform attention, its smallest value when T < G."""
    T, G = len(WEIGHTS_82), len(WEIGHTS_82[0])
    return _penalty_82([[1 / G] * G] * T)


def _answer_82() -> list[float]:
    return [_penalty_82(), _floor_82()]


@exercise("8.2", "The doubly stochastic penalty", solution=_answer_82, wrong_answer=lambda: [0.0, _floor_82()])
def penalty(answer: Any) -> Verdict:
    got, problem = numbers(answer, 2, "the penalty of α and the smallest penalty any α with T = 2, G = 3 can have")
    if problem:
        return wrong(problem)
    (p, floor), (want_p, want_floor) = got, _answer_82()
    T, G = len(WEIGHTS_82), len(WEIGHTS_82[0])
    tol = 2e-3
    if abs(p - want_p) <= tol and abs(floor - want_floor) <= tol:
        return right(
            f"the cells' totals Σ_t α_ti are (0.6, 0.9, 0.5), so the penalty is 0.4² + 0.1² + 0.5² = "
            f"{want_p:.3f}; with only T = {T} steps the totals add up to {T}, not {G}, and the smallest "
            f"penalty is that of uniform attention, G (1 − T/G)² = {want_floor:.3f}"
        )
    if abs(p - want_p) > tol:
        if abs(p) <= tol:
            return wrong(
                "the rows α_t sum to 1 by construction (a softmax), so Σ_t (1 − Σ_i α_ti)² is 0; the "
                "penalty sums over the *steps* for each cell: Σ_i (1 − Σ_t α_ti)²"
            )
        if abs(p - sum(abs(1 - sum(col)) for col in zip(*WEIGHTS_82))) <= tol:
            return wrong("the differences 1 − Σ_t α_ti are squared, not taken in absolute value")
        return wrong("add each cell's weights over the steps, subtract from 1, square, and sum over the cells")
    if abs(floor) <= tol:
        return wrong(
            f"0 would need every cell's total to be 1, so the totals would add up to G = {G}; but each "
            f"step's weights sum to 1, so the totals add up to T = {T}"
        )
    return wrong(
        "the penalty is right; for the floor, spread the T = 2 units of weight evenly over the G = 3 "
        "cells (each total T/G) and compute the penalty of that"
    )


# 8.3 -------------------------------------------------------------------------------------------

WEIGHTS_83 = (0.1, 0.6, 0.2, 0.1)  # α over G = 4 cells (α = softmax(e))
CHOICE_83 = 3  # the sampled cell s, counted from 1
REWARD_83 = -1.2  # log p(y | s, a), the caption's log-likelihood with that cell read
BASELINE_83 = -2.0  # b, the moving average
REWARD_WEIGHT_83 = 1.0  # λ_r


def _reinforce_grad(weights, choice: int, reward: float, baseline: float) -> list[float]:
    """∂(surrogate)/∂e from the package's reinforce_surrogate, with e = log α (float64); ``choice``
    counted from 0."""
    e = torch.tensor([weights], dtype=torch.float64).log().requires_grad_(True)  # (1, G)
    log_choice = torch.log_softmax(e, -1)[:, choice]  # (1,)
    ll = torch.tensor([reward], dtype=torch.float64)  # (1,), a fixed reward: no gradient of its own
    reinforce_surrogate(ll, log_choice, baseline, REWARD_WEIGHT_83).sum().backward()
    return e.grad[0].tolist()


def _grad_83(baseline: float = BASELINE_83) -> list[float]:
    return _reinforce_grad(WEIGHTS_83, CHOICE_83 - 1, REWARD_83, baseline)


@exercise("8.3", "One REINFORCE estimate", solution=_grad_83, wrong_answer=lambda: _grad_83(baseline=0.0))
def reinforce_estimate(answer: Any) -> Verdict:
    G = len(WEIGHTS_83)
    got, problem = numbers(answer, G, "the gradient with respect to the scores e_1 .. e_4")
    if problem:
        return wrong(problem)
    want = _grad_83()
    if all_close(got, want):
        return right(
            f"λ_r (R − b)(onehot(s) − α) = 0.8 · ((0, 0, 1, 0) − α) = {fmt_numbers(want)}. The reward beat "
            f"the baseline, so the step raises the score of the cell it read and lowers the others; "
            f"the changes sum to 0"
        )
    if all_close(got, _grad_83(baseline=0.0)):
        return wrong(
            f"that uses R = {REWARD_83:g} without the baseline: the signal is R − b = "
            f"{REWARD_83:g} − ({BASELINE_83:g}) = {REWARD_83 - BASELINE_83:.1f}"
        )
    if all_close(got, [-g for g in want]):
        return wrong(
            "the sign is reversed: with R > b the sampled cell's score should go up (we maximise the surrogate)"
        )
    scale = REWARD_WEIGHT_83 * (REWARD_83 - BASELINE_83)
    if all_close(got, [scale * float(i == CHOICE_83 - 1) for i in range(G)]):
        return wrong(
            "∂log α_s/∂e_i is onehot(s)_i − α_i, not onehot(s)_i: the softmax couples every score, so "
            "the other cells' scores move too"
        )
    if abs(sum(got)) > 2e-3:
        return wrong(
            f"your gradient sums to {sum(got):.3f}; adding a constant to every score leaves α unchanged, "
            f"so the gradient with respect to e sums to 0"
        )
    return wrong("∂log α_s/∂e = onehot(s) − α; multiply it by λ_r (R − b)")


# 8.4 -------------------------------------------------------------------------------------------

WEIGHTS_84 = WEIGHTS_83  # α over G = 4 cells
REWARDS_84 = (-3.0, -1.0, -0.5, -2.0)  # f(s) = log p(y | s, a) for each cell s
BASELINE_84 = -2.0  # b


def _expected_84(baseline: float = BASELINE_84, centred: bool = True) -> list[float]:
    """Σ_s α_s · (the estimator when s is drawn), each term from the package's reinforce_surrogate.
    ``centred=False`` drops the −α part of ∂log α_s/∂e (the usual slip)."""
    G = len(WEIGHTS_84)
    total = [0.0] * G
    for s in range(G):
        g = _reinforce_grad(WEIGHTS_84, s, REWARDS_84[s], baseline)
        if not centred:
            g = [(REWARDS_84[s] - baseline) * float(i == s) for i in range(G)]
        total = [t + WEIGHTS_84[s] * gi for t, gi in zip(total, g)]
    return total


@exercise("8.4", "The estimator's expectation", solution=_expected_84, wrong_answer=lambda: _expected_84(centred=False))
def expected_estimate(answer: Any) -> Verdict:
    G = len(WEIGHTS_84)
    got, problem = numbers(answer, G, "the expected gradient with respect to e_1 .. e_4")
    if problem:
        return wrong(problem)
    want = _expected_84()
    if all_close(got, want):
        return right(
            f"Σ_s α_s (f(s) − b)(onehot(s) − α) = α ∘ (f − αᵀf) = {fmt_numbers(want)}, with αᵀf = −1.2: the "
            f"exact gradient of E_s[f(s)]. The baseline has dropped out (Σ_s α_s (onehot(s) − α) = 0), so "
            f"any b that does not depend on s gives the same mean; it only changes the spread"
        )
    if all_close(got, _expected_84(centred=False)):
        return wrong(
            "that leaves out the −α part of ∂log α_s/∂e = onehot(s) − α; with it the baseline's "
            "contribution cancels and the entries sum to 0"
        )
    if all_close(got, _reinforce_grad(WEIGHTS_84, CHOICE_83 - 1, REWARDS_84[CHOICE_83 - 1], BASELINE_84)):
        return wrong(
            "that is the estimate for one draw (cell 3); the expectation weights each cell's estimate "
            "by the probability α_s of drawing it and adds them"
        )
    unweighted = [
        sum(g) / G for g in zip(*(_reinforce_grad(WEIGHTS_84, s, REWARDS_84[s], BASELINE_84) for s in range(G)))
    ]
    if all_close(got, unweighted):
        return wrong(
            "that averages the four estimates equally; cell s is drawn with probability α_s, so weight "
            "each estimate by α_s"
        )
    return wrong("for each cell s, compute (f(s) − b)(onehot(s) − α), multiply by α_s, and add the four")
