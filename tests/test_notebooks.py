"""Notebook hygiene (CONTRIBUTING.md, "Adding a chapter"): the things the output comparison cannot see.

The checked outputs themselves are compared in tests/test_notebook_outputs.py.
"""

import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = (ROOT / "_toc.yml").read_text()


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_pairs_with_a_chapter_and_is_in_the_toc(path):
    number = re.match(r"\d+", path.name).group()  # "06b-intra-attention" pairs with book/06-*.md
    assert list((ROOT / "book").glob(f"{number}-*.md")), f"no book/{number}-*.md narrative for {path.name}"
    assert f"notebooks/{path.stem}" in TOC, f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_installs_only_the_package_and_only_on_colab(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    first = next(c for c in nb.cells if c.cell_type == "code").source
    assert 'if "google.colab" in sys.modules:' in first
    installs = re.findall(r"!pip install [^\n]*", first)
    assert installs == [f'!pip install -q "attention-nlp @ git+{CONFIG["repository"]["url"]}"'], installs
    assert not re.search(r"install[^\n]*(torch|ipywidgets)", first), "never reinstall Colab's torch/ipywidgets"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_outputs_are_real_and_checked(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "commit the notebook executed (scripts/execute_notebooks.py)"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    checked = [c for c in code if "nbval-check-output" in c.metadata.get("tags", [])]
    assert checked and all(c.outputs for c in checked), "tag deterministic cells nbval-check-output"
