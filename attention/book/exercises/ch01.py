"""Chapter 1 exercises: softmax weights, their entropy, the recipe by hand, a fully masked row.

Each checker compares the reader's answer with what :mod:`attention.functional` computes
(``masked_softmax``, ``attend``), on the scores of the chapter-1 notebook or on random tensors.
The questions are on ``book/01-preface.md`` ("Exercises").
"""

from __future__ import annotations

import math

import torch

from ...functional import attend, masked_softmax
from .base import Verdict, close_to, exercise, returned, right, wrong

#: the notebook's hand-typed scores e_i for 機 器 學 習 很 有 趣 (section 1)
TOKENS = ["機", "器", "學", "習", "很", "有", "趣"]
SCORES = [0.2, 0.1, 3.0, 2.6, -1.0, -0.5, -1.0]
LEARN = TOKENS.index("學")
TEMPERATURE = 2.0  # exercise 1.1


def _weights(temperature: float) -> torch.Tensor:
    """The package's softmax of the notebook's scores divided by ``temperature``."""
    return masked_softmax(torch.tensor(SCORES, dtype=torch.float64) / temperature)


def _entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy in nats, with 0·log 0 = 0."""
    return -torch.special.xlogy(weights, weights).sum()


def _as_float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return None


# --- 1.1 -------------------------------------------------------------------------------------


@exercise(
    "1.1",
    "The weight on 學 at temperature T = 2",
    solution=lambda: _weights(TEMPERATURE)[LEARN].item(),
    wrong_answer=lambda: _weights(1 / TEMPERATURE)[LEARN].item(),
)
def _temperature(answer) -> Verdict:
    got = _as_float(answer)
    if got is None:
        return wrong(f"give one number, the weight α on 學 (got {answer!r})")
    expected = _weights(TEMPERATURE)[LEARN].item()
    if abs(got - expected) <= 2e-3:
        return right(f"α(學) = {got:.3f} at T = 2: flatter than at T = 1, so the other characters take a larger share")
    if not 0 <= got <= 1:
        return wrong(
            f"{got:g} cannot be a softmax weight: weights lie between 0 and 1 (a percentage? write 0.25, not 25)"
        )
    if abs(got - _weights(1 / TEMPERATURE)[LEARN].item()) <= 2e-3:
        return wrong(
            "that is the weight at T = 0.5: you multiplied the scores by T; "
            "divide them by T (e_i / T) before the softmax"
        )
    if abs(got - _weights(1.0)[LEARN].item()) <= 2e-3:
        return wrong(
            "that is the weight at T = 1, the notebook's first print: divide the scores by T = 2 before the softmax"
        )
    if abs(got - SCORES[LEARN] / sum(SCORES)) <= 2e-3:  # normalised without the exponential
        return wrong(
            "normalising the scores by their sum skips the exponential: the softmax is exp(e_i / T) / Σ_j exp(e_j / T)"
        )
    return close_to(got, expected, 2e-3, "α(學)")


# --- 1.2 -------------------------------------------------------------------------------------


def _entropy_solution(weights):
    return -torch.special.xlogy(weights, weights).sum()


def _entropy_naive(weights):
    return -(weights * weights.log()).sum()


def _test_vectors() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    random = torch.softmax(torch.randn(7, generator=g, dtype=torch.float64), 0)
    one_hot = torch.zeros(7, dtype=torch.float64)
    one_hot[LEARN] = 1.0
    with_zero = _weights(1.0).clone()
    with_zero[-2:] = 0.0
    with_zero = with_zero / with_zero.sum()
    return [_weights(1.0), random, torch.full((5,), 0.2, dtype=torch.float64), with_zero, one_hot]


@exercise(
    "1.2", "The entropy of a weight vector", solution=lambda: _entropy_solution, wrong_answer=lambda: _entropy_naive
)
def _entropy_function(answer) -> Verdict:
    if not callable(answer):
        return wrong("give a function: entropy(weights) -> a number, for a 1-D tensor of weights")
    for w in _test_vectors():
        expected = _entropy(w).item()
        got, problem = returned(answer(w.clone()), float, f"entropy({[round(x, 3) for x in w.tolist()]})")
        if problem:
            return wrong(problem)
        if math.isnan(got):
            return wrong(
                f"entropy({[round(x, 3) for x in w.tolist()]}) is nan: a zero weight gives "
                "0·log 0 = 0·(-inf); by convention that term is 0 "
                "(torch.special.xlogy(w, w) computes w·log w with that convention)"
            )
        if abs(got - expected) <= 1e-6:
            continue
        if abs(got + expected) <= 1e-6:
            return wrong("the sign is wrong: entropy is -Σ α_i log α_i, which is never negative")
        if abs(got - expected / math.log(2)) <= 1e-6:
            return wrong(
                "that is the entropy in bits (log base 2); the book measures it in nats (natural log, torch.log)"
            )
        return wrong(
            f"entropy({[round(x, 3) for x in w.tolist()]}) should be {expected:.4f} nats, your function gives {got:.4f}"
        )
    return right(
        "your entropy matches -Σ α_i log α_i on every test vector, "
        "zeros included (one-hot: 0 nats; uniform over S: log S)"
    )


# --- 1.3 -------------------------------------------------------------------------------------


def _uniform_entropy() -> float:
    return _entropy(masked_softmax(torch.zeros(len(TOKENS), dtype=torch.float64))).item()


@exercise(
    "1.3",
    "The entropy of the weights as T grows",
    solution=_uniform_entropy,
    wrong_answer=lambda: math.log2(len(TOKENS)),
)
def _limit(answer) -> Verdict:
    got = _as_float(answer)
    if got is None:
        return wrong(f"give one number, an entropy in nats (got {answer!r})")
    expected = _uniform_entropy()
    S = len(TOKENS)
    if abs(got - expected) <= 1e-3:
        return right(
            f"{got:.3f} nats = log {S}: as T grows every e_i / T goes to 0, "
            f"the weights to the uniform 1/{S}, the most uncertain distribution over {S} keys"
        )
    if abs(got - math.log2(S)) <= 1e-3:
        return wrong(f"log₂ {S} is the answer in bits; the notebook measures entropy in nats (natural log)")
    if abs(got) <= 1e-3:
        return wrong(
            "0 nats is the limit as T goes to 0, where all the weight falls on 學; here T grows, so the weights flatten"
        )
    if abs(got - S) <= 1e-3 or abs(got - 1 / S) <= 1e-3:
        return wrong(f"the weights tend to 1/{S} each; their entropy is -Σ (1/{S}) log(1/{S})")
    if abs(got - _entropy(_weights(4.0)).item()) <= 1e-3:
        return wrong("that is the entropy at T = 4, still below the limit: let T grow without bound")
    return close_to(got, expected, 1e-3, "the limiting entropy")


# --- 1.4 -------------------------------------------------------------------------------------


def _attend_solution(scores, value):
    weights = torch.softmax(scores, dim=-1)  # (..., L, S): each query's weights sum to one over the keys
    return weights @ value, weights  # (..., L, Dv), (..., L, S)


def _attend_over_queries(scores, value):
    weights = torch.softmax(scores, dim=-2)  # normalised over the queries: the typical slip
    return weights @ value, weights


@exercise(
    "1.4",
    "Score, normalise, average: attend by hand",
    solution=lambda: _attend_solution,
    wrong_answer=lambda: _attend_over_queries,
)
def _attend_by_hand(answer) -> Verdict:
    if not callable(answer):
        return wrong("give a function: my_attend(scores, value) -> (output, weights)")
    g = torch.Generator().manual_seed(4)
    scores = torch.randn(2, 3, 5, generator=g)  # (B, L, S)
    value = torch.randn(2, 5, 4, generator=g)  # (B, S, Dv)
    expected_out, expected_w = attend(scores, value)
    result, problem = returned(
        answer(scores.clone(), value.clone()),
        (expected_out, expected_w),
        "my_attend(scores, value)",
        names=("output", "weights"),
    )
    if problem:
        return wrong(problem)
    out, w = result
    if tuple(w.shape) != tuple(expected_w.shape):
        return wrong(
            f"weights have shape {tuple(w.shape)}; they should be (B, L, S) = "
            f"{tuple(expected_w.shape)}, one row of S weights per query"
        )
    if not torch.allclose(w.sum(-1), torch.ones(2, 3), atol=1e-5):
        if torch.allclose(w.sum(-2), torch.ones(2, 5), atol=1e-5):
            return wrong(
                "your weights sum to one down each column (over the L queries, dim -2); "
                "each query needs a distribution over the S keys: softmax over dim -1"
            )
        if torch.allclose(w, scores):
            return wrong("your weights are the raw scores: normalise them with a softmax first")
        return wrong("each row of weights should sum to one over the keys (softmax over dim -1)")
    if not torch.allclose(w, expected_w, atol=1e-5):
        return wrong(
            "your rows sum to one but differ from the softmax of the scores: "
            "use exp(e) / Σ exp(e), not another normalisation"
        )
    if tuple(out.shape) != tuple(expected_out.shape):
        return wrong(
            f"output has shape {tuple(out.shape)}; it should be (B, L, Dv) = "
            f"{tuple(expected_out.shape)}: weights (B, L, S) @ value (B, S, Dv)"
        )
    if not torch.allclose(out, expected_out, atol=1e-5):
        if torch.allclose(out, scores @ value, atol=1e-5):
            return wrong("your output averages the values with the raw scores; use the weights")
        return wrong("the weights are right but the output is not Σ_i α_{t,i} v_i (weights @ value)")
    return right("weights and output match attention.attend on random (B, L, S) scores and (B, S, Dv) values")


# --- 1.5 -------------------------------------------------------------------------------------

MASKED_ROW_CHOICES = ("nan", "uniform", "zeros", "error")


def _masked_row_behaviour() -> str:
    """What attend does, measured: a query whose keys are all blocked."""
    scores = torch.randn(1, 2, 4, generator=torch.Generator().manual_seed(5))  # (B, L, S)
    value = torch.randn(1, 4, 3, generator=torch.Generator().manual_seed(6))  # (B, S, Dv)
    keep = torch.tensor([[[True, True, False, False], [False, False, False, False]]])  # row 2: none
    try:
        out, w = attend(scores, value, keep)
    except Exception:  # pragma: no cover - the package never raises here
        return "error"
    if torch.isnan(w[0, 1]).any() or torch.isnan(out[0, 1]).any():
        return "nan"  # pragma: no cover
    if torch.allclose(w[0, 1], torch.full((4,), 0.25)):
        return "uniform"  # pragma: no cover
    if not w[0, 1].any() and not out[0, 1].any():
        return "zeros"
    return "error"  # pragma: no cover


@exercise("1.5", "A query with no admissible key", solution=_masked_row_behaviour, wrong_answer=lambda: "nan")
def _masked_row(answer) -> Verdict:
    choice = str(answer).strip().strip("'\"").lower()
    if choice not in MASKED_ROW_CHOICES:
        return wrong(f"answer with one of {', '.join(repr(c) for c in MASKED_ROW_CHOICES)} (got {answer!r})")
    actual = _masked_row_behaviour()
    if choice == actual:
        return right(
            "attend gives that row zero weights and a zero output: masked_softmax spots rows "
            "whose scores are all -inf and zeros them, so no NaN reaches the loss or the gradients"
        )
    reasons = {
        "nan": "a plain softmax of a row of -inf would give 0/0 = nan, but masked_softmax "
        "detects such rows and does not let the nan through",
        "uniform": "uniform weights are what you would get by filling blocked scores with a large "
        "finite number such as -1e9: the query would then attend to padding",
        "zeros": "the package's answer is zeros",
        "error": "a fully masked row is normal (a padded position, a causal first step), "
        "so attend accepts it without raising",
    }
    return wrong(f"{reasons[choice]}; try it: attend(scores, value, mask) with one row of the mask all False")
