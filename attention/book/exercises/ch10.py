"""Chapter 10 (``book/10-evaluation.md``): BLEU's pieces by hand, AER by hand, BLEU and Chinese,
reading a paired bootstrap.

Each checker computes the answer with :mod:`attention.bleu` or :func:`attention.metrics.aer` and
says why a wrong answer is wrong.
"""

from __future__ import annotations

import math
from typing import Any

from ... import bleu
from ...metrics import aer
from .base import Verdict, exercise, fmt_numbers, right, wrong

__all__ = [
    "HYPOTHESIS_101",
    "REFERENCES_101",
    "PREDICTED_102",
    "SURE_102",
    "POSSIBLE_102",
    "SENTENCES_103",
    "RESAMPLES_104",
    "NOT_BETTER_104",
]


# 10.1 ------------------------------------------------------------------------------------------

HYPOTHESIS_101 = "the the cat"
REFERENCES_101 = ["the cat is here", "the the dog is here"]


def _pieces_101() -> list[float]:
    stats = bleu.sentence_statistics(HYPOTHESIS_101.split(), [r.split() for r in REFERENCES_101])
    score = bleu.bleu_from_statistics(stats, smooth="none")
    return [stats.correct[0] / stats.total[0], stats.correct[1] / stats.total[1], score.brevity_penalty]


@exercise("10.1", "BLEU's pieces by hand", solution=_pieces_101, wrong_answer=lambda: [2 / 3, 1.0, math.exp(1 - 5 / 3)])
def bleu_pieces(answer: Any) -> Verdict:
    try:
        p1, p2, bp = (float(a) for a in answer)
    except (TypeError, ValueError):
        return wrong(f"answer with three numbers [p1, p2, BP]; got {answer!r}")
    want = _pieces_101()
    if all(abs(a - b) < 1e-3 for a, b in zip((p1, p2, bp), want)):
        return right(
            f"p1 = 3/3: 'the' appears twice and the second reference has it twice, so both count "
            f"(the clip is the largest count in any one reference); p2 = 2/2; BP = exp(1 - 4/3) = {want[2]:.4f}, "
            f"r = 4 being the reference length closest to c = 3"
        )
    if abs(p1 - 2 / 3) < 1e-3:
        return wrong(
            "p1 = 2/3 clips 'the' at 1, its count in the first reference; the clip is its largest count "
            "in any one reference, and the second has 'the the'"
        )
    if abs(bp - math.exp(1 - 5 / 3)) < 1e-3 or abs(bp - math.exp(1 - 9 / 3)) < 1e-3:
        return wrong(
            "the brevity penalty uses the reference whose length is closest to the hypothesis's (4 words), "
            "not the longest, nor the two together"
        )
    if abs(bp - 1.0) < 1e-3:
        return wrong("the hypothesis (3 words) is shorter than the closest reference (4): BP = exp(1 - r/c) < 1")
    return wrong(
        f"{fmt_numbers((p1, p2, bp))} is not it: count each n-gram of the hypothesis, clip it by its largest "
        "count in one reference, divide by the hypothesis's n-grams; BP = exp(1 - r/c) when c < r"
    )


# 10.2 ------------------------------------------------------------------------------------------

PREDICTED_102 = {(0, 0), (1, 2), (2, 1)}  # A: (target j, source i) links read off the attention
SURE_102 = {(0, 0), (1, 1)}  # S
POSSIBLE_102 = SURE_102 | {(1, 2), (2, 2)}  # P ⊇ S


@exercise(
    "10.2",
    "AER by hand",
    solution=lambda: aer(PREDICTED_102, SURE_102, POSSIBLE_102),
    wrong_answer=lambda: 1 - (1 + 1) / (3 + 2),
)
def aer_by_hand(answer: Any) -> Verdict:
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return wrong(f"answer with one number; got {answer!r}")
    want = aer(PREDICTED_102, SURE_102, POSSIBLE_102)
    if abs(got - want) < 1e-3:
        return right(
            f"|A∩S| = 1, |A∩P| = 2 (the sure link and the possible (1, 2)), |A| + |S| = 5: AER = 1 - 3/5 = {want:.1f}"
        )
    if abs(got - 0.6) < 1e-3:
        return wrong(
            "that counts A∩S twice; the second term is A∩P: a predicted link that is only *possible* still counts"
        )
    if abs(got - (1 - want)) < 1e-3:
        return wrong("that is 1 - AER: AER is an error rate, 0 for a perfect alignment")
    return wrong(
        "AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|): count the predicted links that are sure, those that are "
        "possible (P includes S), and the sizes of A and S"
    )


# 10.3 ------------------------------------------------------------------------------------------

SENTENCES_103 = ("我喜欢猫。", "我喜欢狗。")  # hypothesis, reference


def _chinese_103() -> tuple[float, float]:
    hyp, ref = SENTENCES_103
    return tuple(bleu.sentence_bleu(hyp, [ref], tokenizer).score for tokenizer in ("13a", "zh"))


@exercise("10.3", "BLEU and Chinese", solution=_chinese_103, wrong_answer=lambda: (_chinese_103()[1],) * 2)
def chinese_bleu(answer: Any) -> Verdict:
    try:
        default, zh = (float(a) for a in answer)
    except (TypeError, ValueError):
        return wrong(f"answer with two numbers (with 13a, with zh); got {answer!r}")
    want = _chinese_103()
    if abs(default - want[0]) < 0.01 and abs(zh - want[1]) < 0.01:
        return right(
            f"with 13a the sentence is one token ('{SENTENCES_103[0]}' has no spaces), it differs from the "
            f"reference's one token, nothing matches: 0. With zh every character is a token: 4 of 5 unigrams "
            f"match, and BLEU (smoothed, effective order) is {want[1]:.2f}"
        )
    if abs(default - want[1]) < 0.01:
        return wrong("13a splits at spaces and punctuation only; a Chinese sentence has no spaces")
    return wrong("compute both with attention.bleu.sentence_bleu(hypothesis, [reference], tokenizer)")


# 10.4 ------------------------------------------------------------------------------------------

RESAMPLES_104 = 1000  # paired bootstrap resamples of the test sentences
NOT_BETTER_104 = 38  # in how many of them system A's BLEU was not above system B's


def _bootstrap_104() -> list:
    p = NOT_BETTER_104 / RESAMPLES_104
    return [p, p < 0.025]  # the 95 % percentile interval excludes 0 only when fewer than 2.5 % fall at or below it


@exercise("10.4", "Reading a paired bootstrap", solution=_bootstrap_104, wrong_answer=lambda: [0.038, True])
def reading_bootstrap(answer: Any) -> Verdict:
    try:
        p, beyond = answer
        p = float(p)
    except (TypeError, ValueError):
        return wrong(f"answer with [p, beyond the interval (True or False)]; got {answer!r}")
    if not isinstance(beyond, bool):
        return wrong(f"the second item is True or False, got {beyond!r}")
    want_p, want_beyond = _bootstrap_104()
    if abs(p - want_p) > 1e-3:
        if abs(p - (1 - want_p)) < 1e-3:
            return wrong("that is the share of resamples where A wins; p is the share where A does *not* beat B")
        return wrong(f"p is the share of the {RESAMPLES_104} resamples in which A is not above B")
    if beyond != want_beyond:
        return wrong(
            "p = 0.038 is below 0.05, but the 95 % interval runs from the 2.5th to the 97.5th percentile of "
            "the differences: with 3.8 % of them at or below 0, the 2.5th percentile is below 0 and the "
            "interval contains 0. The difference is not beyond the interval"
        )
    return right(
        "p = 38/1000 = 0.038, and the interval's lower end, the 2.5th percentile of the differences, is at or "
        "below 0 (3.8 % of them are): the interval contains 0, so the difference is not a finding by the "
        "book's rule, whatever a one-sided test at 5 % would say"
    )
