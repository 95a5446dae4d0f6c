"""The chapter-9 ablation: variants, parameter budget, reproducibility, the recorded results."""
import json

import pytest

from attention import experiments, results
from attention.studies.ablation import BUDGETS, REFERENCE, VARIANTS, Variant, build_variant, count, match_budget, run_ablation


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
    target = count(build_variant(REFERENCE, dates, 24, 2, embed_dim=24))
    for v in VARIANTS:
        h = match_budget(v, dates, 24, 2)
        got = count(build_variant(v, dates, h, 2, embed_dim=24))
        assert abs(got - target) <= 0.10 * target, (v.name, h, got, target)


def test_match_budget_refuses_the_impossible(dates):
    with pytest.raises(ValueError, match="no hidden size within 0% of"):
        match_budget(Variant("concat", "p", False), dates, 24, 2, tolerance=0.0)


def test_same_seed_same_results_and_the_record_says_how(tmp_path):
    variants = [Variant("general", None, True), Variant("dot", "p", False)]
    a = run_ablation("test", seed=0, variants=variants, directory=tmp_path)
    b = run_ablation("test", seed=0, variants=variants)  # a partial run: returned, not written
    assert not (results.RESULTS_DIR / "ablation-test.json").exists()
    strip = lambda rows: [{k: v for k, v in r.items() if "seconds" not in k} for r in rows]
    assert strip(a["metrics"]["results"]) == strip(b["metrics"]["results"])
    saved = results.load_result("ablation-test", tmp_path)  # written through the registry, schema-checked
    assert saved == json.loads(json.dumps(a))
    assert saved["seeds"] == [0] and saved["recipe"] == BUDGETS["test"] | {"budget": "test"}
    assert {"torch", "attention", "sacrebleu", "python"} <= set(saved["versions"])
    assert saved["wall_seconds"] > 0
    assert [r["variant"] for r in saved["metrics"]["results"]] == ["global-general+feed", "local-p-dot"]
    with pytest.raises(ValueError, match="unknown budget 'huge'"):
        run_ablation("huge")


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
    return {"bleu": bleu, "signature": "nrefs:1|case:lc", "by_length": [{"bucket": "1-6", "n": 5, "bleu": bleu + 1}],
            "joined_bleu": {"2": bleu / 2, "3": bleu / 3}, "epochs_run": 10, "best_epoch": 7,
            "train_seconds": 2.0, "stopped": "early stopping", "parameters": 100, "history": []}


def test_convergence_resumes_and_records_mean_and_sd_over_seeds(tmp_path):
    from attention.results import PartialRuns
    recipe = dict(experiments.CONVERGENCE)
    done = PartialRuns("hsk-convergence", recipe, tmp_path)
    other = PartialRuns("hsk-convergence", recipe | {"lr": 1.0}, tmp_path)
    other.add("RNNsearch/seed0", _fake_run(99.0))  # another recipe: never reused
    for seed in recipe["seeds"]:
        done.add(f"encoder-decoder/seed{seed}", _fake_run(2.0 + seed))
        if seed != recipe["seeds"][-1]:
            done.add(f"RNNsearch/seed{seed}", _fake_run(4.0 + 2 * seed))
    reloaded = PartialRuns("hsk-convergence", recipe, tmp_path)
    assert len(reloaded) == 2 * len(recipe["seeds"]) - 1 and "RNNsearch/seed0" in reloaded
    assert reloaded.get("RNNsearch/seed0")["bleu"] == 4.0
    last = recipe["seeds"][-1]
    reloaded.add(f"RNNsearch/seed{last}", _fake_run(4.0 + 2 * last))
    record = experiments.convergence(directory=tmp_path)  # every piece is there: nothing to train
    assert results.load_result("hsk-convergence", tmp_path) == record
    rnn = record["metrics"]["models"]["RNNsearch"]
    assert rnn["bleu"]["values"] == [4.0, 6.0, 8.0] and rnn["bleu"]["mean"] == 6.0 and rnn["bleu"]["sd"] == 2.0
    assert rnn["by_length"][0]["bleu"]["mean"] == 7.0 and rnn["converged"] is True
    assert record["seeds"] == recipe["seeds"] and record["recipe"] == recipe


def test_partial_runs_refuse_non_finite_numbers(tmp_path):
    from attention.results import PartialRuns
    with pytest.raises(ValueError, match="non-finite numbers at"):
        PartialRuns("x", {}, tmp_path).add("a", {"bleu": float("nan")})


def test_converged_ablation_writes_its_record_only_when_complete(tmp_path):
    from attention.studies.ablation import run_converged
    assert run_converged("converged-test", seeds=[0], directory=tmp_path) is None  # seed 1 still missing
    assert not (tmp_path / "ablation-converged-test.json").exists()
    record = run_converged("converged-test", directory=tmp_path)  # runs only seed 1
    summary = record["metrics"]["summary"]["dates"]["global-general+feed"]
    assert summary["bleu"]["n"] == 2 and len(summary["bleu"]["values"]) == 2
    assert {r["seed"] for r in record["metrics"]["runs"]} == {0, 1}
    assert "global-dot" in record["metrics"]["trimmed"]["dates"] and results.load_result("ablation-converged-test", tmp_path)


def test_partial_runs_see_the_pieces_another_process_wrote(tmp_path):
    from attention.results import PartialRuns
    a, b = PartialRuns("shared", {"lr": 1}, tmp_path), PartialRuns("shared", {"lr": 1}, tmp_path)
    a.add("hsk/x/seed0", {"bleu": 1.0})
    assert "hsk/x/seed0" in b and b.get("hsk/x/seed0") == {"bleu": 1.0}  # b re-reads the file
    b.add("hsk/x/seed1", {"bleu": 2.0})
    assert "hsk/x/seed1" in a and len(PartialRuns("shared", {"lr": 1}, tmp_path)) == 2


def test_status_lists_done_and_missing_pieces(tmp_path):
    from attention.studies.ablation import converged_status, run_converged
    run_converged("converged-test", seeds=[0], directory=tmp_path)
    status = converged_status("converged-test", tmp_path)
    assert status["done"] == ["dates/global-general+feed/seed0", "dates/local-p-dot/seed0"]
    assert status["missing"] == ["dates/global-general+feed/seed1", "dates/local-p-dot/seed1"]
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "attention", "ablation", "--budget", "converged-test", "--status",
                          "--results-dir", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "2 pieces done, 2 missing" in out and "missing dates/local-p-dot/seed1" in out


def test_a_pairs_pieces_survive_a_change_to_another_pairs_recipe(tmp_path, monkeypatch):
    from attention.studies.ablation import BUDGETS, converged_status, run_converged
    run_converged("converged-test", seeds=[0], directory=tmp_path)
    assert len(converged_status("converged-test", tmp_path)["done"]) == 2
    monkeypatch.setitem(BUDGETS, "converged-test", BUDGETS["converged-test"] | {"ding_n": 17000, "patience": 9})
    assert len(converged_status("converged-test", tmp_path)["done"]) == 2  # Ding/HSK keys: dates pieces kept
    monkeypatch.setitem(BUDGETS, "converged-test", BUDGETS["converged-test"] | {"dates_hidden_dim": 12})
    assert converged_status("converged-test", tmp_path)["done"] == []  # their own recipe changed: redone


def test_raising_the_epoch_cap_keeps_pieces_that_stopped_early_and_redoes_capped_ones(tmp_path, monkeypatch):
    from attention.studies.ablation import BUDGETS, _stores, converged_status
    recipe = BUDGETS["converged-test"]
    store = _stores("converged-test", recipe, tmp_path)["dates"]
    store.add("dates/global-general+feed/seed0", {"best_epoch": 1, "stopped": "early stopping: no better ..."})
    store.add("dates/local-p-dot/seed0", {"best_epoch": 2, "stopped": "max_epochs=2 reached"})
    assert len(converged_status("converged-test", tmp_path)["done"]) == 2
    monkeypatch.setitem(BUDGETS, "converged-test", recipe | {"max_epochs": {"dates": 5}})
    assert converged_status("converged-test", tmp_path)["done"] == ["dates/global-general+feed/seed0"]
    monkeypatch.setitem(BUDGETS, "converged-test", recipe | {"max_epochs": {"dates": 1}})  # a lower cap: redo all
    assert converged_status("converged-test", tmp_path)["done"] == []
    monkeypatch.setitem(BUDGETS, "converged-test", recipe | {"max_epochs": {"dates": 5}, "dates_n": 300})
    assert converged_status("converged-test", tmp_path)["done"] == []  # another recipe: nothing reused


def test_beyond_spread_compares_the_gap_with_the_two_sds_added():
    from attention.results import beyond_spread, difference, mean_sd
    a, b = mean_sd([5.0, 5.5, 6.0]), mean_sd([3.0, 3.5, 4.0])  # sd 0.5 each, gap 2.0 > 1.0
    assert beyond_spread(a, b) and difference(a, b) == "+2.00 (beyond the seed spread)"
    c = mean_sd([4.0, 4.5, 5.0])  # gap 1.0, not larger than 0.5 + 0.5
    assert not beyond_spread(a, c) and difference(c, a) == "-1.00 (within the seed spread)"
    with pytest.raises(ValueError, match="single value"):
        beyond_spread(mean_sd([1.0]), a)
