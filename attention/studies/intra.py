"""Chapter 6's recorded run on attention inside one sentence: LSTMN, Lin et al.'s structured
self-attention with and without its penalty, and BiLSTM pooling baselines, on VADER's rated movie
sentences (``attention.tasks.sentiment_data("vader")``).

    python -m attention intra            # every variant, 3 seeds, resumable
    python -m attention intra --status   # the runs done and missing

Every variant is sized to the parameter count of the reference (Lin et al. with the penalty) by
its hidden size, trains until its validation accuracy has not improved for ``patience`` epochs
and keeps its best epoch. Besides test accuracy, each run of Lin's model records how redundant
its ``r`` attention rows are (the mean overlap ``Σ_t min(a_i,t, a_j,t)`` of two rows, and how many
distinct words the rows' maxima pick) and how much of its attention falls on the words of VADER's
sentiment lexicon, against the share of those words in the text. The run is declared as a
:class:`~attention.studies.base.Study` (``STUDY``), which writes the record ``intra-attention``.
"""

from __future__ import annotations

import torch

from ..data.sentiment import load_vader_lexicon
from ..models import build, count_parameters
from ..models.selfattentive import penalized_loss
from ..tasks.classification import sentiment_data
from .base import Piece, Study, fit_piece, size_to_budget, summarise_variants, training_row

__all__ = [
    "INTRA",
    "VARIANTS",
    "build_intra",
    "match_hidden",
    "matched_hidden",
    "row_redundancy",
    "lexicon_mass",
    "STUDY",
    "STUDIES",
]

#: variant -> (registry name, config fields besides the sizes)
VARIANTS = {
    "lin+penalty": ("self-attentive", {"penalty": 1.0}),
    "lin": ("self-attentive", {"penalty": 0.0}),
    "lstmn": ("lstmn", {}),
    "bilstm-last": ("bilstm-pooling", {"pool": "last"}),
    "bilstm-mean": ("bilstm-pooling", {"pool": "mean"}),
    "bilstm-max": ("bilstm-pooling", {"pool": "max"}),
}
INTRA = {
    "corpus": "vader",
    "min_freq": 2,
    "seeds": [0, 1, 2],
    "variants": list(VARIANTS),
    "reference": "lin+penalty",
    "embed_dim": 64,
    "hidden_dim": 64,
    "rows": 4,
    "dropout": 0.3,
    "max_epochs": 20,
    "patience": 3,
    "batch_size": 32,
    "lr": 2e-3,
}


def build_intra(variant: str, data, hidden: int, recipe: dict, seed: int = 0, variants: dict | None = None):
    """The model of ``variant`` (a key of ``variants``, default :data:`VARIANTS`) for ``data`` with
    hidden size ``hidden``."""
    name, extra = (variants or VARIANTS)[variant]
    cfg = dict(
        vocab=len(data.vocab),
        classes=len(data.labels),
        embed_dim=recipe["embed_dim"],
        hidden_dim=hidden,
        dropout=recipe["dropout"],
        **extra,
    )
    if name == "self-attentive":
        cfg["rows"] = recipe["rows"]
    if name == "attention-pooling":
        cfg["attention_dim"] = recipe["attention_dim"]
    torch.manual_seed(seed)
    return build(name, cfg)


def match_hidden(variant: str, data, target: int, recipe: dict, variants: dict | None = None) -> int:
    """The hidden size (a multiple of 4, up to 4 × the recipe's) whose parameter count is closest to
    ``target`` (the smallest such size on a tie)."""
    return size_to_budget(
        lambda h: build_intra(variant, data, h, recipe, variants=variants),
        target,
        range(8, 4 * recipe["hidden_dim"] + 1, 4),
        what=variant,
    )


def matched_hidden(data, recipe: dict, variants: dict | None = None) -> dict[str, int]:
    """variant -> its hidden size, matched to the parameter count of ``recipe["reference"]`` at the
    recipe's hidden size."""
    target = count_parameters(build_intra(recipe["reference"], data, recipe["hidden_dim"], recipe, variants=variants))
    return {v: match_hidden(v, data, target, recipe, variants) for v in recipe["variants"]}


def row_redundancy(A: torch.Tensor, length: int) -> tuple[float, int]:
    """For one sentence's rows ``A (R, T)``: the mean overlap ``Σ_t min(a_i,t, a_j,t)`` over pairs of
    rows (1 = identical rows, 0 = disjoint), and the number of distinct words the rows' maxima pick."""
    A = A[:, :length]
    i, j = torch.triu_indices(A.shape[0], A.shape[0], offset=1)  # every pair of rows, i < j
    overlaps = torch.minimum(A[i], A[j]).sum(dim=1)  # (pairs,)
    return (overlaps.mean().item() if len(overlaps) else 0.0), len(set(A.argmax(dim=1).tolist()))


def lexicon_mass(A: torch.Tensor, tokens, lexicon: dict) -> tuple[float, float]:
    """For one sentence: the share of attention (averaged over the rows ``A (R, T)``) on words of the
    sentiment lexicon, and the share of its words that are in the lexicon."""
    T = len(tokens)
    in_lexicon = torch.tensor([t in lexicon for t in tokens], dtype=A.dtype)
    return (A[:, :T].mean(dim=0) * in_lexicon).sum().item(), in_lexicon.mean().item()


def _data(recipe: dict, group: str) -> dict:
    data = sentiment_data(recipe["corpus"], seed=0, min_freq=recipe["min_freq"])
    return {"data": data, "lexicon": load_vader_lexicon(), "hidden": matched_hidden(data, recipe)}


def _run(study: Study, piece: Piece, shared: dict, device):
    recipe, data, lexicon = study.recipe, shared["data"], shared["lexicon"]
    variant, seed, hidden = piece.variant, piece.seed, shared["hidden"][piece.variant]
    model = build_intra(variant, data, hidden, recipe, seed).to(device)
    history = fit_piece(
        model, data, recipe, seed, device, loss=penalized_loss if VARIANTS[variant][0] == "self-attentive" else None
    )
    report = data.evaluate(model)
    row = {"accuracy": report["accuracy"], **training_row(history, model, valid="accuracy"), "hidden_dim": hidden}
    if VARIANTS[variant][0] == "self-attentive":
        red = [row_redundancy(a["rows"], len(e.tokens)) for a, e in zip(report["attention"], data.test)]
        mass = [lexicon_mass(a["rows"], e.tokens, lexicon) for a, e in zip(report["attention"], data.test)]
        with_words = [(m, s) for m, s in mass if s > 0]  # sentences with at least one lexicon word
        row |= {
            "row_overlap": sum(r[0] for r in red) / len(red),
            "distinct_maxima": sum(r[1] for r in red) / len(red),
            "lexicon_attention": sum(m for m, _ in with_words) / len(with_words),
            "lexicon_share": sum(s for _, s in with_words) / len(with_words),
        }
    return row


def _summarise(study: Study, runs: list[dict], shared) -> dict:
    summary = summarise_variants(
        runs,
        (
            "accuracy",
            "valid_accuracy",
            "best_epoch",
            "epochs_run",
            "row_overlap",
            "distinct_maxima",
            "lexicon_attention",
            "lexicon_share",
        ),
    )
    for v, cell in summary.items():
        cell["hidden_dim"] = next(r["hidden_dim"] for r in runs if r["variant"] == v)
    data, lexicon = shared()["data"], shared()["lexicon"]
    data_info = {
        "name": data.name,
        "train": len(data.train),
        "valid": len(data.valid),
        "test": len(data.test),
        "vocab": len(data.vocab),
        "lexicon": len(lexicon),
    }
    return {"data": data_info, "summary": summary, "runs": runs}


STUDY = Study(
    "intra-attention",
    "intra",
    "chapter 6: LSTMN, Lin et al.'s self-attention, pooling baselines",
    INTRA,
    _run,
    _summarise,
    data=_data,
)
STUDIES = [STUDY]
