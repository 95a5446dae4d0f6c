"""Chapter 3 exercises: Bahdanau's additive score, the context vector, the precomputed keys, AER.

Each checker compares the reader's answer with what the package computes: the additive score with
:class:`attention.scores.AdditiveScore`, the context vector with :func:`attention.functional.attend`,
the saving with the size of an ``AdditiveScore``'s ``U_a``, the AER with :func:`attention.metrics.aer`.
The narrative (``book/03-bahdanau.md``, "Exercises") asks the questions and hides the solutions.
"""

from __future__ import annotations

import torch

from ...functional import attend
from ...metrics import aer
from ...scores import make_score
from .base import Verdict, exercise, returned, right, wrong

# ---------------------------------------------------------------------------------------------
# 3.1  The additive score by hand
# ---------------------------------------------------------------------------------------------

#: T output steps, S source positions, Hd decoder size, He annotation size, A alignment size:
#: all different, so a transposed weight fails loudly instead of passing by accident
_T, _S, _HD, _HE, _A = 3, 4, 5, 6, 7


def _additive_case():
    """Random decoder states s_0..s_T (T+1, Hd), annotations H (S, He) and an AdditiveScore.

    Drawn from a private generator inside ``fork_rng``: checking an answer leaves the reader's
    random state as it was.
    """
    with torch.random.fork_rng(devices=[]):
        score = make_score("additive", query_dim=_HD, key_dim=_HE, hidden_dim=_A).double()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in score.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    s = torch.randn(_T + 1, _HD, generator=g, dtype=torch.float64)  # (T+1, Hd): rows s_0 .. s_T
    H = torch.randn(_S, _HE, generator=g, dtype=torch.float64)  # (S, He): rows h_1 .. h_S
    return score, s, H


def _weights(score):
    """The score's weights as plain matrices: W_a (A, Hd), U_a (A, He), v_a (A,)."""
    return (score.W_a.weight.detach().clone(), score.U_a.weight.detach().clone(), score.v_a.weight.detach()[0].clone())


def _additive_solution():
    def scores(s, H, W_a, U_a, v_a):
        """e[t-1, i] = v_aᵀ tanh(W_a s_{t-1} + U_a h_i) for t = 1..T: (T+1, Hd), (S, He) -> (T, S)."""
        query = s[:-1] @ W_a.T  # (T, A): W_a s_{t-1}, the state *before* each step
        keys = H @ U_a.T  # (S, A): U_a h_i, once for all steps
        return torch.tanh(query[:, None, :] + keys[None, :, :]) @ v_a  # (T, S, A) @ (A,) -> (T, S)

    return scores


def _additive_with_s_t():
    def scores(s, H, W_a, U_a, v_a):
        query = s[1:] @ W_a.T  # s_t instead of s_{t-1}: the tempting mistake
        return torch.tanh(query[:, None, :] + (H @ U_a.T)[None, :, :]) @ v_a

    return scores


@exercise("3.1", "The additive score by hand", solution=_additive_solution, wrong_answer=_additive_with_s_t)
def check_additive(answer) -> Verdict:
    if not callable(answer):
        return wrong("the answer is a function scores(s, H, W_a, U_a, v_a) that returns e of shape (T, S)")
    score, s, H = _additive_case()
    W_a, U_a, v_a = _weights(score)
    with torch.no_grad():
        expected = score(s[:-1][None], H[None])[0]  # (T, S): the package's score, query s_{t-1}
        with_s_t = score(s[1:][None], H[None])[0]  # (T, S): query s_t
        every_state = score(s[None], H[None])[0]  # (T+1, S): every state scored
    got, problem = returned(answer(s.clone(), H.clone(), W_a, U_a, v_a), expected, "scores(s, H, W_a, U_a, v_a)")
    if problem:
        return wrong(problem)
    no_tanh = ((s[:-1] @ W_a.T)[:, None, :] + (H @ U_a.T)[None, :, :]) @ v_a  # (T, S)

    def same(a, b):
        return a.shape == b.shape and torch.allclose(a, b, rtol=1e-5, atol=1e-6)

    if same(got, expected):
        return right(
            f"your scores equal AdditiveScore's for T={_T} steps and S={_S} source positions "
            "(the query of step t is s_{t-1})"
        )
    if same(got, with_s_t):
        return wrong(
            "you scored with s_t; Bahdanau's score reads s_{t-1}, the state before step t "
            "(s_t is computed from c_t, so it cannot be used to build c_t): use the rows s[:-1]"
        )
    if same(got, every_state):
        return wrong(
            f"you returned {_T + 1} rows, one per state s_0..s_T; there are T={_T} output steps, "
            "and step t reads only s_{t-1}: use the rows s[:-1]"
        )
    if same(got, torch.softmax(expected, -1)):
        return wrong(
            "these are the weights alpha = softmax(e), each row summing to 1; the exercise asks "
            "for the scores e before the softmax"
        )
    if same(got, no_tanh):
        return wrong(
            "you forgot the tanh: without it v_aᵀ(W_a s + U_a h) is linear, and the part "
            "v_aᵀ W_a s_{t-1} is the same for every i, so the softmax would ignore the query"
        )
    if same(got, expected.T):
        return wrong(f"the values are right but transposed: return (T, S) = ({_T}, {_S}), one row per output step")
    if got.shape != expected.shape:
        return wrong(
            f"e should have shape (T, S) = ({_T}, {_S}), one row per output step t = 1..T; got {tuple(got.shape)}"
        )
    gap = (got - expected).abs().max().item()
    return wrong(
        f"the shape is right but the values differ from AdditiveScore's by up to {gap:.3g}: "
        "check each product (W_a s_{t-1} is (A,), U_a h_i is (A,), then tanh, then v_aᵀ)"
    )


# ---------------------------------------------------------------------------------------------
# 3.2  The context vector
# ---------------------------------------------------------------------------------------------

#: the row "learning" of 機器學習 -> "machine learning": weights over 機, 器, 學, 習
_ALPHA = [0.05, 0.05, 0.5, 0.4]
#: toy annotations h_i = [→h_i; ←h_i] with one unit per direction
_ANNOTATIONS = [[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [-1.0, 2.0]]


def _context_expected() -> list[float]:
    alpha = torch.tensor(_ALPHA, dtype=torch.float64)  # (S,)
    h = torch.tensor(_ANNOTATIONS, dtype=torch.float64)  # (S, 2)
    # attend takes scores; log alpha are scores whose softmax is alpha again
    context, _ = attend(alpha.log()[None, None], h[None])  # (1, 1, 2)
    return context[0, 0].tolist()


def _as_numbers(answer) -> list[float] | None:
    try:
        return [float(x) for x in torch.as_tensor(answer, dtype=torch.float64).flatten()]
    except (TypeError, ValueError, RuntimeError):
        return None


@exercise("3.2", "The context vector c_t", solution=_context_expected, wrong_answer=lambda: [0.25, 1.25])
def check_context(answer) -> Verdict:
    got = _as_numbers(answer)
    if got is None:
        return wrong(f"give c_t as a list of two numbers, e.g. [0.5, 1.0]; got {answer!r}")
    expected = _context_expected()
    if len(got) == len(_ALPHA):
        return wrong(
            f"you gave {len(got)} numbers, one per source character; c_t = Σ_i α_ti h_i is one "
            f"vector the size of one annotation ({len(expected)} numbers): add the weighted "
            "annotations up"
        )
    if len(got) != len(expected):
        return wrong(f"c_t has the size of one annotation: {len(expected)} numbers; got {len(got)}")
    if all(abs(a - b) <= 1e-3 for a, b in zip(got, expected)):
        return right(
            f"c_t = [{expected[0]:.2f}, {expected[1]:.2f}], the same as attention.attend; most "
            "of it comes from 學 and 習, the characters of 'learning'"
        )
    columns = list(zip(*_ANNOTATIONS))
    mean = [sum(c) / len(c) for c in columns]
    total = [sum(c) for c in columns]
    if all(abs(a - b) <= 1e-3 for a, b in zip(got, mean)):
        return wrong(
            "that is the plain average of the annotations, as if every α_ti were 1/4; weight each h_i by its α_ti"
        )
    if all(abs(a - b) <= 1e-3 for a, b in zip(got, total)):
        return wrong("that is the unweighted sum of the annotations; multiply each h_i by its α_ti first")
    return wrong(
        f"c_t is not [{got[0]:.3g}, {got[1]:.3g}]: compute each coordinate as Σ_i α_ti × (that coordinate of h_i)"
    )


# ---------------------------------------------------------------------------------------------
# 3.3  U_a h_i once per sentence
# ---------------------------------------------------------------------------------------------

#: (S, T, He, A) where every tempting wrong formula gives a different number
_SIZES = [(7, 5, 6, 11), (10, 12, 256, 128), (3, 1, 2, 5), (40, 2, 3, 9)]


def _saved_expected(S: int, T: int, He: int, A: int) -> int:
    """Multiply-adds of the keys U_a h_1..U_a h_S, counted from an AdditiveScore's U_a, times T - 1."""
    with torch.random.fork_rng(devices=[]):
        score = make_score("additive", query_dim=1, key_dim=He, hidden_dim=A)
    per_annotation = score.U_a.weight.numel()  # A·He multiply-adds for one U_a h_i
    return (T - 1) * S * per_annotation


@exercise(
    "3.3",
    "Why U_a h_i is computed once per sentence",
    solution=lambda: lambda S, T, He, A: (T - 1) * S * He * A,
    wrong_answer=lambda: lambda S, T, He, A: T * S * He * A,
)
def check_saving(answer) -> Verdict:
    if not callable(answer):
        return wrong("give a function of the sizes, e.g. lambda S, T, He, A: S * T  (not a number)")
    S, T, He, A = _SIZES[0]
    value, problem = returned(answer(S, T, He, A), float, f"your function of (S, T, He, A) = {_SIZES[0]}")
    if problem:
        return wrong(problem)
    expected = _saved_expected(S, T, He, A)
    tempting = {
        T * S * He * A: "that is what projecting at every step costs in all; with the keys computed once "
        "you still pay one projection, S·He·A: subtract it",
        S * He * A: "that is the cost of the one projection you still make; the saving is what the other "
        "T - 1 steps no longer do",
        2 * expected: "that counts the multiplications and the additions separately (FLOPs); count one "
        "multiply-add per weight of U_a per annotation",
        (T - 1) * S * A: "U_a h_i is a (A × He) matrix times a vector of size He: A·He multiply-adds, not A",
        (T - 1) * S * He: "U_a h_i is a (A × He) matrix times a vector of size He: A·He multiply-adds, not He",
        (T - 1) * He * A: "there are S annotations h_1..h_S, each projected by U_a: multiply by S",
    }
    if value != expected and value in tempting:
        return wrong(f"for (S, T, He, A) = {_SIZES[0]} your formula gives {value:g}: {tempting[value]}")
    for sizes in _SIZES:
        value, problem = returned(answer(*sizes), float, f"your function of (S, T, He, A) = {sizes}")
        if problem:
            return wrong(problem)
        expected = _saved_expected(*sizes)
        if value != expected:
            return wrong(
                f"for (S, T, He, A) = {sizes} your formula gives {value:g}, but the steps after the "
                f"first skip {expected:g} multiply-adds (S annotations, A·He each, T - 1 steps)"
            )
    return right(
        "(T - 1)·S·He·A multiply-adds saved: the S keys U_a h_i cost S·He·A once, instead of at each of the T steps"
    )


# ---------------------------------------------------------------------------------------------
# 3.4  AER by hand
# ---------------------------------------------------------------------------------------------

#: 1984年3月27日 -> 1984-03-27; source tokens i = 0..5, target characters t = 0..9; links (i, t)
_DATE_SRC = ("1984", "年", "3", "月", "27", "日")
_DATE_TGT = tuple("1984-03-27")
_SURE = {(0, 0), (0, 1), (0, 2), (0, 3), (2, 5), (2, 6), (4, 8), (4, 9)}
_POSSIBLE = _SURE | {(1, 0), (1, 1), (1, 2), (1, 3), (3, 5), (3, 6), (5, 8), (5, 9)}
#: a model's argmax alignment: one source token per target character, hyphens included
_PREDICTED = {(0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (3, 6), (3, 7), (4, 8), (4, 9)}
_HYPHENS = {4, 7}


def _aer_expected() -> float:
    return aer(_PREDICTED, _SURE, _POSSIBLE)


@exercise("3.4", "Alignment error rate by hand", solution=_aer_expected, wrong_answer=lambda: 0.25)
def check_aer(answer) -> Verdict:
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return wrong(f"AER is one number between 0 and 1 (a fraction like 3/7 is fine); got {answer!r}")
    expected = _aer_expected()
    a, s, p = _PREDICTED, _SURE, _POSSIBLE
    digits_only = aer({(i, t) for i, t in a if t not in _HYPHENS}, s, p)
    tempting = {
        1 - len(a & s) / len(s): "that is 1 - recall of the sure links, |A∩S|/|S|; AER also counts "
        "the links of A outside P",
        1 - len(a & p) / len(a): "that is 1 - precision, |A∩P|/|A|; AER also counts the sure links A misses",
        1 - 2 * len(a & s) / (len(a) + len(s)): "you counted |A∩S| twice; the second term is |A∩P|, "
        "which also credits the possible links (年 and 月 here)",
        1 - 2 * len(a & p) / (len(a) + len(s)): "you counted |A∩P| twice; the first term is |A∩S|, the sure links only",
        1 - (len(a & s) + len(a & p)) / (len(a) + len(p)): "the denominator is |A| + |S|, not |A| + |P|",
        digits_only: "that is the AER over the digits only; the question counts every link of A, the "
        "two hyphens' links included",
    }
    if abs(value - expected) <= 1e-3:
        return right(f"AER = {expected:.4f}, as attention.metrics.aer computes it")
    for wrong_value, why in tempting.items():
        if abs(value - wrong_value) <= 1e-3:
            return wrong(f"{value:.4g}: {why}")
    return wrong(
        f"AER = {value:.4g} is not it: count |A| = {len(a)}, |S| = {len(s)}, then |A∩S| and |A∩P| "
        "and use 1 - (|A∩S| + |A∩P|) / (|A| + |S|)"
    )
