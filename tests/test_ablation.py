"""The chapter-9 ablation: variants, parameter budget, reproducibility, the recorded results; chapter 3's
convergence run (attention/studies/convergence.py)."""

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest

from attention import experiments, results
from attention.models import count_parameters
from attention.studies import ablation, convergence
from attention.studies.ablation import (
    BUDGETS,
    CONVERGED_STUDY,
    CONVERGED_TEST_STUDY,
    REFERENCE,
    SMALL_STUDY,
    TEST_STUDY,
    VARIANTS,
    Variant,
    build_variant,
    match_budget,
)
from attention.studies.base import run_study, study_status


def _never(study, piece, data, device):
    pytest.fail(f"ran {piece.key}, which the registry holds")


def regenerates(study, directory, same_wall=True):
    """The study's record, copied alone into ``directory`` (no partial files), is a finished study:
    every piece done, and the record built again from its rows has the same numbers."""
    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", directory)
    record = results.load_result(study.name, directory)
    status = study_status(study, directory)
    assert status["missing"] == [] and len(status["done"]) == len(study.pieces(study.recipe))
    again = run_study(dataclasses.replace(study, run=_never), directory, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["recipe"], again["seeds"], again["command"]) == (record["recipe"], record["seeds"], record["command"])
    if same_wall:
        assert again["wall_seconds"] == record["wall_seconds"] and again.get("notes") == record.get("notes")
    assert not (directory / "partial").exists()  # nothing was run, so nothing was kept
    return again


def test_variants_cover_every_score_and_placement():
    names = [v.name for v in VARIANTS]
    assert len(names) == len(set(names)) == 41
    assert not any(v.local and v.attention == "location" for v in VARIANTS)
    for score in ("dot", "general", "concat", "scaled_dot", "cosine", "additive"):
        for where in ("global", "local-m", "local-p"):
            assert f"{where}-{score}+feed" in names and f"{where}-{score}" in names
    assert {"none", "none+feed", "bahdanau-additive", "global-location+feed"} <= set(names)


@pytest.fixture(scope="module")
def dates():
    return experiments.dates_data(n=200)


def test_every_variant_fits_the_parameter_budget(dates):
    target = count_parameters(build_variant(REFERENCE, dates, 24, 2, embed_dim=24))
    for v in VARIANTS:
        h = match_budget(v, dates, 24, 2)
        got = count_parameters(build_variant(v, dates, h, 2, embed_dim=24))
        assert abs(got - target) <= 0.10 * target, (v.name, h, got, target)


def test_match_budget_refuses_the_impossible(dates):
    with pytest.raises(ValueError, match="no hidden size within 0% of"):
        match_budget(Variant("concat", "p", False), dates, 24, 2, tolerance=0.0)


def test_same_seed_same_results_and_the_record_says_how(tmp_path):
    names = ["global-general+feed", "local-p-dot"]
    study = TEST_STUDY.with_recipe(variants=names)
    a = run_study(study, tmp_path)
    b = run_study(study, tmp_path / "again", write=False)  # trained again elsewhere: built, not written
    assert not (tmp_path / "again" / "ablation-test.json").exists()
    assert not (results.RESULTS_DIR / "ablation-test.json").exists()

    def strip(rows):
        return [{k: v for k, v in r.items() if "seconds" not in k} for r in rows]

    assert strip(a["metrics"]["results"]) == strip(b["metrics"]["results"])
    saved = results.load_result("ablation-test", tmp_path)  # written through the registry, schema-checked
    assert saved == json.loads(json.dumps(a))
    assert saved["seeds"] == [0] and saved["recipe"] == BUDGETS["test"] | {"budget": "test", "variants": names}
    assert saved["command"] == "python -m attention ablation --budget test"
    assert {"torch", "attention", "sacrebleu", "python"} <= set(saved["versions"])
    rows = saved["metrics"]["results"]
    assert [r["variant"] for r in rows] == names and saved["metrics"]["reference"] == REFERENCE.name
    assert rows[1]["local"] == "p" and rows[1]["attention"] == "dot" and not rows[1]["input_feeding"]
    assert "bleu" not in rows[0]  # the test budget trains no HSK model
    assert saved["wall_seconds"] == round(sum(r["dates_train_seconds"] for r in rows), 1)
    with pytest.raises(ValueError, match=r"unknown variants \['huge'\]"):
        study_status(TEST_STUDY.with_recipe(variants=["huge"]), tmp_path)


def test_a_budget_runs_every_variant_baselines_and_luongs_scores_first():
    keys = [p.key for p in SMALL_STUDY.pieces(SMALL_STUDY.recipe)]
    assert sorted(keys) == sorted(f"{v.name}/seed0" for v in VARIANTS)
    assert keys[:5] == [
        "none+feed/seed0",
        "none/seed0",
        "bahdanau-additive/seed0",
        "global-dot+feed/seed0",
        "global-dot/seed0",
    ]
    scores = [k.split("/")[0].split("-")[-1].removesuffix("+feed") for k in keys[3:]]
    assert list(dict.fromkeys(scores)) == list(ablation.BUDGET_ORDER)
    assert SMALL_STUDY.recipe == BUDGETS["small"] | {"budget": "small"}


def test_the_small_budgets_record_regenerates_from_itself(tmp_path):
    # its wall time, recorded before the budgets were studies, timed the whole run (data and
    # evaluation included); the study adds up the training seconds of its rows
    again = regenerates(SMALL_STUDY, tmp_path, same_wall=False)
    rows = again["metrics"]["results"]
    assert again["wall_seconds"] == round(sum(r["train_seconds"] + r["dates_train_seconds"] for r in rows), 1)


def test_the_converged_record_regenerates_from_itself(tmp_path):
    regenerates(CONVERGED_STUDY, tmp_path)


def test_the_convergence_record_regenerates_from_itself(tmp_path):
    regenerates(convergence.STUDY, tmp_path)


def test_recorded_ablation_is_complete_and_fair():
    record = results.load_result("ablation-small")
    rows = {r["variant"]: r for r in record["metrics"]["results"]}
    assert set(rows) == {v.name for v in VARIANTS}
    ref = rows[REFERENCE.name]["parameters"]
    for name, r in rows.items():
        assert abs(r["parameters"] - ref) <= 0.10 * ref, name
        assert 0 <= r["bleu"] <= 100 and (r["aer_aligned"] is None) == (r["attention"] is None)
    assert record["command"] == "python -m attention ablation --budget small"
    assert record["recipe"] == BUDGETS["small"] | {"budget": "small"} and "torch" in record["versions"]


def _fake_run(bleu):
    return {
        "bleu": bleu,
        "signature": "nrefs:1|case:lc",
        "by_length": [{"bucket": "1-6", "n": 5, "bleu": bleu + 1}],
        "joined_bleu": {"2": bleu / 2, "3": bleu / 3},
        "epochs_run": 10,
        "best_epoch": 7,
        "train_seconds": 2.0,
        "stopped": "early stopping",
        "parameters": 100,
        "history": [],
    }


def test_convergence_resumes_and_records_mean_and_sd_over_seeds(tmp_path):
    from attention.results import PartialRuns

    recipe = dict(convergence.CONVERGENCE)
    assert convergence.STUDY.recipe == recipe and not hasattr(experiments, "convergence")
    stamp = convergence.STUDY.stamp  # what the study's partial file is stamped with: the recipe, seeds aside
    done = PartialRuns("hsk-convergence", stamp(recipe, ""), tmp_path)
    other = PartialRuns("hsk-convergence", stamp(recipe | {"lr": 1.0}, ""), tmp_path)
    other.add("RNNsearch/seed0", _fake_run(99.0))  # another recipe: never reused
    for seed in recipe["seeds"]:
        done.add(f"encoder-decoder/seed{seed}", _fake_run(2.0 + seed))
        if seed != recipe["seeds"][-1]:
            done.add(f"RNNsearch/seed{seed}", _fake_run(4.0 + 2 * seed))
    reloaded = convergence.STUDY.store("", tmp_path)  # the study's partial file is that one
    assert len(reloaded) == 2 * len(recipe["seeds"]) - 1 and "RNNsearch/seed0" in reloaded
    assert reloaded.get("RNNsearch/seed0")["bleu"] == 4.0
    last = recipe["seeds"][-1]
    assert study_status(convergence.STUDY, tmp_path)["missing"] == [f"RNNsearch/seed{last}"]
    reloaded.add(f"RNNsearch/seed{last}", _fake_run(4.0 + 2 * last))
    record = run_study(dataclasses.replace(convergence.STUDY, run=_never), tmp_path)  # nothing to train
    assert results.load_result("hsk-convergence", tmp_path) == record
    rnn = record["metrics"]["models"]["RNNsearch"]
    assert rnn["bleu"]["values"] == [4.0, 6.0, 8.0] and rnn["bleu"]["mean"] == 6.0 and rnn["bleu"]["sd"] == 2.0
    assert rnn["by_length"][0]["bleu"]["mean"] == 7.0 and rnn["converged"] is True
    assert rnn["runs"]["2"] == _fake_run(8.0)  # each seed's run as it was kept, under its seed
    assert record["seeds"] == recipe["seeds"] and record["recipe"] == recipe
    assert record["wall_seconds"] == 2.0 * 6 and record["command"] == "python -m attention convergence"


def test_partial_runs_refuse_non_finite_numbers(tmp_path):
    from attention.results import PartialRuns

    with pytest.raises(ValueError, match="non-finite numbers at"):
        PartialRuns("x", {}, tmp_path).add("a", {"bleu": float("nan")})


def test_converged_ablation_writes_its_record_only_when_complete(tmp_path):
    assert run_study(CONVERGED_TEST_STUDY, tmp_path, only=["*/seed0"]) is None  # seed 1 still missing
    assert not (tmp_path / "ablation-converged-test.json").exists()
    assert (tmp_path / "partial" / "ablation-converged-test-dates.jsonl").exists()  # one partial file per pair
    ran = []

    def counting(study, piece, data, device):
        ran.append(piece.key)
        return ablation._converged_run(study, piece, data, device)

    record = run_study(dataclasses.replace(CONVERGED_TEST_STUDY, run=counting), tmp_path)
    assert ran == ["dates/global-general+feed/seed1", "dates/local-p-dot/seed1"]  # only seed 1 ran
    summary = record["metrics"]["summary"]["dates"]["global-general+feed"]
    assert summary["bleu"]["n"] == 2 and len(summary["bleu"]["values"]) == 2
    assert {r["seed"] for r in record["metrics"]["runs"]} == {0, 1}
    assert "global-dot" in record["metrics"]["trimmed"]["dates"] and results.load_result(
        "ablation-converged-test", tmp_path
    )
    assert record["metrics"]["data"]["dates"]["test"] == len(experiments.dates_data(n=200, seed=0).test)


def test_partial_runs_are_read_back_and_a_line_cut_short_is_run_again(tmp_path):
    from attention.results import PartialRuns

    a = PartialRuns("shared", {"lr": 1}, tmp_path)  # one writer: the study's runner
    a.add("hsk/x/seed0", {"bleu": 1.0})
    a.add("hsk/x/seed1", {"bleu": 2.0})
    with a.path.open("a") as f:
        f.write('{"key": "hsk/x/seed2", "recipe": {"lr": 1}, "res')  # a crash while writing
    b = PartialRuns("shared", {"lr": 1}, tmp_path)  # the next run reads what the last one kept
    assert b.get("hsk/x/seed0") == {"bleu": 1.0} and b.get("hsk/x/seed1") == {"bleu": 2.0}
    assert "hsk/x/seed2" not in b and len(b) == 2


def test_status_lists_done_and_missing_pieces(tmp_path):
    run_study(CONVERGED_TEST_STUDY, tmp_path, only=["*/seed0"])
    status = study_status(CONVERGED_TEST_STUDY, tmp_path)
    assert status["done"] == ["dates/global-general+feed/seed0", "dates/local-p-dot/seed0"]
    assert status["missing"] == ["dates/global-general+feed/seed1", "dates/local-p-dot/seed1"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "attention",
            "ablation",
            "--budget",
            "converged-test",
            "--status",
            "--results-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "ablation-converged-test: 2 runs done, 2 missing" in out and "missing dates/local-p-dot/seed1" in out
    assert "ablation-small" not in out  # --budget chooses the study


def test_a_pairs_pieces_survive_a_change_to_another_pairs_recipe(tmp_path):
    run_study(CONVERGED_TEST_STUDY, tmp_path, only=["*/seed0"])
    assert len(study_status(CONVERGED_TEST_STUDY, tmp_path)["done"]) == 2
    changed = CONVERGED_TEST_STUDY.with_recipe(ding_n=17000, patience=9)
    assert len(study_status(changed, tmp_path)["done"]) == 2  # Ding/HSK keys: dates pieces kept
    changed = CONVERGED_TEST_STUDY.with_recipe(dates_hidden_dim=12)
    assert study_status(changed, tmp_path)["done"] == []  # their own recipe changed: redone


def test_raising_the_epoch_cap_keeps_pieces_that_stopped_early_and_redoes_capped_ones(tmp_path):
    study = CONVERGED_TEST_STUDY
    store = study.store("dates", tmp_path)
    assert store.path == tmp_path / "partial" / "ablation-converged-test-dates.jsonl"
    store.add("dates/global-general+feed/seed0", {"best_epoch": 1, "stopped": "early stopping: no better ..."})
    store.add("dates/local-p-dot/seed0", {"best_epoch": 2, "stopped": "max_epochs=2 reached"})
    assert len(study_status(study, tmp_path)["done"]) == 2
    assert study_status(study.with_recipe(max_epochs={"dates": 5}), tmp_path)["done"] == [
        "dates/global-general+feed/seed0"
    ]
    assert study_status(study.with_recipe(max_epochs={"dates": 1}), tmp_path)["done"] == []  # a lower cap: redo all
    assert (
        study_status(study.with_recipe(max_epochs={"dates": 5}, dates_n=300), tmp_path)["done"] == []
    )  # nothing reused


def test_beyond_spread_compares_the_gap_with_the_two_sds_added():
    from attention.results import beyond_spread, difference, mean_sd

    a, b = mean_sd([5.0, 5.5, 6.0]), mean_sd([3.0, 3.5, 4.0])  # sd 0.5 each, gap 2.0 > 1.0
    assert beyond_spread(a, b) and difference(a, b) == "+2.00 (beyond the seed spread)"
    c = mean_sd([4.0, 4.5, 5.0])  # gap 1.0, not larger than 0.5 + 0.5
    assert not beyond_spread(a, c) and difference(c, a) == "-1.00 (within the seed spread)"
    with pytest.raises(ValueError, match="single value"):
        beyond_spread(mean_sd([1.0]), a)
