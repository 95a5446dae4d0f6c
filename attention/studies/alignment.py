"""Chapter 10's recorded run on attention as alignment for the Transformer: the date task of
chapters 3 and 9, where every output field's source is known, read through the Transformer's
cross-attention (chapter 6).

    python -m attention alignment            # 3 seeds, resumable
    python -m attention alignment --status   # the runs done and missing

The Transformer is sized by ``d_model`` to the parameter count of the date-task RNNsearch of
chapter 9's converged ablation (the record ``ablation-converged``), trained with that
ablation's data, batch size and patience until its validation BLEU stops improving, and scored
like the ablation's decoders: exact-match accuracy and the AER of the argmax links of its
last layer's cross-attention averaged over heads (the map :func:`attention.experiments.alignment_error_rate`
reads), together with the best AER any single layer-and-head map reaches.
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import torch

from .ablation import CONVERGED, count, exact_match
from ..checkpoints import save_checkpoint
from .comparison import COMPARISON, match_transformer, transformer_config
from ..device import setup
from ..experiments import alignment_error_rate, dates_data, fit
from ..metrics import aer
from ..data import collate
from ..models import build
from ..results import (PartialRuns, load_result, mean_sd, model_path, pieces_status, record_result, run_missing,
                      variant_seed_keys)
from ..tasks.translation import attention_links

__all__ = ["ALIGNMENT", "run_alignment", "alignment_status", "head_aers", "alignment_model_path"]

ALIGNMENT = {"seeds": [0, 1, 2], "variants": ["transformer"], "reference": "bahdanau-additive",
             **{k: CONVERGED[k] for k in ("dates_n", "dates_hidden_dim", "batch_size", "window", "dates_patience")},
             "max_epochs": CONVERGED["max_epochs"]["dates"], "transformer": COMPARISON["transformer"]}


@torch.no_grad()
def head_aers(model, data, pairs=None) -> dict[str, float]:
    """The AER of every single cross-attention map, ``"layer<l>/head<h>"`` -> AER, teacher-forced."""
    pairs = data.test if pairs is None else pairs
    model.eval()
    device = next(model.parameters()).device
    batch = collate(list(pairs), data.src_vocab, data.tgt_vocab).to(device)
    maps = model(batch.src, batch.src_lengths, batch.tgt_in, return_attention=True).maps.cross  # [(B, H, T, S)] per layer
    out = {}
    for layer, m in enumerate(maps, start=1):
        for head in range(m.shape[1]):
            links = [attention_links(m[i, head, :len(p.tgt), :len(p.src)].cpu()) for i, p in enumerate(pairs)]
            out[f"layer{layer}/head{head + 1}"] = aer(links, [p.sure for p in pairs], [p.possible for p in pairs])
    return out


def alignment_model_path(directory: str | Path | None = None) -> Path:
    """Where the seed-0 Transformer of the record is kept (the playground exports it)."""
    return model_path("transformer-alignment", "transformer", directory)


def _run(data, recipe: dict, d_model: int, seed: int, device, directory=None) -> dict:
    setup(seed)
    torch.manual_seed(seed)
    t = recipe["transformer"]
    model = build("transformer", transformer_config(data, d_model, recipe)).to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], seed=seed, device=device,
                  progress=False, patience=recipe["dates_patience"], lr=t["lr"], warmup=t["warmup"],
                  betas=tuple(t["betas"]), loss=functools.partial(data.loss, label_smoothing=t["label_smoothing"]))
    if seed == 0:
        save_checkpoint(alignment_model_path(directory), copy.deepcopy(model).cpu(), recipe=recipe)
    heads = head_aers(model, data)
    return {"accuracy": exact_match(model, data), "aer": alignment_error_rate(model, data),
            "aer_aligned": alignment_error_rate(model, data, aligned_only=True),
            "best_head_aer": min(heads.values()), "best_head": min(heads, key=heads.get),
            "valid_bleu": history.epochs[history.best_epoch - 1]["valid_bleu"], "best_epoch": history.best_epoch,
            "epochs_run": len(history.epochs), "stopped": history.stopped, "train_seconds": round(history.seconds, 1),
            "parameters": count(model), "d_model": d_model}


def alignment_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    return pieces_status(PartialRuns("transformer-alignment", ALIGNMENT, directory), variant_seed_keys(ALIGNMENT))


def run_alignment(directory: str | Path | None = None, progress: bool = False, reverse: bool = False) -> dict | None:
    """Train what is missing; write and return the record ``transformer-alignment`` once every
    run is done (else None)."""
    recipe, device = ALIGNMENT, setup(0)
    data = dates_data(n=recipe["dates_n"], seed=0)
    target = load_result("ablation-converged")["metrics"]["summary"]["dates"][recipe["reference"]]["parameters"]
    d_model = match_transformer(data, target, recipe)
    runs = run_missing(PartialRuns("transformer-alignment", recipe, directory), variant_seed_keys(recipe),
                       lambda v, seed: _run(data, recipe, d_model, seed, device, directory), progress, reverse)
    if runs is None:
        return None
    cell = {m: mean_sd([r[m] for r in runs]) for m in ("accuracy", "aer", "aer_aligned", "best_head_aer",
                                                        "best_epoch", "epochs_run")}
    cell |= {"best_heads": [r["best_head"] for r in runs], "parameters": runs[0]["parameters"],
             "reference_parameters": target, "d_model": d_model,
             "converged": all(r["best_epoch"] < r["epochs_run"] for r in runs)}
    return record_result("transformer-alignment", command="python -m attention alignment", recipe=recipe,
                         seeds=recipe["seeds"], metrics={"summary": {"transformer": cell}, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run")
