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
for the chapter's explorer. The run is declared as a :class:`~attention.studies.base.Study` (``STUDY``).
"""

from __future__ import annotations

import torch

from ..tasks.classification import sentiment_data
from .base import Piece, Study, fit_piece, summarise_variants, training_row
from .intra import build_intra, matched_hidden

__all__ = ["MULTIDIM", "PAPER", "VARIANTS", "feature_spread", "STUDY", "STUDIES"]

#: variant -> (registry name, config fields besides the sizes)
VARIANTS = {
    "features": ("attention-pooling", {"pool": "features"}),
    "scalar": ("attention-pooling", {"pool": "scalar"}),
    "mean": ("bilstm-pooling", {"pool": "mean"}),
}
#: Shen et al. (2018), DiSAN (multi-dimensional attention throughout), Table 3: five sentiment classes,
#: not the two of this comparison, and a whole model, not a pooling ablation
PAPER = {"SST-5 fine-grained sentiment, test accuracy %": {"DiSAN": 51.72}}
MULTIDIM = {
    "corpus": "vader",
    "min_freq": 2,
    "seeds": [0, 1, 2, 3, 4],
    "variants": list(VARIANTS),
    "reference": "features",
    "embed_dim": 64,
    "hidden_dim": 64,
    "attention_dim": 64,
    "dropout": 0.3,
    "max_epochs": 20,
    "patience": 3,
    "batch_size": 32,
    "lr": 2e-3,
}


def feature_spread(P: torch.Tensor, length: int) -> tuple[int, float]:
    """For one sentence's weights ``P (T, F)``: how many different words the ``F`` columns' maxima
    pick, and the mean over columns of the largest weight (1 = every feature reads one word)."""
    P = P[:length]
    return len(set(P.argmax(dim=0).tolist())), P.max(dim=0).values.mean().item()


def _data(recipe: dict, group: str) -> dict:
    data = sentiment_data(recipe["corpus"], seed=0, min_freq=recipe["min_freq"])
    return {"data": data, "hidden": matched_hidden(data, recipe, VARIANTS)}


def _run(study: Study, piece: Piece, shared: dict, device):
    recipe, data, variant, hidden = study.recipe, shared["data"], piece.variant, shared["hidden"][piece.variant]
    model = build_intra(variant, data, hidden, recipe, piece.seed, variants=VARIANTS).to(device)
    history = fit_piece(model, data, recipe, piece.seed, device)
    report = data.evaluate(model)
    row = {"accuracy": report["accuracy"], **training_row(history, model, valid="accuracy"), "hidden_dim": hidden}
    if VARIANTS[variant][0] == "attention-pooling":
        spread = [feature_spread(a["features"], len(e.tokens)) for a, e in zip(report["attention"], data.test)]
        row |= {
            "distinct_maxima": sum(d for d, _ in spread) / len(spread),
            "peak_weight": sum(p for _, p in spread) / len(spread),
        }
    return row, model


def _summarise(study: Study, runs: list[dict], shared) -> dict:
    summary = summarise_variants(
        runs, ("accuracy", "valid_accuracy", "best_epoch", "epochs_run", "distinct_maxima", "peak_weight")
    )
    for v, cell in summary.items():
        cell["hidden_dim"] = next(r["hidden_dim"] for r in runs if r["variant"] == v)
    data = shared()["data"]
    data_info = {
        "name": data.name,
        "train": len(data.train),
        "valid": len(data.valid),
        "test": len(data.test),
        "vocab": len(data.vocab),
    }
    return {"data": data_info, "summary": summary, "runs": runs}


STUDY = Study(
    "multidim-attention",
    "multidim",
    "chapter 4: multi-dimensional vs scalar attention vs mean pooling",
    MULTIDIM,
    _run,
    _summarise,
    data=_data,
    keep=("features",),
)
STUDIES = [STUDY]
