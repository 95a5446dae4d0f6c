"""Chapter 7's record dmn-faithful: the paper's DMN as written on task 3, beside the book's of dmn-passes."""

from conftest import regenerated

from attention.results import load_result
from attention.studies import dmn_faithful, memory
from attention.tasks.qa import babi_data


def test_the_recipe_is_dmn_passes_with_the_papers_three_passes_and_five_seeds():
    recipe = dmn_faithful.DMN_FAITHFUL
    assert recipe["passes"] == 3 and recipe["seeds"] == [0, 1, 2, 3, 4]
    assert recipe["variants"] == ["paper", "book"] and dmn_faithful.MODELS == {"paper": "dmn-paper", "book": "dmn"}
    shared = {k: v for k, v in recipe.items() if k not in ("variants", "passes", "seeds")}
    assert shared == {k: memory.DMN_RUNS[k] for k in shared}


def test_the_books_rows_of_the_seeds_dmn_passes_trained_are_its_rows():
    runs = {r["key"]: r for r in load_result("dmn-passes")["metrics"]["runs"]}
    for seed in (0, 1, 2):
        row = dmn_faithful._book_row(dmn_faithful.DMN_FAITHFUL, seed)
        theirs = runs[f"supervised/passes3/seed{seed}"]
        assert row["from"] == "dmn-passes" and row["accuracy"] == theirs["accuracy"]
        assert row["valid_accuracy"] == theirs["valid"] and row["support_hits"] == theirs["support_hits"]
    assert dmn_faithful._book_row(dmn_faithful.DMN_FAITHFUL, 5) is None  # a seed dmn-passes did not train
    assert dmn_faithful._book_row(dmn_faithful.DMN_FAITHFUL | {"lr": 1e-3}, 0) is None  # another recipe


def test_a_run_recorded_with_the_books_variant_listed_too_is_reused():
    both = dmn_faithful.DMN_FAITHFUL
    paper = both | {"variants": ["paper"]}
    reuse = dmn_faithful.STUDY.reuse
    assert reuse(paper, "", both, {})
    assert not reuse(paper, "", both | {"lr": 1e-3}, {})
    assert not reuse(both, "", paper, {})


def test_a_record_of_the_papers_dmn_alone_holds_its_runs_when_the_book_is_added():
    both = dmn_faithful.DMN_FAITHFUL
    paper = both | {"variants": ["paper"]}
    holds = dmn_faithful.STUDY.holds
    assert holds(paper, both) and holds(paper | {"seeds": [0, 1, 2]}, both) and holds(both, both)
    assert not holds(paper | {"lr": 1e-3}, both)  # another recipe
    assert not holds(both | {"variants": ["paper", "other"]}, both)  # a variant this recipe lacks


def test_support_chance_is_the_share_of_supporting_facts_and_one_over_the_facts():
    data = babi_data(3, n_train=30, n_test=10)
    chance = dmn_faithful.support_chance(data, data.test)
    by_hand = [(len(set(data.memory(e)[1])), len(data.memory(e)[0])) for e in data.test]
    assert chance["any"] == sum(s / n for s, n in by_hand) / 10 and chance["one"] == sum(1 / n for _, n in by_hand) / 10
    assert 0 < chance["one"] < chance["any"] < 1


def test_the_record_regenerates_from_itself(tmp_path):
    record, again = regenerated(dmn_faithful.STUDY, tmp_path)
    assert again["metrics"] == record["metrics"]
    summary = record["metrics"]["summary"]
    assert record["seeds"] == [0, 1, 2, 3, 4] and list(summary) == ["paper", "book"]
    assert all(c["accuracy"]["n"] == 5 and len(c["support_hits"]) == 3 for c in summary.values())
    assert all(c["converged"] for c in summary.values())  # every run's best epoch is before its last
    baselines = record["metrics"]["baselines"]
    assert baselines["chance"] == 1 / record["metrics"]["data"]["answers"] <= baselines["majority"] < 0.5
    assert 0 < baselines["one_fact_chance"] < baselines["support_chance"] < 1
    compared = record["metrics"]["compared_with"]
    book = load_result(compared["record"])
    assert book["metrics"]["summary"][compared["cell"]]["accuracy"]["n"] == 5
    # the book's seeds 0-2 are dmn-passes' runs, the two others were trained here, and dmn-passes,
    # given the same two seeds later, trained the same runs: the same accuracies and support hits
    mine = [r for r in record["metrics"]["runs"] if r["variant"] == "book"]
    assert [r.get("from") for r in mine] == ["dmn-passes"] * 3 + [None] * 2
    theirs = {r["key"]: r for r in book["metrics"]["runs"]}
    for r in mine[3:]:
        other = theirs[f"supervised/passes3/seed{r['seed']}"]
        assert (r["accuracy"], r["support_hits"], r["best_epoch"]) == (
            other["accuracy"],
            other["support_hits"],
            other["best_epoch"],
        )
    assert all(book["recipe"][k] == v for k, v in record["recipe"].items() if k not in ("variants", "passes", "seeds"))
