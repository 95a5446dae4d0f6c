"""The install path a Colab reader takes: the package from a built wheel (not editable), no
repository on disk, the working directory elsewhere.

The wheel is built from a copy of what packaging needs (pyproject.toml, README.md, LICENSE,
attention/) in a temporary folder, so nothing is written into the repository.
"""

import email.parser
import glob
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attention"
#: package files that are not meant to ship: resumable partial runs, bytecode
NOT_SHIPPED = ("results/partial/", "__pycache__/")


def _package_files() -> set[str]:
    files = set()
    for path in PACKAGE.rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and not any(part in rel for part in NOT_SHIPPED) and not rel.endswith(".pyc"):
            files.add(rel)
    return files


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(PACKAGE, src / "attention", ignore=shutil.ignore_patterns("__pycache__", "partial"))
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("attention_nlp-*.whl")
    return path


@pytest.fixture(scope="module")
def unpacked(wheel, tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    return site


def test_the_wheel_carries_every_module_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_package_files() - names)
    assert not missing, f"files of the package missing from the wheel (pyproject.toml package-data?): {missing}"
    assert any(n.startswith("attention/results/models/") and n.endswith(".pt") for n in names)
    assert "attention/data/aspect_check.tsv" in names


def test_the_wheel_admits_newer_pythons(wheel):
    with zipfile.ZipFile(wheel) as z:
        meta_name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(meta_name).decode())
    spec = SpecifierSet(meta["Requires-Python"])
    for version in ("3.10", "3.11", "3.12", "3.13", "3.14"):
        assert spec.contains(version), f"Requires-Python {spec} refuses Python {version}"
    required = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    # Colab's torch and ipywidgets are never replaced: torch is a floor only, ipywidgets an extra
    assert not any(r.startswith(("torch==", "torch<", "ipywidgets")) for r in required), required


def _python_3_13() -> str | None:
    """A working Python 3.13 interpreter: on PATH, or one of pyenv's (whose shim may not be active)."""
    candidates = [shutil.which("python3.13")] + sorted(
        glob.glob(os.path.expanduser("~/.pyenv/versions/3.13*/bin/python3.13"))
    )
    for exe in filter(None, candidates):
        done = subprocess.run(
            [exe, "-c", "import sys; print(sys.version_info[:2] == (3, 13))"], capture_output=True, text=True
        )
        if done.returncode == 0 and done.stdout.strip() == "True":
            return exe
    return None


def test_pip_on_python_3_13_accepts_the_wheel(wheel):
    exe = _python_3_13()
    if exe is None:
        pytest.skip("no Python 3.13 interpreter here: test_the_wheel_admits_newer_pythons checks the metadata")
    done = subprocess.run(
        [exe, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Would install attention-nlp-0" in done.stdout, done.stdout[-2000:]


CHECK_PACKAGE = """
import json, sys
import attention
from attention import results
from attention.checkpoints import load_checkpoint
from attention.data.aspects import CHECK_FILE
assert attention.__file__.startswith(sys.argv[1]), attention.__file__
names = results.list_results()
for name in names:
    results.load_result(name)
models = sorted(p for p in results.RESULTS_DIR.joinpath("models").glob("*.pt"))
for path in models:
    load_checkpoint(path)
assert CHECK_FILE.exists(), CHECK_FILE
print(json.dumps({"records": len(names), "checkpoints": len(models)}))
"""


def _env(unpacked: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATTENTION_BOOK_STATIC", "PYTHONPATH")}
    env["PYTHONPATH"] = str(unpacked)  # the unpacked wheel comes before the editable install
    env["ATTENTION_DEVICE"] = "cpu"
    return env


def test_the_installed_package_reads_its_records_checkpoints_and_data(unpacked, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", CHECK_PACKAGE, str(unpacked)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(unpacked),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["records"] == len(list((PACKAGE / "results").glob("*.json")))
    assert counts["checkpoints"] == len(list((PACKAGE / "results" / "models").glob("*.pt")))


def test_a_notebook_that_reads_recorded_results_runs_from_the_wheel_outside_the_repository(unpacked, tmp_path):
    """Chapter 11's notebook reads the whole registry; it runs with the package from the wheel and
    the working directory outside the repository."""
    nb = nbformat.read(ROOT / "notebooks" / "11-closing.ipynb", as_version=4)
    guard = nbformat.v4.new_code_cell(
        f"import attention\nassert attention.__file__.startswith({str(unpacked)!r}), attention.__file__"
    )
    nb.cells.insert(1, guard)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    env = _env(unpacked)
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
