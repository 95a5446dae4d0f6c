"""Chapter 10's recorded run on faithfulness: do the attention weights of a trained classifier
explain its decisions? (:mod:`attention.explain`; Jain & Wallace 2019, Wiegreffe & Pinter 2019.)

    python -m attention faithfulness            # 2 attention poolings x 3 seeds, resumable
    python -m attention faithfulness --status   # the runs done and missing

The classifiers are chapter 4's BiLSTM pooled by scalar and by multi-dimensional attention
(:mod:`attention.studies.multidim`'s recipe, VADER's rated movie sentences), trained until the validation
accuracy stops improving. On every test sentence each run measures how far the output moves when
the weights are permuted, made uniform, stripped of their largest entry, or replaced by adversarial
weights that keep the output within ``eps``; and how the weights rank the words against input ×
gradient. The seed-0 scalar classifier is kept beside the record (:func:`attention.results.model_path`)
for the chapter's explorer.
"""
from __future__ import annotations

import copy
from pathlib import Path

from ..checkpoints import save_checkpoint
from ..device import setup
from ..experiments import fit
from ..explain import perturbation_report
from .intra import _count, build_intra
from .multidim import MULTIDIM, VARIANTS as MULTIDIM_VARIANTS
from ..results import PartialRuns, mean_sd, model_path, pieces_status, record_result, run_missing, variant_seed_keys
from ..tasks.classification import sentiment_data

__all__ = ["FAITHFULNESS", "train_classifier", "run_faithfulness", "faithfulness_status"]

FAITHFULNESS = {**{k: MULTIDIM[k] for k in ("corpus", "min_freq", "embed_dim", "hidden_dim", "attention_dim",
                                            "dropout", "max_epochs", "patience", "batch_size", "lr")},
                "seeds": [0, 1, 2], "variants": ["scalar", "features"], "eps": 0.01}

PERTURBATIONS = ("permuted", "uniform", "without top", "adversarial")


def train_classifier(variant: str, data, recipe: dict, seed: int, device):
    """The classifier of ``variant`` trained as the recorded run trains it: ``(model, history)``."""
    setup(seed)
    model = build_intra(variant, data, recipe["hidden_dim"], recipe, seed, variants=MULTIDIM_VARIANTS).to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], lr=recipe["lr"],
                  seed=seed, device=device, progress=False, patience=recipe["patience"])
    return model, history


def _run(variant: str, data, recipe: dict, seed: int, device, directory=None) -> dict:
    model, history = train_classifier(variant, data, recipe, seed, device)
    if seed == 0 and variant == "scalar":
        save_checkpoint(model_path("faithfulness", variant, directory), copy.deepcopy(model).cpu(), recipe=recipe)
    report = perturbation_report(model, data, data.test, eps=recipe["eps"], seed=seed)
    return {"accuracy": data.evaluate(model)["accuracy"], "best_epoch": history.best_epoch,
            "epochs_run": len(history.epochs), "train_seconds": round(history.seconds, 1), "parameters": _count(model),
            **{k: report[k] for k in PERTURBATIONS}, "attention_vs_gradient": report["attention_vs_gradient"]}


def faithfulness_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    return pieces_status(PartialRuns("faithfulness", FAITHFULNESS, directory), variant_seed_keys(FAITHFULNESS))


def run_faithfulness(directory: str | Path | None = None, progress: bool = False, reverse: bool = False) -> dict | None:
    """Train and measure what is missing; write and return the record ``faithfulness`` once every
    run is done (else None)."""
    recipe, device = FAITHFULNESS, setup(0)
    data = sentiment_data(recipe["corpus"], seed=0, min_freq=recipe["min_freq"])
    runs = run_missing(PartialRuns("faithfulness", recipe, directory), variant_seed_keys(recipe),
                       lambda v, seed: _run(v, data, recipe, seed, device, directory), progress, reverse)
    if runs is None:
        return None
    summary = {}
    for v in recipe["variants"]:
        rows = [r for r in runs if r["variant"] == v]
        cell = {m: mean_sd([r[m] for r in rows]) for m in ("accuracy", "best_epoch", "epochs_run")}
        for p in PERTURBATIONS:
            cell[p] = {m: mean_sd([r[p][m] for r in rows]) for m in rows[0][p]}
        cell["attention_vs_gradient"] = mean_sd([r["attention_vs_gradient"]["spearman"] for r in rows])
        cell |= {"parameters": rows[0]["parameters"], "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}
        summary[v] = cell
    data_info = {"name": data.name, "train": len(data.train), "valid": len(data.valid), "test": len(data.test)}
    return record_result("faithfulness", command="python -m attention faithfulness", recipe=recipe,
                         seeds=recipe["seeds"], metrics={"data": data_info, "summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run (the measurements are not in it)")
