"""Chapter 5's controlled run: does HAN's sentence attention find the one sentence that decides?

    python -m attention decisive            # HAN, HN-AVE, HN-MAX x 5 seeds, resumable
    python -m attention decisive --status   # the runs done and missing

On real documents nobody knows which sentence decided the label, so Yang et al.'s claim (the
sentence attention picks the informative sentences) can only be read indirectly. Here it can be
read directly. Each document (:func:`attention.tasks.documents.decisive_data`) is six of VADER's
human-rated movie-review sentences: five *fillers* rated weakly (``|rating| < 1``) of either sign,
drawn whatever the document's label, and one *decisive* sentence rated strongly
(``|rating| >= 2.5``), at a random position, whose sign is the label. Only that sentence says what
the label is, and the task knows where it is.

The three variants of chapter 5's record ``hierarchical-attention`` (same sizes and recipe) train
until validation accuracy has not improved for ``patience`` epochs, five seeds each. Every run
records test accuracy (the documents are balanced: chance and the majority class are both 0.5);
HAN's also records the mean sentence weight on the decisive sentence and how often it is the
sentence of largest weight, beside the share a uniform weighting gives it (1/6).
"""

from __future__ import annotations

from ..tasks.documents import decisive_data
from .base import Study, fit_piece, summarise_variants, training_row
from .han import HIERARCHICAL, VARIANTS, build_han

__all__ = ["DECISIVE", "decisive_attention", "STUDY", "STUDIES"]

DECISIVE = {
    "sentences": 6,
    "filler_max": 1.0,
    "decisive_min": 2.5,
    "sizes": [3000, 400, 600],
    "min_freq": 2,
    "seeds": [0, 1, 2, 3, 4],
    "variants": list(VARIANTS),
    **{k: HIERARCHICAL[k] for k in ("embed_dim", "hidden_dim", "attention_dim", "dropout", "batch_size", "lr")},
    "max_epochs": 30,
    "patience": 5,
}


def decisive_attention(weights, documents) -> dict:
    """Over ``documents`` (:func:`~attention.tasks.documents.decisive_documents`) and their sentence
    weights ``(N,)`` each: the mean weight on the decisive sentence (``mass``), the share of
    documents whose largest weight is on it (``top``), and what uniform weights give (``uniform``)."""
    mass = top = uniform = 0.0
    for w, d in zip(weights, documents, strict=True):
        w = w[: len(d.sentences)]
        where = d.meta["decisive"]
        mass += float(w[where])
        top += int(w.argmax()) == where
        uniform += 1 / len(d.sentences)
    n = len(documents)
    return {"mass": mass / n, "top": top / n, "uniform": uniform / n}


def _data(recipe: dict, group: str):
    return decisive_data(
        recipe["sentences"], recipe["filler_max"], recipe["decisive_min"], tuple(recipe["sizes"]), recipe["min_freq"]
    )


def _run(study: Study, piece, data, device) -> dict:
    recipe = study.recipe
    model = build_han(piece.variant, data, recipe, piece.seed).to(device)
    history = fit_piece(model, data, recipe, piece.seed, device)
    report = data.evaluate(model)
    row = {"accuracy": report["accuracy"], **training_row(history, model, valid="accuracy")}
    if VARIANTS[piece.variant] == "attention":
        found = decisive_attention([a["sentence"] for a in report["attention"]], data.test)
        row |= {"decisive_mass": found["mass"], "decisive_top": found["top"], "uniform": found["uniform"]}
    return row


def _summarise(study: Study, runs: list[dict], data) -> dict:
    metrics = ("accuracy", "valid_accuracy", "decisive_mass", "decisive_top", "best_epoch", "epochs_run")
    summary = summarise_variants(runs, metrics, values=study.recipe["variants"])
    d = data()
    return {
        "summary": summary,
        "baselines": {
            "chance": 0.5,
            "majority": max(sum(e.label for e in d.test), len(d.test) - sum(e.label for e in d.test)) / len(d.test),
            "uniform_mass": 1 / study.recipe["sentences"],
        },
        "data": {
            "name": d.name,
            "train": len(d.train),
            "valid": len(d.valid),
            "test": len(d.test),
            "vocab": len(d.vocab),
        },
        "runs": runs,
    }


STUDY = Study(
    "han-decisive",
    "decisive",
    "chapter 5: HAN, HN-AVE and HN-MAX on documents where one rated sentence sets the label, 5 seeds",
    DECISIVE,
    _run,
    _summarise,
    data=_data,
)
STUDIES = [STUDY]
