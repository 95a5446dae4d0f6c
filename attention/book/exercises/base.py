"""The machinery of the exercises: verdicts, the registry, ``check``.

    from attention.book.exercises import check
    answer = ...                 # the reader's answer: a number, a list, a function ...
    check("4.2", answer)         # prints ✓ or ✗ with the reason, and returns the Verdict

Each chapter's exercises live in ``attention/book/exercises/chNN.py``, registered with
:func:`exercise`; every exercise carries its checker, its solution (what the website hides behind a
toggle) and a typical wrong answer, and ``tests/test_exercises.py`` runs each checker against both.
``CONTRIBUTING.md`` ("Adding a chapter") says how to write one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

__all__ = [
    "Verdict",
    "Exercise",
    "EXERCISES",
    "exercise",
    "check",
    "verdict",
    "right",
    "wrong",
    "close_to",
    "numbers",
    "all_close",
    "fmt_numbers",
    "returned",
]


@dataclass
class Verdict:
    """What a checker returns: right or wrong, and why."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return ("✓ right: " if self.correct else "✗ not yet: ") + self.message

    def __repr__(self) -> str:
        return str(self)


def right(message: str) -> Verdict:
    return Verdict(True, message)


def wrong(message: str) -> Verdict:
    return Verdict(False, message)


@dataclass
class Exercise:
    """One exercise: its checker, its solution and a typical wrong answer."""

    key: str  # "<chapter>.<n>", e.g. "4.2": what the reader passes to check()
    title: str  # one line, as the narrative page names it
    checker: Callable[[Any], Verdict]  # answer -> Verdict
    solution: Callable[[], Any]  # -> a right answer
    wrong_answer: Callable[[], Any]  # -> a tempting wrong answer (tests check it is refused)

    def check(self, answer: Any) -> Verdict:
        if answer is None or answer is Ellipsis:
            return wrong(
                f"no answer yet: replace the ... with your answer to exercise {self.key} and run the cell again"
            )
        try:
            verdict = self.checker(answer)
        except Exception as err:  # a reader's function that raises is a wrong answer, said plainly
            return wrong(f"checking your answer raised {type(err).__name__}: {err}")
        if not isinstance(verdict, Verdict):  # pragma: no cover - a bug in a checker
            raise TypeError(f"the checker of exercise {self.key} returned {type(verdict).__name__}, not a Verdict")
        return verdict


#: "<chapter>.<n>" -> Exercise, filled by the chapter modules when they are imported
EXERCISES: dict[str, Exercise] = {}


def exercise(key: str, title: str, solution: Callable[[], Any], wrong_answer: Callable[[], Any]):
    """Decorator: register ``checker(answer) -> Verdict`` as exercise ``key``."""

    def register(checker: Callable[[Any], Verdict]) -> Callable[[Any], Verdict]:
        if key in EXERCISES:
            raise ValueError(f"exercise {key!r} is registered twice")
        EXERCISES[key] = Exercise(key, title, checker, solution, wrong_answer)
        return checker

    return register


def close_to(value: Any, expected: float, tolerance: float, what: str) -> Verdict:
    """A numeric answer within ``tolerance`` of ``expected``."""
    try:
        got = float(value)
    except (TypeError, ValueError):
        return wrong(f"{what} should be a number, got {value!r}")
    if abs(got - expected) <= tolerance:
        return right(f"{what} = {got:.4g}")
    return wrong(f"{what} = {got:.4g} is not it (off by {got - expected:+.3g})")


def verdict(key: str, answer: Any) -> Verdict:
    """The verdict on ``answer`` to exercise ``key`` (nothing printed)."""
    if key not in EXERCISES:
        raise KeyError(f"no exercise {key!r}; exercises: {sorted(EXERCISES)}")
    return EXERCISES[key].check(answer)


def check(key: str, answer: Any) -> None:
    """Check ``answer`` to exercise ``key`` and print the verdict, once (see :func:`verdict`)."""
    print(verdict(key, answer))


def numbers(answer: Any, count: int, what: str) -> tuple[list[float] | None, str | None]:
    """``answer`` as a list of ``count`` floats, or the reason it is not one (for a checker's message)."""
    if isinstance(answer, (int, float)):
        return None, f"answer with {count} numbers, {what}; got a single number, {answer!r}"
    try:
        got = [float(a) for a in answer]
    except (TypeError, ValueError):
        return None, f"answer with {count} numbers, {what}; got {answer!r}"
    if len(got) != count:
        return None, f"answer with {count} numbers, {what}; got {len(got)}"
    return got, None


def all_close(got: list[float], want: list[float], tol: float = 2e-3) -> bool:
    """Whether two lists of numbers agree entry by entry within ``tol``."""
    return len(got) == len(want) and all(abs(g - w) <= tol for g, w in zip(got, want))


def fmt_numbers(values, digits: int = 3) -> str:
    """``[0.123, 0.456]``: a list of numbers as a checker's message shows it."""
    return "[" + ", ".join(f"{v:.{digits}f}" for v in values) + "]"


def _a(value: Any) -> str:
    """``a str``, ``an int``: the kind of a value as a message names it."""
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


_NUMBERS = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _normalise(value: Any, like: Any) -> tuple[Any, str | None]:
    """One value in the form of ``like`` (a tensor, or ``float``), or what was expected instead."""
    if like is float:
        expected = "a number"
        if isinstance(value, (str, bytes, bool)):
            return None, expected
        try:
            t = value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
        except (TypeError, ValueError, RuntimeError):
            return None, expected
        if t.numel() != 1 or not (t.dtype.is_floating_point or t.dtype in _NUMBERS):
            return None, expected
        return float(t), None
    expected = f"a tensor of shape {tuple(like.shape)}"
    if isinstance(value, torch.Tensor):
        t = value.detach()
    elif isinstance(value, (str, bytes, dict, set)) or callable(value):
        return None, expected
    else:  # a NumPy array, a list or a number: what torch.as_tensor reads
        try:
            t = torch.as_tensor(np.asarray(value))
        except (TypeError, ValueError, RuntimeError):
            return None, expected
    if not (t.dtype.is_floating_point or t.dtype in _NUMBERS):
        return None, expected
    if not like.dtype.is_floating_point and t.dtype.is_floating_point and not torch.equal(t, t.round()):
        return None, f"{expected} of whole numbers ({like.dtype}); yours holds fractions"
    return t.to(dtype=like.dtype, device=like.device), None


def returned(value: Any, like: Any, what: str = "your function", names: tuple[str, ...] = ()) -> tuple[Any, str | None]:
    """What a reader's function returned, in the form its checker compares, or why it cannot be.

    The one normalisation step of every checker that takes a function: a right answer in another
    dtype or container (float64, a NumPy array, a list) is accepted, and a missing ``return`` or a
    wrong type is named as such instead of failing inside the comparison.

    Args:
        value: what the function returned.
        like: the expected result's form: a tensor (the value becomes a detached tensor of its dtype
            and device; its shape is for the message, the checker compares shapes), ``float`` (a
            number), or a tuple of these (a tuple of that length, each element normalised alike).
        what: how the message names the function.
        names: with a tuple ``like``, the elements' names (``("output", "weights")``).

    Returns:
        ``(normalised, None)``, or ``(None, message)``.
    """
    if value is None:
        return None, f"{what} returned None: did you forget `return`?"
    if not isinstance(like, tuple):
        normal, expected = _normalise(value, like)
        return (normal, None) if expected is None else (None, f"{what} returned {_a(value)}, expected {expected}")
    names = names or tuple(f"value {i + 1}" for i in range(len(like)))
    wanted = f"{len(like)} values ({', '.join(names)})"
    if not isinstance(value, (tuple, list)):
        return None, f"{what} returned {_a(value)}; return {wanted}"
    if len(value) != len(like):
        return None, f"{what} returned {len(value)} values; return {wanted}"
    out = []
    for item, item_like, name in zip(value, like, names):
        if item is None:
            return None, f"{what} returned None as {name}: did you forget to compute it?"
        normal, expected = _normalise(item, item_like)
        if expected is not None:
            return None, f"{what} returned {_a(item)} as {name}, expected {expected}"
        out.append(normal)
    return tuple(out), None
