"""The whole results registry as one table: every recorded comparison of the book, its headline
metric as mean ± sd over seeds, with its size, cost and provenance (chapter 10).

Nothing here is typed by hand: :func:`leaderboard` walks each record of
:mod:`attention.results` and takes, from every summary cell, the first of :data:`HEADLINE` that the
cell holds as ``mean_sd`` (exact match for captions, BLEU for translation, accuracy for
classification and question answering, F1 for tagging, bit accuracy for copying). A record whose
numbers are not summarised over seeds is listed in :data:`UNSUMMARISED` with the reason, so that a
new record must either yield rows or say why it does not (``tests/test_leaderboard.py``).

A row: ``record``, ``entry`` (the path of the cell inside the summary, e.g. ``"hsk / global-dot+feed"``),
``metric``, ``mean``, ``sd``, ``n`` (seeds), ``parameters`` and ``train_seconds`` (where the cell or
its record has them), ``attention`` (False for the book's baselines without attention, see
:data:`NO_ATTENTION`), ``command``, ``machine``, ``torch``.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..results import list_results, load_result

__all__ = [
    "HEADLINE",
    "NO_ATTENTION",
    "UNSUMMARISED",
    "leaderboard",
    "format_leaderboard",
    "attention_gains",
    "t_quantile",
    "welch_interval",
    "welch_text",
]

#: the metric a row reports: the first of these a summary cell holds as a mean ± sd
HEADLINE = ("exact_match", "bleu", "accuracy", "f1", "bit_accuracy")

#: entries (the last part of a row's path) that are the book's models without attention
NO_ATTENTION = frozenset(
    {
        "encoder-decoder",
        "none+feed",
        "mean",
        "bilstm-last",
        "bilstm-mean",
        "bilstm-max",
        "hn-ave",
        "hn-max",
        "copy-lstm",
        "word",
    }
)

#: records with no summary over seeds, and why
UNSUMMARISED = {
    "ablation-small": "one seed after a fixed number of updates: a scan, not a comparison",
    "benchmark": "speed and memory against PyTorch's kernels (the performance appendix), not a model's quality",
    "notebook-bands": "how far a notebook's live training moves across CPU kernels and seeds, not a model's quality",
    "transformer-recipe": "one seed per recipe, chosen on validation BLEU: a sweep, not a comparison (chapter 6)",
    "transformer-stability": "the loss and gradient norm of the first updates (chapter 6), not a model's quality",
}

#: keys of a summary cell that hold per-run detail, not more cells
_SKIP = frozenset({"runs", "values"})


def _is_mean_sd(x) -> bool:
    return isinstance(x, dict) and "mean" in x and "n" in x


def _cells(tree: dict, path: tuple = (), inherited: dict | None = None):
    """``(path, cell, inherited)`` for every dict under ``tree`` that holds a headline metric as
    mean ± sd; ``inherited`` holds the ``parameters`` and ``train_seconds`` of the enclosing cells."""
    inherited = {**(inherited or {}), **{k: tree[k] for k in ("parameters", "train_seconds") if k in tree}}
    if any(_is_mean_sd(tree.get(m)) for m in HEADLINE):
        yield path, tree, inherited
        return
    for key, value in tree.items():
        if key not in _SKIP and isinstance(value, dict) and not _is_mean_sd(value):
            yield from _cells(value, path + (str(key),), inherited)


def _summary(record: dict) -> dict | None:
    metrics = record["metrics"]
    return metrics.get("summary") or metrics.get("models")


def leaderboard(directory: str | Path | None = None) -> list[dict]:
    """One row per summary cell of every record (see the module docstring), baselines without
    attention first within each record."""
    rows = []
    for name in list_results(directory):
        if name in UNSUMMARISED:
            continue
        record = load_result(name, directory)
        summary = _summary(record)
        if summary is None:
            raise ValueError(
                f"the record {name!r} has no 'summary' (or 'models') of its runs; summarise them "
                f"with attention.results.mean_sd, or add it to leaderboard.UNSUMMARISED with a reason"
            )
        found = []
        for path, cell, inherited in _cells(summary):
            metric = next(m for m in HEADLINE if _is_mean_sd(cell.get(m)))
            value = cell[metric]
            seconds, parameters = inherited.get("train_seconds"), inherited.get("parameters")
            found.append(
                {
                    "record": name,
                    "entry": " / ".join(path),
                    "metric": metric,
                    "mean": value["mean"],
                    "sd": value["sd"],
                    "n": value["n"],
                    "parameters": round(parameters["mean"]) if _is_mean_sd(parameters) else parameters,
                    "train_seconds": seconds["mean"] if _is_mean_sd(seconds) else seconds,
                    "attention": not (path and path[0] in NO_ATTENTION or path and path[-1] in NO_ATTENTION),
                    "command": record["command"],
                    "machine": record["machine"],
                    "torch": record["versions"]["torch"],
                }
            )
        if not found:
            raise ValueError(
                f"the record {name!r} has a summary but no cell with a headline metric {HEADLINE} as mean ± sd"
            )
        rows += sorted(found, key=lambda r: r["attention"])  # stable: baselines first, then the record's order
    return rows


def format_leaderboard(rows: list[dict], digits: int = 3) -> str:
    """The rows as a plain-text table (the chapter prints it): record, entry, metric, mean ± sd,
    seeds, parameters, mean training seconds per run, attention or not; then, once per record,
    the command, machine and torch version it was recorded with."""
    lines = [
        f"{'record':<24} {'entry':<34} {'metric':<13} {'mean ± sd':>17} {'n':>2} {'params':>10} "
        f"{'train s':>8} attention"
    ]
    for r in rows:
        sd = "" if r["sd"] is None else f" ± {r['sd']:.{digits}f}"
        params = "" if r["parameters"] is None else f"{r['parameters']:,}"
        seconds = "" if r["train_seconds"] is None else f"{r['train_seconds']:.0f}"
        lines.append(
            f"{r['record']:<24} {r['entry'][:34]:<34} {r['metric']:<13} {r['mean']:>9.{digits}f}{sd:<8} "
            f"{r['n']:>2} {params:>10} {seconds:>8} {'yes' if r['attention'] else 'no'}"
        )
    lines.append("")
    for record in dict.fromkeys(r["record"] for r in rows):
        r = next(x for x in rows if x["record"] == record)
        machine = ", ".join(f"{k} {v}" for k, v in r["machine"].items())
        lines.append(f"{record:<24} {r['command']}  ({machine}; torch {r['torch']})")
    return "\n".join(lines)


def t_quantile(p: float, dof: float) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``dof`` degrees of freedom (any real
    dof > 0): bisection on its distribution function, itself Simpson's rule over the density."""

    if not 0.5 < p < 1 or dof <= 0:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and dof > 0, got p={p}, dof={dof}")
    log_norm = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)

    def density(x: float) -> float:
        return math.exp(log_norm - (dof + 1) / 2 * math.log1p(x * x / dof))

    def cdf(x: float, steps: int = 400) -> float:  # 0.5 + the integral over [0, x], x >= 0
        h = x / steps
        total = density(0.0) + density(x) + sum((4 if i % 2 else 2) * density(i * h) for i in range(1, steps))
        return 0.5 + total * h / 3

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, 2 * high
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def welch_interval(a: dict, b: dict | float, level: float = 0.95) -> tuple[float, float | None, float | None]:
    """``(difference, low, high)``: mean of ``a`` − mean of ``b`` (each ``{"mean", "sd", "n"}``, as
    :func:`attention.results.mean_sd` gives) with Welch's ``level`` interval over the seeds,
    ``± t · √(sd_a²/n_a + sd_b²/n_b)`` at Welch–Satterthwaite's degrees of freedom; ``low`` and
    ``high`` are None where a side has one seed.

    ``b`` may be a plain number, a baseline that no seed moves (chance, the majority class, the
    share uniform weights give): the interval is then Student's one-sample interval of ``a``'s
    mean, ``± t · sd_a/√n_a`` at ``n_a − 1`` degrees of freedom."""
    if isinstance(b, bool) or not isinstance(b, (dict, int, float)):
        raise TypeError(f"welch_interval: b must be a mean_sd summary or a number, got {type(b).__name__}")
    if not isinstance(b, dict):
        b = {"mean": float(b), "sd": 0.0, "n": math.inf}
    diff = a["mean"] - b["mean"]
    if a["sd"] is None or b["sd"] is None or a["n"] < 2 or b["n"] < 2:
        return diff, None, None
    va, vb = a["sd"] ** 2 / a["n"], b["sd"] ** 2 / b["n"]
    se = (va + vb) ** 0.5
    if se == 0:
        return diff, diff, diff
    dof = (va + vb) ** 2 / (va**2 / (a["n"] - 1) + (0.0 if vb == 0 else vb**2 / (b["n"] - 1)))
    half = t_quantile(0.5 + level / 2, dof) * se
    return diff, diff - half, diff + half


def welch_text(a: dict, b: dict | float, digits: int = 3, level: float = 0.95) -> str:
    """``a − b`` with its Welch interval (:func:`welch_interval`) and whether the interval holds 0,
    e.g. ``"+0.330 [+0.112, +0.548], clear of 0"``; a side with one seed gives no interval; ``b``
    may be a fixed baseline (a number), as in :func:`welch_interval`."""
    diff, lo, hi = welch_interval(a, b, level)
    if lo is None:
        return f"{diff:+.{digits}f} (one seed: no interval)"
    verdict = "clear of 0" if lo > 0 or hi < 0 else "holds 0"
    return f"{diff:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}], {verdict}"


def attention_gains(rows: list[dict], level: float = 0.95) -> list[dict]:
    """With attention against without, wherever a record holds both: for each baseline row (an
    entry of :data:`NO_ATTENTION`), every row of the same record and metric whose entry differs
    only in that part of the path (``"hsk / none+feed"`` against ``"hsk / global-dot+feed"``).

    Each gain is ``difference`` = mean with attention − mean without, with a ``level`` interval
    over the seeds: Welch's, ``± t · √(sd_a²/n_a + sd_b²/n_b)`` with Welch–Satterthwaite's degrees
    of freedom (None where a side has one seed). The interval says how far another set of seeds
    could move the difference, not how far another test set could (chapter 10's paired bootstrap
    answers that, where a record keeps the translations)."""
    out = []
    for base in (r for r in rows if not r["attention"]):
        parts = base["entry"].split(" / ")
        at = next(i for i, p in enumerate(parts) if p in NO_ATTENTION)
        for row in rows:
            other = row["entry"].split(" / ")
            if not (
                row["attention"]
                and row["record"] == base["record"]
                and row["metric"] == base["metric"]
                and len(other) == len(parts)
                and all(a == b for i, (a, b) in enumerate(zip(other, parts)) if i != at)
            ):
                continue
            diff, low, high = welch_interval(row, base, level)
            out.append(
                {
                    "record": row["record"],
                    "entry": row["entry"],
                    "baseline": base["entry"],
                    "metric": row["metric"],
                    "difference": diff,
                    "low": low,
                    "high": high,
                    "n": (row["n"], base["n"]),
                    "beyond_interval": low is not None and (low > 0 or high < 0),
                }
            )
    return out
