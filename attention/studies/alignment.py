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
reads), together with the best AER any single layer-and-head map reaches; each AER both over
every output character and over the digits only (``aligned_only``: the hyphens of ``YYYY-MM-DD``
have no gold link, so an argmax on them is always counted wrong, and even a perfect alignment
scores above 0 over every character). The seed-0 Transformer
is kept beside the record (:func:`alignment_model_path`) for the playground. The run is declared as
a :class:`~attention.studies.base.Study` (``STUDY``).
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from ..data import collate
from ..experiments import alignment_error_rate, dates_data, fit
from ..metrics import aer
from ..models import build
from ..results import load_result
from ..tasks.translation import attention_links, drop_unaligned
from .ablation import CONVERGED, exact_match
from .base import Piece, Study, recorded_rows, summarise_variants, training_row
from .comparison import COMPARISON, match_transformer, transformer_config

__all__ = ["ALIGNMENT", "head_aers", "alignment_model_path", "STUDY", "STUDIES"]

ALIGNMENT = {
    "seeds": [0, 1, 2],
    "variants": ["transformer"],
    "reference": "bahdanau-additive",
    **{k: CONVERGED[k] for k in ("dates_n", "dates_hidden_dim", "batch_size", "window", "dates_patience")},
    "max_epochs": CONVERGED["max_epochs"]["dates"],
    "transformer": COMPARISON["transformer"],
}


@torch.no_grad()
def head_aers(model, data, pairs=None, aligned_only: bool = False) -> dict[str, float]:
    """The AER of every single cross-attention map, ``"layer<l>/head<h>"`` -> AER, teacher-forced.

    ``aligned_only`` scores only the target tokens the gold aligns to something (the digits, not
    the hyphens of ``YYYY-MM-DD``), as :func:`attention.experiments.alignment_error_rate` does."""
    pairs = data.test if pairs is None else pairs
    model.eval()
    device = next(model.parameters()).device
    batch = collate(list(pairs), data.src_vocab, data.tgt_vocab).to(device)
    maps = model(
        batch.src, batch.src_lengths, batch.tgt_in, return_attention=True
    ).maps.cross  # [(B, H, T, S)] per layer
    out = {}
    for layer, m in enumerate(maps, start=1):
        for head in range(m.shape[1]):
            links = [attention_links(m[i, head, : len(p.tgt), : len(p.src)].cpu()) for i, p in enumerate(pairs)]
            if aligned_only:
                links = drop_unaligned(links, pairs)
            out[f"layer{layer}/head{head + 1}"] = aer(links, [p.sure for p in pairs], [p.possible for p in pairs])
    return out


def alignment_model_path(directory: str | Path | None = None) -> Path:
    """Where the seed-0 Transformer of the record is kept (the playground exports it)."""
    return STUDY.model_path("transformer", directory)


def _data(recipe: dict, group: str) -> dict:
    """The date task, and the ``d_model`` that sizes the Transformer to the converged ablation's
    date-task RNNsearch (``recipe["reference"]`` in the record ``ablation-converged``)."""
    data = dates_data(n=recipe["dates_n"], seed=0)
    target = load_result("ablation-converged")["metrics"]["summary"]["dates"][recipe["reference"]]["parameters"]
    return {"data": data, "target": target, "d_model": match_transformer(data, target, recipe)}


def _run(study: Study, piece: Piece, shared: dict, device):
    recipe, seed, data, d_model = study.recipe, piece.seed, shared["data"], shared["d_model"]
    torch.manual_seed(seed)
    t = recipe["transformer"]
    model = build("transformer", transformer_config(data, d_model, recipe)).to(device)
    history = fit(
        model,
        data,
        epochs=recipe["max_epochs"],
        batch_size=recipe["batch_size"],
        seed=seed,
        device=device,
        progress=False,
        patience=recipe["dates_patience"],
        lr=t["lr"],
        warmup=t["warmup"],
        betas=tuple(t["betas"]),
        loss=functools.partial(data.loss, label_smoothing=t["label_smoothing"]),
    )
    heads = head_aers(model, data)
    heads_aligned = head_aers(model, data, aligned_only=True)
    row = {
        "accuracy": exact_match(model, data),
        "aer": alignment_error_rate(model, data),
        "aer_aligned": alignment_error_rate(model, data, aligned_only=True),
        "best_head_aer": min(heads.values()),
        "best_head": min(heads, key=heads.get),
        "best_head_aer_aligned": min(heads_aligned.values()),
        "best_head_aligned": min(heads_aligned, key=heads_aligned.get),
        **training_row(history, model, valid="bleu"),
        "d_model": d_model,
    }
    return row, model


def _summarise(study: Study, runs: list[dict], shared) -> dict:
    cell = summarise_variants(
        runs, ("accuracy", "aer", "aer_aligned", "best_head_aer", "best_head_aer_aligned", "best_epoch", "epochs_run")
    )["transformer"]
    cell |= {
        "best_heads": [r["best_head"] for r in runs],
        "best_heads_aligned": [r["best_head_aligned"] for r in runs],
        "reference_parameters": shared()["target"],
        "d_model": shared()["d_model"],
    }
    return {"summary": {"transformer": cell}, "runs": runs}


def _recorded(study: Study, record: dict) -> dict[str, dict]:
    """The record's rows that hold every field :func:`_run` writes (older rows lack the digits-only
    best head and are run again)."""
    return {k: row for k, row in recorded_rows(study, record).items() if "best_head_aer_aligned" in row}


STUDY = Study(
    "transformer-alignment",
    "alignment",
    "chapter 10: the Transformer's cross-attention as word alignment on the dates, 3 seeds",
    ALIGNMENT,
    _run,
    _summarise,
    data=_data,
    keep=("transformer",),
    recorded=_recorded,
)
STUDIES = [STUDY]
