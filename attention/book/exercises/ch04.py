"""Chapter 4 (``book/04-scores.md``): score functions, the √d scaling, feature-wise and coupled attention.

Each checker compares the reader's answer with what :mod:`attention.scores` and
:mod:`attention.functional` compute, and says why a wrong answer is wrong.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ...functional import masked_softmax
from ...models.cmla import CoupledAttentionLayer
from ...scores import make_score
from .base import Verdict, exercise, returned, right, wrong

__all__ = ["DIM_41", "QUERY_43", "KEYS_43", "DIM_45", "SLICES_45"]


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
        return right(
            f"Var(q·k) = d = {d}: each of the {d} products q_j k_j has variance "
            f"E[q_j²] E[k_j²] = 1, and variances of uncorrelated terms add up"
        )
    if abs(got - math.sqrt(d)) <= 0.05:
        return wrong(
            f"{got:g} = √{d} is the standard deviation of q·k; the variance is its square. "
            f"The √d in q·k/√d divides the standard deviation, so it brings the variance from d to 1"
        )
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


def _run(f, q, K, W, expected: torch.Tensor) -> tuple[torch.Tensor | None, str | None]:
    try:
        out = f(q, K, W)
    except Exception as err:  # the reader's function failed on these shapes: say which
        return None, (
            f"your function raised {type(err).__name__} for q {tuple(q.shape)}, "
            f"K {tuple(K.shape)}, W {tuple(W.shape)}: {err}"
        )
    return returned(out, expected, "your function")


@exercise("4.2", "Write the general score", solution=lambda: _general_solution, wrong_answer=lambda: _general_forgot_w)
def general_score(f: Any) -> Verdict:
    if not callable(f):
        return wrong("the answer is a function f(q, K, W) -> scores, e.g. def f(q, K, W): return ...")
    g = torch.Generator().manual_seed(4)
    # first with Eq == Ek, where the usual slips still run and can be recognised
    q, K, W = torch.randn(2, 3, 6, generator=g), torch.randn(2, 4, 6, generator=g), torch.randn(6, 6, generator=g)
    expected = _general_reference(q, K, W)
    out, problem = _run(f, q, K, W, expected)
    if problem:
        return wrong(problem)
    if out.shape != expected.shape:
        return wrong(
            f"for q {tuple(q.shape)} and K {tuple(K.shape)} the scores have shape (B, L, S) = "
            f"{tuple(expected.shape)}; yours has {tuple(out.shape)}"
        )
    if not torch.allclose(out, expected, atol=1e-4, rtol=1e-4):
        if torch.allclose(out, _general_forgot_w(q, K, W), atol=1e-4, rtol=1e-4):
            return wrong("that is the dot score q·k: W is not used. The general score puts W between them, qᵀ W k")
        if torch.allclose(out, q @ W.T @ K.transpose(1, 2), atol=1e-4, rtol=1e-4):
            return wrong("W is transposed: the score is qᵀ W k with W of shape (Eq, Ek), i.e. q @ W @ Kᵀ")
        if torch.allclose(out * math.sqrt(q.shape[-1]), expected, atol=1e-4, rtol=1e-4):
            return wrong("your scores are divided by √d: Luong's general score has no scaling")
        worst = (out - expected).abs().max().item()
        return wrong(f"your scores differ from GeneralScore's (with the same W) by up to {worst:.3g}")
    # then with Eq != Ek, where only the right orientation of W fits
    q, K, W = torch.randn(1, 2, 5, generator=g), torch.randn(1, 3, 7, generator=g), torch.randn(5, 7, generator=g)
    expected = _general_reference(q, K, W)
    out, problem = _run(f, q, K, W, expected)
    if problem:
        return wrong(problem + " (with Eq ≠ Ek, W has shape (Eq, Ek) and maps keys into the query's space)")
    if out.shape != expected.shape or not torch.allclose(out, expected, atol=1e-4, rtol=1e-4):
        return wrong(
            f"right when Eq == Ek, but not for q {tuple(q.shape)}, K {tuple(K.shape)}, "
            f"W {tuple(W.shape)}: check which side of W each vector goes on"
        )
    return right(
        "your scores equal GeneralScore's with the same W, also when Eq ≠ Ek "
        "(the package computes q @ (K Wᵀ)ᵀ: W_a maps every key into the query's space once)"
    )


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
        return right(
            f"dot picks key {dot}, the longest one (q·k = {dot_scores[dot]:.3g}); cosine picks key "
            f"{cosine}, the one pointing most nearly along q (cos = {cosine_scores[cosine]:.3f}): dividing each key by its own norm "
            f"takes the length advantage away, so cosine can reorder the keys"
        )
    if got == (dot + 1, cosine + 1):
        return wrong("you counted from 1; the keys are indexed 0, 1, 2, as in Python")
    if got == (cosine, dot):
        return wrong("the two are swapped: which score rewards a long key, and which only looks at directions?")
    if got[1] == dot:
        return wrong(
            f"cosine does not pick key {dot}: it divides each key by its norm, and key {dot} "
            f"(length {math.hypot(*KEYS_43[dot]):.2f}) points 45° away from q"
        )
    if got[0] == cosine:
        return wrong(
            f"dot does not pick key {cosine}: q·k = {KEYS_43[cosine][0]:g} there, but a longer key "
            f"scores higher without normalisation"
        )
    return wrong("compute q·k_i for each key, then the same divided by ‖k_i‖ (‖q‖ = 1), and take the largest")


# 4.4 -------------------------------------------------------------------------------------------


def _pool_solution(x, scores, keep):
    P = masked_softmax(scores, keep[:, :, None], dim=1)  # (B, T, F): over the positions, per feature
    return (P * x).sum(1), P


def _pool_over_features(x, scores, keep):  # the typical slip: a softmax over the features
    P = masked_softmax(scores, keep[:, :, None], dim=-1)
    return (P * x).sum(1), P


def _pool_case(g: torch.Generator, features: bool):
    B, T, E = 3, 5, 4
    x = torch.randn(B, T, E, generator=g)
    scores = torch.randn(B, T, E if features else 1, generator=g)
    keep = torch.arange(T)[None] < torch.tensor([5, 3, 1])[:, None]  # (B, T) True = a real word
    return x, scores, keep


@exercise("4.4", "Feature-wise pooling", solution=lambda: _pool_solution, wrong_answer=lambda: _pool_over_features)
def feature_pooling(f: Any) -> Verdict:
    if not callable(f):
        return wrong(f"answer with a function f(x, scores, keep) -> (s, P); got {f!r}")
    g = torch.Generator().manual_seed(4)
    for features in (True, False):
        x, scores, keep = _pool_case(g, features)
        call = f"f(x {tuple(x.shape)}, scores {tuple(scores.shape)}, keep {tuple(keep.shape)})"
        try:
            out = f(x, scores, keep)
        except Exception as e:  # the reader's code: say what went wrong, do not crash the notebook
            return wrong(f"calling {call} failed: {type(e).__name__}: {e}")
        s_ref, P_ref = _pool_solution(x, scores, keep)
        result, problem = returned(out, (s_ref, P_ref), call, names=("s", "P"))
        if problem:
            return wrong(problem)
        s, P = result
        what = "one score per feature" if features else "one score per word, shared by the features"
        if tuple(P.shape) != tuple(P_ref.shape) or tuple(s.shape) != tuple(s_ref.shape):
            return wrong(
                f"with {what}: P should have shape {tuple(P_ref.shape)} and s {tuple(s_ref.shape)}; "
                f"yours have {tuple(P.shape)} and {tuple(s.shape)}"
            )
        if not torch.allclose(P, P_ref, atol=1e-5):
            if torch.allclose(P.sum(-1), torch.ones_like(P.sum(-1)), atol=1e-4) and features:
                return wrong(
                    "each word's weights sum to 1 over the features: the softmax runs over the wrong "
                    "dimension. Multi-dimensional attention normalises every feature over the positions "
                    "(dim=1), so each column P[:, :, k] is a distribution over the words"
                )
            if bool((P.masked_select(~keep[:, :, None].expand_as(P)) != 0).any()):
                return wrong(
                    "padding gets weight: mask the positions where keep is False before the softmax "
                    "(the package's masked_softmax takes keep[:, :, None])"
                )
            return wrong(
                f"with {what}: your weights differ from the package's by up to {(P - P_ref).abs().max().item():.3g}"
            )
        if not torch.allclose(s, s_ref, atol=1e-5):
            return wrong("the weights are right but s is not: s_k = Σ_i P[i, k] x[i, k], a sum over the positions")
    return right(
        "your s and P equal MultiDimensionalAttention's for per-feature scores and for one shared score: "
        "every feature normalised over the real words, padding exactly 0, and the (B, T, 1) case is scalar "
        "attention by broadcasting"
    )


# 4.5 -------------------------------------------------------------------------------------------

DIM_45 = 64  # D, the size of h_i in exercise 4.5
SLICES_45 = 8  # K, the slices of each interaction tensor


def _tensor_sizes_45() -> tuple[int, int]:
    sizes = []
    for coupled in (True, False):
        layer = CoupledAttentionLayer(DIM_45, SLICES_45, rnn_dim=4, coupled=coupled)
        sizes.append(layer.G.numel() + (layer.D.numel() if layer.D is not None else 0))
    return sizes[0], sizes[1]


@exercise(
    "4.5",
    "What the coupling costs",
    solution=_tensor_sizes_45,
    wrong_answer=lambda: (2 * SLICES_45 * DIM_45**2, SLICES_45 * DIM_45**2),
)
def coupling_cost(answer: Any) -> Verdict:
    try:
        coupled, uncoupled = (int(a) for a in answer)
    except (TypeError, ValueError):
        return wrong(f"answer with a pair of counts (coupled, uncoupled); got {answer!r}")
    want = _tensor_sizes_45()
    K, D = SLICES_45, DIM_45
    if (coupled, uncoupled) == want:
        return right(
            f"coupled: G^a, G^p, D^a, D^p, four K × D × D tensors = 4·{K}·{D}² = {want[0]:,}; uncoupled: "
            f"only G^a and G^p, {want[1]:,}. The coupling doubles the interaction parameters (and the "
            f"width of β, 2K instead of K)"
        )
    if (coupled, uncoupled) == (2 * K * D * D, K * D * D):
        return wrong(
            "that is one kind of term only: aspects and opinions each have their own tensors (G^a and G^p, D^a and D^p)"
        )
    if (coupled, uncoupled) == (uncoupled * 2, uncoupled) and uncoupled in (K * D, 2 * K * D):
        return wrong("each slice of a tensor is a D × D matrix (h_iᵀ G_k u is a bilinear form), not a vector")
    if (coupled, uncoupled) == (want[1], want[0]):
        return wrong("the two are swapped: which model has the cross tensors D^a and D^p?")
    return wrong(f"count the entries of G^a, G^p (and D^a, D^p when coupled): each is K × D × D = {K} × {D} × {D}")
