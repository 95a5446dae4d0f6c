"""The declared bands of the checked cells that print live training (attention/studies/bands.py).

A band lets the decimal numbers of a banded line move; the rest compares exactly. Each band
must be measured (the record ``notebook-bands``: every CPU kernel setting x three seeds, each
with an empty model cache) and must reject the cell's broken run.
"""
import re

import nbformat
import pytest

from attention.studies import bands
from attention.results import load_result

BAND = [{"lines": "^score", "abs": [0.05, 0.01]}]
REF = "4 runs\nscore 0.900 and 0.100 over 1,234 items\nthe end\n"


def test_numbers_inside_their_band_are_accepted():
    assert bands.compare_banded(REF, REF.replace("0.900", "0.861").replace("0.100", "0.109"), BAND) is None
    # column widths may move with the digits
    assert bands.compare_banded("score  0.90 and 0.10 over 1,234", "score 10.90 and 0.10 over 1,234",
                                [{"lines": "^score", "abs": 11}]) is None


@pytest.mark.parametrize("executed, why", [
    (REF.replace("0.900", "0.849"), "outside the band 0.900 ± 0.05"),
    (REF.replace("0.100", "0.111"), "outside the band 0.100 ± 0.01"),
    (REF.replace("1,234", "1,235"), "whole number 1,234 became 1,235"),
    (REF.replace("and", "or"), "differs outside its numbers"),
    (REF.replace("4 runs", "5 runs"), "line 1 (not banded) differs"),
    (REF + "one more line\n", "3 lines committed, 4 executed"),
    (REF.replace("0.900", "nan"), "differs outside its numbers"),
])
def test_anything_else_is_refused(executed, why):
    assert why in bands.compare_banded(REF, executed, BAND)


def test_banded_values_reads_the_decimals_of_banded_lines():
    assert bands.banded_values(REF, BAND) == [[0.9, 0.1]]


def test_a_malformed_band_is_refused():
    cell = {"metadata": {"attention": {"bands": [{"lines": "x", "abs": 0}]}}, "source": ""}
    with pytest.raises(ValueError, match="positive number"):
        bands.cell_bands(cell)
    cell = {"metadata": {"attention": {"bands": [{"lines": "x", "abs": 1}], "broken": ["nope", "x"]}}, "source": "a"}
    with pytest.raises(ValueError, match="does not contain"):
        bands.cell_broken(cell)


def test_the_comparison_of_a_banded_cell_uses_its_band():
    from test_notebook_outputs import compare_outputs
    out = lambda text: [nbformat.v4.new_output("stream", name="stdout", text=text)]  # noqa: E731
    assert compare_outputs(out(REF), out(REF.replace("0.900", "0.880")), BAND) is None
    assert "beyond its declared bands" in compare_outputs(out(REF), out(REF.replace("0.900", "0.800")), BAND)
    assert "'stdout' differs" in compare_outputs(out(REF), out(REF.replace("0.900", "0.880")))


CELLS = bands.banded_cells()


def test_some_cell_is_banded_and_every_banded_cell_declares_a_broken_run():
    assert CELLS, "no notebook cell declares a band"
    for path, number, cell in CELLS:
        assert "nbval-check-output" in cell.metadata.get("tags", []), f"{path.name} cell {number}: banded, not checked"
        assert bands.cell_broken(cell) is not None, f"{path.name} cell {number}: no 'broken' replacement"


@pytest.mark.parametrize("path, number, cell", CELLS, ids=[f"{p.stem}-{n}" for p, n, _ in CELLS])
def test_each_band_is_measured_and_rejects_the_broken_run(path, number, cell):
    record = load_result(bands.BANDS["record"])
    entry = record["metrics"]["cells"].get(f"{path.stem}/{number}")
    assert entry is not None, f"{path.name} cell {number} is banded but not measured: python -m attention bands"
    declared = bands.cell_bands(cell)
    assert entry["bands"] == declared, "the band changed since it was measured: python -m attention bands"
    reference = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")
    assert entry["committed"] == bands.banded_values(reference, declared), \
        "the committed output changed since the band was measured: python -m attention bands"
    caps = {key.split("/")[0] for key in entry["runs"]}
    seeds = {key.split("/")[1] for key in entry["runs"]}
    assert len(caps) >= min(3, len(record["recipe"]["capabilities"])) and "default" in caps, caps
    assert len(seeds) >= 3, seeds
    # every measured run lies inside the band: the band is at least the spread it came from
    for key, run in entry["runs"].items():
        assert bands.compare_banded(reference, run["stdout"], declared) is None, (key, run["matches"])
    # ... and the broken run does not, on any banded line
    broken = entry["broken"]["stdout"]
    assert bands.compare_banded(reference, broken, declared) is not None, \
        f"the broken run ({entry['broken']['replace']}) passes the band: it is too wide"
    if len(broken.splitlines()) == len(reference.splitlines()):
        for ref_line, broken_line in zip(reference.splitlines(), broken.splitlines()):
            if any(re.search(b["lines"], ref_line) for b in declared):
                assert bands.compare_banded(ref_line, broken_line, declared) is not None, \
                    f"the broken run's line {broken_line!r} lies inside the band of {ref_line!r}"
