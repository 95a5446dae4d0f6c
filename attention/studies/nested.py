"""Chapter 5's recorded run on nested (word/character) attention: Ji et al.'s (2017) hybrid model
against the word-level encoder–decoder alone, correcting real misspellings
(:func:`attention.tasks.spelling.spelling_data`, codespell's pairs injected into English sentences,
the test sentences carrying misspellings never seen in training).

    python -m attention nested            # both variants, 3 seeds, resumable
    python -m attention nested --status   # the runs done and missing

Both variants (:data:`VARIANTS`) are :class:`attention.models.nested.NestedSeq2Seq` with the same
word-level sizes; ``word+char`` adds the character encoder for ``<unk>`` source words and the
nested character decoder for ``<unk>`` target words. Each trains until its validation word accuracy
has not improved for ``patience`` epochs and keeps its best epoch. The test metrics: word accuracy,
accuracy on the misspelt positions, on the other positions and on the rare (target ``<unk>``) words.
Each finished run is kept in :class:`~attention.results.PartialRuns`; the record
``nested-spelling`` is written once all are.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..device import setup
from ..experiments import fit
from ..models.nested import NestedConfig, NestedSeq2Seq
from ..results import PartialRuns, mean_sd, record_result
from ..tasks.spelling import SpellingData, spelling_data

__all__ = ["NESTED", "VARIANTS", "METRICS", "build_nested", "run_nested", "nested_status"]

#: variant -> config fields besides the sizes
VARIANTS = {
    "word": {"char_level": False},
    "word+char": {"char_level": True},
}
#: the recipe: data, sizes, training
NESTED = {"n": 4000, "rate": 0.3, "heldout": 0.2, "min_freq": 2, "tgt_min_freq": 2, "max_len": 15, "data_seed": 0,
          "seeds": [0, 1, 2], "variants": list(VARIANTS), "embed_dim": 48, "hidden_dim": 64, "char_embed_dim": 24,
          "char_hidden_dim": 48, "dropout": 0.2, "max_epochs": 50, "patience": 6, "batch_size": 32, "lr": 3e-3}
#: the test numbers summarised over seeds
METRICS = ("accuracy", "misspelt_accuracy", "kept_accuracy", "rare_word_accuracy", "exact_sentences",
           "valid_accuracy", "best_epoch", "epochs_run", "train_seconds")
COMMAND = "python -m attention nested"


def build_nested(variant: str, data: SpellingData, recipe: dict, seed: int = 0) -> NestedSeq2Seq:
    """The model of ``variant`` sized for ``data``'s vocabularies."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {sorted(VARIANTS)}")
    torch.manual_seed(seed)
    cfg = NestedConfig(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab), char_vocab=len(data.char_vocab),
                       embed_dim=recipe["embed_dim"], hidden_dim=recipe["hidden_dim"],
                       char_embed_dim=recipe["char_embed_dim"], char_hidden_dim=recipe["char_hidden_dim"],
                       dropout=recipe["dropout"], **VARIANTS[variant])
    return NestedSeq2Seq(cfg)


def _data(recipe: dict) -> SpellingData:
    return spelling_data(seed=recipe["data_seed"], n=recipe["n"], rate=recipe["rate"], heldout=recipe["heldout"],
                         min_freq=recipe["min_freq"], tgt_min_freq=recipe["tgt_min_freq"], max_len=recipe["max_len"])


def _run(variant: str, data: SpellingData, recipe: dict, seed: int, device, progress: bool) -> dict:
    setup(seed)
    model = build_nested(variant, data, recipe, seed).to(device)
    history = fit(model, data, epochs=recipe["max_epochs"], batch_size=recipe["batch_size"], lr=recipe["lr"],
                  seed=seed, device=device, progress=False, patience=recipe["patience"],
                  on_epoch=(lambda r, m: print(f"  {variant}/seed{seed} epoch {r['epoch']}: valid accuracy "
                                               f"{r['valid_accuracy']:.4f} ({r['seconds']:.0f} s)", flush=True))
                  if progress else None)
    report = data.evaluate(model)
    return {"accuracy": report["accuracy"], "misspelt_accuracy": report["misspelt_accuracy"],
            "kept_accuracy": report["kept_accuracy"], "rare_word_accuracy": report["rare_word_accuracy"],
            "exact_sentences": report["exact_sentences"],
            "n_words": report["n_words"], "n_misspelt": report["n_misspelt"], "n_rare_words": report["n_rare_words"],
            "valid_accuracy": history.epochs[history.best_epoch - 1]["valid_accuracy"],
            "best_epoch": history.best_epoch, "epochs_run": len(history.epochs), "stopped": history.stopped,
            "train_seconds": round(history.seconds, 1), "parameters": sum(p.numel() for p in model.parameters()),
            "examples": [{"source": list(e.src), "output": o, "target": list(e.tgt)}
                         for e, o in zip(data.test[:5], report["outputs"][:5])]}


def _keys(recipe: dict) -> list[str]:
    return [f"{v}/seed{s}" for s in recipe["seeds"] for v in recipe["variants"]]


def nested_status(results_dir: str | Path | None = None) -> dict[str, list[str]]:
    """The runs done and missing under the current recipe."""
    done = PartialRuns("nested-spelling", NESTED, results_dir)
    return {"done": [k for k in _keys(NESTED) if k in done], "missing": [k for k in _keys(NESTED) if k not in done]}


def run_nested(results_dir: str | Path | None = None, progress: bool = False) -> dict | None:
    """Train what is missing; write and return the record ``nested-spelling`` once every run is
    done (else None). Resumes from :class:`~attention.results.PartialRuns`."""
    recipe, device = NESTED, setup(0)
    done = PartialRuns("nested-spelling", recipe, results_dir)
    data = _data(recipe)
    keys = _keys(recipe)
    for key in keys:
        if key in done:
            continue
        variant, seed = key.split("/seed")
        row = _run(variant, data, recipe, int(seed), device, progress)
        done.add(key, row)
        if progress:
            print(key, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items() if k != "examples"},
                  flush=True)
    if any(k not in done for k in keys):
        return None
    runs = [{"variant": k.split("/seed")[0], "seed": int(k.split("/seed")[1]), **done.get(k)} for k in keys]
    summary = {}
    for v in recipe["variants"]:
        rows = [r for r in runs if r["variant"] == v]
        summary[v] = {m: mean_sd([r[m] for r in rows]) for m in METRICS}
        summary[v] |= {"parameters": mean_sd([r["parameters"] for r in rows]),
                       "converged": all(r["best_epoch"] < r["epochs_run"] for r in rows)}
    ms = [(w, e.tgt[i]) for e in data.train for i, w in enumerate(e.src) if e.misspelt[i]]
    data_info = {"name": data.name, "train": len(data.train), "valid": len(data.valid), "test": len(data.test),
                 "src_vocab": len(data.src_vocab), "tgt_vocab": len(data.tgt_vocab), "char_vocab": len(data.char_vocab),
                 "train_misspelt": len(ms), "train_misspelt_oov": sum(w not in data.src_vocab for w, _ in ms),
                 "test_words": runs[0]["n_words"], "test_misspelt": runs[0]["n_misspelt"],
                 "test_rare_words": runs[0]["n_rare_words"]}
    return record_result("nested-spelling", command=COMMAND, recipe=recipe, seeds=recipe["seeds"],
                         metrics={"data": data_info, "summary": summary, "runs": runs},
                         wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=results_dir,
                         notes="wall_seconds adds up the training time of every run")

