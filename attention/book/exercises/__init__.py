"""Exercises with self-checks: the reader answers in the notebook, a checker says right or wrong and why.

    from attention.book.exercises import check
    answer = ...                 # the reader's answer: a number, a list, a function ...
    check("4.2", answer)         # prints ✓ or ✗ with the reason

Each chapter's exercises live in ``attention/book/exercises/chNN.py``, registered with
:func:`~attention.book.exercises.base.exercise`; every exercise carries its checker, its solution (what
the website hides behind a toggle) and a typical wrong answer, and ``tests/test_exercises.py`` runs
each checker against both (:func:`verdict` returns the verdict without printing it).
``CONTRIBUTING.md`` ("Adding a chapter") says how to write one.
"""

from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch13  # noqa: F401  (importing a chapter registers its exercises)
from .base import EXERCISES, Exercise, Verdict, check, close_to, exercise, right, verdict, wrong

__all__ = ["EXERCISES", "Exercise", "Verdict", "check", "close_to", "exercise", "right", "verdict", "wrong"]
