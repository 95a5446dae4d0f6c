"""The performance appendix (``book/13-performance.md``): what the explicit road keeps in memory,
where local attention's memory wins, and a goal missed inside the noise.

Each checker computes its answer from the constants below and says why a wrong answer is wrong.
"""

from __future__ import annotations

from typing import Any

from .base import Verdict, close_to, exercise, right, wrong

__all__ = ["SHAPE_131", "WINDOW_132", "NOISE_133"]


# 13.1 ------------------------------------------------------------------------------------------

SHAPE_131 = {"B": 8, "H": 8, "L": 512, "S": 512, "bytes": 4}  # float32 weights (B, H, L, S)


def _mib_131() -> float:
    s = SHAPE_131
    return s["B"] * s["H"] * s["L"] * s["S"] * s["bytes"] / 2**20


@exercise("13.1", "What the explicit road keeps", solution=_mib_131, wrong_answer=lambda: _mib_131() / SHAPE_131["H"])
def weights_memory(answer: Any) -> Verdict:
    s = SHAPE_131
    want = _mib_131()
    verdict = close_to(answer, want, 0.01, "the weights, in MiB")
    if verdict.correct:
        return right(
            f"{want:.0f} MiB: B·H·L·S = {s['B'] * s['H'] * s['L'] * s['S']:,} weights of {s['bytes']} bytes, "
            f"kept for the backward pass and returned; the fused road keeps none of them"
        )
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return verdict
    if abs(got - want / s["H"]) < 0.01:
        return wrong("every head has its own L × S weights: count the heads too")
    if abs(got - want * 2**20) < 1:
        return wrong("that is in bytes; divide by 2**20 for MiB")
    return verdict


# 13.2 ------------------------------------------------------------------------------------------

WINDOW_132 = {"D": 8, "E": 64}  # local attention's half window D and the key size E


def _length_132() -> int:
    return (2 * WINDOW_132["D"] + 1) * WINDOW_132["E"]


@exercise("13.2", "Where local attention's memory wins", solution=_length_132, wrong_answer=lambda: 17)
def local_memory(answer: Any) -> Verdict:
    D, E = WINDOW_132["D"], WINDOW_132["E"]
    want = _length_132()
    verdict = close_to(answer, want, 0.5, "the source length S")
    if verdict.correct:
        return right(
            f"S = (2D + 1)·E = {want:,}: per query global attention keeps S scores, local attention "
            f"{2 * D + 1} gathered keys of {E} numbers; beyond that length local attention keeps less"
        )
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return verdict
    if abs(got - (2 * D + 1)) < 0.5:
        return wrong(
            f"local attention does not keep {2 * D + 1} numbers per query but {2 * D + 1} key vectors of size E"
        )
    return verdict


# 13.3 ------------------------------------------------------------------------------------------

NOISE_133 = {"self": 1.06, "goal": 2.0, "measured": 2.04}  # PyTorch against itself, a goal, a ratio


def _measurable_133() -> bool:
    n = NOISE_133
    return n["measured"] / n["goal"] - 1 > abs(n["self"] - 1)


@exercise("13.3", "A miss inside the noise", solution=_measurable_133, wrong_answer=lambda: True)
def inside_noise(answer: Any) -> Verdict:
    n = NOISE_133
    if not isinstance(answer, bool):
        return wrong(f"answer True (the miss can be measured on this machine) or False; got {answer!r}")
    miss, noise = n["measured"] / n["goal"] - 1, abs(n["self"] - 1)
    if answer == _measurable_133():
        return right(
            f"the goal is missed by {miss:.0%} of the goal, and PyTorch timed against itself is off by "
            f"{noise:.0%}: a miss smaller than the run's own noise cannot be told from no miss"
        )
    return wrong(
        f"compare the miss relative to the goal ({n['measured']} / {n['goal']} − 1) with how far PyTorch "
        f"against itself is from 1 ({n['self']} − 1)"
    )
