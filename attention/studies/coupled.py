"""Chapter 4's recorded run on coupled multi-layer attention (Wang et al. 2017): coupled against
uncoupled attention, one layer against two, tagging aspect and opinion terms of Rotten Tomatoes
sentences with silver labels (:mod:`attention.data.aspects`, :func:`attention.tasks.aspect_data`).

    python -m attention coupled              # every variant, 3 seeds, resumable
    python -m attention coupled --workers 2  # the same on two worker processes
    python -m attention coupled --status     # the runs done and missing

Every run trains until the validation F1 (the mean of aspect and opinion F1) has not improved for
``patience`` epochs and keeps its best epoch; the record holds test F1 per kind of term, how much
of each layer's attention falls on the silver terms of its kind (against their share of the
words), and the rule's agreement with the hand-checked sample. The seed-0 coupled two-layer model
is kept beside the record (:func:`attention.results.model_path`) for the chapter's explorer.
The run is declared as a :class:`~attention.studies.base.Study` (``STUDY``).
"""

from __future__ import annotations

import torch

from ..data.aspects import SILVER, load_aspect_check, load_silver_aspects, silver_agreement
from ..models import build
from ..results import mean_sd
from ..tasks.tagging import KIND_TAGS, aspect_data
from .base import Piece, Study, fit_piece, summarise_variants, training_row

__all__ = ["COUPLED", "PAPER", "VARIANTS", "build_tagger", "attention_on_terms", "STUDY", "STUDIES"]

#: variant -> CMLA config fields
VARIANTS = {
    "coupled-2": {"coupled": True, "layers": 2},
    "uncoupled-2": {"coupled": False, "layers": 2},
    "coupled-1": {"coupled": True, "layers": 1},
    "uncoupled-1": {"coupled": False, "layers": 1},
}
#: Wang et al. (2017), Table 2: CMLA (coupled, two layers) on human-annotated SemEval reviews, F1 % of
#: whole terms (exact spans), not of single words as here
PAPER = {
    "SemEval-2014 restaurants": {"aspect": 85.29, "opinion": 83.18},
    "SemEval-2014 laptops": {"aspect": 77.80, "opinion": 80.17},
    "SemEval-2015 restaurants": {"aspect": 70.73, "opinion": 73.68},
}
COUPLED = {
    "seeds": [0, 1, 2, 3, 4],
    "variants": list(VARIANTS),
    "min_freq": 2,
    "silver": SILVER,
    "embed_dim": 64,
    "hidden_dim": 32,
    "slices": 8,
    "rnn_dim": 32,
    "dropout": 0.3,
    "max_epochs": 60,
    "patience": 3,
    "batch_size": 64,
    "lr": 4e-3,
}


def build_tagger(variant: str, data, recipe: dict = COUPLED, seed: int = 0):
    """The CMLA of ``variant`` for ``data``."""
    cfg = dict(
        vocab=len(data.vocab),
        embed_dim=recipe["embed_dim"],
        hidden_dim=recipe["hidden_dim"],
        slices=recipe["slices"],
        rnn_dim=recipe["rnn_dim"],
        dropout=recipe["dropout"],
        **VARIANTS[variant],
    )
    torch.manual_seed(seed)
    return build("cmla", cfg)


def attention_on_terms(report: dict, examples) -> dict:
    """For each kind and layer: the mean share of that layer's attention on the sentence's silver
    terms of that kind, and the mean share of the words that are such terms (sentences with at
    least one such term only)."""
    out = {}
    for kind, tag in KIND_TAGS.items():
        layers = report["attention"][0][kind].shape[0]
        for n in range(layers):
            mass, share = [], []
            for a, e in zip(report["attention"], examples):
                is_term = torch.tensor([t == tag for t in e.tags], dtype=torch.float)
                if is_term.sum() > 0:
                    mass.append(float((a[kind][n] * is_term).sum()))
                    share.append(float(is_term.mean()))
            out[f"{kind}/layer{n + 1}"] = {"attention": sum(mass) / len(mass), "share": sum(share) / len(share)}
    return out


def _data(recipe: dict, group: str):
    return aspect_data(seed=0, min_freq=recipe["min_freq"])


def _run(study: Study, piece: Piece, data, device):
    recipe = study.recipe
    model = build_tagger(piece.variant, data, recipe, piece.seed).to(device)
    history = fit_piece(model, data, recipe, piece.seed, device)
    report = data.evaluate(model)
    row = {
        "f1": report["f1"],
        "aspect_f1": report["aspect"]["f1"],
        "opinion_f1": report["opinion"]["f1"],
        "aspect_precision": report["aspect"]["precision"],
        "aspect_recall": report["aspect"]["recall"],
        "opinion_precision": report["opinion"]["precision"],
        "opinion_recall": report["opinion"]["recall"],
        **training_row(history, model, valid="f1"),
        "attention_on_terms": attention_on_terms(report, data.test),
    }
    return row, model


def _summarise(study: Study, runs: list[dict], data) -> dict:
    summary = summarise_variants(runs, ("f1", "aspect_f1", "opinion_f1", "valid_f1", "best_epoch", "epochs_run"))
    for v, cell in summary.items():
        rows = [r for r in runs if r["variant"] == v]
        cell["attention_on_terms"] = {
            k: {m: mean_sd([r["attention_on_terms"][k][m] for r in rows]) for m in ("attention", "share")}
            for k in rows[0]["attention_on_terms"]
        }
    data = data()
    tags = [t for e in data.train for t in e.tags]
    data_info = {
        "name": data.name,
        "train": len(data.train),
        "valid": len(data.valid),
        "test": len(data.test),
        "vocab": len(data.vocab),
        "train_tokens": len(tags),
        "train_aspect_tokens": tags.count(KIND_TAGS["aspect"]),
        "train_opinion_tokens": tags.count(KIND_TAGS["opinion"]),
        "silver_agreement": silver_agreement(load_silver_aspects(), load_aspect_check()),
    }
    return {"data": data_info, "summary": summary, "runs": runs}


STUDY = Study(
    "coupled-attention",
    "coupled",
    "chapter 4: coupled multi-layer attention for aspect and opinion terms",
    COUPLED,
    _run,
    _summarise,
    data=_data,
    keep=("coupled-2",),
)
STUDIES = [STUDY]
