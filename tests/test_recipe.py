"""Chapter 6's recipe studies (attention/studies/recipe.py), the snapshots of shorter budgets that
one run keeps (attention/train.py), and the paired bootstrap (attention/results)."""

import dataclasses
import shutil
import types

import pytest
import torch

from attention import results
from attention import train as train_module
from attention.experiments import build_model, dates_data, fit
from attention.metrics import corpus_bleu
from attention.studies import recipe
from attention.studies.base import run_study, study_status


@pytest.fixture
def tiny():
    return dates_data(n=120)


@pytest.fixture
def ticking(monkeypatch):
    """A clock that moves 10 s at each reading: epoch k ends at 10·k s, whatever the machine."""
    state = {"now": -10.0}

    def tick():
        state["now"] += 10.0
        return state["now"]

    def reset():
        state["now"] = -10.0

    monkeypatch.setattr(train_module, "time", types.SimpleNamespace(perf_counter=tick, process_time=tick))
    return reset


def _weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_a_snapshot_is_the_run_a_shorter_budget_would_have_made(tiny, ticking):
    def run(**options):
        ticking()
        model = build_model(tiny, attention="additive", seed=0, embed_dim=8, hidden_dim=8, dropout=0.0)
        history = fit(model, tiny, epochs=10, seed=0, progress=False, patience=10, **options)
        return model, history

    short, short_history = run(max_seconds=35)  # stops after epoch 3: 30 s + another 10 > 35
    assert len(short_history.epochs) == 3
    long, history = run(max_seconds=55, snapshots=[35, 500])
    assert len(history.epochs) == 5
    snap = history.snapshots[35.0]
    assert (snap["epochs_run"], snap["best_epoch"]) == (3, short_history.best_epoch)
    for k, v in _weights(short).items():
        assert torch.equal(snap["state"][k], v), k
    assert history.snapshots[500.0]["epochs_run"] == 5  # a budget past the run's end: the run itself
    assert history.snapshots[500.0]["best_epoch"] == history.best_epoch
    with pytest.raises(ValueError, match="snapshots"):
        run(max_seconds=55, snapshots=[0])


def test_on_step_sees_every_update_with_its_gradient_norm(tiny):
    model = build_model(tiny, attention="additive", seed=0, embed_dim=8, hidden_dim=8, dropout=0.0)
    steps = []
    fit(model, tiny, epochs=2, seed=0, progress=False, batch_size=32, on_step=lambda *s: steps.append(s))
    per_epoch = -(-len(tiny.train) // 32)
    assert [s[0] for s in steps] == list(range(1, 2 * per_epoch + 1))
    assert all(loss > 0 and norm > 0 for _, loss, norm in steps)


REFS = ["the cat sat on the mat .", "i like green tea very much", "he is a teacher", "where is the station ?"] * 25
GOOD = [["the cat sat on a mat .", "i like tea very much", "he is teacher", "where is station ?"] * 25] * 2
BAD = [["a cat on mat", "i tea", "he teacher", "where ?"] * 25] * 2


def test_paired_bootstrap_scores_as_sacrebleu_and_separates_only_what_differs():
    out = results.paired_bootstrap(REFS, GOOD, BAD, resamples=200)
    assert out["a"]["bleu"] == pytest.approx(corpus_bleu(GOOD[0], REFS, lowercase=True).score, abs=1e-9)
    assert out["b"]["bleu"] == pytest.approx(corpus_bleu(BAD[0], REFS, lowercase=True).score, abs=1e-9)
    assert out["beyond_interval"] and out["interval"][0] > 0 and out["p"] == 0.0
    assert out["a"]["interval"][0] <= out["a"]["bleu"] <= out["a"]["interval"][1]
    same = results.paired_bootstrap(REFS, GOOD, GOOD, resamples=200)
    assert same["difference"] == 0 and same["interval"] == [0.0, 0.0] and not same["beyond_interval"]
    with pytest.raises(ValueError, match="systems_b, seed 0: 3 hypotheses but 100 references"):
        results.paired_bootstrap(REFS, GOOD, [["a", "b", "c"]])
    with pytest.raises(ValueError, match="one list of strings per seed"):
        results.paired_bootstrap(REFS, GOOD[0], BAD)
    with pytest.raises(ValueError, match="at least 100"):
        results.paired_bootstrap(REFS, GOOD, BAD, resamples=10)


TINY_RNN = {"attention": "additive", "embed_dim": 8, "hidden_dim": 8, "dropout": 0.0, "lr": 3e-3}


def test_the_final_comparison_records_every_budget_and_the_bootstrap(tiny, ticking, tmp_path):
    study = dataclasses.replace(recipe.FINAL_STUDY, data=lambda r, group: tiny).with_recipe(
        seeds=[0, 1],
        max_epochs=4,
        budget_seconds=35,
        snapshots=[15],
        resamples=100,
        models={
            "Transformer": recipe.TRANSFORMER | {"num_layers": 1},
            "RNNsearch": TINY_RNN,
            "encoder-decoder": TINY_RNN | {"attention": None},
        },
    )
    assert run_study(study, tmp_path, only=["RNNsearch/*", "encoder-decoder/*"]) is None
    changed = study.with_recipe(
        models=study.recipe["models"] | {"Transformer": recipe.TRANSFORMER | {"num_layers": 1, "lr": 1e-3}}
    )
    assert study_status(changed, tmp_path)["missing"] == ["Transformer/seed0", "Transformer/seed1"]  # the RNNs keep
    record = run_study(changed, tmp_path)
    m = record["metrics"]
    assert set(m["summary"]["RNNsearch"]) == {"15", "35", "parameters"}
    assert m["summary"]["RNNsearch"]["15"]["epochs_run"]["values"] == [1.0, 1.0]  # 10 s + another 10 > 15
    assert m["summary"]["RNNsearch"]["35"]["epochs_run"]["values"] == [3.0, 3.0]
    cell = m["bootstrap"]["35"]["Transformer vs RNNsearch"]
    t = [r["budgets"]["35"]["bleu"] for r in m["runs"] if r["model"] == "Transformer"]
    assert cell["a"]["bleu"] == pytest.approx(sum(t) / 2) and cell["sentences"] == len(tiny.test)
    assert (tmp_path / "models").exists() or any(tmp_path.rglob("*.pt"))  # seed 0's Transformer is kept


@pytest.mark.parametrize("name", ["SWEEP_STUDY", "STABILITY_STUDY", "FINAL_STUDY"])
def test_the_records_regenerate_from_themselves(name, tmp_path):
    study = getattr(recipe, name)

    def never(study, piece, data, device):
        pytest.fail(f"ran {piece.key}, which the registry holds")

    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", tmp_path)
    record = results.load_result(study.name, tmp_path)
    assert study_status(study, tmp_path)["missing"] == []
    again = run_study(dataclasses.replace(study, run=never), tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["recipe"], again["seeds"]) == (record["recipe"], record["seeds"])


def test_the_final_comparison_trains_the_sweeps_choice():
    sweep = results.load_result("transformer-recipe")
    assert sweep["metrics"]["chosen"] == recipe.CHOSEN
    final = results.load_result("transformer-final")
    assert (
        final["recipe"]["models"]["Transformer"] == sweep["recipe"]["base"] | sweep["recipe"]["variants"][recipe.CHOSEN]
    )
