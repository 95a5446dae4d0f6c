"""Chapters 2 and 3's recorded run: the fixed-length bottleneck, measured on long inputs.

    python -m attention bottleneck --workers 2   # both models, 5 seeds, resumable
    python -m attention bottleneck --status      # the runs done and missing

HSK sentences are short (8.6 characters on average), too short for a fixed-length vector to run
out of room. Here every split of chapter 3's HSK split is *joined*: consecutive groups of
``k`` pairs of the same split become one pair, sources and targets alike
(:func:`attention.tasks.translation.join_pairs`), so that sources run from a few characters
to more than sixty. The models train on ``k`` = 1 to 3 (every training pair once at each ``k``)
and are tested on ``k`` = 1 to 6, so the longest test inputs are longer than any they saw, as in
Bahdanau et al.'s Fig. 2, where models trained on sentences up to 30 or 50 words are tested on
longer ones. The encoder–decoder of chapter 2 (the source squeezed into one vector) and
RNNsearch (chapter 3: the decoder attends over every source state) have the same embedding and
hidden sizes (their parameter counts differ by 3 %) and the same time budget, 5 seeds each;
the record holds test BLEU by source-length bucket for every run.
"""

from __future__ import annotations

from ..experiments import build_model, evaluate, hsk_data
from ..results import mean_sd
from ..tasks.translation import TranslationData, join_pairs
from .base import Piece, Study, fit_piece, training_row

__all__ = ["BOTTLENECK", "MODELS", "bottleneck_data", "STUDY", "STUDIES"]

BOTTLENECK = {
    "train_joins": [1, 2, 3],
    "test_joins": [1, 2, 3, 4, 5, 6],
    "edges": [1, 10, 20, 30, 40, 50, 100],  # source-length buckets [lo, hi) in characters
    "decode_len": 90,
    "seeds": [0, 1, 2, 3, 4],
    "budget_seconds": 300,
    "clock": "process",
    "max_epochs": 200,
    "patience": 6,
    "lr": 3e-3,
    "batch_size": 32,
}
#: model name -> its attention (None: chapter 2's encoder–decoder)
MODELS = {"encoder-decoder": None, "RNNsearch": "additive"}


def _joined(pairs, joins) -> list:
    return [p for k in joins for p in (list(pairs) if k == 1 else join_pairs(pairs, k, seed=k))]


def bottleneck_data(recipe: dict, group: str = "") -> TranslationData:
    """Chapter 3's HSK split (seed 0) with each split joined ``k`` pairs at a time (train and
    validation: ``train_joins``; test: ``test_joins``); the vocabularies are HSK's own."""
    hsk = hsk_data(seed=0)
    return TranslationData(
        "hsk-joined-zh-en",
        _joined(hsk.train, recipe["train_joins"]),
        _joined(hsk.valid, recipe["train_joins"]),
        _joined(hsk.test, recipe["test_joins"]),
        hsk.src_vocab,
        hsk.tgt_vocab,
        hsk.tgt_lang,
        seed=0,
        decode_len=recipe["decode_len"],
    )


def _pieces(recipe: dict) -> list[Piece]:
    return [Piece(f"{m}/seed{s}", m, s, {"variant": m, "seed": s}) for s in recipe["seeds"] for m in MODELS]


def _run(study: Study, piece: Piece, data, device) -> dict:
    recipe = study.recipe
    model = build_model(data, attention=MODELS[piece.variant], seed=piece.seed).to(device)
    history = fit_piece(
        model, data, recipe, piece.seed, device, max_seconds=recipe["budget_seconds"], clock=recipe["clock"]
    )
    report = evaluate(model, data, edges=recipe["edges"])
    return {
        "bleu": report["bleu"].score,
        "signature": report["bleu"].signature,
        "by_length": report["by_length"],
        **training_row(history, model, valid="bleu"),
        "curve": [
            {"epoch": e["epoch"], "seconds": round(e["seconds"], 1), "valid_bleu": e["valid_bleu"]}
            for e in history.epochs
        ],
    }


def _summary(study: Study, runs: list[dict], data) -> dict:
    test = data().test
    lengths = [len(p.src) for p in test]
    summary = {}
    for m in MODELS:
        rows = [r for r in runs if r["variant"] == m]
        buckets = [b["bucket"] for b in rows[0]["by_length"]]
        summary[m] = {
            "bleu": mean_sd([r["bleu"] for r in rows]),
            "by_length": [
                {
                    "bucket": b,
                    "n": rows[0]["by_length"][i]["n"],
                    "bleu": mean_sd([r["by_length"][i]["bleu"] for r in rows]),
                }
                for i, b in enumerate(buckets)
            ],
            "best_epoch": mean_sd([r["best_epoch"] for r in rows]),
            "epochs_run": mean_sd([r["epochs_run"] for r in rows]),
            "parameters": rows[0]["parameters"],
            "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows),
        }
    return {
        "summary": summary,
        "test_source_length": {"mean": sum(lengths) / len(lengths), "max": max(lengths), "n": len(lengths)},
        "train_source_max": max(len(p.src) for p in data().train),
        "runs": runs,
    }


STUDY = Study(
    "bottleneck",
    "bottleneck",
    "chapters 2-3: the encoder-decoder and RNNsearch on joined HSK pairs, BLEU by source length, 5 seeds",
    BOTTLENECK,
    _run,
    _summary,
    data=bottleneck_data,
    pieces=_pieces,
)
STUDIES = [STUDY]
