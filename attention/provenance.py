"""Which code produced a number: fingerprints of the package's code, and a record's code stamp.

Two questions, two answers:

* **Would this code train other weights?** :func:`code_fingerprint` hashes the *meaning* of the
  modules that decide a trained model — the mechanisms, the models, the data and tasks, the
  training loop (:data:`WEIGHT_CODE`: the library less its presentation, ``viz`` and ``widgets``):
  each file is parsed and its syntax tree hashed without docstrings, comments or layout, so a
  docstring edit, a comment or a reformat keeps every cached model
  (:func:`attention.experiments.cache_key`), while any change of code retrains.
* **What produced this record?** :func:`code_stamp` is what every record of the registry stores
  (``attention/results/<name>.json``, key ``code``): the fingerprints of the library's weight code
  and of the studies (``attention/studies/``), and the git commit of the checkout when there is one
  (with ``modified: true`` when the package's files differ from it).
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
from functools import lru_cache
from pathlib import Path

__all__ = ["PACKAGE_ROOT", "WEIGHT_CODE", "STUDY_CODE", "code_fingerprint", "normalised_source", "code_stamp"]

PACKAGE_ROOT = Path(__file__).resolve().parent
#: the files whose code decides trained weights, relative to the package (globs), and what is left out
WEIGHT_CODE = {
    "include": ["*.py", "data/*.py", "tasks/*.py", "models/*.py"],
    "exclude": ["viz.py", "widgets.py", "__main__.py", "provenance.py"],
}
#: the studies' code: what turns trained models into a record
STUDY_CODE = {"include": ["studies/*.py"], "exclude": []}


def normalised_source(text: str) -> str:
    """The syntax tree of a module's source without docstrings (``ast.dump``: no comments, no
    layout, no line numbers)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def _files(root: Path, spec: dict) -> list[Path]:
    files = {p for pattern in spec["include"] for p in root.glob(pattern)}
    return sorted(p for p in files if p.relative_to(root).as_posix() not in spec["exclude"])


def code_fingerprint(root: str | Path = PACKAGE_ROOT, spec: dict | None = None) -> str:
    """sha256 over the normalised source (:func:`normalised_source`) of the files ``spec`` selects
    (default :data:`WEIGHT_CODE`) under ``root`` (default this package), each with its path."""
    root = Path(root)
    digest = hashlib.sha256()
    for path in _files(root, WEIGHT_CODE if spec is None else spec):
        digest.update(
            path.relative_to(root).as_posix().encode()
            + b"\0"
            + normalised_source(path.read_text(encoding="utf-8")).encode()
            + b"\0"
        )
    return digest.hexdigest()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PACKAGE_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@lru_cache(maxsize=1)
def _commit() -> tuple[str | None, bool]:
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return None, False
    changed = _git("status", "--porcelain", "--", str(PACKAGE_ROOT))
    return commit, bool(
        changed and any(not line.endswith(".json") and "results/" not in line for line in changed.splitlines())
    )


def code_stamp() -> dict:
    """``{"library", "studies", "commit", "modified"}``: what a record stores of the code that made it."""
    commit, modified = _commit()
    return {
        "library": code_fingerprint()[:16],
        "studies": code_fingerprint(spec=STUDY_CODE)[:16],
        "commit": commit,
        "modified": modified,
    }
