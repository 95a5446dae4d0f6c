"""Chapter 4 (``book/04-scores.md``): score functions, the √d scaling, temperature.

Each checker compares the reader's answer with what :mod:`attention.scores` and
:mod:`attention.functional` compute, and says why a wrong answer is wrong.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from ..functional import masked_softmax
from ..scores import make_score
from .base import Verdict, exercise, right, wrong

__all__ = ["DIM_41", "QUERY_43", "KEYS_43", "SCORES_44", "TEMPERATURES_44", "QUERY_DIM_45", "MAX_LEN_45"]


# 4.1 -------------------------------------------------------------------------------------------

DIM_41 = 64  # d of exercise 4.1


@exercise("4.1", "The variance of q·k", solution=lambda: DIM_41, wrong_answer=lambda: math.sqrt(DIM_41))
def variance_of_dot(answer: Any) -> Verdict:
    d = DIM_41
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return wrong(f"the variance should be a number, got {answer!r}")
    if abs(got - d) <= 0.5:
        return right(f"Var(q·k) = d = {d}: each of the {d} products q_j k_j has variance "
                     f"E[q_j²] E[k_j²] = 1, and variances of uncorrelated terms add up")
    if abs(got - math.sqrt(d)) <= 0.05:
        return wrong(f"{got:g} = √{d} is the standard deviation of q·k; the variance is its square. "
                     f"The √d in q·k/√d divides the standard deviation, so it brings the variance from d to 1")
    if abs(got - 1) <= 0.05:
        return wrong("1 is the variance after the scaling, of q·k/√d; the question asks about the raw q·k")
    if abs(got) <= 0.05:
        return wrong("0 is the mean of q·k, not its variance: the products q_j k_j spread around 0")
    if abs(got - d * d) <= 0.5:
        return wrong(f"{got:g} = d²: each product q_j k_j has variance 1·1 = 1, not d; there are d of them")
    return wrong(f"{got:g} is not it: write q·k = Σ_j q_j k_j and add up the variances of the {d} terms")


# 4.2 -------------------------------------------------------------------------------------------

def _general_solution(q: torch.Tensor, K: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return q @ W @ K.transpose(1, 2)  # (B, L, Eq) @ (Eq, Ek) @ (B, Ek, S) -> (B, L, S)


def _general_forgot_w(q: torch.Tensor, K: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return q @ K.transpose(1, 2)  # the dot score: W is ignored


def _general_reference(q: torch.Tensor, K: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """The package's GeneralScore with its W_a set to W (shape (Eq, Ek))."""
    score = make_score("general", query_dim=q.shape[-1], key_dim=K.shape[-1])
    with torch.no_grad():
        score.W_a.weight.copy_(W)  # nn.Linear(Ek, Eq) stores its weight as (Eq, Ek)
        return score(q, K)


def _run(f, q, K, W) -> tuple[torch.Tensor | None, str | None]:
    try:
        out = f(q, K, W)
    except Exception as err:  # the reader's function failed on these shapes: say which
        return None, (f"your function raised {type(err).__name__} for q {tuple(q.shape)}, "
                      f"K {tuple(K.shape)}, W {tuple(W.shape)}: {err}")
    if not isinstance(out, torch.Tensor):
        return None, f"your function should return a tensor, got {type(out).__name__}"
    return out.detach(), None


@exercise("4.2", "Write the general score", solution=lambda: _general_solution,
          wrong_answer=lambda: _general_forgot_w)
def general_score(f: Any) -> Verdict:
    if not callable(f):
        return wrong("the answer is a function f(q, K, W) -> scores, e.g. def f(q, K, W): return ...")
    g = torch.Generator().manual_seed(4)
    # first with Eq == Ek, where the usual slips still run and can be recognised
    q, K, W = torch.randn(2, 3, 6, generator=g), torch.randn(2, 4, 6, generator=g), torch.randn(6, 6, generator=g)
    out, problem = _run(f, q, K, W)
    if problem:
        return wrong(problem)
    expected = _general_reference(q, K, W)
    if out.shape != expected.shape:
        return wrong(f"for q {tuple(q.shape)} and K {tuple(K.shape)} the scores have shape (B, L, S) = "
                     f"{tuple(expected.shape)}; yours has {tuple(out.shape)}")
    if not torch.allclose(out, expected, atol=1e-4, rtol=1e-4):
        if torch.allclose(out, _general_forgot_w(q, K, W), atol=1e-4, rtol=1e-4):
            return wrong("that is the dot score q·k: W is not used. The general score puts W between them, "
                         "qᵀ W k")
        if torch.allclose(out, q @ W.T @ K.transpose(1, 2), atol=1e-4, rtol=1e-4):
            return wrong("W is transposed: the score is qᵀ W k with W of shape (Eq, Ek), "
                         "i.e. q @ W @ Kᵀ")
        if torch.allclose(out * math.sqrt(q.shape[-1]), expected, atol=1e-4, rtol=1e-4):
            return wrong("your scores are divided by √d: Luong's general score has no scaling")
        worst = (out - expected).abs().max().item()
        return wrong(f"your scores differ from GeneralScore's (with the same W) by up to {worst:.3g}")
    # then with Eq != Ek, where only the right orientation of W fits
    q, K, W = torch.randn(1, 2, 5, generator=g), torch.randn(1, 3, 7, generator=g), torch.randn(5, 7, generator=g)
    out, problem = _run(f, q, K, W)
    if problem:
        return wrong(problem + " (with Eq ≠ Ek, W has shape (Eq, Ek) and maps keys into the query's space)")
    expected = _general_reference(q, K, W)
    if out.shape != expected.shape or not torch.allclose(out, expected, atol=1e-4, rtol=1e-4):
        return wrong(f"right when Eq == Ek, but not for q {tuple(q.shape)}, K {tuple(K.shape)}, "
                     f"W {tuple(W.shape)}: check which side of W each vector goes on")
    return right("your scores equal GeneralScore's with the same W, also when Eq ≠ Ek "
                 "(the package computes q @ (K Wᵀ)ᵀ: W_a maps every key into the query's space once)")


# 4.3 -------------------------------------------------------------------------------------------

QUERY_43 = [1.0, 0.0]  # the query of exercise 4.3
KEYS_43 = [[3.0, 3.0], [1.0, 0.1], [-1.0, 2.0]]  # its three keys: long, well aligned, opposite


def _scores_43() -> tuple[torch.Tensor, torch.Tensor]:
    q = torch.tensor([[QUERY_43]])  # (1, 1, 2)
    k = torch.tensor([KEYS_43])  # (1, 3, 2)
    return make_score("dot")(q, k)[0, 0], make_score("cosine")(q, k)[0, 0]  # (3,), (3,)


def _argmaxes_43() -> tuple[int, int]:
    dot, cosine = _scores_43()
    return int(dot.argmax()), int(cosine.argmax())


@exercise("4.3", "Dot and cosine disagree", solution=_argmaxes_43, wrong_answer=lambda: (0, 0))
def dot_vs_cosine(answer: Any) -> Verdict:
    try:
        got = tuple(int(a) for a in answer)
    except (TypeError, ValueError):
        return wrong(f"answer with a pair of key indices (dot's, cosine's), e.g. (2, 0); got {answer!r}")
    if len(got) != 2:
        return wrong(f"answer with two indices, (dot's argmax, cosine's argmax); got {len(got)}")
    dot, cosine = _argmaxes_43()
    dot_scores, cosine_scores = _scores_43()
    if got == (dot, cosine):
        return right(f"dot picks key {dot}, the longest one (q·k = {dot_scores[dot]:.3g}); cosine picks key "
                     f"{cosine}, the one pointing most nearly along q (cos = {cosine_scores[cosine]:.3f}): dividing each key by its own norm "
                     f"takes the length advantage away, so cosine can reorder the keys")
    if got == (dot + 1, cosine + 1):
        return wrong("you counted from 1; the keys are indexed 0, 1, 2, as in Python")
    if got == (cosine, dot):
        return wrong("the two are swapped: which score rewards a long key, and which only looks at directions?")
    if got[1] == dot:
        return wrong(f"cosine does not pick key {dot}: it divides each key by its norm, and key {dot} "
                     f"(length {math.hypot(*KEYS_43[dot]):.2f}) points 45° away from q")
    if got[0] == cosine:
        return wrong(f"dot does not pick key {cosine}: q·k = {KEYS_43[cosine][0]:g} there, but a longer key "
                     f"scores higher without normalisation")
    return wrong("compute q·k_i for each key, then the same divided by ‖k_i‖ (‖q‖ = 1), and take the largest")


# 4.4 -------------------------------------------------------------------------------------------

SCORES_44 = [2.0, 1.0, 0.5, 0.0]  # the scores of exercise 4.4; the best key is the first
TEMPERATURES_44 = [2.0, 1.0, 0.5, 0.3, 0.2, 0.1]  # the temperatures to choose from
THRESHOLD_44 = 0.9


def _best_weight(T: float) -> float:
    e = torch.tensor(SCORES_44, dtype=torch.float64) / T  # (S,)
    return masked_softmax(e).max().item()


def _largest_sharp_enough() -> float:
    return max(T for T in TEMPERATURES_44 if _best_weight(T) > THRESHOLD_44)


@exercise("4.4", "A temperature sharp enough", solution=_largest_sharp_enough, wrong_answer=lambda: 0.5)
def temperature(answer: Any) -> Verdict:
    try:
        T = float(answer)
    except (TypeError, ValueError):
        return wrong(f"answer with one temperature from {TEMPERATURES_44}; got {answer!r}")
    if not any(abs(T - t) < 1e-9 for t in TEMPERATURES_44):
        return wrong(f"choose T from the list {TEMPERATURES_44}")
    best = _largest_sharp_enough()
    weight = _best_weight(T)
    if T == best:
        return right(f"at T = {T:g} the best key gets {weight:.3f} > {THRESHOLD_44}; at the next larger T in the "
                     f"list it gets {_best_weight(min(t for t in TEMPERATURES_44 if t > T)):.3f}. "
                     f"Dividing the scores by a smaller T widens their gaps and sharpens the softmax")
    if weight <= THRESHOLD_44:
        direction = (" A temperature above 1 flattens the softmax: go the other way." if T > 1 else
                     " Lower T further: dividing by a smaller T widens the gaps between the scores.")
        return wrong(f"at T = {T:g} the best key gets only {weight:.3f}, not more than {THRESHOLD_44}." + direction)
    return wrong(f"T = {T:g} works (the best key gets {weight:.3f}), but a larger temperature in the list "
                 f"works too: the question asks for the largest, the mildest sharpening that suffices")


# 4.5 -------------------------------------------------------------------------------------------

QUERY_DIM_45 = 8  # E_q of exercise 4.5
MAX_LEN_45 = 5  # S_max of exercise 4.5


def _location_parameters() -> int:
    score = make_score("location", query_dim=QUERY_DIM_45, max_len=MAX_LEN_45)
    return sum(p.numel() for p in score.parameters())


@exercise("4.5", "The location score's parameters", solution=_location_parameters,
          wrong_answer=lambda: MAX_LEN_45 * (QUERY_DIM_45 + 1))
def location_parameters(answer: Any) -> Verdict:
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return wrong(f"answer with a number of parameters; got {answer!r}")
    n = _location_parameters()
    if got == n:
        return right(f"W_a is S_max × E_q = {MAX_LEN_45} × {QUERY_DIM_45} = {n}: one row per source position, "
                     f"and a_t = softmax(W_a h_t) (Luong et al., Eq. 9) has no bias")
    if got == MAX_LEN_45 * (QUERY_DIM_45 + 1):
        return wrong(f"{got:g} counts a bias per position; Luong's Eq. 9, a_t = softmax(W_a h_t), has none")
    if got == QUERY_DIM_45 * QUERY_DIM_45:
        return wrong("W_a does not compare the query with keys: it maps the query to one score per "
                     "source position, so its shape is (S_max, E_q)")
    if got == 0:
        return wrong("the location score has no keys to compare with, so it needs a learned matrix: W_a")
    return wrong(f"{got:g} is not it: count the entries of W_a, which maps h_t (size E_q) to one score per "
                 f"source position (S_max of them)")
