"""Chapter 6's controlled run: do Lin et al.'s attention rows (and chapter 4's features) read
different parts of the input when the task has two parts?

    python -m attention joined            # five arms x 5 seeds, resumable
    python -m attention joined --status   # the runs done and missing

On one sentence nobody can say which part a row ought to read, so Lin et al.'s claims (the ``r``
rows of the structured self-attention attend to different parts of the sentence, and the penalty
``‖AAᵀ − I‖²_F`` makes them differ) can only be read indirectly (the record ``intra-attention``,
:mod:`attention.studies.intra`). Here the input has two parts that both matter. Each example
(:func:`attention.tasks.joined.joined_data`) is two of VADER's strongly rated movie sentences
(``|rating| >= 1.5``, at most 20 tokens each, so that the pairs train quickly) joined, and its label is the pair of their polarities (four balanced classes: chance and the
majority class are both 0.25).

Five arms share the BiLSTM of the intra recipe (:data:`~attention.studies.intra.INTRA`): Lin's model
with its ``r`` rows and the penalty, the same without the penalty, Lin's model with one row,
multi-dimensional attention (chapter 4's ``features``, :mod:`attention.studies.multidim`) and mean
pooling without attention. Each trains until validation accuracy has not improved for ``patience``
epochs, five seeds each. Every run records test accuracy and how often each sentence's polarity is
read right; an attention run also records, over the test pairs, how its rows (or features) share
their mass between the two sentences (:func:`half_attention`) and the rows' mean pairwise overlap
(:func:`~attention.studies.intra.row_redundancy`).
"""

from __future__ import annotations

import torch

from ..data.sentiment import load_vader_movie_snippets
from ..models.selfattentive import penalized_loss
from ..tasks.joined import joined_data, strong_sentences
from .base import Piece, Study, fit_piece, summarise_variants, training_row
from .intra import INTRA, build_intra, row_redundancy
from .multidim import MULTIDIM

__all__ = ["JOINED", "VARIANTS", "ROWS", "half_attention", "joined_pieces", "STUDY", "STUDIES"]

#: arm -> (registry name, config fields besides the sizes), as in attention/studies/intra.py
VARIANTS = {
    "lin+penalty": ("self-attentive", {"penalty": 1.0}),
    "lin": ("self-attentive", {"penalty": 0.0}),
    "lin-r1": ("self-attentive", {"penalty": 0.0}),
    "features": ("attention-pooling", {"pool": "features"}),
    "mean": ("bilstm-pooling", {"pool": "mean"}),
}
#: arms whose number of rows is not the recipe's
ROWS = {"lin-r1": 1}
JOINED = {
    "min_rating": 1.5,
    "max_tokens": 20,
    "sizes": [2000, 400, 800],
    "separator": True,
    **{k: INTRA[k] for k in ("min_freq", "embed_dim", "hidden_dim", "rows", "dropout", "batch_size", "lr")},
    "attention_dim": MULTIDIM["attention_dim"],
    "seeds": [0, 1, 2, 3, 4],
    "variants": list(VARIANTS),
    "max_epochs": 25,
    "patience": 4,
}
#: what an attention run records of its weights over the test pairs (see half_attention)
ATTENTION_METRICS = ("first_mass", "second_mass", "commitment", "row_split", "covers_both", "row_first_spread")


def half_attention(W: torch.Tensor, example) -> dict:
    """How the distributions ``W (K, T)`` (K rows, or features) of one joined pair share their mass
    between its sentences (``example.meta``: ``first_length``, ``second``; any separator between
    them belongs to neither):

    * ``first`` / ``second``: ``(K,)`` each distribution's mass on the first / second sentence;
    * ``commitment``: the mean over the K of the larger of the two (0.5 = split evenly, 1 = one
      sentence only);
    * ``row_split``: the largest first-sentence mass minus the smallest (1 = one distribution reads
      only the first sentence and another only the second; 0 for one distribution);
    * ``covers_both``: whether the K maxima fall in both sentences (never, for one distribution)."""
    T = len(example.tokens)
    f, s = example.meta["first_length"], example.meta["second"]
    if W.dim() != 2 or W.shape[1] < T:
        raise ValueError(f"half_attention needs W (K, T) with T >= {T} (the pair's tokens); got {tuple(W.shape)}")
    W = W[:, :T]
    first, second = W[:, :f].sum(dim=1), W[:, s:].sum(dim=1)  # (K,) each
    top = W.argmax(dim=1)  # (K,)
    return {
        "first": first,
        "second": second,
        "commitment": torch.maximum(first, second).mean().item(),
        "row_split": (first.max() - first.min()).item(),
        "covers_both": bool((top < f).any() and (top >= s).any()),
    }


def joined_pieces(recipe: dict) -> list[Piece]:
    """Every ``"<arm>/seed<s>"``, arms outer (in the recipe's order), so that the arms listed first
    are complete first."""
    return [Piece(f"{v}/seed{s}", v, s, {"variant": v, "seed": s}) for v in recipe["variants"] for s in recipe["seeds"]]


def _stamp(recipe: dict, group: str) -> dict:
    return {k: v for k, v in recipe.items() if k != "variants"}  # a finished arm stays done if others are dropped


def _data(recipe: dict, group: str) -> dict:
    data = joined_data(
        recipe["min_rating"],
        recipe["max_tokens"],
        tuple(recipe["sizes"]),
        recipe["min_freq"],
        separator="<sep>" if recipe["separator"] else None,
    )
    strong = strong_sentences(load_vader_movie_snippets(), recipe["min_rating"], recipe["max_tokens"])
    return {"data": data, "strong": len(strong), "strong_positive": sum(s.label for s in strong)}


def _weights(out: dict) -> torch.Tensor | None:
    """An evaluated example's attention as ``(K, T)`` distributions, or None (no attention)."""
    if "rows" in out:
        return out["rows"]  # (R, T)
    if "features" in out:
        return out["features"].T  # (T, F) -> (F, T)
    return None


def _run(study: Study, piece: Piece, shared: dict, device):
    recipe, data = study.recipe, shared["data"]
    name = VARIANTS[piece.variant][0]
    arm_recipe = {**recipe, "rows": ROWS.get(piece.variant, recipe["rows"])}
    model = build_intra(piece.variant, data, recipe["hidden_dim"], arm_recipe, piece.seed, variants=VARIANTS)
    model = model.to(device)
    history = fit_piece(
        model, data, recipe, piece.seed, device, loss=penalized_loss if name == "self-attentive" else None
    )
    report = data.evaluate(model)
    halves = [divmod(p, 2) for p in report["predictions"]]
    row = {
        "accuracy": report["accuracy"],
        "first_accuracy": sum(h[0] == e.label // 2 for h, e in zip(halves, data.test)) / len(data.test),
        "second_accuracy": sum(h[1] == e.label % 2 for h, e in zip(halves, data.test)) / len(data.test),
        **training_row(history, model, valid="accuracy"),
    }
    weights = [_weights(a) for a in report["attention"]]
    if weights[0] is None:
        return row
    found = [half_attention(W, e) for W, e in zip(weights, data.test)]
    n = len(found)
    row_first = torch.stack([h["first"] for h in found]).mean(dim=0)  # (K,) each row's mean first-sentence mass
    row |= {
        "first_mass": sum(h["first"].mean().item() for h in found) / n,
        "second_mass": sum(h["second"].mean().item() for h in found) / n,
        "commitment": sum(h["commitment"] for h in found) / n,
        "row_split": sum(h["row_split"] for h in found) / n,
        "covers_both": sum(h["covers_both"] for h in found) / n,
        "row_first_spread": (row_first.max() - row_first.min()).item(),
        "row_first": [round(x, 4) for x in row_first.tolist()],
        "rows": weights[0].shape[0],
    }
    if weights[0].shape[0] > 1:
        row["row_overlap"] = sum(row_redundancy(W, len(e.tokens))[0] for W, e in zip(weights, data.test)) / n
    return row


def _summarise(study: Study, runs: list[dict], shared) -> dict:
    metrics = (
        "accuracy",
        "valid_accuracy",
        "first_accuracy",
        "second_accuracy",
        *ATTENTION_METRICS,
        "row_overlap",
        "best_epoch",
        "epochs_run",
        "train_seconds",
    )
    summary = summarise_variants(runs, metrics, values=study.recipe["variants"])
    for v, cell in summary.items():
        rows = next(r for r in runs if r["variant"] == v).get("rows")
        if rows is not None:
            cell["rows"] = rows
    s = shared()
    d = s["data"]
    counts = [sum(e.label == y for e in d.test) for y in range(len(d.labels))]
    first_share = sum(e.meta["first_length"] / len(e.tokens) for e in d.test) / len(d.test)
    return {
        "summary": summary,
        "baselines": {
            "chance": 1 / len(d.labels),
            "majority": max(counts) / len(d.test),
            "uniform_first_mass": first_share,
            "uniform_second_mass": sum((len(e.tokens) - e.meta["second"]) / len(e.tokens) for e in d.test)
            / len(d.test),
        },
        "data": {
            "name": d.name,
            "labels": list(d.labels),
            "strong_sentences": s["strong"],
            "strong_positive": s["strong_positive"],
            "train": len(d.train),
            "valid": len(d.valid),
            "test": len(d.test),
            "vocab": len(d.vocab),
            "mean_tokens": sum(len(e.tokens) for e in d.test) / len(d.test),
        },
        "runs": runs,
    }


STUDY = Study(
    "joined-sentences",
    "joined",
    "chapter 6: Lin et al.'s rows with and without the penalty, one row, features, mean pooling on joined "
    "sentence pairs, 5 seeds",
    JOINED,
    _run,
    _summarise,
    data=_data,
    pieces=joined_pieces,
    stamp=_stamp,
)
STUDIES = [STUDY]
