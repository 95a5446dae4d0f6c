"""Declared bands for the checked cells that print live-training numbers, and their measurement.

A notebook's checked cell (tag ``nbval-check-output``) compares exactly with the committed
notebook, unless it prints numbers from training run live in the notebook: those differ between
processors (PyTorch picks its CPU kernels by processor) and between seeds. Such a cell declares
its band in its metadata::

    "attention": {"bands": [{"lines": "^global-general", "abs": [0.15, 0.1]}],
                  "broken": ["epochs=recipe[\\"dates_epochs\\"]", "epochs=1"]}

* ``lines``: a regular expression; on the lines it matches (in the committed output) every
  decimal number (one with a point) may differ from the committed one by ``abs`` (one value for
  all, or one per decimal number of the line, in order). Everything else compares exactly: the
  other lines, the text around the numbers, the integers (counts, sizes), the number of lines.
* ``broken``: ``[old, new]``, a replacement in the cell's source that breaks the run on purpose
  (one epoch, uniform attention ...): its output must fall outside the band.

``python -m attention bands`` measures every banded cell: it executes the cell's notebook under
every CPU kernel setting this processor has (``ATEN_CPU_CAPABILITY=default``, ``avx2``,
``avx512``) and three seeds (``$ATTENTION_SEED``, :func:`attention.device.setup`), each with an
empty model cache, and once broken; it records the numbers in the results registry
(``notebook-bands``). ``tests/test_bands.py`` fails when a declared band is narrower than the
largest deviation measured, or wide enough to take the broken run.

The measurement is declared as a :class:`~attention.studies.base.Study` (``STUDY``): one piece per
execution, ``<notebook>/<capability>/seed<s>`` and ``<notebook>/broken`` (``--only '09-global-local/*'``
runs one notebook's); each piece executes its notebook in the process that runs it (a Dask worker
under ``--workers``), the environment variables set for that execution only.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import tempfile
import time
from pathlib import Path

import torch

from .base import Piece, Study

__all__ = [
    "NUMBER",
    "cell_bands",
    "cell_broken",
    "compare_banded",
    "banded_values",
    "capabilities",
    "banded_cells",
    "BANDS",
    "STUDY",
    "STUDIES",
]

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?")
BANDS = {"seeds": [0, 1, 2], "record": "notebook-bands"}


def _is_decimal(token: str) -> bool:
    return "." in token


def _parse(token: str) -> float:
    return float(token.replace(",", ""))


def cell_bands(cell) -> list[dict]:
    """The bands a code cell declares (``metadata.attention.bands``), checked for form."""
    bands = (cell.get("metadata", {}).get("attention") or {}).get("bands") or []
    for band in bands:
        if set(band) != {"lines", "abs"}:
            raise ValueError(f"a band has exactly the keys 'lines' and 'abs', got {sorted(band)}")
        re.compile(band["lines"])
        limits = band["abs"] if isinstance(band["abs"], list) else [band["abs"]]
        if not limits or any(not isinstance(a, (int, float)) or isinstance(a, bool) or not a > 0 for a in limits):
            raise ValueError(f"a band's 'abs' is a positive number or a list of them, got {band['abs']!r}")
    return bands


def cell_broken(cell) -> tuple[str, str] | None:
    """The ``[old, new]`` replacement that breaks a banded cell's run on purpose, if declared."""
    broken = (cell.get("metadata", {}).get("attention") or {}).get("broken")
    if broken is None:
        return None
    if not (isinstance(broken, list) and len(broken) == 2 and all(isinstance(b, str) for b in broken)):
        raise ValueError(f"'broken' is [old, new], two strings, got {broken!r}")
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    if broken[0] not in source:
        raise ValueError(f"'broken' replaces {broken[0]!r}, which the cell's source does not contain")
    return broken[0], broken[1]


def _band_for(line: str, bands: list[dict]) -> dict | None:
    return next((b for b in bands if re.search(b["lines"], line)), None)


def _limits(band: dict, n: int) -> list[float]:
    limits = band["abs"] if isinstance(band["abs"], list) else [band["abs"]] * n
    return list(limits) + [limits[-1]] * (n - len(limits))


def compare_banded(reference: str, executed: str, bands: list[dict]) -> str | None:
    """None when ``executed`` matches ``reference`` within ``bands``; else the first difference."""
    ref_lines, test_lines = reference.splitlines(), executed.splitlines()
    if len(ref_lines) != len(test_lines):
        return f"{len(ref_lines)} lines committed, {len(test_lines)} executed"
    for number, (ref, test) in enumerate(zip(ref_lines, test_lines), 1):
        band = _band_for(ref, bands)
        if band is None:
            if ref != test:
                return f"line {number} (not banded) differs:\n  committed: {ref}\n  executed:  {test}"
            continue
        ref_text, test_text = NUMBER.split(ref), NUMBER.split(test)
        squash = lambda parts: [" ".join(p.split()) for p in parts]  # noqa: E731 (column widths may move)
        ref_nums, test_nums = NUMBER.findall(ref), NUMBER.findall(test)
        if squash(ref_text) != squash(test_text) or len(ref_nums) != len(test_nums):
            return f"line {number} differs outside its numbers:\n  committed: {ref}\n  executed:  {test}"
        decimals = [i for i, t in enumerate(ref_nums) if _is_decimal(t)]
        limits = _limits(band, len(decimals))
        for i, t in enumerate(ref_nums):
            if not _is_decimal(t) and t != test_nums[i]:
                return f"line {number}: the whole number {t} became {test_nums[i]} (whole numbers compare exactly)"
        for k, i in enumerate(decimals):
            a, b = _parse(ref_nums[i]), _parse(test_nums[i])
            if not _is_decimal(test_nums[i]) or abs(a - b) > limits[k] + 1e-12:
                return (
                    f"line {number}: {test_nums[i]} is outside the band {ref_nums[i]} ± {limits[k]} "
                    f"(declared in the cell's metadata, measured in the record {BANDS['record']!r})\n"
                    f"  committed: {ref}\n  executed:  {test}"
                )
    return None


def banded_values(text: str, bands: list[dict], reference: str | None = None) -> list[list[float]]:
    """The decimal numbers of every banded line of ``text`` (lines chosen on ``reference``, default
    ``text``), one list per banded line."""
    reference = text if reference is None else reference
    rows = []
    for ref, line in zip(reference.splitlines(), text.splitlines()):
        if _band_for(ref, bands) is not None:
            rows.append([_parse(t) for t in NUMBER.findall(line) if _is_decimal(t)])
    return rows


def _stdout(cell) -> str:
    return "".join(
        o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def _code_cells(nb) -> list:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def banded_cells(notebooks: list[Path] | None = None) -> list[tuple[Path, int, dict]]:
    """``(notebook, code cell number, cell)`` of every cell that declares bands."""
    import nbformat

    found = []
    for path in notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for number, cell in enumerate(_code_cells(nb)):
            if cell_bands(cell):
                found.append((path, number, cell))
    return found


def capabilities() -> list[str]:
    """The ``ATEN_CPU_CAPABILITY`` settings this processor can run: ``default``, ``avx2`` where it
    has AVX2, ``avx512`` where it has AVX-512 (x86-64); just ``default`` elsewhere."""
    native = torch.backends.cpu.get_cpu_capability().lower()
    order = ["default", "avx2", "avx512"]
    if native not in order:
        return ["default"]
    return order[: order.index(native) + 1]


def _execute(path: Path, env: dict, patches: list[tuple[int, str, str]] = ()):
    """Execute a copy of ``path`` (its code cells changed by ``patches``, ``(cell, old, new)``) in a
    kernel with ``env`` added to the environment."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    for number, old, new in patches:
        cell = _code_cells(nb)[number]
        cell.source = cell.source.replace(old, new)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(
            nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def _banded_by_notebook() -> dict[Path, list[tuple[int, dict]]]:
    """Every banded notebook (sorted) -> ``(code cell number, cell)`` of its banded cells; read again
    only when a notebook changed."""
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    return _banded_read(tuple((str(p), p.stat().st_mtime_ns) for p in paths))


@functools.lru_cache(maxsize=2)
def _banded_read(stamps: tuple[tuple[str, int], ...]) -> dict[Path, list[tuple[int, dict]]]:
    by_notebook: dict[Path, list] = {}
    for path, number, cell in banded_cells([Path(p) for p, _ in stamps]):
        by_notebook.setdefault(path, []).append((number, cell))
    return by_notebook


def _pieces(recipe: dict) -> list[Piece]:
    """Per banded notebook: every capability x seed of ``recipe``, then one broken execution."""
    pieces = []
    for path in _banded_by_notebook():
        for cap in recipe["capabilities"]:
            for seed in recipe["seeds"]:
                key = f"{path.stem}/{cap}/seed{seed}"
                pieces.append(Piece(key, f"{path.stem}/{cap}", seed, {"key": key}))
        pieces.append(Piece(f"{path.stem}/broken", f"{path.stem}/broken", 0, {"key": f"{path.stem}/broken"}))
    return pieces


def _stamp(recipe: dict, group: str) -> dict:
    """A piece names its capability: it is the same whichever others this processor has."""
    return {k: v for k, v in recipe.items() if k != "capabilities"}


def _notebook(stem: str) -> tuple[Path, list[tuple[int, dict]]]:
    return next((path, entries) for path, entries in _banded_by_notebook().items() if path.stem == stem)


def _run(study: Study, piece: Piece, data, device) -> dict:
    """Execute the piece's notebook (under its kernel setting and seed, or broken) with an empty
    model cache; the stdout of each of its banded cells and the seconds it took."""
    stem, setting = piece.variant.split("/")
    path, entries = _notebook(stem)
    broken = []
    for number, cell in entries:
        if cell_broken(cell) is None:
            raise ValueError(
                f"{path.name}, code cell {number}: a banded cell declares 'broken', "
                "the replacement that shows a broken run falls outside its band"
            )
        broken.append((number, *cell_broken(cell)))
    corpora = Path(os.environ.get("ATTENTION_DATA_DIR") or Path.home() / ".cache" / "attention-nlp")
    env = {"ATTENTION_DEVICE": "cpu", "ATTENTION_DATA_DIR": str(corpora)}
    if setting == "broken":  # one broken execution per notebook, every banded cell of it broken at once
        env, patches = env | {"ATTENTION_SEED": "0"}, broken
    else:
        env, patches = env | {"ATEN_CPU_CAPABILITY": setting, "ATTENTION_SEED": str(piece.seed)}, []
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bands-models-") as models:
        nb = _execute(path, {**env, "ATTENTION_MODEL_DIR": models}, patches)
    code = _code_cells(nb)
    return {"stdout": {str(n): _stdout(code[n]) for n, _ in entries}, "seconds": round(time.perf_counter() - t, 1)}


def _recorded(study: Study, record: dict) -> dict[str, dict]:
    """The pieces a record holds, read back from its ``metrics["cells"]``: a piece counts as done
    when every banded cell of its notebook has its stdout there. The record keeps only the total
    seconds (``wall_seconds``), so each piece read back is given an equal share of it."""
    cells = record["metrics"].get("cells") or {}
    rows = {}
    for piece in study.pieces(study.recipe):
        stem, setting = piece.variant.split("/")
        stdout = {}
        for number, _ in _notebook(stem)[1]:
            entry = cells.get(f"{stem}/{number}")
            if entry is None:
                break
            run = entry["broken"] if setting == "broken" else entry["runs"].get(f"{setting}/seed{piece.seed}")
            if run is None:
                break
            stdout[str(number)] = run["stdout"]
        else:
            rows[piece.key] = {"stdout": stdout}
    for row in rows.values():
        row["seconds"] = (record["wall_seconds"] or 0) / len(rows)
    return rows


def _wall(runs: list[dict]) -> float:
    return round(sum(r["seconds"] for r in runs), 1)


def _summarise(study: Study, runs: list[dict], data) -> dict:
    """Per banded cell: the committed numbers, every run's, the largest deviation, the broken run's."""
    done = {r["key"]: r for r in runs}
    cells = {}
    for path, entries in _banded_by_notebook().items():
        for number, cell in entries:
            bands, reference = cell_bands(cell), _stdout(cell)
            committed = banded_values(reference, bands)
            measured, worst = {}, [[0.0] * len(r) for r in committed]
            for cap in study.recipe["capabilities"]:
                for seed in study.recipe["seeds"]:
                    text = done[f"{path.stem}/{cap}/seed{seed}"]["stdout"][str(number)]
                    values = banded_values(text, bands, reference)
                    measured[f"{cap}/seed{seed}"] = {
                        "stdout": text,
                        "values": values,
                        "matches": compare_banded(reference, text, bands),
                    }
                    for i, (row, ref_row) in enumerate(zip(values, committed)):
                        for j, (v, r) in enumerate(zip(row, ref_row)):
                            worst[i][j] = max(worst[i][j], round(abs(v - r), 6))
            broken = done[f"{path.stem}/broken"]["stdout"][str(number)]
            cells[f"{path.stem}/{number}"] = {
                "notebook": path.name,
                "cell": number,
                "bands": copy.deepcopy(bands),
                "committed": committed,
                "largest_deviation": worst,
                "runs": measured,
                "broken": {
                    "replace": list(cell_broken(cell)),
                    "stdout": broken,
                    "values": banded_values(broken, bands, reference)
                    if len(broken.splitlines()) == len(reference.splitlines())
                    else None,
                    "rejected_by": compare_banded(reference, broken, bands),
                },
            }
    return {"cells": cells}


STUDY = Study(
    BANDS["record"],
    "bands",
    "the declared bands of the notebooks' live-training cells, measured",
    dict(BANDS, capabilities=capabilities()),
    _run,
    _summarise,
    pieces=_pieces,
    stamp=_stamp,
    wall=_wall,
    recorded=_recorded,
    notes="stdout of every banded cell under each CPU kernel setting (ATEN_CPU_CAPABILITY) and seed, each with "
    "an empty model cache, and of the broken run; the largest deviation from the committed output per "
    "decimal number",
)
STUDIES = [STUDY]
