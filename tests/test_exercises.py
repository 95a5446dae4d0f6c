"""Every exercise's checker accepts its solution and refuses a typical wrong answer."""

import pytest

from attention.book import exercises
from attention.book.exercises import EXERCISES, check, verdict


def test_chapters_have_their_exercises():
    by_chapter = {}
    for key in EXERCISES:
        by_chapter.setdefault(key.split(".")[0], []).append(key)
    for chapter in ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "13"):
        assert 3 <= len(by_chapter.get(chapter, [])) <= 5, (chapter, by_chapter.get(chapter))


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_checker_accepts_the_solution_and_refuses_a_wrong_answer(key, capsys):
    ex = EXERCISES[key]
    good = verdict(key, ex.solution())
    assert good.correct, f"exercise {key}: the solution is refused: {good.message}"
    assert check(key, ex.solution()) is None  # prints the verdict once, returns nothing to display again
    bad = ex.check(ex.wrong_answer())
    assert not bad.correct and bad.message, f"exercise {key}: the wrong answer passes: {bad.message}"
    assert not ex.check(...).correct and "no answer yet" in ex.check(...).message
    assert str(good).startswith("✓") and capsys.readouterr().out.startswith("✓")


def test_a_raising_answer_is_wrong_not_a_crash():
    key = next(iter(EXERCISES))
    verdict = EXERCISES[key].check(lambda *a: 1 / 0)
    assert not verdict.correct
    with pytest.raises(KeyError, match="no exercise '0.0'"):
        exercises.verdict("0.0", 1)
