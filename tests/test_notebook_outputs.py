"""The notebooks' checked outputs, from the one execution of a CI run: the site build's.

``jupyter-book build`` (``execute_notebooks: force``) executes every notebook, and
myst-nb writes each executed copy to ``_build/jupyter_execute/notebooks/<name>.ipynb``.
For every code cell the test suite checks (tag ``nbval-check-output``), the outputs
of that copy must equal the committed notebook's, compared as ``pytest --nbval-lax``
does (nbval 0.11.0): streams of one name merged (``\\r``/``\\b`` applied), every
output field and MIME type compared except metadata, execution counts, tracebacks,
PNG/JPEG images and widget views; a field's values compared in order. nbval's own
helpers do the merging and read the cell markers; the comparison itself is a method
of nbval's pytest item for a cell it runs in a kernel, which cannot be called on its
own, so it is restated here, small.

When the copy is missing, or older than the notebook or than a file of attention/,
the test executes the notebook itself as scripts/execute_notebooks.py does (live
explorers, CPU, in notebooks/), so ``pytest tests`` alone still proves that the
notebooks run. Each notebook's execution time goes to the table printed at the end
of the run (tests/conftest.py).
"""

import copy
import difflib
import os
import pprint
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from conftest import build_run_times
from nbclient import NotebookClient
from nbval.plugin import (
    coalesce_streams,
    find_comment_markers,
    find_metadata_tags,
    transform_streams_for_comparison,
)

from attention.studies.bands import cell_bands, compare_banded

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BUILD = ROOT / "_build"
# myst-nb's executed copies; $ATTENTION_EXECUTED names another folder of executed copies (the test
# command's second execution, under another CPU kernel setting), which must then hold every notebook
EXECUTED = Path(os.environ.get("ATTENTION_EXECUTED") or BUILD / "jupyter_execute" / "notebooks")
OTHER_EXECUTION = bool(os.environ.get("ATTENTION_EXECUTED"))

# nbval's IPyNbFile.skip_compare without --nbdime: never compared.
SKIP_COMPARE = (
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",  # model ids are random
    "image/png",
    "image/jpeg",
)


# --------------------------------------------------------------------------- comparison


def cell_options(cell):
    """nbval's options of a code cell under --nbval-lax (tags, then comment markers)."""
    options = defaultdict(bool, find_metadata_tags(cell.metadata))
    options.update(dict(find_comment_markers(cell.source)))
    options.setdefault("check", False)
    return options


def _by_field(outputs):
    """nbval's flattening: field or MIME type -> its values, in output order."""
    fields = defaultdict(list)
    outputs = transform_streams_for_comparison(coalesce_streams(copy.deepcopy(list(outputs))))
    for output in outputs:
        for key, value in output.items():
            if key in SKIP_COMPARE:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP_COMPARE:
                        fields[mime].append(data)
            else:
                fields[key].append(value)
    return fields


def _show(value):
    if isinstance(value, str):
        if len(value) > 2000:
            return value[:2000] + f"... <{len(value) - 2000} more characters>"
        return value
    return pprint.pformat(value, width=100)


def _diff(reference, executed):
    lines = difflib.unified_diff(
        _show(reference).splitlines(keepends=True),
        _show(executed).splitlines(keepends=True),
        fromfile="committed notebook",
        tofile="executed",
        lineterm="",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip("\n")


def compare_outputs(reference, executed, bands=()):
    """None when nbval --nbval-lax would accept ``executed`` for ``reference``; else why not.

    ``bands`` (a cell's declared bands, :mod:`attention.studies.bands`): on the banded lines of its
    ``stdout``, the decimal numbers may move within the band; everything else compares exactly."""
    ref, test = _by_field(reference), _by_field(executed)
    if set(ref) - set(test):
        return f"missing output fields in the execution: {sorted(set(ref) - set(test))}"
    if set(test) - set(ref):
        return f"unexpected output fields in the execution: {sorted(set(test) - set(ref))}"
    for key, ref_values in ref.items():
        test_values = test[key]
        if len(ref_values) != len(test_values):
            shown = lambda values: "\n".join(_show(v) for v in values)  # noqa: E731
            return (
                f"{len(ref_values)} '{key}' output(s) committed, {len(test_values)} executed\n"
                f"--- committed notebook:\n{shown(ref_values)}\n--- executed:\n{shown(test_values)}"
            )
        for ref_value, test_value in zip(ref_values, test_values):
            if bands and key == "stdout":
                why = compare_banded(ref_value, test_value, bands)
                if why:
                    return f"'{key}' differs beyond its declared bands: {why}"
            elif ref_value != test_value:
                return f"'{key}' differs:\n{_diff(ref_value, test_value)}"
    return None


def _code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def _label(name, number, cell):
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    return f"{name}, code cell {number} ({first.strip()[:70]!r})"


def source_mismatch(name, committed, executed):
    """Why ``executed`` is not an execution of ``committed``'s code; None when it is."""
    ours, theirs = _code_cells(committed), _code_cells(executed)
    if len(ours) != len(theirs):
        return f"{name}: {len(ours)} code cells committed, {len(theirs)} in the executed copy"
    for number, (a, b) in enumerate(zip(ours, theirs)):
        if a.source != b.source:
            return f"{_label(name, number, a)}: the executed copy ran other code\n{_diff(a.source, b.source)}"
    return None


def output_mismatches(name, committed, executed):
    """One message per code cell nbval would fail: it raised, or its checked outputs differ."""
    problems = []
    for number, (ref, test) in enumerate(zip(_code_cells(committed), _code_cells(executed))):
        options = cell_options(ref)
        if options["skip"]:
            continue
        errors = [o for o in test.outputs if o.output_type == "error"]
        if errors and not options["check_exception"]:  # nbval: a cell that raises fails
            problems.append(f"{_label(name, number, ref)}: raised {errors[0].ename}: {errors[0].evalue}")
            continue
        if ref.execution_count is None:  # nbval: an unrun reference is not compared
            if ref.outputs:
                problems.append(f"{_label(name, number, ref)}: unrun cell has saved outputs")
            continue
        if options["check"]:
            why = compare_outputs(ref.outputs, test.outputs, cell_bands(ref))
            if why:
                problems.append(f"{_label(name, number, ref)}: outputs differ, {why}")
    return problems


# --------------------------------------------------------------------------- the executions


def _mtimes(path):
    """(mtime, file) for the notebook and every file of the package (bytecode aside)."""
    files = [path, *(p for p in (ROOT / "attention").rglob("*") if "__pycache__" not in p.parts and p.suffix != ".pyc")]
    for file in files:
        try:
            if file.is_file():
                yield file.stat().st_mtime, file
        except FileNotFoundError:  # removed meanwhile
            pass


def stale_reason(path, executed_copy):
    """Why the build's executed copy of ``path`` cannot stand for it; None when it can."""
    if not executed_copy.exists():
        return f"no executed copy {executed_copy.relative_to(ROOT)}"
    built = executed_copy.stat().st_mtime
    newest, file = max(_mtimes(path))
    if newest > built:
        return f"{file.relative_to(ROOT)} is newer than {executed_copy.relative_to(ROOT)}"
    return None


def cell_timestamps_span(nb):
    """Seconds from the first cell's start to the last cell's reply, from nbclient's timestamps."""
    starts, replies = [], []
    for cell in _code_cells(nb):
        stamps = cell.metadata.get("execution", {})
        if "iopub.execute_input" in stamps and "shell.execute_reply" in stamps:
            starts.append(datetime.fromisoformat(stamps["iopub.execute_input"]))
            replies.append(datetime.fromisoformat(stamps["shell.execute_reply"]))
    return (max(replies) - min(starts)).total_seconds() if starts else None


def execute(path, monkeypatch):
    """Execute ``path`` like scripts/execute_notebooks.py: live explorers, CPU, cwd notebooks/."""
    monkeypatch.delenv("ATTENTION_BOOK_STATIC", raising=False)
    monkeypatch.setenv("ATTENTION_DEVICE", "cpu")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb, cell_timestamps_span(nb) or time.perf_counter() - start


@pytest.fixture(scope="module")
def build_times():
    return build_run_times()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_checked_outputs_match_the_committed_notebook(path, monkeypatch, notebook_times, build_times):
    committed = nbformat.read(path, as_version=4)
    executed_copy = EXECUTED / path.name
    why_not_build = stale_reason(path, executed_copy)
    if OTHER_EXECUTION:
        assert executed_copy.exists(), f"$ATTENTION_EXECUTED={EXECUTED} has no {path.name}"
        why_not_build = None
    if why_not_build is None:
        executed = nbformat.read(executed_copy, as_version=4)
        if OTHER_EXECUTION:
            seconds = cell_timestamps_span(executed)
            notebook_times.append((path.name, seconds, f"executed into {EXECUTED.name}"))
        else:
            seconds = build_times.get(f"notebooks/{path.stem}")
            notebook_times.append((path.name, seconds, "site build"))
        source = f"the executed copy {executed_copy}"
    else:
        print(f"{path.name}: {why_not_build}; executing it")
        executed, seconds = execute(path, monkeypatch)
        notebook_times.append((path.name, seconds, "executed by the test"))
        source = f"this test's execution ({why_not_build})"

    stale = source_mismatch(path.name, committed, executed)
    assert stale is None, f"{stale}\nRebuild the site (bash scripts/build-site.sh) or delete {EXECUTED}."
    problems = output_mismatches(path.name, committed, executed)
    if problems:
        pytest.fail(
            f"checked outputs of {path.name} differ in {source} from the committed notebook"
            " (re-execute it with scripts/execute_notebooks.py if the change is meant):\n\n" + "\n\n".join(problems),
            pytrace=False,
        )


# --------------------------------------------------------------------------- the comparison can fail

PREFACE = ROOT / "notebooks" / "01-preface.ipynb"


def _doctored(nb, number, change):
    nb = copy.deepcopy(nb)
    change(_code_cells(nb)[number])
    return nb


def _checked_and_unchecked(nb):
    code = _code_cells(nb)
    checked = next(
        i
        for i, c in enumerate(code)
        if cell_options(c)["check"] and c.outputs and any(o.output_type == "stream" for o in c.outputs)
    )
    unchecked = next(i for i, c in enumerate(code) if not cell_options(c)["check"] and c.outputs)
    return checked, unchecked


def test_a_checked_cell_that_printed_something_else_is_reported():
    committed = nbformat.read(PREFACE, as_version=4)
    checked, _ = _checked_and_unchecked(committed)

    def reprint(cell):
        stream = next(o for o in cell.outputs if o.output_type == "stream")
        stream.text = stream.text.replace("0", "9", 1) + "one more line\n"

    problems = output_mismatches(PREFACE.name, committed, _doctored(committed, checked, reprint))
    assert len(problems) == 1
    assert f"01-preface.ipynb, code cell {checked} " in problems[0]
    assert "'stdout' differs" in problems[0] and "+one more line" in problems[0]


def test_a_cell_that_raised_is_reported():
    committed = nbformat.read(PREFACE, as_version=4)
    _, unchecked = _checked_and_unchecked(committed)

    def fail(cell):
        cell.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="boom", traceback=[])]

    [problem] = output_mismatches(PREFACE.name, committed, _doctored(committed, unchecked, fail))
    assert f"code cell {unchecked} " in problem and "raised ValueError: boom" in problem


def test_an_unchecked_cell_may_differ():
    committed = nbformat.read(PREFACE, as_version=4)
    _, unchecked = _checked_and_unchecked(committed)

    def rewrite(cell):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="anything\n")]

    assert output_mismatches(PREFACE.name, committed, _doctored(committed, unchecked, rewrite)) == []


def test_only_images_differing_is_no_mismatch():
    def figure(png, text="<Figure size 640x480 with 1 Axes>"):
        return [nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": text})]

    assert compare_outputs(figure("iVBORw0KGgoAAAA"), figure("iVBORw0KGgoBBBB")) is None
    assert "'text/plain' differs" in compare_outputs(figure("A"), figure("A", "<Figure size 10x10>"))


def test_streams_are_merged_and_fields_must_match():
    def out(*texts, name="stdout"):
        return [nbformat.v4.new_output("stream", name=name, text=t) for t in texts]

    assert compare_outputs(out("a\nb\n"), out("a\n", "b\n")) is None
    assert compare_outputs(out("50%\r100%\n"), out("100%\n")) is None
    assert "unexpected output fields" in compare_outputs(out("a\n"), out("a\n") + out("!\n", name="stderr"))
    assert "missing output fields" in compare_outputs(out("a\n"), [])


def test_a_copy_of_other_code_is_stale():
    committed = nbformat.read(PREFACE, as_version=4)
    _, unchecked = _checked_and_unchecked(committed)
    edited = _doctored(committed, unchecked, lambda c: setattr(c, "source", c.source + "\nprint(1)"))
    assert source_mismatch(PREFACE.name, committed, committed) is None
    assert "ran other code" in source_mismatch(PREFACE.name, committed, edited)


def test_timestamps_give_first_start_to_last_reply():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1"), nbformat.v4.new_code_cell("2")])
    nb.cells[0].metadata.execution = {
        "iopub.execute_input": "2026-01-01T00:00:01.000000Z",
        "shell.execute_reply": "2026-01-01T00:00:02.000000Z",
    }
    nb.cells[1].metadata.execution = {
        "iopub.execute_input": "2026-01-01T00:00:02.500000Z",
        "shell.execute_reply": "2026-01-01T00:02:03.000000Z",
    }
    assert cell_timestamps_span(nb) == 122.0
    assert cell_timestamps_span(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])) is None
