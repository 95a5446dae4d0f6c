"""The one Study (attention/studies/base.py): resuming, kept models, the shared helpers, the command
line built from the registry, and the pieces run on a local two-worker Dask cluster giving the
record of the serial run."""

import dataclasses
import json
import sys

import cloudpickle
import pytest

from attention import experiments as ex
from attention import results
from attention.models import count_parameters
from attention.studies import base
from attention.studies.base import (
    Piece,
    Study,
    run_study,
    size_to_budget,
    study_status,
    summarise_variants,
    training_row,
)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import this file


def _data(recipe, group):
    return ex.dates_data(n=recipe["n"])


def _run(study, piece, data, device):
    if piece.variant == "boom":
        raise RuntimeError("this piece fails on purpose")
    model = ex.build_model(data, attention=piece.variant, embed_dim=8, hidden_dim=8, seed=piece.seed).to(device)
    history = ex.fit(
        model, data, epochs=study.recipe["epochs"], batch_size=16, seed=piece.seed, device=device, progress=False
    )
    return {"bleu": ex.evaluate(model, data)["bleu"].score, **training_row(history, model, valid="bleu")}, model


def _summarise(study, runs, data):
    return {
        "summary": summarise_variants(runs, ("bleu", "valid_bleu", "best_epoch")),
        "runs": runs,
        "test": len(data().test),
    }


TOY = Study(
    "toy-dates",
    "toy",
    "a tiny study of the tests",
    {"seeds": [0, 1], "variants": ["additive", "dot"], "epochs": 2, "n": 120},
    _run,
    _summarise,
    data=_data,
    keep=("additive",),
)


def _untimed(value):
    """The record without what a clock decides (training seconds, wall time, date)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in ("train_seconds", "wall_seconds", "created")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_a_study_resumes_from_its_partial_file_and_keeps_seed_0s_model(tmp_path):
    assert run_study(TOY, tmp_path, only=["*/seed0"]) is None  # half the pieces: no record yet
    assert study_status(TOY, tmp_path) == {
        "done": ["additive/seed0", "dot/seed0"],
        "missing": ["additive/seed1", "dot/seed1"],
    }
    assert (tmp_path / "models" / "toy-dates-additive-seed0.pt").exists()
    assert not (tmp_path / "models" / "toy-dates-dot-seed0.pt").exists()  # not in keep
    ran = []
    original = TOY.run

    def counting(study, piece, data, device):
        ran.append(piece.key)
        return original(study, piece, data, device)

    record = run_study(dataclasses.replace(TOY, run=counting), tmp_path)
    assert ran == ["additive/seed1", "dot/seed1"]  # the done pieces were not run again
    assert record["metrics"]["test"] == len(ex.dates_data(n=120).test) and len(record["metrics"]["runs"]) == 4
    assert record["code"]["library"] and record["command"] == "python -m attention toy"
    # the record alone (no partial file) is a finished study: nothing runs, the same record comes back
    (tmp_path / "partial" / "toy-dates.jsonl").unlink()
    again = run_study(
        dataclasses.replace(TOY, run=lambda *a: pytest.fail("ran a recorded piece")), tmp_path, write=False
    )
    assert again["metrics"] == record["metrics"]
    # another recipe is another study: the record's rows are not reused
    assert study_status(TOY.with_recipe(epochs=3), tmp_path)["done"] == []
    # more seeds are the same study: the recorded seeds' rows are kept, only the new seed runs
    ran.clear()
    more = run_study(dataclasses.replace(TOY.with_recipe(seeds=[0, 1, 2]), run=counting), tmp_path, write=False)
    assert ran == ["additive/seed2", "dot/seed2"]
    assert more["seeds"] == [0, 1, 2] and more["metrics"]["runs"][:4] == record["metrics"]["runs"]
    assert study_status(TOY.with_recipe(seeds=[1]), tmp_path)["done"] == ["additive/seed1", "dot/seed1"]


def test_on_a_local_two_worker_cluster_the_record_equals_the_serial_runs(tmp_path):
    pytest.importorskip("distributed")
    serial = run_study(TOY, tmp_path / "serial")
    parallel = run_study(TOY, tmp_path / "cluster", workers=2)
    assert _untimed(parallel["metrics"]) == _untimed(serial["metrics"])
    assert parallel["recipe"] == serial["recipe"] and parallel["seeds"] == serial["seeds"]
    assert (tmp_path / "cluster" / "models" / "toy-dates-additive-seed0.pt").exists()


def test_a_failing_piece_on_the_cluster_loses_only_itself(tmp_path):
    pytest.importorskip("distributed")
    study = TOY.with_recipe(variants=["additive", "boom"], seeds=[0])
    with pytest.raises(RuntimeError, match=r"(?s)1 of 2 pieces failed .*boom/seed0: RuntimeError: this piece fails"):
        run_study(study, tmp_path, workers=2)
    assert study_status(study, tmp_path) == {"done": ["additive/seed0"], "missing": ["boom/seed0"]}


def test_only_must_match_a_piece_and_workers_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"--only \['nope/\*'\] matches no piece .*'additive/seed0'"):
        run_study(TOY, tmp_path, only=["nope/*"])
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        run_study(TOY, tmp_path, workers=0)


def test_size_to_budget_training_row_and_summaries():
    data = ex.dates_data(n=60)
    target = count_parameters(ex.build_model(data, embed_dim=8, hidden_dim=16))
    assert size_to_budget(lambda h: ex.build_model(data, embed_dim=8, hidden_dim=h), target, range(8, 33)) == 16
    with pytest.raises(ValueError, match=r"toy: no hidden size within 1% of \d+ parameters \(best 8: \d+\)"):
        size_to_budget(lambda h: ex.build_model(data, embed_dim=8, hidden_dim=h), target, [8], 0.01, "toy")
    runs = [
        {"variant": "a", "seed": s, "x": float(s), "best_epoch": 1, "epochs_run": 2 + s, "parameters": 5}
        for s in range(3)
    ]
    runs.append({"variant": "b", "seed": 0, "x": 1.0, "best_epoch": 2, "epochs_run": 2, "parameters": 7})
    summary = summarise_variants(runs, ("x",))
    assert summary["a"]["x"]["mean"] == 1.0 and summary["a"]["converged"] and summary["a"]["parameters"] == 5
    assert summary["b"]["x"]["sd"] is None and not summary["b"]["converged"]  # best epoch = the last


def test_every_record_of_a_study_is_declared_once_and_its_command_is_a_subcommand():
    from attention.studies.registry import STUDIES, commands

    recorded = set(results.list_results())
    assert set(STUDIES) <= recorded | {"ablation-test", "ablation-converged-test"}, set(STUDIES) - recorded
    assert recorded - set(STUDIES) == {"benchmark"}  # the one record a tool, not a study, writes
    for name, study in STUDIES.items():
        assert study.name == name and study.command.split()[0] in commands()
        assert isinstance(study.pieces(study.recipe)[0], Piece)
    assert json.loads(json.dumps(base.COMMAND)) == "python -m attention "


def test_no_partial_file_outlives_its_record():
    """Once a record is written its rows are the pieces: a partial file beside it is stale."""
    from attention.studies.registry import STUDIES

    partial = results.RESULTS_DIR / "partial"
    recorded = set(results.list_results())
    stale = sorted(
        p.name
        for p in partial.glob("*.jsonl")
        if any(p.stem == name or p.stem.startswith(name + "-") for name in recorded & set(STUDIES))
    )
    assert not stale, f"delete these partial files (their records are written): {stale}"
