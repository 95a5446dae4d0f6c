"""Chapter 6's recorded runs: the Transformer beside RNNsearch, and a sweep over the number of heads.

    python -m attention transformer --pair hsk   # RNNsearch and the Transformer, 3 seeds (another
    python -m attention transformer --pair ding  #   process can take the other pair)
    python -m attention transformer --heads      # h = 1, 2, 4, 8 at a fixed d_model, on HSK
    python -m attention transformer --status     # the runs done and missing

Both models get the same data, the same time budget per run (training stops before an epoch that
would end past it, or earlier when the validation BLEU has not improved for ``patience`` epochs;
the seconds are the CPU time of the training process on one thread, which is the wall-clock time
on an idle core, and does not shrink when other programs share the machine) and about the same number of parameters: the Transformer's ``d_model`` is chosen so that
its parameter count lands closest to RNNsearch's (chapter 3's model) on each pair. Each finished
run is kept in :class:`~attention.results.PartialRuns` at once, so the command resumes where it
stopped; the records ``transformer-comparison`` and ``transformer-heads`` are written when every
run of theirs is done, and chapter 6 reads them with :func:`attention.results.load_result`.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path

import torch

from ..device import setup
from ..experiments import build_model, ding_data, evaluate, fit, hsk_data
from ..models import build
from ..results import PartialRuns, mean_sd, record_result

__all__ = ["COMPARISON", "HEADS", "transformer_config", "match_transformer", "run_comparison", "run_heads",
           "comparison_status"]

#: The recipe of both models; ``budget_seconds`` is each run's training time, validation included.
COMPARISON = {
    "pairs": ["hsk", "ding"], "seeds": [0, 1, 2], "budget_seconds": 300, "clock": "process", "max_epochs": 200, "patience": 8,
    "batch_size": 32, "ding_corpus_min_count": 3,
    "rnnsearch": {"lr": 3e-3, "embed_dim": 128, "hidden_dim": 128, "dropout": 0.3},
    "transformer": {"lr": 3e-3, "warmup": 300, "betas": [0.9, 0.98], "label_smoothing": 0.1, "num_heads": 4,
                    "num_layers": 2, "dropout": 0.2, "tie_embeddings": True},
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
    return dict(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab), d_model=d_model,
                num_heads=num_heads or t["num_heads"], num_layers=t["num_layers"], d_ff=4 * d_model,
                dropout=t["dropout"], tie_embeddings=t["tie_embeddings"])


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def match_transformer(data, target: int, recipe: dict, step: int = 8) -> int:
    """The ``d_model`` (a multiple of ``step``, so that 1, 2, 4 and 8 heads divide it) whose
    Transformer has the parameter count closest to ``target``."""
    previous, d = None, step
    while True:  # the count grows with d_model: stop at the first size past the target
        n = _count(build("transformer", transformer_config(data, d, recipe)))
        if n >= target:
            return d if previous is None or n - target <= target - previous else d - step
        previous, d = n, d + step


def _train(name: str, data, recipe: dict, seed: int, device, budget: float, d_model: int | None = None,
           num_heads: int | None = None) -> dict:
    """Build and train one model; its test BLEU, BLEU by length, epochs and size."""
    setup(seed)
    torch.manual_seed(seed)
    if name == "RNNsearch":
        r = recipe["rnnsearch"]
        model = build_model(data, attention="additive", seed=seed, embed_dim=r["embed_dim"],
                            hidden_dim=r["hidden_dim"], dropout=r["dropout"]).to(device)
        options = dict(lr=r["lr"])
    else:
        t = recipe["transformer"]
        model = build("transformer", transformer_config(data, d_model, recipe, num_heads)).to(device)
        options = dict(lr=t["lr"], warmup=t["warmup"], betas=tuple(t["betas"]),
                       loss=functools.partial(data.loss, label_smoothing=t["label_smoothing"]))
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], seed=seed,
                  device=device, progress=False, max_seconds=budget, patience=recipe["patience"],
                  clock=recipe["clock"], **options)
    report = evaluate(model, data)
    return {"bleu": report["bleu"].score, "signature": report["bleu"].signature, "by_length": report["by_length"],
            "valid_bleu": history.epochs[history.best_epoch - 1]["valid_bleu"], "best_epoch": history.best_epoch,
            "epochs_run": len(history.epochs), "stopped": history.stopped, "train_seconds": round(history.seconds, 1),
            "parameters": _count(model), "d_model": d_model, "num_heads": num_heads,
            "curve": [{"epoch": e["epoch"], "seconds": round(e["seconds"], 1), "valid_bleu": e["valid_bleu"]}
                      for e in history.epochs]}


def _summary(runs: list[dict]) -> dict:
    buckets = [row["bucket"] for row in runs[0]["by_length"]]
    return {"bleu": mean_sd([r["bleu"] for r in runs]), "valid_bleu": mean_sd([r["valid_bleu"] for r in runs]),
            "by_length": [{"bucket": b, "n": runs[0]["by_length"][i]["n"],
                           "bleu": mean_sd([r["by_length"][i]["bleu"] for r in runs])} for i, b in enumerate(buckets)],
            "best_epoch": mean_sd([r["best_epoch"] for r in runs]), "epochs_run": mean_sd([r["epochs_run"] for r in runs]),
            "train_seconds": mean_sd([r["train_seconds"] for r in runs]), "parameters": runs[0]["parameters"],
            "converged": all(r["best_epoch"] < r["epochs_run"] for r in runs),
            "stopped": sorted({r["stopped"].split(":")[0] for r in runs})}


def _store(name: str, recipe: dict, directory) -> PartialRuns:
    return PartialRuns(name, recipe, directory)


def comparison_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    """The runs of both records: ``{"done": [...], "missing": [...]}``."""
    comp, heads = _store("transformer-comparison", COMPARISON, directory), _store("transformer-heads", HEADS, directory)
    keys = [(comp, k) for k in _comparison_keys()] + [(heads, k) for k in _heads_keys()]
    return {"done": [k for s, k in keys if k in s], "missing": [k for s, k in keys if k not in s]}


def _comparison_keys() -> list[str]:
    return [f"{p}/{m}/seed{s}" for p in COMPARISON["pairs"] for s in COMPARISON["seeds"]
            for m in ("RNNsearch", "Transformer")]


def _heads_keys() -> list[str]:
    return [f"h{h}/seed{s}" for s in HEADS["seeds"] for h in HEADS["heads"]]


def run_comparison(pairs: list[str] | None = None, directory: str | Path | None = None,
                   progress: bool = False) -> dict | None:
    """Train what is missing of RNNsearch vs the Transformer on ``pairs`` (default both); write
    and return the record ``transformer-comparison`` once every run is done (else None)."""
    recipe, device = COMPARISON, setup(0)
    done = _store("transformer-comparison", recipe, directory)
    sizes = {}
    for pair in pairs or recipe["pairs"]:
        if pair not in recipe["pairs"]:
            raise ValueError(f"unknown pair {pair!r}; choose from {recipe['pairs']}")
        data = None
        for key in [k for k in _comparison_keys() if k.startswith(pair + "/")]:
            if key in done:
                continue
            data = data or _data(pair, recipe)
            if pair not in sizes:
                rnn = build_model(data, attention="additive", **{k: v for k, v in recipe["rnnsearch"].items() if k != "lr"})
                sizes[pair] = match_transformer(data, _count(rnn), recipe)
            _, name, seed = key.split("/")
            row = _train(name, data, recipe, int(seed[4:]), device, recipe["budget_seconds"],
                         d_model=sizes[pair] if name == "Transformer" else None)
            done.add(key, row)
            if progress:
                print(key, {k: v for k, v in row.items() if k in ("bleu", "best_epoch", "epochs_run", "parameters",
                                                                   "d_model", "stopped")}, flush=True)
    if any(k not in done for k in _comparison_keys()):
        return None
    runs = [{"pair": k.split("/")[0], "model": k.split("/")[1], "seed": int(k.split("/seed")[1]), **done.get(k)}
            for k in _comparison_keys()]
    summary = {p: {m: _summary([r for r in runs if r["pair"] == p and r["model"] == m])
                   for m in ("RNNsearch", "Transformer")} for p in recipe["pairs"]}
    for p in recipe["pairs"]:
        summary[p]["Transformer"]["d_model"] = next(r["d_model"] for r in runs if r["pair"] == p and r["model"] == "Transformer")
    return record_result("transformer-comparison", command="python -m attention transformer", recipe=recipe,
                         seeds=recipe["seeds"], metrics={"summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run; the runs ran in two processes")


def run_heads(directory: str | Path | None = None, progress: bool = False) -> dict | None:
    """The heads sweep on HSK at the comparison's d_model; the record ``transformer-heads`` once done."""
    device = setup(0)
    recipe = HEADS | {"comparison": COMPARISON}
    done = _store("transformer-heads", HEADS, directory)
    data = _data(HEADS["pair"], COMPARISON)
    rnn = build_model(data, attention="additive", **{k: v for k, v in COMPARISON["rnnsearch"].items() if k != "lr"})
    d_model = match_transformer(data, _count(rnn), COMPARISON)
    for key in _heads_keys():
        if key in done:
            continue
        h, seed = key.split("/")
        row = _train("Transformer", data, COMPARISON, int(seed[4:]), device, HEADS["budget_seconds"],
                     d_model=d_model, num_heads=int(h[1:]))
        done.add(key, row)
        if progress:
            print(key, {k: v for k, v in row.items() if k in ("bleu", "best_epoch", "epochs_run", "stopped")}, flush=True)
    if any(k not in done for k in _heads_keys()):
        return None
    runs = [{"heads": int(k.split("/")[0][1:]), "seed": int(k.split("/seed")[1]), **done.get(k)} for k in _heads_keys()]
    summary = {str(h): _summary([r for r in runs if r["heads"] == h]) | {"d_k": d_model // h} for h in HEADS["heads"]}
    return record_result("transformer-heads", command="python -m attention transformer --heads", recipe=recipe,
                         seeds=HEADS["seeds"], metrics={"d_model": d_model, "summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run")
