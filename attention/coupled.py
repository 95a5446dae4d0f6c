"""Chapter 4's recorded run on coupled multi-layer attention (Wang et al. 2017): coupled against
uncoupled attention, one layer against two, tagging aspect and opinion terms of Rotten Tomatoes
sentences with silver labels (:mod:`attention.data.aspects`, :func:`attention.tasks.aspect_data`).

    python -m attention coupled            # every variant, 3 seeds, resumable
    python -m attention coupled --status   # the runs done and missing

Every run trains until the validation F1 (the mean of aspect and opinion F1) has not improved for
``patience`` epochs and keeps its best epoch; the record holds test F1 per kind of term, how much
of each layer's attention falls on the silver terms of its kind (against their share of the
words), and the rule's agreement with the hand-checked sample. The seed-0 coupled two-layer model
is kept beside the record (:func:`attention.results.model_path`) for the chapter's explorer.
"""
from __future__ import annotations

import copy
from pathlib import Path

import torch

from .checkpoints import save_checkpoint
from .data.aspects import SILVER, load_aspect_check, load_silver_aspects, silver_agreement
from .device import setup
from .experiments import fit
from .models import build
from .results import PartialRuns, mean_sd, model_path, pieces_status, record_result, run_missing, variant_seed_keys
from .tasks.tagging import KIND_TAGS, aspect_data

__all__ = ["COUPLED", "PAPER", "VARIANTS", "build_tagger", "attention_on_terms", "run_coupled", "coupled_status"]

#: variant -> CMLA config fields
VARIANTS = {
    "coupled-2": {"coupled": True, "layers": 2},
    "uncoupled-2": {"coupled": False, "layers": 2},
    "coupled-1": {"coupled": True, "layers": 1},
    "uncoupled-1": {"coupled": False, "layers": 1},
}
#: Wang et al. (2017), Table 2: CMLA (coupled, two layers) on human-annotated SemEval reviews, F1 % of
#: whole terms (exact spans), not of single words as here
PAPER = {"SemEval-2014 restaurants": {"aspect": 85.29, "opinion": 83.18},
         "SemEval-2014 laptops": {"aspect": 77.80, "opinion": 80.17},
         "SemEval-2015 restaurants": {"aspect": 70.73, "opinion": 73.68}}
COUPLED = {"seeds": [0, 1, 2], "variants": list(VARIANTS), "min_freq": 2, "silver": SILVER, "embed_dim": 64,
           "hidden_dim": 32, "slices": 8, "rnn_dim": 32, "dropout": 0.3, "max_epochs": 60, "patience": 3,
           "batch_size": 64, "lr": 4e-3}


def build_tagger(variant: str, data, recipe: dict = COUPLED, seed: int = 0):
    """The CMLA of ``variant`` for ``data``."""
    cfg = dict(vocab=len(data.vocab), embed_dim=recipe["embed_dim"], hidden_dim=recipe["hidden_dim"],
               slices=recipe["slices"], rnn_dim=recipe["rnn_dim"], dropout=recipe["dropout"], **VARIANTS[variant])
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


def _run(variant: str, data, recipe: dict, seed: int, device, directory=None) -> dict:
    setup(seed)
    model = build_tagger(variant, data, recipe, seed).to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], lr=recipe["lr"],
                  seed=seed, device=device, progress=False, patience=recipe["patience"])
    if seed == 0 and variant == "coupled-2":
        save_checkpoint(model_path("coupled-attention", variant, directory), copy.deepcopy(model).cpu(), recipe=recipe)
    report = data.evaluate(model)
    row = {"f1": report["f1"], "aspect_f1": report["aspect"]["f1"], "opinion_f1": report["opinion"]["f1"],
           "aspect_precision": report["aspect"]["precision"], "aspect_recall": report["aspect"]["recall"],
           "opinion_precision": report["opinion"]["precision"], "opinion_recall": report["opinion"]["recall"],
           "valid_f1": history.epochs[history.best_epoch - 1]["valid_f1"], "best_epoch": history.best_epoch,
           "epochs_run": len(history.epochs), "stopped": history.stopped, "train_seconds": round(history.seconds, 1),
           "parameters": sum(p.numel() for p in model.parameters()),
           "attention_on_terms": attention_on_terms(report, data.test)}
    return row


def coupled_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    return pieces_status(PartialRuns("coupled-attention", COUPLED, directory), variant_seed_keys(COUPLED))


def run_coupled(directory: str | Path | None = None, progress: bool = False, reverse: bool = False) -> dict | None:
    """Train what is missing (``reverse``: from the last run backwards, for a second process);
    write and return the record ``coupled-attention`` once every run is done (else None)."""
    recipe, device = COUPLED, setup(0)
    data = aspect_data(seed=0, min_freq=recipe["min_freq"])
    runs = run_missing(PartialRuns("coupled-attention", recipe, directory), variant_seed_keys(recipe),
                       lambda v, seed: _run(v, data, recipe, seed, device, directory), progress, reverse)
    if runs is None:
        return None
    summary = {}
    for v in recipe["variants"]:
        rows = [r for r in runs if r["variant"] == v]
        cell = {m: mean_sd([r[m] for r in rows]) for m in ("f1", "aspect_f1", "opinion_f1", "valid_f1", "best_epoch",
                                                           "epochs_run")}
        cell["attention_on_terms"] = {
            k: {m: mean_sd([r["attention_on_terms"][k][m] for r in rows]) for m in ("attention", "share")}
            for k in rows[0]["attention_on_terms"]}
        cell |= {"parameters": rows[0]["parameters"], "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}
        summary[v] = cell
    tags = [t for e in data.train for t in e.tags]
    data_info = {"name": data.name, "train": len(data.train), "valid": len(data.valid), "test": len(data.test),
                 "vocab": len(data.vocab), "train_tokens": len(tags),
                 "train_aspect_tokens": tags.count(KIND_TAGS["aspect"]),
                 "train_opinion_tokens": tags.count(KIND_TAGS["opinion"]),
                 "silver_agreement": silver_agreement(load_silver_aspects(), load_aspect_check())}
    return record_result("coupled-attention", command="python -m attention coupled", recipe=recipe,
                         seeds=recipe["seeds"], metrics={"data": data_info, "summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run")
