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
for the chapter's explorer. The run is declared as a :class:`~attention.studies.base.Study` (``STUDY``).
"""

from __future__ import annotations

from ..device import setup
from ..explain import perturbation_report
from ..models import count_parameters
from ..results import mean_sd
from ..tasks.classification import sentiment_data
from .base import Piece, Study, fit_piece, summarise_variants
from .intra import build_intra
from .multidim import MULTIDIM
from .multidim import VARIANTS as MULTIDIM_VARIANTS

__all__ = ["FAITHFULNESS", "PERTURBATIONS", "train_classifier", "STUDY", "STUDIES"]

FAITHFULNESS = {
    **{
        k: MULTIDIM[k]
        for k in (
            "corpus",
            "min_freq",
            "embed_dim",
            "hidden_dim",
            "attention_dim",
            "dropout",
            "max_epochs",
            "patience",
            "batch_size",
            "lr",
        )
    },
    "seeds": [0, 1, 2],
    "variants": ["scalar", "features"],
    "eps": 0.01,
}

PERTURBATIONS = ("permuted", "uniform", "without top", "adversarial")


def train_classifier(variant: str, data, recipe: dict, seed: int, device):
    """The classifier of ``variant`` trained as the recorded run trains it: ``(model, history)``."""
    setup(seed)
    model = build_intra(variant, data, recipe["hidden_dim"], recipe, seed, variants=MULTIDIM_VARIANTS).to(device)
    history = fit_piece(model, data, recipe, seed, device)
    return model, history


def _data(recipe: dict, group: str):
    return sentiment_data(recipe["corpus"], seed=0, min_freq=recipe["min_freq"])


def _run(study: Study, piece: Piece, data, device):
    recipe = study.recipe
    model, history = train_classifier(piece.variant, data, recipe, piece.seed, device)
    report = perturbation_report(model, data, data.test, eps=recipe["eps"], seed=piece.seed)
    # the rows of this record never carried the reason training stopped (training_row's "stopped")
    row = {
        "accuracy": data.evaluate(model)["accuracy"],
        "best_epoch": history.best_epoch,
        "epochs_run": len(history.epochs),
        "train_seconds": round(history.seconds, 1),
        "parameters": count_parameters(model),
        **{k: report[k] for k in PERTURBATIONS},
        "attention_vs_gradient": report["attention_vs_gradient"],
    }
    return row, model


def _summarise(study: Study, runs: list[dict], data) -> dict:
    summary = summarise_variants(runs, ("accuracy", "best_epoch", "epochs_run"))
    for v, cell in summary.items():
        rows = [r for r in runs if r["variant"] == v]
        for p in PERTURBATIONS:
            cell[p] = {m: mean_sd([r[p][m] for r in rows]) for m in rows[0][p]}
        cell["attention_vs_gradient"] = mean_sd([r["attention_vs_gradient"]["spearman"] for r in rows])
    data = data()
    data_info = {"name": data.name, "train": len(data.train), "valid": len(data.valid), "test": len(data.test)}
    return {"data": data_info, "summary": summary, "runs": runs}


STUDY = Study(
    "faithfulness",
    "faithfulness",
    "chapter 10: perturbed and adversarial attention weights, input x gradient",
    FAITHFULNESS,
    _run,
    _summarise,
    data=_data,
    keep=("scalar",),
    notes="wall_seconds adds up the training time of every run (the measurements are not in it)",
)
STUDIES = [STUDY]
