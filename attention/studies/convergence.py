"""Chapter 3's recorded run: the encoder–decoder and RNNsearch trained until their validation BLEU
stops improving, three seeds each, on HSK zh->en.

    python -m attention convergence            # both models, 3 seeds, resumable
    python -m attention convergence --status   # the runs done and missing

The split is the chapter's (seed 0); the seeds vary the initial weights and the batch order. The
record ``hsk-convergence`` holds, for each model, test BLEU (overall, by source length, and on
test sentences joined two and three at a time) as mean and sd over the seeds, with every seed's
run under ``metrics["models"][model]["runs"][seed]``; chapter 3 reads it with
:func:`attention.results.load_result`, so building the book does not retrain. The run is declared
as a :class:`~attention.studies.base.Study` (``STUDY``).
"""

from __future__ import annotations

from ..experiments import build_model, evaluate, hsk_data, join_pairs
from ..models import count_parameters
from ..results import mean_sd
from .base import Piece, Study, fit_piece

__all__ = ["CONVERGENCE", "MODELS", "STUDY", "STUDIES"]

#: Chapter 3's recorded run: both models trained until validation BLEU stops improving.
CONVERGENCE = {"max_epochs": 40, "patience": 5, "lr": 3e-3, "batch_size": 32, "seeds": [0, 1, 2]}
#: model name -> its attention (None: chapter 2's encoder–decoder)
MODELS = {"encoder-decoder": None, "RNNsearch": "additive"}


def _pieces(recipe: dict) -> list[Piece]:
    """``"<model>/seed<s>"``, seeds outer."""
    return [Piece(f"{name}/seed{s}", name, s, {"variant": name, "seed": s}) for s in recipe["seeds"] for name in MODELS]


def _recorded(study: Study, record: dict) -> dict[str, dict]:
    """The record keeps each run under ``metrics["models"][model]["runs"][str(seed)]``."""
    models = record["metrics"].get("models") or {}
    return {
        p.key: models[p.variant]["runs"][str(p.seed)]
        for p in study.pieces(study.recipe)
        if str(p.seed) in models.get(p.variant, {}).get("runs", {})
    }


def _data(recipe: dict, group: str):
    return hsk_data(seed=0)


def _run(study: Study, piece: Piece, data, device) -> dict:
    recipe, seed = study.recipe, piece.seed
    model = build_model(data, attention=MODELS[piece.variant], seed=seed).to(device)
    history = fit_piece(model, data, recipe, seed, device)
    report = evaluate(model, data)
    joined = {str(k): evaluate(model, data, join_pairs(data.test, k))["bleu"].score for k in (2, 3)}
    return {
        "bleu": report["bleu"].score,
        "signature": report["bleu"].signature,
        "by_length": report["by_length"],
        "joined_bleu": joined,
        "epochs_run": len(history.epochs),
        "best_epoch": history.best_epoch,
        "train_seconds": round(history.seconds, 1),
        "stopped": history.stopped,
        "parameters": count_parameters(model),
        "history": history.epochs,
    }


def _summarise(study: Study, runs: list[dict], data) -> dict:
    models = {}
    for name in MODELS:
        mine = [{k: v for k, v in r.items() if k not in ("variant", "seed")} for r in runs if r["variant"] == name]
        seeds = [r["seed"] for r in runs if r["variant"] == name]
        buckets = [row["bucket"] for row in mine[0]["by_length"]]
        models[name] = {
            "bleu": mean_sd([r["bleu"] for r in mine]),
            "signature": mine[0]["signature"],
            "by_length": [
                {
                    "bucket": b,
                    "n": mine[0]["by_length"][i]["n"],
                    "bleu": mean_sd([r["by_length"][i]["bleu"] for r in mine]),
                }
                for i, b in enumerate(buckets)
            ],
            "joined_bleu": {k: mean_sd([r["joined_bleu"][k] for r in mine]) for k in ("2", "3")},
            "best_epoch": mean_sd([r["best_epoch"] for r in mine]),
            "epochs_run": mean_sd([r["epochs_run"] for r in mine]),
            "train_seconds": mean_sd([r["train_seconds"] for r in mine]),
            "parameters": mine[0]["parameters"],
            "converged": all(r["best_epoch"] < r["epochs_run"] for r in mine),
            "runs": {str(s): r for s, r in zip(seeds, mine)},
        }
    return {"models": models}


STUDY = Study(
    "hsk-convergence",
    "convergence",
    "chapter 3: both models trained to early stopping, 3 seeds",
    CONVERGENCE,
    _run,
    _summarise,
    data=_data,
    pieces=_pieces,
    recorded=_recorded,
    notes="wall_seconds adds up the training time of every model and seed",
)
STUDIES = [STUDY]
