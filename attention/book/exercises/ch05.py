"""Chapter 5 (``book/05-hierarchical.md``): the size of one HAN attention level, sentence weights
with a padded sentence, Spearman's ρ between attention and human ratings, and HN-AVE as a special
case of HAN.

Each checker compares the reader's answer with what :mod:`attention.models.han`,
:mod:`attention.functional` and :mod:`attention.metrics` compute, and says why a wrong answer is
wrong.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ...functional import masked_softmax
from ...metrics import ranks, spearman
from ...models.han import AttentionPool
from .base import Verdict, all_close, exercise, fmt_numbers, numbers, right, wrong

__all__ = ["U_51", "DA_51", "SCORES_52", "KEEP_52", "WEIGHTS_53", "RATINGS_53", "KEEP_54"]


# 5.1 -------------------------------------------------------------------------------------------

U_51 = 50  # U, GRU state per direction (Yang et al.'s size), so the states h are 2U = 100 wide
DA_51 = 64  # Da, width of u and of the context vector u_w (or u_s)


def _parameters_51() -> int:
    """The parameter count of the package's AttentionPool(2U, Da): W, b and the context vector."""
    pool = AttentionPool(2 * U_51, DA_51, "attention")
    return sum(p.numel() for p in pool.parameters())


@exercise(
    "5.1", "The size of one attention level", solution=_parameters_51, wrong_answer=lambda: DA_51 * 2 * U_51 + DA_51
)
def level_parameters(answer: Any) -> Verdict:
    if isinstance(answer, bool):
        return wrong(f"answer with one number, the parameters of one attention level; got {answer!r}")
    try:
        got = round(float(answer))
    except (TypeError, ValueError):
        return wrong(f"answer with one number, the parameters of one attention level; got {answer!r}")
    want = _parameters_51()
    U2, Da = 2 * U_51, DA_51
    if got == want:
        return right(
            f"{want:,}: W is Da × 2U = {Da} × {U2} = {Da * U2:,}, the bias b has Da = {Da} entries and "
            f"the context vector u_w has Da = {Da} more. The same count again for the sentence level, "
            f"whose u_s is a second learned vector; HN-AVE and HN-MAX have none of these"
        )
    slips = [
        (
            Da * U2 + Da,
            f"that counts W and b but not the context vector u_w itself: it is a learned parameter "
            f"too, of Da = {Da} entries",
        ),
        (Da * U2, f"that is W alone: add its bias b (Da = {Da}) and the context vector u_w (Da = {Da})"),
        (
            Da * U_51 + 2 * Da,
            f"the states are the BiGRU's two directions concatenated, 2U = {U2} wide, not U = {U_51}: W is Da × 2U",
        ),
        (
            Da * U2 + 2 * U2,
            f"b and u_w live in the attention space of Da = {Da} dimensions, where u = tanh(W h + b) "
            f"is; they are not 2U wide",
        ),
        (2 * want, "that is both levels, word and sentence; the question asks for one"),
        (Da * U2 + Da + U2, f"u_w is compared with u = tanh(W h + b), which is Da = {Da} wide, so u_w has Da entries"),
    ]
    for value, why in slips:
        if got == value:
            return wrong(why)
    return wrong(
        f"{got:,} is not it. One level is u = tanh(W h + b) with h 2U = {U2} wide and u Da = {Da} wide, "
        f"then α = softmax(uᵀ u_w): count W, b and u_w"
    )


# 5.2 -------------------------------------------------------------------------------------------

SCORES_52 = (1.0, 2.0, 0.0, 0.5)  # u_iᵀ u_s for four sentence positions; the fourth is padding
KEEP_52 = (True, True, True, False)  # the document has three real sentences


def _weights_52() -> list[float]:
    """The package's masked_softmax of SCORES_52 with the keep mask KEEP_52."""
    return masked_softmax(torch.tensor(SCORES_52, dtype=torch.float64), torch.tensor(KEEP_52)).tolist()


def _softmax(scores) -> list[float]:
    exps = [math.exp(s) for s in scores]
    return [e / sum(exps) for e in exps]


@exercise(
    "5.2", "Sentence weights with a padded sentence", solution=_weights_52, wrong_answer=lambda: _softmax(SCORES_52)
)
def padded_sentence_weights(answer: Any) -> Verdict:
    got, problem = numbers(answer, len(SCORES_52), "one weight per sentence position, the padded one included")
    if problem:
        return wrong(problem)
    want = _weights_52()
    if all_close(got, want):
        return right(
            fmt_numbers(want) + ": the softmax runs over the three real "
            "sentences only, e^1, e^2, e^0 over their sum, and the padded sentence gets exactly 0 "
            "whatever its score. The same document alone, with no padding, would get the same three "
            "weights"
        )
    real = [s for s, k in zip(SCORES_52, KEEP_52) if k]
    if all_close(got, _softmax(SCORES_52)):
        return wrong(
            "the padded sentence got a weight: its score 0.5 is whatever tanh(W·0 + b)ᵀ u_s happens to "
            "be, and it must not count. Mask it (score −∞) before the softmax, so it gets 0 and the "
            "real sentences share all the weight"
        )
    if all_close(got[:3], _softmax(SCORES_52)[:3]) and abs(got[3]) <= 2e-3:
        return wrong(
            "the padded sentence has weight 0, but the other three were normalised together with it, "
            "so they sum to less than 1. Leave it out of the softmax's denominator"
        )
    if all_close(got, [s / sum(real) if k else 0.0 for s, k in zip(SCORES_52, KEEP_52)]):
        return wrong(
            "that divides the scores by their sum; a softmax divides their exponentials, e^score, by "
            "the sum of the exponentials"
        )
    if abs(sum(got) - 1) > 2e-3:
        return wrong(f"your weights sum to {sum(got):.3f}; a softmax over the real sentences sums to 1")
    if abs(got[3]) > 2e-3:
        return wrong("the padded sentence (the fourth) must get exactly 0")
    return wrong(
        "compute e^score for the three real sentences, divide each by their sum, and give the padded sentence 0"
    )


# 5.3 -------------------------------------------------------------------------------------------

WEIGHTS_53 = (0.10, 0.45, 0.30, 0.15)  # HAN's sentence weights α_i for a four-sentence document
RATINGS_53 = (0.5, -2.5, 1.2, -1.2)  # the mean human rating of each sentence, on -4 .. +4


def _rho_53(ratings=None) -> float:
    """attention.metrics.spearman of WEIGHTS_53 against |RATINGS_53| (or against ``ratings``)."""
    y = [abs(r) for r in RATINGS_53] if ratings is None else list(ratings)
    return float(spearman(list(WEIGHTS_53), y))


def _pearson(x, y) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def _shortcut_53() -> float:
    """1 - 6 Σd² / (n(n² - 1)) with average ranks: right only without ties."""
    rx, ry = ranks(list(WEIGHTS_53)), ranks([abs(r) for r in RATINGS_53])
    n = len(rx)
    return 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry)) / (n * (n * n - 1))


@exercise("5.3", "Spearman's ρ by hand", solution=_rho_53, wrong_answer=lambda: _rho_53(RATINGS_53))
def spearman_by_hand(answer: Any) -> Verdict:
    if isinstance(answer, bool):
        return wrong(f"answer with one number, Spearman's ρ; got {answer!r}")
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return wrong(f"answer with one number, Spearman's ρ; got {answer!r}")
    want = _rho_53()
    tol = 6e-4
    if abs(got - want) <= tol:
        rx, ry = ranks(list(WEIGHTS_53)), ranks([abs(r) for r in RATINGS_53])
        return right(
            f"ρ = {want:.3f}: the ranks of the weights are {[round(r, 1) for r in rx]} and those of "
            f"|rating| {[round(r, 1) for r in ry]} (the two sentences rated ±1.2 share ranks 2 and 3); "
            f"ρ is the Pearson correlation of these ranks. Attention puts the strongest sentence first "
            f"and the mildest last, and only the tie keeps ρ below 1"
        )
    if abs(got - _rho_53(RATINGS_53)) <= tol:
        return wrong(
            "that ranks the signed ratings: the question is whether attention follows how *strongly* "
            "people rated a sentence, positive or negative, so rank |rating|"
        )
    if abs(got - _shortcut_53()) <= tol:
        return wrong(
            f"{got:.3f} is the shortcut 1 − 6Σd²/(n(n² − 1)), which is exact only without ties. With "
            f"the tie, compute the Pearson correlation of the ranks (and give three decimals)"
        )
    for value in (_rho_53([1, 4, 2, 3]), _rho_53([1, 4, 3, 2])):
        if abs(got - value) <= tol:
            return wrong(
                "the two sentences rated ±1.2 are tied in |rating|: give each the mean of the ranks "
                "they share, 2.5, instead of breaking the tie"
            )
    if abs(got - _pearson(WEIGHTS_53, [abs(r) for r in RATINGS_53])) <= tol:
        return wrong("that is Pearson's correlation of the values themselves; Spearman's is Pearson's of their ranks")
    return wrong(
        "rank the weights and |rating| (ties share their mean rank), then take the Pearson correlation "
        "of the two lists of ranks"
    )


# 5.4 -------------------------------------------------------------------------------------------

KEEP_54 = (True, True, True, False, False)  # three real sentences in a batch padded to five


def _pooled_weights_54(pool: str) -> list[float]:
    """The weights AttentionPool gives KEEP_54's positions: ``"mean"`` (HN-AVE), or ``"attention"``
    (HAN) with its context vector u_s set to zero (random states, random W and b)."""
    torch.manual_seed(0)
    level = AttentionPool(6, 4, pool).double()
    if pool == "attention":
        with torch.no_grad():
            level.context.zero_()
    states = torch.randn(1, len(KEEP_54), 6, dtype=torch.float64)  # (B, N, 2U)
    _, weights = level(states, torch.tensor([KEEP_54]))
    return weights[0].tolist()


def _solution_54() -> list[list[float]]:
    return [_pooled_weights_54("mean"), _pooled_weights_54("attention")]


@exercise(
    "5.4", "HN-AVE inside HAN", solution=_solution_54, wrong_answer=lambda: [[1 / len(KEEP_54)] * len(KEEP_54)] * 2
)
def average_inside_attention(answer: Any) -> Verdict:
    N = len(KEEP_54)
    try:
        rows = [list(r) for r in answer]
    except TypeError:
        return wrong(f"answer with two lists of {N} weights: [HN-AVE's, HAN's with u_s = 0]; got {answer!r}")
    if len(rows) != 2:
        return wrong(f"answer with two lists of {N} weights: [HN-AVE's, HAN's with u_s = 0]; got {len(rows)} items")
    mean, han = _solution_54()
    for name, row, want in (("HN-AVE's", rows[0], mean), ("HAN's with u_s = 0", rows[1], han)):
        got, problem = numbers(row, N, f"{name} weight for each of the {N} sentence positions")
        if problem:
            return wrong(problem)
        if all_close(got, want):
            continue
        if all_close(got, [1 / N] * N):
            rule = "the mean runs" if row is rows[0] else "the masked softmax runs"
            return wrong(
                f"{name} weights spread over all {N} positions, the two padded ones too: {rule} "
                f"over the real sentences only, so a document's vector does not depend on how much its "
                f"batch was padded"
            )
        if abs(sum(got) - 1) > 2e-3:
            return wrong(f"{name} weights sum to {sum(got):.3f}; they are a distribution over the real sentences")
        return wrong(f"{name} weights are not it: with u_s = 0 every score u_iᵀ u_s is 0, whatever u_i is")
    return right(
        "both are 1/3 on each real sentence and 0 on the padding. With u_s = 0 every score u_iᵀ u_s "
        "is 0, and a softmax of equal scores is uniform: HN-AVE is the HAN whose context vector is "
        "zero. Training can move u_s away from 0 when weighting the sentences pays, which is what "
        "the comparison of HAN and HN-AVE measures"
    )
