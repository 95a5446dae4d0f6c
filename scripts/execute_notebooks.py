"""Re-execute notebooks in place, so the outputs the tests compare are fresh.

    python scripts/execute_notebooks.py                 # every notebook
    python scripts/execute_notebooks.py notebooks/04-scores.ipynb

Run after changing a notebook or the package, then commit the notebooks. Uses
the live (kernel) path of the explorers, as a reader's Jupyter or Colab would.
"""
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def main(paths: list[str]) -> None:
    os.environ.pop("ATTENTION_BOOK_STATIC", None)
    os.environ.setdefault("ATTENTION_DEVICE", "cpu")  # saved outputs are the CPU's
    notebooks = [Path(p) for p in paths] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        nbformat.write(nb, path)
        print(f"{path.name}: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
