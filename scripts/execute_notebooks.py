"""Re-execute notebooks, so the outputs the tests compare are fresh.

    python scripts/execute_notebooks.py                 # every notebook, in place
    python scripts/execute_notebooks.py notebooks/04-scores.ipynb
    python scripts/execute_notebooks.py --out DIR --jobs 2   # executed copies into DIR, two at once

Run after changing a notebook or the package, then commit the notebooks. Uses
the live (kernel) path of the explorers, as a reader's Jupyter or Colab would.
``--out`` leaves the notebooks alone and writes the executed copies into DIR: the test
command uses it to execute every notebook a second time under another CPU kernel setting
(``ATEN_CPU_CAPABILITY``) and compare that execution with the committed notebooks too.
A copy whose cell raised is still written (the comparison reports the error); the exit
status is 1 when any notebook failed to execute.
"""

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path, out: Path | None) -> tuple[str, float, str | None]:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    error = None
    try:
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    except CellExecutionError as e:
        error = str(e).splitlines()[-1] if str(e) else type(e).__name__
        if out is None:
            raise
    nbformat.write(nb, (out / path.name) if out else path)
    return path.name, time.perf_counter() - start, error


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*")
    parser.add_argument("--out", type=Path, help="write executed copies here instead of in place")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once")
    args = parser.parse_args(argv)
    os.environ.pop("ATTENTION_BOOK_STATIC", None)
    os.environ.setdefault("ATTENTION_DEVICE", "cpu")  # saved outputs are the CPU's
    notebooks = [Path(p).resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, seconds, error in pool.map(execute, notebooks, [args.out] * len(notebooks)):
            print(f"{name}: {seconds:.1f} s" + (f"  FAILED: {error}" if error else ""), flush=True)
            failed += error is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
