"""Chapter 7's recorded runs, one command for three records:

* ``memory-hops``: end-to-end memory networks with 1, 2 and 3 hops on the generated bAbI-format
  tasks 1, 2, 3 and 6 (:func:`attention.tasks.qa.babi_data`);
* ``dmn-passes``: dynamic memory networks with 1, 2 and 3 passes on task 3;
* ``ntm-copy``: a Neural Turing Machine and an LSTM of about as many parameters trained to copy
  sequences of 1-10 vectors, then tested on lengths up to 120.

    python -m attention memory             # every missing run, resumable
    python -m attention memory --reverse   # the same from the last run backwards (a second process)
    python -m attention memory --status    # the runs done and missing

Every run trains until its validation metric (accuracy; bit accuracy for the copy task) has not
improved for ``patience`` epochs and keeps its best epoch. MemN2N and DMN runs report test
accuracy and, for each hop or pass, how often the sentence it weighs most is one of the
question's supporting facts; copy runs report bit and sequence accuracy for each test length.
Each finished run is kept in :class:`~attention.results.PartialRuns`; a record is written once
all of its runs are.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import torch

from ..checkpoints import save_checkpoint
from ..device import setup
from ..experiments import fit
from ..models import build
from ..results import RESULTS_DIR, PartialRuns, load_result, mean_sd, model_path, record_result
from ..tasks.copy import copy_data
from ..tasks.qa import babi_data, gate_supervision_loss

__all__ = ["MEMORY", "DMN_RUNS", "NTM_RUNS", "PAPER", "build_memn2n", "build_dmn", "build_copy_model",
           "copy_model_path", "run_memory", "memory_status"]

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


#: Dynamic memory networks with 1, 2, 3 passes on task 3 (three supporting facts), trained on the
#: answers alone ("unsupervised") or also on the supporting facts, pass p -> the p-th listed
#: ("supervised", Kumar et al.'s bAbI setting; :func:`attention.tasks.qa.gate_supervision_loss`).
DMN_RUNS = {"task": 3, "passes": [1, 2, 3], "arms": ["unsupervised", "supervised"], "gate_weight": 1.0,
            "seeds": [0, 1, 2], "n_train": 10000, "n_test": 1000,
            "memory_size": 50, "embed_dim": 32, "hidden_dim": 64, "gate_dim": 64, "update": "relu",
            "max_epochs": 40, "patience": 5, "batch_size": 32, "lr": 3e-3}

#: The copy task: an NTM and an LSTM baseline of about as many parameters, lengths 1-10 in
#: training, longer ones only in the test.
NTM_RUNS = {"models": ["ntm", "copy-lstm"], "seeds": [0, 1, 2], "bits": 8, "train_lengths": [1, 10],
            "n_train": 10000, "n_valid": 256, "n_test": 256, "test_lengths": [20, 40, 80, 120],
            "n_by_length": 128, "memory_slots": 128, "memory_width": 20, "controller_size": 100,
            "lstm_hidden": 118, "max_epochs": 300, "ntm_max_epochs": 40, "patience": 10, "batch_size": 32, "lr": 1e-3,
            "clip": 10.0}


def build_dmn(data, passes: int, recipe: dict | None = None, seed: int = 0):
    """The dynamic memory network of ``recipe`` (default :data:`DMN_RUNS`) with ``passes`` passes for
    ``data``, initialised from ``seed``."""
    recipe = recipe or DMN_RUNS
    torch.manual_seed(seed)
    return build("dmn", dict(vocab=len(data.vocab), answers=len(data.answers), embed_dim=recipe["embed_dim"],
                             hidden_dim=recipe["hidden_dim"], gate_dim=recipe["gate_dim"], passes=passes,
                             update=recipe["update"]))


def build_copy_model(kind: str, recipe: dict | None = None, seed: int = 0):
    """``kind`` "ntm" or "copy-lstm" of ``recipe`` (default :data:`NTM_RUNS`) for the copy task,
    initialised from ``seed``."""
    recipe = recipe or NTM_RUNS
    torch.manual_seed(seed)
    if kind == "ntm":
        return build("ntm", dict(bits=recipe["bits"], memory_slots=recipe["memory_slots"],
                                 memory_width=recipe["memory_width"], controller_size=recipe["controller_size"],
                                 seed=seed))
    if kind == "copy-lstm":
        return build("copy-lstm", dict(bits=recipe["bits"], hidden=recipe["lstm_hidden"]))
    raise ValueError(f"kind must be one of {recipe['models']}; got {kind!r}")


def _copy_data(recipe: dict | None = None):
    recipe = recipe or NTM_RUNS
    lo, hi = recipe["train_lengths"]
    return copy_data(bits=recipe["bits"], min_len=lo, max_len=hi, n_train=recipe["n_train"],
                     n_valid=recipe["n_valid"], n_test=recipe["n_test"], test_lengths=recipe["test_lengths"],
                     n_by_length=recipe["n_by_length"], seed=0)


def _train(model, data, recipe: dict, seed: int, device, **options):
    setup(seed)
    model = model.to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], lr=recipe["lr"],
                  seed=seed, device=device, progress=False, patience=recipe["patience"], **options)
    return model, {"valid": history.epochs[history.best_epoch - 1][f"valid_{data.metric}"],
                   "best_epoch": history.best_epoch, "epochs_run": len(history.epochs),
                   "stopped": history.stopped, "train_seconds": round(history.seconds, 1),
                   "parameters": sum(p.numel() for p in model.parameters())}


def _run_dmn(data, arm: str, passes: int, seed: int, device) -> dict:
    loss = gate_supervision_loss(DMN_RUNS["gate_weight"]) if arm == "supervised" else None
    model, row = _train(build_dmn(data, passes, DMN_RUNS, seed), data, DMN_RUNS, seed, device, loss=loss)
    report = data.evaluate(model)
    return {"accuracy": report["accuracy"], "support_hits": report["support_hits"], **row}


def copy_model_path(kind: str, directory: str | Path | None = None) -> Path:
    """Where the copy run of ``kind`` with seed 0 keeps its trained model (the notebook draws its heads)."""
    return model_path("ntm-copy", kind, directory)


def _run_copy(data, kind: str, seed: int, device, directory=None) -> dict:
    recipe = NTM_RUNS | ({"max_epochs": NTM_RUNS["ntm_max_epochs"]} if kind == "ntm" else {})  # an NTM epoch is slow
    model, row = _train(build_copy_model(kind, NTM_RUNS, seed), data, recipe, seed, device, clip=NTM_RUNS["clip"])
    if seed == 0:
        path = copy_model_path(kind, directory)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(path, model.cpu(), recipe=NTM_RUNS)
        model.to(device)
    lengths = {"test": data.evaluate(model)} | {str(L): data.evaluate(model, length=L)
                                                  for L in NTM_RUNS["test_lengths"]}
    return {"by_length": {k: {m: v[m] for m in ("bit_accuracy", "sequence_accuracy")} for k, v in lengths.items()},
            **row}


@functools.lru_cache(maxsize=4)
def _lstm_parameters(bits: int, hidden: int) -> int:
    return sum(p.numel() for p in build("copy-lstm", dict(bits=bits, hidden=hidden)).parameters())


def _reuse_copy_run(old: dict, result: dict) -> bool:
    """A copy run recorded before the NTM had its own epoch cap ran exactly the updates it runs now if
    it is an LSTM run (same cap) or stopped early (patience) within the NTM's cap."""
    if old != {k: v for k, v in NTM_RUNS.items() if k != "ntm_max_epochs"}:
        return False
    lstm = result.get("parameters") == _lstm_parameters(NTM_RUNS["bits"], NTM_RUNS["lstm_hidden"])
    return lstm or (str(result.get("stopped", "")).startswith("early stopping")
                    and result.get("epochs_run", 10 ** 9) <= NTM_RUNS["ntm_max_epochs"])


def _stores(directory) -> dict[str, PartialRuns]:
    return {"memory-hops": _store(directory), "dmn-passes": PartialRuns("dmn-passes", DMN_RUNS, directory),
            "ntm-copy": PartialRuns("ntm-copy", NTM_RUNS, directory, reuse=_reuse_copy_run)}


def _all_keys() -> list[tuple[str, str]]:
    """(record, key) of every run, in the order a forward process takes them."""
    return ([("memory-hops", k) for k in _keys(MEMORY)]
            + [("dmn-passes", f"{a}/passes{p}/seed{s}") for s in DMN_RUNS["seeds"] for a in DMN_RUNS["arms"]
               for p in DMN_RUNS["passes"]]
            + [("ntm-copy", f"{m}/seed{s}") for s in NTM_RUNS["seeds"] for m in NTM_RUNS["models"]])


def memory_status(directory: str | Path | None = None) -> dict[str, list[str]]:
    stores = _stores(directory)
    keys = _all_keys()
    return {"done": [f"{r}: {k}" for r, k in keys if k in stores[r]],
            "missing": [f"{r}: {k}" for r, k in keys if k not in stores[r]]}


def run_memory(directory: str | Path | None = None, progress: bool = False, reverse: bool = False) -> list | None:
    """Train what is missing (``reverse``: from the last run backwards, for a second process); write
    each record once all its runs are done. Returns the three records, or None while runs are missing."""
    device = setup(0)
    stores = _stores(directory)
    keys = _all_keys()
    data = _DataCache()
    ran: set[str] = set()
    for record, key in reversed(keys) if reverse else keys:
        if key in stores[record]:
            continue
        ran.add(record)
        if record == "memory-hops":
            task, hops, seed = (int(re.sub(r"\D", "", part)) for part in key.split("/"))
            row = _run(data.qa(task, MEMORY), hops, MEMORY, seed, device)
        elif record == "dmn-passes":
            arm, passes, seed = key.split("/")
            row = _run_dmn(data.qa(DMN_RUNS["task"], DMN_RUNS), arm, int(passes[6:]), int(seed[4:]), device)
        else:
            kind, seed = key.split("/")
            row = _run_copy(data.copy(), kind, int(seed[4:]), device, directory)
        stores[record].add(key, row)
        if progress:
            print(record, key, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    if any(k not in stores[r] for r, k in keys):
        return None
    writers = {"memory-hops": _record_hops, "dmn-passes": _record_dmn, "ntm-copy": _record_copy}
    return [writers[name](stores[name], data, directory, device)
            if name in ran or not (Path(directory or RESULTS_DIR) / f"{name}.json").exists()
            else load_result(name, directory) for name in writers]  # a record is rewritten only when it grew


class _DataCache:
    """Each data set built once per command: ``qa(task, recipe)`` by what builds it (MemN2N's and the
    DMN's task 3 are the same questions), ``copy()`` the copy task."""

    def __init__(self):
        self._sets: dict = {}

    def _get(self, key, make):
        if key not in self._sets:
            self._sets[key] = make()
        return self._sets[key]

    def qa(self, task: int, recipe: dict):
        key = (task, recipe["n_train"], recipe["n_test"], recipe["memory_size"])
        return self._get(key, lambda: babi_data(task, n_train=key[1], n_test=key[2], memory_size=key[3]))

    def copy(self):
        return self._get("copy", _copy_data)


def _data_info(d) -> dict:
    return {"train": len(d.train), "valid": len(d.valid), "test": len(d.test), "vocab": len(d.vocab),
            "answers": d.answers}


def _qa_cell(rows: list[dict], reads: int) -> dict:
    """Over seeds: test accuracy, each of the ``reads`` hops' (passes') support hits, best epoch."""
    return {"accuracy": mean_sd([r["accuracy"] for r in rows]),
            "support_hits": [mean_sd([r["support_hits"][k] for r in rows]) for k in range(reads)],
            "best_epoch": mean_sd([r["best_epoch"] for r in rows]), "parameters": rows[0]["parameters"],
            "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}


def _record_hops(done: PartialRuns, data: _DataCache, directory, device) -> dict:
    recipe = MEMORY
    keys = _keys(recipe)
    summary = {}
    for t in recipe["tasks"]:
        for h in recipe["hops"]:
            summary[f"task{t}/hops{h}"] = _qa_cell([done.get(f"task{t}/hops{h}/seed{s}") for s in recipe["seeds"]], h)
    runs = [{"key": k, **done.get(k)} for k in keys]
    data_info = {t: _data_info(data.qa(t, recipe)) for t in recipe["tasks"]}
    return record_result("memory-hops", command="python -m attention memory", recipe=recipe, seeds=recipe["seeds"],
                         metrics={"data": data_info, "summary": summary, "paper": PAPER, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run; paper = Sukhbaatar et al. "
                               "(2015), Table 1, on Facebook's bAbI with 1,000 training questions, not ours")


def _record_dmn(done: PartialRuns, data: _DataCache, directory, device) -> dict:
    recipe = DMN_RUNS
    summary = {}
    keys = [f"{a}/passes{p}/seed{s}" for s in recipe["seeds"] for a in recipe["arms"] for p in recipe["passes"]]
    for a in recipe["arms"]:
        for p in recipe["passes"]:
            summary[f"{a}/passes{p}"] = _qa_cell([done.get(f"{a}/passes{p}/seed{s}") for s in recipe["seeds"]], p)
    runs = [{"key": k, **done.get(k)} for k in keys]
    return record_result("dmn-passes", command="python -m attention memory", recipe=recipe, seeds=recipe["seeds"],
                         metrics={"data": _data_info(data.qa(recipe["task"], recipe)), "summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="wall_seconds adds up the training time of every run")


def _record_copy(done: PartialRuns, data: _DataCache, directory, device) -> dict:
    recipe = NTM_RUNS
    summary = {}
    for m in recipe["models"]:
        rows = [done.get(f"{m}/seed{s}") for s in recipe["seeds"]]
        summary[m] = {
            "by_length": {L: {metric: mean_sd([r["by_length"][L][metric] for r in rows])
                              for metric in ("bit_accuracy", "sequence_accuracy")} for L in rows[0]["by_length"]},
            "best_epoch": mean_sd([r["best_epoch"] for r in rows]), "parameters": rows[0]["parameters"],
            "train_seconds": mean_sd([r["train_seconds"] for r in rows]),
            "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}
    runs = [{"key": f"{m}/seed{s}", **done.get(f"{m}/seed{s}")} for s in recipe["seeds"] for m in recipe["models"]]
    return record_result("ntm-copy", command="python -m attention memory", recipe=recipe, seeds=recipe["seeds"],
                         metrics={"summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
                         notes="by_length 'test' = the test split (lengths 1-10, as in training); the others: "
                               "sequences of exactly that length, never seen in training")
