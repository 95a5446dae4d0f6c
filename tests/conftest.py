"""Shared fixtures: every test that builds a module runs on every available device.

Also the table of notebook execution times printed at the end of the run
(filled by tests/test_notebook_outputs.py).
"""

import os
import pickle
import re
from pathlib import Path

import pytest
import torch
import yaml

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

# (notebook, seconds or None, source) rows, one per notebook whose outputs were compared.
NOTEBOOK_TIMES = pytest.StashKey[list]()
SLOW_NOTEBOOK_S = 120  # the most one notebook may take on the 2-core CPU (tests/test_time_budget.py)
BOOK_BUDGET_S = 20 * 60  # the most all of them together may take
ROOT = Path(__file__).resolve().parents[1]
SPHINX_ENV = ROOT / "_build" / ".doctrees" / "environment.pickle"


def toc_docs() -> list[str]:
    """Every document of _toc.yml, root first, without suffix."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    found: list[str] = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    docs = [re.sub(r"\.(md|ipynb|rst)$", "", f) for f in found]
    return list(dict.fromkeys(docs))


def build_run_times():
    """docname -> seconds that the site build spent executing it (myst-nb's own record).

    myst-nb runs nbclient with record_timing=False, so the cells of its executed
    copies keep the timestamps of the committed execution; its run time per page is
    in the Sphinx environment (``env.nb_metadata[docname]["exec_data"]["runtime"]``).
    """
    try:
        with open(SPHINX_ENV, "rb") as f:
            env = pickle.load(f)
        return {
            doc: data["exec_data"]["runtime"]
            for doc, data in getattr(env, "nb_metadata", {}).items()
            if data.get("exec_data")
        }
    except Exception:  # no build, or an environment this code cannot read: no times
        return {}


@pytest.fixture(params=DEVICES)
def device(request):
    """CPU always; CUDA when present (Colab, the GPU runner)."""
    return torch.device(request.param)


def load_or_skip(loader, *args):
    """``loader(*args)`` for a test of a real corpus: skipped when offline with nothing cached,
    except on CI (``$CI`` set), where a corpus that cannot be fetched is a failure."""
    try:
        return loader(*args)
    except RuntimeError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"offline and not cached: {e}")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def notebook_times(request):
    """The list that tests/test_notebook_outputs.py appends its timing rows to."""
    return request.config.stash.setdefault(NOTEBOOK_TIMES, [])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rows = config.stash.get(NOTEBOOK_TIMES, [])
    if not rows:
        return
    tr = terminalreporter
    tr.section("notebook execution times")
    width = max(len(name) for name, _, _ in rows)
    tr.write_line(f"{'notebook':<{width}}  {'seconds':>8}  source")
    for name, seconds, source in sorted(rows):
        shown = "?" if seconds is None else f"{seconds:.1f}"
        slow = "  > 2 min" if seconds is not None and seconds > SLOW_NOTEBOOK_S else ""
        tr.write_line(f"{name:<{width}}  {shown:>8}  {source}{slow}")
    tr.write_line(
        "site build: myst-nb's run time of the whole execution (kernel start included);"
        " executed by the test: first cell start -> last cell reply (nbclient's timestamps)"
    )


#: test files that take minutes, mostly waiting on a browser or a kernel: collected first, so that on
#: two processes (``-n 2 --dist loadfile``, scripts/test.sh) the other process runs everything else
#: meanwhile instead of one process starting them last
SLOW_FILES = ("test_site.py", "test_widgets.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = Path(str(item.fspath)).name
        return SLOW_FILES.index(name) if name in SLOW_FILES else len(SLOW_FILES)

    items.sort(key=rank)  # stable: the order inside each file, and of the other files, is kept


def regenerated(study, directory) -> tuple[dict, dict]:
    """``(record, again)``: ``study``'s record copied alone into ``directory``, and the record
    :func:`~attention.studies.base.run_study` rebuilds from its rows alone (a piece that would
    train fails the test); every piece must be done."""
    import dataclasses
    import shutil

    from attention import results
    from attention.studies.base import run_study, study_status

    def never(study, piece, data, device):
        pytest.fail(f"ran {piece.key}, which the registry holds")

    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", directory)
    record = results.load_result(study.name, directory)
    assert study_status(study, directory)["missing"] == []
    return record, run_study(dataclasses.replace(study, run=never), directory, write=False)
