"""Chapter 6's recorded runs: the Transformer beside RNNsearch, and a sweep over the number of heads.

    python -m attention transformer                  # RNNsearch and the Transformer, 2 pairs, 3 seeds
    python -m attention transformer --only 'hsk/*'   # one pair (another process can take the other)
    python -m attention transformer --heads          # h = 1, 2, 4, 8 at a fixed d_model, on HSK
    python -m attention transformer --status         # the runs done and missing

Both models get the same data, the same time budget per run (training stops before an epoch that
would end past it, or earlier when the validation BLEU has not improved for ``patience`` epochs;
the seconds are the CPU time of the training process on one thread, which is the wall-clock time
on an idle core, and does not shrink when other programs share the machine) and about the same number of parameters: the Transformer's ``d_model`` is chosen so that
its parameter count lands closest to RNNsearch's (chapter 3's model) on each pair. The two records,
``transformer-comparison`` and ``transformer-heads``, are declared as
:class:`~attention.studies.base.Study` (``COMPARISON_STUDY``, ``HEADS_STUDY``): each finished run
is kept at once, so the command resumes where it stopped, and the record is written when every
run of it is done; chapter 6 reads them with :func:`attention.results.load_result`.
"""

from __future__ import annotations

import functools

import torch

from ..experiments import build_model, ding_data, evaluate, fit, hsk_data
from ..models import build, count_parameters
from ..results import mean_sd
from .base import Piece, Study, training_row

__all__ = [
    "COMPARISON",
    "HEADS",
    "MODELS",
    "transformer_config",
    "match_transformer",
    "COMPARISON_STUDY",
    "HEADS_STUDY",
    "STUDIES",
]

#: The recipe of both models; ``budget_seconds`` is each run's training time, validation included.
COMPARISON = {
    "pairs": ["hsk", "ding"],
    "seeds": [0, 1, 2],
    "budget_seconds": 300,
    "clock": "process",
    "max_epochs": 200,
    "patience": 8,
    "batch_size": 32,
    "ding_corpus_min_count": 3,
    "rnnsearch": {"lr": 3e-3, "embed_dim": 128, "hidden_dim": 128, "dropout": 0.3},
    "transformer": {
        "lr": 3e-3,
        "warmup": 300,
        "betas": [0.9, 0.98],
        "label_smoothing": 0.1,
        "num_heads": 4,
        "num_layers": 2,
        "dropout": 0.2,
        "tie_embeddings": True,
    },
}
#: The heads sweep (Vaswani et al., Table 3, rows (A)): d_model fixed, h varies, so d_k = d_model / h.
HEADS = {"pair": "hsk", "heads": [1, 2, 4, 8], "seeds": [0, 1, 2], "budget_seconds": 150}


def _data(pair: str, recipe: dict):
    if pair == "hsk":
        return hsk_data(seed=0)
    if pair == "ding":
        return ding_data(n=None, seed=0, min_freq=1, corpus_min_count=recipe["ding_corpus_min_count"])
    raise ValueError(f"unknown pair {pair!r}; choose 'hsk' or 'ding'")


def transformer_config(data, d_model: int, recipe: dict, num_heads: int | None = None) -> dict:
    """The Transformer's config for ``data`` at ``d_model`` (feed-forward size 4 · d_model, as in the paper)."""
    t = recipe["transformer"]
    return dict(
        src_vocab=len(data.src_vocab),
        tgt_vocab=len(data.tgt_vocab),
        d_model=d_model,
        num_heads=num_heads or t["num_heads"],
        num_layers=t["num_layers"],
        d_ff=4 * d_model,
        dropout=t["dropout"],
        tie_embeddings=t["tie_embeddings"],
    )


def match_transformer(data, target: int, recipe: dict, step: int = 8) -> int:
    """The ``d_model`` (a multiple of ``step``, so that 1, 2, 4 and 8 heads divide it) whose
    Transformer has the parameter count closest to ``target``."""
    previous, d = None, step
    while True:  # the count grows with d_model: stop at the first size past the target
        n = count_parameters(build("transformer", transformer_config(data, d, recipe)))
        if n >= target:
            return d if previous is None or n - target <= target - previous else d - step
        previous, d = n, d + step


#: the two models of the comparison, in the order each pair and seed runs them
MODELS = ("RNNsearch", "Transformer")


def _shared(recipe: dict, pair: str) -> dict:
    """A pair's data and the ``d_model`` that sizes the Transformer to RNNsearch on it."""
    data = _data(pair, recipe)
    rnn = build_model(data, attention="additive", **{k: v for k, v in recipe["rnnsearch"].items() if k != "lr"})
    return {"data": data, "d_model": match_transformer(data, count_parameters(rnn), recipe)}


def _train(
    name: str,
    data,
    recipe: dict,
    seed: int,
    device,
    budget: float,
    d_model: int | None = None,
    num_heads: int | None = None,
) -> dict:
    """Build and train one model; its test BLEU, BLEU by length, epochs and size."""
    torch.manual_seed(seed)
    if name == "RNNsearch":
        r = recipe["rnnsearch"]
        model = build_model(
            data,
            attention="additive",
            seed=seed,
            embed_dim=r["embed_dim"],
            hidden_dim=r["hidden_dim"],
            dropout=r["dropout"],
        ).to(device)
        options = dict(lr=r["lr"])
    else:
        t = recipe["transformer"]
        model = build("transformer", transformer_config(data, d_model, recipe, num_heads)).to(device)
        options = dict(
            lr=t["lr"],
            warmup=t["warmup"],
            betas=tuple(t["betas"]),
            loss=functools.partial(data.loss, label_smoothing=t["label_smoothing"]),
        )
    history = fit(
        model,
        data,
        epochs=recipe["max_epochs"],
        batch_size=recipe["batch_size"],
        seed=seed,
        device=device,
        progress=False,
        max_seconds=budget,
        patience=recipe["patience"],
        clock=recipe["clock"],
        **options,
    )
    report = evaluate(model, data)
    return {
        "bleu": report["bleu"].score,
        "signature": report["bleu"].signature,
        "by_length": report["by_length"],
        **training_row(history, model, valid="bleu"),
        "d_model": d_model,
        "num_heads": num_heads,
        "curve": [
            {"epoch": e["epoch"], "seconds": round(e["seconds"], 1), "valid_bleu": e["valid_bleu"]}
            for e in history.epochs
        ],
    }


def _summary(runs: list[dict]) -> dict:
    buckets = [row["bucket"] for row in runs[0]["by_length"]]
    return {
        "bleu": mean_sd([r["bleu"] for r in runs]),
        "valid_bleu": mean_sd([r["valid_bleu"] for r in runs]),
        "by_length": [
            {"bucket": b, "n": runs[0]["by_length"][i]["n"], "bleu": mean_sd([r["by_length"][i]["bleu"] for r in runs])}
            for i, b in enumerate(buckets)
        ],
        "best_epoch": mean_sd([r["best_epoch"] for r in runs]),
        "epochs_run": mean_sd([r["epochs_run"] for r in runs]),
        "train_seconds": mean_sd([r["train_seconds"] for r in runs]),
        "parameters": runs[0]["parameters"],
        "converged": all(r["best_epoch"] < r["epochs_run"] for r in runs),
        "stopped": sorted({r["stopped"].split(":")[0] for r in runs}),
    }


# --- RNNsearch against the Transformer, on each pair ---------------------------------------------


def _comparison_pieces(recipe: dict) -> list[Piece]:
    """``"<pair>/<model>/seed<s>"``; the pieces of a pair share its data (group = pair)."""
    return [
        Piece(f"{p}/{m}/seed{s}", m, s, {"pair": p, "model": m, "seed": s}, group=p)
        for p in recipe["pairs"]
        for s in recipe["seeds"]
        for m in MODELS
    ]


def _comparison_run(study: Study, piece: Piece, shared: dict, device) -> dict:
    recipe = study.recipe
    return _train(
        piece.variant,
        shared["data"],
        recipe,
        piece.seed,
        device,
        recipe["budget_seconds"],
        d_model=shared["d_model"] if piece.variant == "Transformer" else None,
    )


def _comparison_summary(study: Study, runs: list[dict], shared) -> dict:
    pairs = study.recipe["pairs"]
    summary = {p: {m: _summary([r for r in runs if r["pair"] == p and r["model"] == m]) for m in MODELS} for p in pairs}
    for p in pairs:
        summary[p]["Transformer"]["d_model"] = next(
            r["d_model"] for r in runs if r["pair"] == p and r["model"] == "Transformer"
        )
    return {"summary": summary, "runs": runs}


# --- the heads sweep -----------------------------------------------------------------------------


def _heads_pieces(recipe: dict) -> list[Piece]:
    """``"h<heads>/seed<s>"``, from the last seed and the most heads backwards: the order of the
    record's runs (and of the seeds in its summaries' values)."""
    return [
        Piece(f"h{h}/seed{s}", f"h{h}", s, {"heads": h, "seed": s})
        for s in reversed(recipe["seeds"])
        for h in reversed(recipe["heads"])
    ]


def _heads_data(recipe: dict, group: str) -> dict:
    return _shared(recipe["comparison"], recipe["pair"])


def _heads_run(study: Study, piece: Piece, shared: dict, device) -> dict:
    recipe = study.recipe
    return _train(
        "Transformer",
        shared["data"],
        recipe["comparison"],
        piece.seed,
        device,
        recipe["budget_seconds"],
        d_model=shared["d_model"],
        num_heads=piece.fields["heads"],
    )


def _heads_summary(study: Study, runs: list[dict], shared) -> dict:
    d_model = runs[0]["d_model"]  # every run's: the comparison's d_model on the pair
    summary = {
        str(h): _summary([r for r in runs if r["heads"] == h]) | {"d_k": d_model // h} for h in study.recipe["heads"]
    }
    return {"d_model": d_model, "summary": summary, "runs": runs}


COMPARISON_STUDY = Study(
    "transformer-comparison",
    "transformer",
    "chapter 6: RNNsearch vs the Transformer, same time and parameter budget, 3 seeds",
    COMPARISON,
    _comparison_run,
    _comparison_summary,
    data=_shared,
    pieces=_comparison_pieces,
    notes="wall_seconds adds up the training time of every run; the runs ran in two processes",
)
HEADS_STUDY = Study(
    "transformer-heads",
    "transformer --heads",
    "chapter 6: the heads sweep, h = 1, 2, 4, 8 at the comparison's d_model",
    HEADS | {"comparison": COMPARISON},
    _heads_run,
    _heads_summary,
    data=_heads_data,
    pieces=_heads_pieces,
)
STUDIES = [COMPARISON_STUDY, HEADS_STUDY]
