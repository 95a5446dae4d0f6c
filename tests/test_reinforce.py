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
