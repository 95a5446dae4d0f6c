"""Every "mean ± sd" that a notebook prints in a compared output cell (tag nbval-check-output) is a
mean ± sd of the results registry, at the digits printed (or the same as a percentage): results
over seeds are read from the registry, never typed or recomputed into other numbers."""

import json
import re
from pathlib import Path

import pytest

from attention import results

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAIR = re.compile(r"(?<![\d.])(-?\d+\.\d+) ± (\d+\.\d+)")


def registry_pairs(directory=None) -> set[tuple[float, float]]:
    pairs = set()

    def walk(x):
        if isinstance(x, dict):
            if {"mean", "sd", "n"} <= set(x) and x["sd"] is not None:
                pairs.add((x["mean"], x["sd"]))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for name in results.list_results(directory):
        walk(results.load_result(name, directory)["metrics"])
    return pairs


def _matches(printed: str, value: float) -> bool:
    digits = len(printed.split(".")[1])
    return any(abs(round(scale * value, digits) - float(printed)) <= 0.5 * 10**-digits + 1e-12 for scale in (1, 100))


def unknown_pairs(text: str, pairs) -> list[str]:
    """The ``mean ± sd`` of ``text`` that are no mean ± sd of ``pairs`` at the printed digits."""
    return [f"{m} ± {s}" for m, s in PAIR.findall(text) if not any(_matches(m, a) and _matches(s, b) for a, b in pairs)]


def test_the_check_can_fail():
    pairs = {(0.7654, 0.0123)}
    assert unknown_pairs("accuracy 0.765 ± 0.012, 76.5 ± 1.2 %", pairs) == []
    assert unknown_pairs("accuracy 0.766 ± 0.012 and 0.765 ± 0.020", pairs) == ["0.766 ± 0.012", "0.765 ± 0.020"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_print_only_registry_results(notebook):
    pairs = registry_pairs()
    nb = json.loads(notebook.read_text())
    bad = []
    for cell in nb["cells"]:
        if "nbval-check-output" not in cell["metadata"].get("tags", []):
            continue
        for output in cell.get("outputs", []):
            bad += unknown_pairs("".join(output.get("text", [])), pairs)
    assert not bad, f"{notebook.name} prints mean ± sd values the registry does not hold: {bad[:5]}"
