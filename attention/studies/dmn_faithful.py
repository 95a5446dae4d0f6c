"""Chapter 7's paper DMN beside the book's: Kumar et al.'s model as written, on task 3.

    python -m attention dmn-faithful            # the paper's DMN x 5 seeds, gates supervised, resumable
    python -m attention dmn-faithful --status   # the runs done and missing

The book's DMN (:mod:`attention.models.dmn`, record ``dmn-passes``) departs from Kumar et al.
(2016) in its input module, its gates, its episode and its memory update. This record trains the
paper's model as written (:mod:`attention.models.dmn_paper`: one GRU over the story's words, the
facts at the sentence ends, sigmoid gates over the paper's nine features, the attention-gated GRU
as the episode, a GRU memory update) on the generated bAbI-format task 3 (three supporting facts)
of ``dmn-passes``, with the paper's three passes and the paper's bAbI training: the supporting
facts supervise the gates (:func:`attention.tasks.qa.binary_gate_supervision_loss`, the binary
cross-entropy of the paper's sigmoid gates), the arm of ``dmn-passes`` that learns the task.

The recipe is ``dmn-passes``'s (:data:`attention.studies.memory.DMN_RUNS`): sizes, optimiser, batch
size, learning rate and early stopping on validation accuracy with the same patience, so the book's
DMN it is compared with is ``dmn-passes``'s ``supervised/passes3`` cell, which
``metrics["compared_with"]`` names. The variant ``"book"`` (:data:`MODELS`) is that model under the
same recipe, five seeds: a seed ``dmn-passes`` has recorded is read from it (the same run, marked
``"from"``), another is trained here. Seeds 3 and 4 were trained here before ``dmn-passes`` had
them; the runs it trained later are the same, as a test checks.

Every run records test accuracy and, per pass, how often its largest gate is on a supporting fact;
the baselines are the majority answer, chance over the answers, and what a gate that picked a fact
at random would score.
"""

from __future__ import annotations

import torch

from ..models import build
from ..results import load_result, mean_sd
from ..tasks.qa import binary_gate_supervision_loss, gate_supervision_loss
from .base import Study, fit_piece, same_recipe_but_seeds, summarise_variants, training_row
from .memory import DMN_RUNS, _qa_data, build_dmn

__all__ = ["DMN_FAITHFUL", "MODELS", "build_paper_dmn", "STUDY", "STUDIES"]

#: variant -> registered model: the paper's DMN as written, the book's variant
MODELS = {"paper": "dmn-paper", "book": "dmn"}

DMN_FAITHFUL = {
    "variants": ["paper", "book"],
    "passes": 3,
    **{k: DMN_RUNS[k] for k in ("task", "gate_weight", "n_train", "n_test", "memory_size")},
    "seeds": [0, 1, 2, 3, 4],
    **{k: DMN_RUNS[k] for k in ("embed_dim", "hidden_dim", "gate_dim", "update")},
    **{k: DMN_RUNS[k] for k in ("max_epochs", "patience", "batch_size", "lr")},
}

#: the record whose ``supervised/passes<P>`` rows are the book's DMN under this recipe
BOOK_RECORD = "dmn-passes"


def build_paper_dmn(data, recipe: dict = DMN_FAITHFUL, seed: int = 0):
    """Kumar et al.'s DMN as written (``dmn-paper``) of ``recipe`` for ``data``, initialised from ``seed``."""
    torch.manual_seed(seed)
    return build(
        "dmn-paper",
        dict(
            vocab=len(data.vocab),
            answers=len(data.answers),
            embed_dim=recipe["embed_dim"],
            hidden_dim=recipe["hidden_dim"],
            gate_dim=recipe["gate_dim"],
            passes=recipe["passes"],
        ),
    )


def _data(recipe: dict, group: str):
    return _qa_data(recipe["task"], recipe["n_train"], recipe["n_test"], recipe["memory_size"])


def _book_row(recipe: dict, seed: int) -> dict | None:
    """The book's DMN run of ``seed`` as ``dmn-passes`` recorded it, where that record's recipe is
    this one's (same task, sizes, training, seed), else None."""
    try:
        record = load_result(BOOK_RECORD)
    except FileNotFoundError:
        return None
    theirs = record["recipe"]
    same = all(theirs.get(k) == v for k, v in recipe.items() if k not in ("variants", "passes", "seeds"))
    if not (same and recipe["passes"] in theirs["passes"] and "supervised" in theirs["arms"]):
        return None
    key = f"supervised/passes{recipe['passes']}/seed{seed}"
    for run in record["metrics"]["runs"]:
        if run["key"] == key:
            row = {k: v for k, v in run.items() if k != "key"}
            return {"accuracy": row.pop("accuracy"), "valid_accuracy": row.pop("valid"), **row, "from": BOOK_RECORD}
    return None


def _reuse_other_variants(recipe: dict, group: str, old: dict, row: dict) -> bool:
    """A run recorded under a recipe that listed more variants is the same run under this one."""
    return {**old, "variants": recipe["variants"]} == recipe and set(recipe["variants"]) <= set(old["variants"])


def _holds_fewer_variants(recorded: dict, recipe: dict) -> bool:
    """A record made under a recipe that listed fewer variants holds their runs under this one."""
    return same_recipe_but_seeds({**recorded, "variants": recipe["variants"]}, recipe) and set(
        recorded["variants"]
    ) <= set(recipe["variants"])


def _run(study: Study, piece, data, device) -> dict:
    recipe = study.recipe
    if piece.variant == "book":
        recorded = _book_row(recipe, piece.seed)
        if recorded is not None:
            return recorded
        model = build_dmn(data, recipe["passes"], recipe, piece.seed)
        loss = gate_supervision_loss(recipe["gate_weight"])
    else:
        model = build_paper_dmn(data, recipe, piece.seed)
        loss = binary_gate_supervision_loss(recipe["gate_weight"])
    model = model.to(device)
    history = fit_piece(model, data, recipe, piece.seed, device, loss=loss)
    report = data.evaluate(model)
    row = {"accuracy": report["accuracy"], "support_hits": report["support_hits"]}
    return {**row, **training_row(history, model, valid="accuracy")}


def support_chance(data, examples) -> dict:
    """What a pass that picked one of a story's facts at random would score: the mean share of the
    facts that are supporting facts (``any``, what ``support_hits`` counts) and the mean 1/facts
    (``one``, the chance of one given fact)."""
    share = one = 0.0
    for e in examples:
        facts, supports = data.memory(e)
        share += len(set(supports)) / len(facts)
        one += 1 / len(facts)
    return {"any": share / len(examples), "one": one / len(examples)}


def _summarise(study: Study, runs: list[dict], data) -> dict:
    recipe, d = study.recipe, data()
    summary = summarise_variants(
        runs, ("accuracy", "valid_accuracy", "best_epoch", "epochs_run"), values=recipe["variants"]
    )
    for variant, cell in summary.items():
        mine = [r for r in runs if r["variant"] == variant]
        cell["support_hits"] = [mean_sd([r["support_hits"][p] for r in mine]) for p in range(recipe["passes"])]
        cell["train_seconds"] = sum(r["train_seconds"] for r in mine)
    answers = [e.answer for e in d.test]
    chance = support_chance(d, d.test)
    return {
        "summary": summary,
        "baselines": {
            "chance": 1 / len(d.answers),
            "majority": max(answers.count(a) for a in set(answers)) / len(answers),
            "support_chance": chance["any"],
            "one_fact_chance": chance["one"],
        },
        "data": {
            "name": d.name,
            "train": len(d.train),
            "valid": len(d.valid),
            "test": len(d.test),
            "vocab": len(d.vocab),
            "answers": len(d.answers),
        },
        "compared_with": {"record": BOOK_RECORD, "cell": f"supervised/passes{recipe['passes']}"},
        "runs": runs,
    }


STUDY = Study(
    "dmn-faithful",
    "dmn-faithful",
    "chapter 7: Kumar et al.'s DMN as written, task 3, 3 passes, gates supervised, 5 seeds (the book's: dmn-passes)",
    DMN_FAITHFUL,
    _run,
    _summarise,
    data=_data,
    reuse=_reuse_other_variants,
    holds=_holds_fewer_variants,
    notes="wall_seconds adds up the training time of every run; the book's DMN under the same recipe is the record "
    "dmn-passes, cell supervised/passes3 (compared_with)",
)
STUDIES = [STUDY]
