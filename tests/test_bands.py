"""The declared bands of the checked cells that print live training (attention/studies/bands.py).

A band lets the decimal numbers of a banded line move; the rest compares exactly. Each band
must be measured (the record ``notebook-bands``: every CPU kernel setting x three seeds, each
with an empty model cache) and must reject the cell's broken run.
"""

import re

import nbformat
import pytest

from attention.results import load_result
from attention.studies import bands

BAND = [{"lines": "^score", "abs": [0.05, 0.01]}]
REF = "4 runs\nscore 0.900 and 0.100 over 1,234 items\nthe end\n"


def test_numbers_inside_their_band_are_accepted():
    assert bands.compare_banded(REF, REF.replace("0.900", "0.861").replace("0.100", "0.109"), BAND) is None
    # column widths may move with the digits
    assert (
        bands.compare_banded(
            "score  0.90 and 0.10 over 1,234", "score 10.90 and 0.10 over 1,234", [{"lines": "^score", "abs": 11}]
        )
        is None
    )


@pytest.mark.parametrize(
    "executed, why",
    [
        (REF.replace("0.900", "0.849"), "outside the band 0.900 ± 0.05"),
        (REF.replace("0.100", "0.111"), "outside the band 0.100 ± 0.01"),
        (REF.replace("1,234", "1,235"), "whole number 1,234 became 1,235"),
        (REF.replace("and", "or"), "differs outside its numbers"),
        (REF.replace("4 runs", "5 runs"), "line 1 (not banded) differs"),
        (REF + "one more line\n", "3 lines committed, 4 executed"),
        (REF.replace("0.900", "nan"), "differs outside its numbers"),
    ],
)
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
    assert entry["committed"] == bands.banded_values(reference, declared), (
        "the committed output changed since the band was measured: python -m attention bands"
    )
    caps = {key.split("/")[0] for key in entry["runs"]}
    seeds = {key.split("/")[1] for key in entry["runs"]}
    assert len(caps) >= min(3, len(record["recipe"]["capabilities"])) and "default" in caps, caps
    assert len(seeds) >= 3, seeds
    # every measured run lies inside the band: the band is at least the spread it came from
    for key, run in entry["runs"].items():
        assert bands.compare_banded(reference, run["stdout"], declared) is None, (key, run["matches"])
    # ... and the broken run does not, on any banded line
    broken = entry["broken"]["stdout"]
    assert bands.compare_banded(reference, broken, declared) is not None, (
        f"the broken run ({entry['broken']['replace']}) passes the band: it is too wide"
    )
    if len(broken.splitlines()) == len(reference.splitlines()):
        for ref_line, broken_line in zip(reference.splitlines(), broken.splitlines()):
            if any(re.search(b["lines"], ref_line) for b in declared):
                assert bands.compare_banded(ref_line, broken_line, declared) is not None, (
                    f"the broken run's line {broken_line!r} lies inside the band of {ref_line!r}"
                )


# --- the measurement, declared as a Study (attention.studies.bands.STUDY) ---------------------------
def test_the_record_regenerates_from_the_record_alone(tmp_path):
    """The committed record, copied without its partial file: its cells give back every piece (their
    stdout), and summarising them against the committed notebooks gives its metrics, wall time and
    notes again (no notebook is executed)."""
    import json
    import shutil

    from attention.results import RESULTS_DIR
    from attention.studies.base import run_study, study_status

    study = bands.STUDY
    shutil.copy(RESULTS_DIR / "notebook-bands.json", tmp_path)
    record = load_result("notebook-bands", tmp_path)
    if record["recipe"] != study.recipe:
        pytest.skip(
            f"measured under CPU kernels {record['recipe']['capabilities']}; this processor has "
            f"{study.recipe['capabilities']}"
        )
    keys = [p.key for p in study.pieces(study.recipe)]
    assert study_status(study, tmp_path) == {"done": keys, "missing": []}
    assert len(keys) == len({p for p, _, _ in CELLS}) * (3 * len(study.recipe["capabilities"]) + 1)
    again = run_study(study, tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["wall_seconds"], again.get("notes"), again["recipe"], again["command"]) == (
        record["wall_seconds"],
        record.get("notes"),
        record["recipe"],
        record["command"],
    )
    # a cell's run missing from the record is a piece to run again; a changed stdout changes the metrics
    cell = next(iter(record["metrics"]["cells"]))
    stem = cell.split("/")[0]
    del record["metrics"]["cells"][cell]["runs"]["default/seed1"]
    (tmp_path / "notebook-bands.json").write_text(json.dumps(record))
    assert study_status(study, tmp_path)["missing"] == [f"{stem}/default/seed1"]
    record = load_result("notebook-bands")
    record["metrics"]["cells"][cell]["runs"]["default/seed0"]["stdout"] += "one more line\n"
    (tmp_path / "notebook-bands.json").write_text(json.dumps(record))
    assert (
        run_study(study, tmp_path, write=False)["metrics"]["cells"][cell]["runs"]["default/seed0"]["matches"]
        != record["metrics"]["cells"][cell]["runs"]["default/seed0"]["matches"]
    )


def test_each_piece_executes_its_notebook_under_its_setting_and_seed(tmp_path, monkeypatch):
    """Through the study's runner, with the notebook execution replaced: every capability x seed runs
    with its own environment and an empty model cache, the broken run with the cells' replacements;
    the record measures them."""
    from attention.studies.base import run_study, study_status

    study = bands.STUDY.with_recipe(seeds=[0, 2], capabilities=["default", "avx2"])
    calls = []

    def execute(path, env, patches=()):
        calls.append((path.stem, {k: env.get(k) for k in ("ATEN_CPU_CAPABILITY", "ATTENTION_SEED")}, list(patches)))
        assert env["ATTENTION_DEVICE"] == "cpu" and "bands-models-" in env["ATTENTION_MODEL_DIR"]
        nb = nbformat.read(path, as_version=4)
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            if bands.cell_bands(cell):
                text = bands._stdout(cell)
                if patches:  # broken: every decimal number far off
                    text = re.sub(r"\d+\.\d+", lambda m: f"{float(m[0]) + 50:.3f}", text)
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        return nb

    monkeypatch.setattr(bands, "_execute", execute)
    assert run_study(study, tmp_path, only=["*/default/*"]) is None
    stems = sorted({p.stem for p, _, _ in CELLS})
    assert study_status(study, tmp_path)["missing"] == [
        f"{s}/{k}" for s in stems for k in ("avx2/seed0", "avx2/seed2", "broken")
    ]
    record = run_study(study, tmp_path)
    assert sorted(
        (stem, env["ATEN_CPU_CAPABILITY"], env["ATTENTION_SEED"]) for stem, env, patches in calls if not patches
    ) == sorted((s, c, str(seed)) for s in stems for c in ("default", "avx2") for seed in (0, 2))
    broken = [(stem, env, patches) for stem, env, patches in calls if patches]
    assert [(stem, env["ATTENTION_SEED"]) for stem, env, _ in broken] == [(s, "0") for s in stems]
    assert all(env["ATEN_CPU_CAPABILITY"] is None for _, env, _ in broken)
    for path, number, cell in CELLS:
        entry = record["metrics"]["cells"][f"{path.stem}/{number}"]
        assert sorted(entry["runs"]) == ["avx2/seed0", "avx2/seed2", "default/seed0", "default/seed2"]
        assert all(run["matches"] is None for run in entry["runs"].values())
        assert entry["largest_deviation"] == [[0.0] * len(row) for row in entry["committed"]]
        assert entry["broken"]["rejected_by"] is not None and entry["broken"]["replace"] == list(
            bands.cell_broken(cell)
        )
        assert [(number, *bands.cell_broken(cell)) in p for s, _, p in broken if s == path.stem] == [True]
    assert record["recipe"]["capabilities"] == ["default", "avx2"] and record["command"] == "python -m attention bands"
