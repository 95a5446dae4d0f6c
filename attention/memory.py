"""Chapter 7's recorded run: end-to-end memory networks with 1, 2 and 3 hops on the generated
bAbI-format tasks 1, 2, 3 and 6 (:func:`attention.tasks.qa.babi_data`).

    python -m attention memory            # 4 tasks x 3 hop counts x 3 seeds, resumable
    python -m attention memory --status   # the runs done and missing

Every run trains :class:`~attention.models.memn2n.MemN2N` (position encoding, temporal encoding,
adjacent tying) until its validation accuracy has not improved for ``patience`` epochs, keeps its
best epoch and reports test accuracy and, for each hop, how often the sentence it weighs most is
one of the question's supporting facts. Each finished run is kept in
:class:`~attention.results.PartialRuns`; the record ``memory-hops`` is written once all are.
"""
from __future__ import annotations

import re
from pathlib import Path

import torch

from .device import setup
from .experiments import fit
from .models import build
from .results import PartialRuns, mean_sd, record_result
from .tasks.qa import babi_data

__all__ = ["MEMORY", "PAPER", "build_memn2n", "run_memory", "memory_status"]

MEMORY = {"tasks": [1, 2, 3, 6], "hops": [1, 2, 3], "seeds": [0, 1, 2], "n_train": 10000, "n_test": 1000,
          "embed_dim": 20, "memory_size": 50, "encoding": "position", "temporal": True, "tying": "adjacent",
          "max_epochs": 30, "patience": 3, "batch_size": 32, "lr": 5e-3}

#: Sukhbaatar et al. (2015), Table 1: test error (%) of MemN2N (PE LS RN) with 1, 2, 3 hops, bAbI 1k
PAPER = {"task 2, bAbI 1k training questions, error %": {"1": 62.0, "2": 15.6, "3": 11.4}}


def build_memn2n(data, hops: int, recipe: dict = MEMORY, seed: int = 0):
    """The memory network of ``recipe`` with ``hops`` hops for ``data``, initialised from ``seed``."""
    torch.manual_seed(seed)
    return build("memn2n", dict(vocab=len(data.vocab), answers=len(data.answers), embed_dim=recipe["embed_dim"],
                                hops=hops, memory_size=recipe["memory_size"], encoding=recipe["encoding"],
                                temporal=recipe["temporal"], tying=recipe["tying"]))


def _run(data, hops: int, recipe: dict, seed: int, device) -> dict:
    setup(seed)
    model = build_memn2n(data, hops, recipe, seed).to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], lr=recipe["lr"],
                  seed=seed, device=device, progress=False, patience=recipe["patience"])
    report = data.evaluate(model)
    return {"accuracy": report["accuracy"], "support_hits": report["support_hits"],
            "valid_accuracy": history.epochs[history.best_epoch - 1]["valid_accuracy"],
            "best_epoch": history.best_epoch, "epochs_run": len(history.epochs), "stopped": history.stopped,
            "train_seconds": round(history.seconds, 1), "parameters": sum(p.numel() for p in model.parameters())}


def _keys(recipe: dict) -> list[str]:
    return [f"task{t}/hops{h}/seed{s}" for s in recipe["seeds"] for t in recipe["tasks"] for h in recipe["hops"]]


def _reuse_if_stopped_early(old: dict, result: dict) -> bool:
    """A piece recorded under a lower epoch cap that stopped early (patience) ran exactly the updates
    it would run under this recipe: reuse it."""
    rest = {k: v for k, v in old.items() if k != "max_epochs"}
    return (rest == {k: v for k, v in MEMORY.items() if k != "max_epochs"}
            and old.get("max_epochs", 0) <= MEMORY["max_epochs"]
            and str(result.get("stopped", "")).startswith("early stopping"))


def _store(directory) -> PartialRuns:
    return PartialRuns("memory-hops", MEMORY, directory, reuse=_reuse_if_stopped_early)


def memory_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    done = _store(directory)
    keys = _keys(MEMORY)
    return {"done": [k for k in keys if k in done], "missing": [k for k in keys if k not in done]}


def run_memory(directory: str | Path | None = None, progress: bool = False, reverse: bool = False) -> dict | None:
    """Train what is missing (``reverse``: from the last run backwards, for a second process);
    write and return the record ``memory-hops`` once every run is done (else None)."""
    recipe, device = MEMORY, setup(0)
    done = _store(directory)
    data = {t: babi_data(t, n_train=recipe["n_train"], n_test=recipe["n_test"], memory_size=recipe["memory_size"])
            for t in recipe["tasks"]}
    keys = _keys(recipe)
    for key in reversed(keys) if reverse else keys:
        if key in done:
            continue
        task, hops, seed = (int(re.sub(r"\D", "", part)) for part in key.split("/"))
        row = _run(data[task], hops, recipe, seed, device)
        done.add(key, row)
        if progress:
            print(key, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    if any(k not in done for k in keys):
        return None
    summary = {}
    for t in recipe["tasks"]:
        for h in recipe["hops"]:
            rows = [done.get(f"task{t}/hops{h}/seed{s}") for s in recipe["seeds"]]
            summary[f"task{t}/hops{h}"] = {
                "accuracy": mean_sd([r["accuracy"] for r in rows]),
                "support_hits": [mean_sd([r["support_hits"][k] for r in rows]) for k in range(h)],
                "best_epoch": mean_sd([r["best_epoch"] for r in rows]),
                "parameters": rows[0]["parameters"],
                "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}
    runs = [{"key": k, **done.get(k)} for k in keys]
    data_info = {t: {"train": len(d.train), "valid": len(d.valid), "test": len(d.test), "vocab": len(d.vocab),
                     "answers": d.answers} for t, d in data.items()}
    return record_result("memory-hops", command="python -m attention memory", recipe=recipe, seeds=recipe["seeds"],
                         metrics={"data": data_info, "summary": summary, "paper": PAPER, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run; paper = Sukhbaatar et al. "
                               "(2015), Table 1, on Facebook's bAbI with 1,000 training questions, not ours")
