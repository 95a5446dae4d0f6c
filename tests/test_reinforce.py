"""Chapter 8's controlled run: REINFORCE's gradient variance over training, by baseline."""

from conftest import regenerated

from attention.studies import reinforce


def test_the_record_regenerates_from_itself(tmp_path):
    record, again = regenerated(reinforce.STUDY, tmp_path)
    assert again["metrics"] == record["metrics"]
    metrics = record["metrics"]
    assert record["seeds"] == [0, 1, 2, 3, 4]
    assert all(cell["exact_match"]["n"] == 5 for cell in metrics["summary"].values())
    for r in metrics["runs"]:  # every run converged: its best epoch came before its last
        assert r["best_epoch"] < r["epochs_run"], r["baseline"]
        assert [p["update"] for p in r["curve"]][:2] == [0, 25]
    for baseline, curve in metrics["curves"].items():
        assert curve[0]["update"] == 0 and curve[0]["n"] == 5, baseline
    assert all(p["ratio"]["mean"] == 1.0 for p in metrics["curves"]["none"])
    assert metrics["baselines"] == {"chance_digit": 0.1, "chance_exact": 0.1**3}


TINY = dict(
    n_train=48,
    n_valid=16,
    n_test=16,
    max_epochs=2,
    patience=1,
    batch_size=16,
    seeds=[0],
    checkpoints=[0, 2, 4],
    samples=3,
    spread_batch=8,
)


def test_the_study_on_a_stand_in_measures_every_baseline_at_every_checkpoint(tmp_path):
    from attention.studies.base import run_study

    study = reinforce.STUDY.with_recipe(**TINY)
    record = run_study(study, tmp_path)
    metrics = record["metrics"]
    assert set(metrics["summary"]) == {"moving", "learned", "none"}
    for r in metrics["runs"]:
        assert [p["update"] for p in r["curve"]] == [0, 2, 4]  # 3 updates an epoch, 2 epochs
        assert all(p["own"]["mean_variance"] > 0 and p["none"]["mean_variance"] > 0 for p in r["curve"])
        if r["baseline"] == "none":
            assert all(p["ratio"] == 1.0 for p in r["curve"])
    moving = next(r for r in metrics["runs"] if r["baseline"] == "moving")
    assert moving["curve"][0]["ratio"] < 0.5  # before training every reward is far below 0
    assert [p["n"] for p in metrics["curves"]["learned"]] == [1, 1, 1]
