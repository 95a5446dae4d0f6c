"""Chapter 5's recorded run on nested (word/character) attention: Ji et al.'s (2017) hybrid model
against the word-level encoder–decoder alone, correcting real misspellings
(:func:`attention.tasks.spelling.spelling_data`, codespell's pairs injected into English sentences,
the test sentences carrying misspellings never seen in training).

    python -m attention nested            # both variants, 5 seeds, resumable
    python -m attention nested --status   # the runs done and missing

Both variants (:data:`VARIANTS`) are :class:`attention.models.nested.NestedSeq2Seq` with the same
word-level sizes; ``word+char`` adds the character encoder for ``<unk>`` source words and the
nested character decoder for ``<unk>`` target words. Each trains until its validation word accuracy
has not improved for ``patience`` epochs and keeps its best epoch. The test metrics: word accuracy,
accuracy on the misspelt positions, on the other positions and on the rare (target ``<unk>``) words;
for the word model the same numbers with UNK replacement (each ``<unk>`` it writes replaced by the
source word it attends to most), for the nested model where its character attention reads
(:meth:`attention.tasks.spelling.SpellingData.char_path`: the share of rare words whose word
attention picks their own source word, and of their characters read near the diagonal).
The seed-0 nested model is kept beside the record (:func:`attention.results.model_path`), for the
notebook's explorer. The run is declared as a :class:`~attention.studies.base.Study` (``STUDY``),
which writes the record ``nested-spelling``.
"""

from __future__ import annotations

import torch

from ..models.nested import NestedConfig, NestedSeq2Seq
from ..results import mean_sd
from ..tasks.spelling import SpellingData, spelling_data
from .base import Piece, Study, fit_piece, summarise_variants, training_row

__all__ = ["NESTED", "VARIANTS", "METRICS", "REPLACED", "build_nested", "STUDY", "STUDIES"]

#: variant -> config fields besides the sizes
VARIANTS = {
    "word": {"char_level": False},
    "word+char": {"char_level": True},
}
#: the recipe: data, sizes, training
NESTED = {
    "n": 4000,
    "rate": 0.3,
    "heldout": 0.2,
    "min_freq": 2,
    "tgt_min_freq": 2,
    "max_len": 15,
    "data_seed": 0,
    "seeds": [0, 1, 2, 3, 4],
    "variants": list(VARIANTS),
    "embed_dim": 48,
    "hidden_dim": 64,
    "char_embed_dim": 24,
    "char_hidden_dim": 48,
    "dropout": 0.2,
    "max_epochs": 50,
    "patience": 6,
    "batch_size": 32,
    "lr": 3e-3,
    "unk_replace": True,  # the word model is also read with UNK replacement
}
#: the test numbers summarised over seeds
METRICS = (
    "accuracy",
    "misspelt_accuracy",
    "kept_accuracy",
    "rare_word_accuracy",
    "exact_sentences",
    "valid_accuracy",
    "best_epoch",
    "epochs_run",
    "train_seconds",
)


def build_nested(variant: str, data: SpellingData, recipe: dict, seed: int = 0) -> NestedSeq2Seq:
    """The model of ``variant`` sized for ``data``'s vocabularies."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {sorted(VARIANTS)}")
    torch.manual_seed(seed)
    cfg = NestedConfig(
        src_vocab=len(data.src_vocab),
        tgt_vocab=len(data.tgt_vocab),
        char_vocab=len(data.char_vocab),
        embed_dim=recipe["embed_dim"],
        hidden_dim=recipe["hidden_dim"],
        char_embed_dim=recipe["char_embed_dim"],
        char_hidden_dim=recipe["char_hidden_dim"],
        dropout=recipe["dropout"],
        **VARIANTS[variant],
    )
    return NestedSeq2Seq(cfg)


def _data(recipe: dict, group: str = "") -> SpellingData:
    return spelling_data(
        seed=recipe["data_seed"],
        n=recipe["n"],
        rate=recipe["rate"],
        heldout=recipe["heldout"],
        min_freq=recipe["min_freq"],
        tgt_min_freq=recipe["tgt_min_freq"],
        max_len=recipe["max_len"],
    )


def _run(study: Study, piece: Piece, data: SpellingData, device):
    recipe = study.recipe
    model = build_nested(piece.variant, data, recipe, piece.seed).to(device)
    history = fit_piece(model, data, recipe, piece.seed, device)
    report = data.evaluate(model)
    row = {
        "accuracy": report["accuracy"],
        "misspelt_accuracy": report["misspelt_accuracy"],
        "kept_accuracy": report["kept_accuracy"],
        "rare_word_accuracy": report["rare_word_accuracy"],
        "exact_sentences": report["exact_sentences"],
        "n_words": report["n_words"],
        "n_misspelt": report["n_misspelt"],
        "n_rare_words": report["n_rare_words"],
        **_measures(study, piece, data, model),
        **training_row(history, model, valid="accuracy"),
        "examples": [
            {"source": list(e.src), "output": o, "target": list(e.tgt)}
            for e, o in zip(data.test[:5], report["outputs"][:5])
        ],
    }
    return row, model  # seed 0's nested model is kept (STUDY.keep), for the notebook's explorer


#: the numbers of the word model's corrections with UNK replacement
REPLACED = ("accuracy", "misspelt_accuracy", "kept_accuracy", "rare_word_accuracy", "exact_sentences")


def _measures(study: Study, piece: Piece, data: SpellingData, model) -> dict:
    """The word model with UNK replacement (:meth:`SpellingData.correct`), the nested model's
    character path (:meth:`SpellingData.char_path`), both on the test split."""
    if piece.variant == "word":
        if not study.recipe.get("unk_replace"):
            return {}
        report = data.evaluate(model, unk_replace=True)
        return {"unk_replacement": {k: report[k] for k in REPLACED}}
    return {"char_path": data.char_path(model)}


def _summarise(study: Study, runs: list[dict], data) -> dict:
    summary = summarise_variants(runs, METRICS)
    for v, cell in summary.items():  # the parameter count as a mean_sd (one value per seed)
        mine = [r for r in runs if r["variant"] == v]
        cell["parameters"] = mean_sd([r["parameters"] for r in mine])
        for measure in ("unk_replacement", "char_path"):
            if all(measure in r for r in mine):
                cell[measure] = {k: mean_sd([r[measure][k] for r in mine]) for k in mine[0][measure]}
    data = data()
    ms = [(w, e.tgt[i]) for e in data.train for i, w in enumerate(e.src) if e.misspelt[i]]
    data_info = {
        "name": data.name,
        "train": len(data.train),
        "valid": len(data.valid),
        "test": len(data.test),
        "src_vocab": len(data.src_vocab),
        "tgt_vocab": len(data.tgt_vocab),
        "char_vocab": len(data.char_vocab),
        "train_misspelt": len(ms),
        "train_misspelt_oov": sum(w not in data.src_vocab for w, _ in ms),
        "test_words": runs[0]["n_words"],
        "test_misspelt": runs[0]["n_misspelt"],
        "test_rare_words": runs[0]["n_rare_words"],
    }
    return {"data": data_info, "summary": summary, "runs": runs}


STUDY = Study(
    "nested-spelling",
    "nested",
    "chapter 5: word-level vs nested word/character attention, spelling",
    NESTED,
    _run,
    _summarise,
    data=_data,
    keep=("word+char",),
)
STUDIES = [STUDY]
