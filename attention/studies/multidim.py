"""Chapter 4's recorded run on attention whose score is a vector: multi-dimensional (feature-wise)
attention against scalar attention and mean pooling, on VADER's rated movie sentences
(``attention.tasks.sentiment_data("vader")``, the corpus of chapter 6 part 2).

    python -m attention multidim            # every variant, 3 seeds, resumable
    python -m attention multidim --status   # the runs done and missing

The three sentence encoders share the BiLSTM of :class:`~attention.models.pooling.BiLSTMEncoder`
and differ only in how its states become one vector (:mod:`attention.models.featurewise`). Each is
sized to the parameter count of the multi-dimensional model by its hidden size, trains until its
validation accuracy has not improved for ``patience`` epochs and keeps its best epoch. Besides test
accuracy, each attention run records how many different words the features' maxima pick in a
sentence (1 for scalar attention, which shares one distribution) and how peaked the weights are.
The seed-0 multi-dimensional model is kept beside the record (:func:`attention.results.model_path`)
for the chapter's explorer.
"""
from __future__ import annotations

import copy
from pathlib import Path

import torch

from ..checkpoints import save_checkpoint
from ..device import setup
from ..experiments import fit
from .intra import _count, build_intra, match_hidden
from ..results import PartialRuns, mean_sd, model_path, pieces_status, record_result, run_missing, variant_seed_keys
from ..tasks.classification import sentiment_data

__all__ = ["MULTIDIM", "PAPER", "VARIANTS", "feature_spread", "run_multidim", "multidim_status"]

#: variant -> (registry name, config fields besides the sizes)
VARIANTS = {
    "features": ("attention-pooling", {"pool": "features"}),
    "scalar": ("attention-pooling", {"pool": "scalar"}),
    "mean": ("bilstm-pooling", {"pool": "mean"}),
}
#: Shen et al. (2018), DiSAN (multi-dimensional attention throughout), Table 3: five sentiment classes,
#: not the two of this comparison, and a whole model, not a pooling ablation
PAPER = {"SST-5 fine-grained sentiment, test accuracy %": {"DiSAN": 51.72}}
MULTIDIM = {"corpus": "vader", "min_freq": 2, "seeds": [0, 1, 2], "variants": list(VARIANTS), "reference": "features",
            "embed_dim": 64, "hidden_dim": 64, "attention_dim": 64, "dropout": 0.3, "max_epochs": 20, "patience": 3,
            "batch_size": 32, "lr": 2e-3}


def feature_spread(P: torch.Tensor, length: int) -> tuple[int, float]:
    """For one sentence's weights ``P (T, F)``: how many different words the ``F`` columns' maxima
    pick, and the mean over columns of the largest weight (1 = every feature reads one word)."""
    P = P[:length]
    return len(set(P.argmax(dim=0).tolist())), P.max(dim=0).values.mean().item()


def _run(variant: str, data, recipe: dict, hidden: int, seed: int, device, directory=None) -> dict:
    setup(seed)
    model = build_intra(variant, data, hidden, recipe, seed, variants=VARIANTS).to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], lr=recipe["lr"],
                  seed=seed, device=device, progress=False, patience=recipe["patience"])
    if seed == 0 and variant == "features":
        save_checkpoint(model_path("multidim-attention", variant, directory), copy.deepcopy(model).cpu(),
                        recipe=recipe)
    report = data.evaluate(model)
    row = {"accuracy": report["accuracy"], "valid_accuracy": history.epochs[history.best_epoch - 1]["valid_accuracy"],
           "best_epoch": history.best_epoch, "epochs_run": len(history.epochs), "stopped": history.stopped,
           "train_seconds": round(history.seconds, 1), "parameters": _count(model), "hidden_dim": hidden}
    if VARIANTS[variant][0] == "attention-pooling":
        spread = [feature_spread(a["features"], len(e.tokens)) for a, e in zip(report["attention"], data.test)]
        row |= {"distinct_maxima": sum(d for d, _ in spread) / len(spread),
                "peak_weight": sum(p for _, p in spread) / len(spread)}
    return row


def multidim_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    return pieces_status(PartialRuns("multidim-attention", MULTIDIM, directory), variant_seed_keys(MULTIDIM))


def run_multidim(directory: str | Path | None = None, progress: bool = False, reverse: bool = False) -> dict | None:
    """Train what is missing (``reverse``: from the last run backwards, for a second process);
    write and return the record ``multidim-attention`` once every run is done (else None)."""
    recipe, device = MULTIDIM, setup(0)
    data = sentiment_data(recipe["corpus"], seed=0, min_freq=recipe["min_freq"])
    target = _count(build_intra(recipe["reference"], data, recipe["hidden_dim"], recipe, variants=VARIANTS))
    hidden = {v: match_hidden(v, data, target, recipe, variants=VARIANTS) for v in recipe["variants"]}
    runs = run_missing(PartialRuns("multidim-attention", recipe, directory), variant_seed_keys(recipe),
                       lambda v, seed: _run(v, data, recipe, hidden[v], seed, device, directory), progress, reverse)
    if runs is None:
        return None
    summary = {}
    for v in recipe["variants"]:
        rows = [r for r in runs if r["variant"] == v]
        cell = {m: mean_sd([r[m] for r in rows]) for m in ("accuracy", "valid_accuracy", "best_epoch", "epochs_run")
                + (("distinct_maxima", "peak_weight") if "distinct_maxima" in rows[0] else ())}
        cell |= {"parameters": rows[0]["parameters"], "hidden_dim": rows[0]["hidden_dim"],
                 "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}
        summary[v] = cell
    data_info = {"name": data.name, "train": len(data.train), "valid": len(data.valid), "test": len(data.test),
                 "vocab": len(data.vocab)}
    return record_result("multidim-attention", command="python -m attention multidim", recipe=recipe,
                         seeds=recipe["seeds"], metrics={"data": data_info, "summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run")
