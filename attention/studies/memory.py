"""Chapter 7's recorded runs, one command for three records (three
:class:`~attention.studies.base.Study` declarations, :data:`STUDIES`):

* ``memory-hops`` (:data:`HOPS_STUDY`): end-to-end memory networks with 1, 2 and 3 hops on the
  generated bAbI-format tasks 1, 2, 3 and 6 (:func:`attention.tasks.qa.babi_data`);
* ``dmn-passes`` (:data:`DMN_STUDY`): dynamic memory networks with 1, 2 and 3 passes on task 3;
* ``ntm-copy`` (:data:`COPY_STUDY`): a Neural Turing Machine and an LSTM of about as many
  parameters trained to copy sequences of 1-10 vectors, then tested on lengths up to 120.

    python -m attention memory             # every missing run of the three, resumable
    python -m attention memory --workers 2 # the same on two worker processes
    python -m attention memory --status    # the runs done and missing

Every run trains until its validation metric (accuracy; bit accuracy for the copy task) has not
improved for ``patience`` epochs and keeps its best epoch. MemN2N and DMN runs report test
accuracy and, for each hop or pass, how often the sentence it weighs most is one of the
question's supporting facts; copy runs report bit and sequence accuracy for each test length.
Each record's rows carry their piece's ``key`` (``"task1/hops2/seed0"``, ``"supervised/passes3/seed1"``,
``"ntm/seed0"``); a record is written once all of its runs are.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import torch

from ..device import setup
from ..models import build, count_parameters
from ..results import mean_sd, model_path
from ..tasks.copy import copy_data
from ..tasks.qa import babi_data, gate_supervision_loss
from .base import Piece, Study, fit_piece, summarise_variants, training_row

__all__ = [
    "MEMORY",
    "DMN_RUNS",
    "NTM_RUNS",
    "PAPER",
    "answer_baselines",
    "build_memn2n",
    "build_dmn",
    "build_copy_model",
    "copy_model_path",
    "HOPS_STUDY",
    "DMN_STUDY",
    "COPY_STUDY",
    "STUDIES",
]

MEMORY = {
    "tasks": [1, 2, 3, 6],
    "hops": [1, 2, 3],
    "seeds": [0, 1, 2, 3, 4],
    "n_train": 10000,
    "n_test": 1000,
    "embed_dim": 20,
    "memory_size": 50,
    "encoding": "position",
    "temporal": True,
    "tying": "adjacent",
    "max_epochs": 30,
    "patience": 3,
    "batch_size": 32,
    "lr": 5e-3,
}

#: Sukhbaatar et al. (2015), Table 1: test error (%) of MemN2N (PE LS joint) with 1, 2, 3 hops, bAbI 1k
PAPER = {"task 2, bAbI 1k training questions, error %": {"1": 62.0, "2": 15.6, "3": 11.4}}


def build_memn2n(data, hops: int, recipe: dict = MEMORY, seed: int = 0):
    """The memory network of ``recipe`` with ``hops`` hops for ``data``, initialised from ``seed``."""
    torch.manual_seed(seed)
    return build(
        "memn2n",
        dict(
            vocab=len(data.vocab),
            answers=len(data.answers),
            embed_dim=recipe["embed_dim"],
            hops=hops,
            memory_size=recipe["memory_size"],
            encoding=recipe["encoding"],
            temporal=recipe["temporal"],
            tying=recipe["tying"],
        ),
    )


@functools.lru_cache(maxsize=4)
def _qa_data(task: int, n_train: int, n_test: int, memory_size: int):
    """One bAbI-format task, built once per process (MemN2N's and the DMN's task 3 are the same questions)."""
    return babi_data(task, n_train=n_train, n_test=n_test, memory_size=memory_size)


class _QASets:
    """What the question-answering pieces share: ``sets(task)``, the task's data under ``recipe``."""

    def __init__(self, recipe: dict):
        self.recipe = recipe

    def __call__(self, task: int):
        r = self.recipe
        return _qa_data(task, r["n_train"], r["n_test"], r["memory_size"])


def _qa_sets(recipe: dict, group: str) -> _QASets:
    return _QASets(recipe)


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def _hops_pieces(recipe: dict) -> list[Piece]:
    """``task<t>/hops<h>/seed<s>`` (seeds outer); the record's rows carry the key."""
    return [
        Piece(f"task{t}/hops{h}/seed{s}", f"task{t}/hops{h}", s, {"key": f"task{t}/hops{h}/seed{s}"})
        for s in recipe["seeds"]
        for t in recipe["tasks"]
        for h in recipe["hops"]
    ]


def _run_hops(study: Study, piece: Piece, sets: _QASets, device) -> dict:
    recipe, seed = study.recipe, piece.seed
    task, hops = _numbers(piece.variant)
    data = sets(task)
    setup(seed)
    model = build_memn2n(data, hops, recipe, seed).to(device)
    history = fit_piece(model, data, recipe, seed, device)
    report = data.evaluate(model)
    return {
        "accuracy": report["accuracy"],
        "support_hits": report["support_hits"],
        **training_row(history, model, valid="accuracy"),
    }


def _reuse_if_stopped_early(recipe: dict, group: str, old: dict, result: dict) -> bool:
    """A piece recorded under a lower epoch cap that stopped early (patience) ran exactly the updates
    it would run under this recipe: reuse it."""
    rest = {k: v for k, v in old.items() if k != "max_epochs"}
    return (
        rest == {k: v for k, v in recipe.items() if k != "max_epochs"}
        and old.get("max_epochs", 0) <= recipe["max_epochs"]
        and str(result.get("stopped", "")).startswith("early stopping")
    )


#: Dynamic memory networks with 1, 2, 3 passes on task 3 (three supporting facts), trained on the
#: answers alone ("unsupervised") or also on the supporting facts, pass p -> the p-th listed
#: ("supervised", Kumar et al.'s bAbI setting; :func:`attention.tasks.qa.gate_supervision_loss`).
DMN_RUNS = {
    "task": 3,
    "passes": [1, 2, 3],
    "arms": ["unsupervised", "supervised"],
    "gate_weight": 1.0,
    "seeds": [0, 1, 2, 3, 4],
    "n_train": 10000,
    "n_test": 1000,
    "memory_size": 50,
    "embed_dim": 32,
    "hidden_dim": 64,
    "gate_dim": 64,
    "update": "relu",
    "max_epochs": 40,
    "patience": 5,
    "batch_size": 32,
    "lr": 3e-3,
}

#: The copy task: an NTM and an LSTM baseline of about as many parameters, lengths 1-10 in
#: training, longer ones only in the test.
NTM_RUNS = {
    "models": ["ntm", "copy-lstm"],
    "seeds": [0, 1, 2, 3, 4],
    "bits": 8,
    "train_lengths": [1, 10],
    "n_train": 10000,
    "n_valid": 256,
    "n_test": 256,
    "test_lengths": [20, 40, 80, 120],
    "n_by_length": 128,
    "memory_slots": 128,
    "memory_width": 20,
    "controller_size": 100,
    "lstm_hidden": 118,
    "max_epochs": 300,
    "ntm_max_epochs": 40,
    "patience": 10,
    "batch_size": 32,
    "lr": 1e-3,
    "clip": 10.0,
}


def build_dmn(data, passes: int, recipe: dict | None = None, seed: int = 0):
    """The dynamic memory network of ``recipe`` (default :data:`DMN_RUNS`) with ``passes`` passes for
    ``data``, initialised from ``seed``."""
    recipe = recipe or DMN_RUNS
    torch.manual_seed(seed)
    return build(
        "dmn",
        dict(
            vocab=len(data.vocab),
            answers=len(data.answers),
            embed_dim=recipe["embed_dim"],
            hidden_dim=recipe["hidden_dim"],
            gate_dim=recipe["gate_dim"],
            passes=passes,
            update=recipe["update"],
        ),
    )


def build_copy_model(kind: str, recipe: dict | None = None, seed: int = 0):
    """``kind`` "ntm" or "copy-lstm" of ``recipe`` (default :data:`NTM_RUNS`) for the copy task,
    initialised from ``seed``."""
    recipe = recipe or NTM_RUNS
    torch.manual_seed(seed)
    if kind == "ntm":
        return build(
            "ntm",
            dict(
                bits=recipe["bits"],
                memory_slots=recipe["memory_slots"],
                memory_width=recipe["memory_width"],
                controller_size=recipe["controller_size"],
                seed=seed,
            ),
        )
    if kind == "copy-lstm":
        return build("copy-lstm", dict(bits=recipe["bits"], hidden=recipe["lstm_hidden"]))
    raise ValueError(f"kind must be one of {recipe['models']}; got {kind!r}")


def _copy_data(recipe: dict | None = None, group: str = ""):
    recipe = recipe or NTM_RUNS
    lo, hi = recipe["train_lengths"]
    return copy_data(
        bits=recipe["bits"],
        min_len=lo,
        max_len=hi,
        n_train=recipe["n_train"],
        n_valid=recipe["n_valid"],
        n_test=recipe["n_test"],
        test_lengths=recipe["test_lengths"],
        n_by_length=recipe["n_by_length"],
        seed=0,
    )


def _train(model, data, recipe: dict, seed: int, device, **options):
    """Train ``model`` under ``recipe``: the trained model and its row's training part (the
    validation metric at the best epoch as ``valid``)."""
    setup(seed)
    model = model.to(device)
    history = fit_piece(model, data, recipe, seed, device, **options)
    return model, {
        "valid": history.epochs[history.best_epoch - 1][f"valid_{data.metric}"],
        **training_row(history, model),
    }


def _dmn_pieces(recipe: dict) -> list[Piece]:
    """``<arm>/passes<p>/seed<s>`` (seeds outer); the record's rows carry the key."""
    return [
        Piece(f"{a}/passes{p}/seed{s}", f"{a}/passes{p}", s, {"key": f"{a}/passes{p}/seed{s}"})
        for s in recipe["seeds"]
        for a in recipe["arms"]
        for p in recipe["passes"]
    ]


def _run_dmn(study: Study, piece: Piece, sets: _QASets, device) -> dict:
    recipe = study.recipe
    arm, passes = piece.variant.split("/")
    data = sets(recipe["task"])
    loss = gate_supervision_loss(recipe["gate_weight"]) if arm == "supervised" else None
    model, row = _train(
        build_dmn(data, _numbers(passes)[0], recipe, piece.seed), data, recipe, piece.seed, device, loss=loss
    )
    report = data.evaluate(model)
    return {"accuracy": report["accuracy"], "support_hits": report["support_hits"], **row}


def copy_model_path(kind: str, directory: str | Path | None = None) -> Path:
    """Where the copy run of ``kind`` with seed 0 keeps its trained model (the notebook draws its heads)."""
    return model_path("ntm-copy", kind, directory)


def _copy_pieces(recipe: dict) -> list[Piece]:
    """``<model>/seed<s>`` (seeds outer); the record's rows carry the key."""
    return [Piece(f"{m}/seed{s}", m, s, {"key": f"{m}/seed{s}"}) for s in recipe["seeds"] for m in recipe["models"]]


def _run_copy(study: Study, piece: Piece, data, device):
    recipe, kind = study.recipe, piece.variant
    train = recipe | ({"max_epochs": recipe["ntm_max_epochs"]} if kind == "ntm" else {})  # an NTM epoch is slow
    model, row = _train(
        build_copy_model(kind, recipe, piece.seed), data, train, piece.seed, device, clip=recipe["clip"]
    )
    lengths = {"test": data.evaluate(model)} | {str(L): data.evaluate(model, length=L) for L in recipe["test_lengths"]}
    return (
        {"by_length": {k: {m: v[m] for m in ("bit_accuracy", "sequence_accuracy")} for k, v in lengths.items()}, **row},
        model,
    )  # seed 0's model is kept (copy_model_path)


@functools.lru_cache(maxsize=4)
def _lstm_parameters(bits: int, hidden: int) -> int:
    return count_parameters(build("copy-lstm", dict(bits=bits, hidden=hidden)))


def _reuse_copy_run(recipe: dict, group: str, old: dict, result: dict) -> bool:
    """A copy run recorded before the NTM had its own epoch cap ran exactly the updates it runs now if
    it is an LSTM run (same cap) or stopped early (patience) within the NTM's cap."""
    if old != {k: v for k, v in recipe.items() if k != "ntm_max_epochs"}:
        return False
    lstm = result.get("parameters") == _lstm_parameters(recipe["bits"], recipe["lstm_hidden"])
    return lstm or (
        str(result.get("stopped", "")).startswith("early stopping")
        and result.get("epochs_run", 10**9) <= recipe["ntm_max_epochs"]
    )


# --- the records --------------------------------------------------------------------------------


def _data_info(d) -> dict:
    return {
        "train": len(d.train),
        "valid": len(d.valid),
        "test": len(d.test),
        "vocab": len(d.vocab),
        "answers": d.answers,
    }


def _qa_summary(runs: list[dict], cells: list[str]) -> dict:
    """Per cell (``task1/hops2``, ``supervised/passes3``), over seeds: test accuracy, each hop's (pass's)
    support hits, best epoch, parameters, whether every run converged."""
    rows = [{**r, "cell": r["key"].rsplit("/", 1)[0]} for r in runs]
    summary = {}
    for cell, out in summarise_variants(rows, ("accuracy", "best_epoch"), by="cell", values=cells).items():
        mine = [r for r in rows if r["cell"] == cell]
        reads = _numbers(cell)[-1]  # the cell's hops (passes)
        summary[cell] = {
            "accuracy": out.pop("accuracy"),
            "support_hits": [mean_sd([r["support_hits"][k] for r in mine]) for k in range(reads)],
            **out,
        }
    return summary


def answer_baselines(d) -> dict:
    """What a model that reads no story scores on ``d``'s test split: ``majority``, always the
    test split's commonest answer (an upper bound on any constant answer), and ``chance``, one
    answer drawn uniformly from the task's answers."""
    answers = [e.answer for e in d.test]
    return {"majority": max(answers.count(a) for a in set(answers)) / len(answers), "chance": 1 / len(d.answers)}


def _summarise_hops(study: Study, runs: list[dict], data) -> dict:
    recipe, sets = study.recipe, data()
    summary = _qa_summary(runs, [f"task{t}/hops{h}" for t in recipe["tasks"] for h in recipe["hops"]])
    return {
        "data": {t: _data_info(sets(t)) for t in recipe["tasks"]},
        "baselines": {t: answer_baselines(sets(t)) for t in recipe["tasks"]},
        "summary": summary,
        "paper": PAPER,
        "runs": runs,
    }


def _summarise_dmn(study: Study, runs: list[dict], data) -> dict:
    recipe = study.recipe
    summary = _qa_summary(runs, [f"{a}/passes{p}" for a in recipe["arms"] for p in recipe["passes"]])
    return {"data": _data_info(data()(recipe["task"])), "summary": summary, "runs": runs}


def _summarise_copy(study: Study, runs: list[dict], data) -> dict:
    rows = [{**r, "model": r["key"].split("/")[0]} for r in runs]
    summary = {}
    for m, out in summarise_variants(
        rows, ("best_epoch", "train_seconds"), by="model", values=study.recipe["models"]
    ).items():
        mine = [r for r in rows if r["model"] == m]
        summary[m] = {
            "by_length": {
                L: {
                    metric: mean_sd([r["by_length"][L][metric] for r in mine])
                    for metric in ("bit_accuracy", "sequence_accuracy")
                }
                for L in mine[0]["by_length"]
            },
            **out,
        }
    return {"summary": summary, "runs": runs}


HOPS_STUDY = Study(
    "memory-hops",
    "memory",
    "chapter 7: memory networks with 1-3 hops, a DMN with 1-3 passes, an NTM copying",
    MEMORY,
    _run_hops,
    _summarise_hops,
    data=_qa_sets,
    pieces=_hops_pieces,
    reuse=_reuse_if_stopped_early,
    notes="wall_seconds adds up the training time of every run; paper = Sukhbaatar et al. (2015), Table 1, on "
    "Facebook's bAbI with 1,000 training questions, not ours",
)
DMN_STUDY = Study(
    "dmn-passes",
    "memory",
    "chapter 7: memory networks with 1-3 hops, a DMN with 1-3 passes, an NTM copying",
    DMN_RUNS,
    _run_dmn,
    _summarise_dmn,
    data=_qa_sets,
    pieces=_dmn_pieces,
)
COPY_STUDY = Study(
    "ntm-copy",
    "memory",
    "chapter 7: memory networks with 1-3 hops, a DMN with 1-3 passes, an NTM copying",
    NTM_RUNS,
    _run_copy,
    _summarise_copy,
    data=_copy_data,
    pieces=_copy_pieces,
    reuse=_reuse_copy_run,
    keep=tuple(NTM_RUNS["models"]),
    notes="by_length 'test' = the test split (lengths 1-10, as in training); the others: sequences of exactly "
    "that length, never seen in training",
)
STUDIES = [HOPS_STUDY, DMN_STUDY, COPY_STUDY]
