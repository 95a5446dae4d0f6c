"""Chapter 5's recorded run: HAN against HN-AVE and HN-MAX on Pang & Lee's movie reviews, and
whether HAN's sentence attention follows how strongly people rated each sentence.

    python -m attention han            # 3 variants x 5 seeds, resumable
    python -m attention han --status   # the runs done and missing

The three variants share the encoders and differ only in how each level turns its states into one
vector (:mod:`attention.models.han`): HAN's attention, the mean (HN-AVE) or the maximum (HN-MAX),
as in Yang et al.'s Table 2. Each trains until validation accuracy has not improved for
``patience`` epochs and keeps its best epoch. Every run is then read on VADER's Amazon reviews and
NYT editorial excerpts (:func:`attention.data.documents.load_vader_documents`), whose sentences
people rated from -4 to +4, never seen in training:

* **agreement**: how often the model's document label agrees with the sign of the mean rating;
* **sentence attention vs |rating|** (HAN only): in each document of at least
  ``min_sentences`` sentences, Spearman's correlation between the weights HAN gives its sentences
  and the strength ``|rating|`` people gave them, averaged over documents. Two baselines that
  need no model: the sentences' lengths in words, and random weights (``random_draws`` draws);
* **word attention on the lexicon** (HAN only): the share of word attention, averaged over the
  Pang & Lee test reviews' sentences, on words of VADER's sentiment lexicon, beside the share of
  such words in those sentences.

The seed-0 HAN is kept beside the record (:func:`attention.results.model_path`), for the chapter's
explorer and for the correlations the notebook reads from it. The run is declared as a
:class:`~attention.studies.base.Study` (``STUDY``), which writes the record
``hierarchical-attention``.
"""

from __future__ import annotations

import random

import torch

from ..data.documents import load_vader_documents
from ..data.sentiment import load_vader_lexicon
from ..metrics import spearman
from ..models import build
from ..results import mean_sd
from ..tasks.documents import document_data
from .base import Piece, Study, fit_piece, summarise_variants, training_row

__all__ = [
    "HIERARCHICAL",
    "VARIANTS",
    "PAPER",
    "build_han",
    "attention_vs_ratings",
    "length_baseline",
    "random_baseline",
    "word_lexicon_share",
    "STUDY",
    "STUDIES",
]

#: variant -> the HANConfig.pool it trains with (Yang et al.'s names)
VARIANTS = {"han": "attention", "hn-ave": "mean", "hn-max": "max"}
HIERARCHICAL = {
    "corpus": "pang-lee",
    "min_freq": 3,
    "seeds": [0, 1, 2, 3, 4],
    "variants": list(VARIANTS),
    "embed_dim": 64,
    "hidden_dim": 32,
    "attention_dim": 64,
    "dropout": 0.3,
    "max_epochs": 20,
    "patience": 5,
    "batch_size": 16,
    "lr": 2e-3,
    "vader": ["amazon", "nyt"],
    "min_sentences": 3,
    "random_draws": 20,
}

#: Yang et al. (2016), Table 2: test accuracy (%) of the same three variants on two of their corpora
PAPER = {
    "Yelp 2013 (5 classes)": {"hn-ave": 67.0, "hn-max": 66.9, "han": 68.2},
    "IMDB (10 classes)": {"hn-ave": 47.8, "hn-max": 48.2, "han": 49.4},
}


def build_han(variant: str, data, recipe: dict = HIERARCHICAL, seed: int = 0):
    """The model of ``variant`` for ``data``, initialised from ``seed``."""
    torch.manual_seed(seed)
    return build(
        "han",
        dict(
            vocab=len(data.vocab),
            classes=len(data.labels),
            embed_dim=recipe["embed_dim"],
            hidden_dim=recipe["hidden_dim"],
            attention_dim=recipe["attention_dim"],
            pool=VARIANTS[variant],
            dropout=recipe["dropout"],
        ),
    )


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def attention_vs_ratings(weights, documents, min_sentences: int = 3) -> float | None:
    """Mean over documents (with at least ``min_sentences`` sentences) of Spearman's correlation
    between the sentence weights ``weights[d] (N,)`` and ``|rating|`` of each sentence."""
    rhos = [
        spearman(w[: len(d.sentences)].tolist(), [abs(r) for r in d.meta["ratings"]])
        for w, d in zip(weights, documents)
        if len(d.sentences) >= min_sentences
    ]
    return _mean(rhos)


def length_baseline(documents, min_sentences: int = 3) -> float | None:
    """The same correlation with each sentence's length in words in place of attention."""
    return attention_vs_ratings(
        [torch.tensor([float(len(s)) for s in d.sentences]) for d in documents], documents, min_sentences
    )


def random_baseline(documents, draws: int, min_sentences: int = 3, seed: int = 0) -> dict:
    """:func:`~attention.results.mean_sd` over ``draws`` draws of random weights (uniform on 0..1)."""
    rng = random.Random(seed)
    values = [
        attention_vs_ratings(
            [torch.tensor([rng.random() for _ in d.sentences]) for d in documents], documents, min_sentences
        )
        for _ in range(draws)
    ]
    return mean_sd(values)


def word_lexicon_share(word_weights, documents, lexicon: dict) -> tuple[float, float]:
    """Over every sentence with a lexicon word: the mean share of word attention on lexicon words,
    and the mean share of its words that are in the lexicon (what uniform weights would give)."""
    mass, share = [], []
    for w, d in zip(word_weights, documents):
        for n, sentence in enumerate(d.sentences[: w.shape[0]]):
            T = min(len(sentence), w.shape[1])
            hits = torch.tensor([t in lexicon for t in sentence[:T]], dtype=w.dtype)
            if hits.sum() > 0:
                mass.append((w[n, :T] * hits).sum().item())
                share.append(hits.mean().item())
    return sum(mass) / len(mass), sum(share) / len(share)


def _data(recipe: dict, group: str) -> dict:
    return {
        "data": document_data(seed=0, min_freq=recipe["min_freq"]),
        "vader": {c: load_vader_documents(c) for c in recipe["vader"]},
        "lexicon": load_vader_lexicon(),
    }


def _run(study: Study, piece: Piece, shared: dict, device):
    recipe, data, variant = study.recipe, shared["data"], piece.variant
    model = build_han(variant, data, recipe, piece.seed).to(device)
    history = fit_piece(model, data, recipe, piece.seed, device)
    report = data.evaluate(model)
    row = {"accuracy": report["accuracy"], **training_row(history, model, valid="accuracy")}
    if VARIANTS[variant] == "attention":
        mass, share = word_lexicon_share([a["word"] for a in report["attention"]], data.test, shared["lexicon"])
        row |= {"word_lexicon_attention": mass, "word_lexicon_share": share}
    for corpus, documents in shared["vader"].items():
        out = data.evaluate(model, documents)
        row[f"{corpus}_agreement"] = out["accuracy"]
        if VARIANTS[variant] == "attention":
            row[f"{corpus}_rho"] = attention_vs_ratings(
                [a["sentence"] for a in out["attention"]], documents, recipe["min_sentences"]
            )
    return row, model


def _summarise(study: Study, runs: list[dict], shared) -> dict:
    recipe = study.recipe
    # every number a run records, but its seed, size and training time
    metrics = [
        m
        for m in dict.fromkeys(k for r in runs for k in r)
        if m not in ("seed", "parameters", "train_seconds")
        and any(isinstance(r.get(m), (int, float)) and not isinstance(r.get(m), bool) for r in runs)
    ]
    summary = summarise_variants(runs, metrics)
    data, vader, lexicon = shared()["data"], shared()["vader"], shared()["lexicon"]
    baselines = {
        c: {
            "length_rho": length_baseline(docs, recipe["min_sentences"]),
            "random_rho": random_baseline(docs, recipe["random_draws"], recipe["min_sentences"]),
            "documents": sum(len(d.sentences) >= recipe["min_sentences"] for d in docs),
        }
        for c, docs in vader.items()
    }
    data_info = {
        "name": data.name,
        "train": len(data.train),
        "valid": len(data.valid),
        "test": len(data.test),
        "vocab": len(data.vocab),
        "vader": {c: len(d) for c, d in vader.items()},
        "lexicon": len(lexicon),
    }
    return {"data": data_info, "summary": summary, "baselines": baselines, "paper": PAPER, "runs": runs}


STUDY = Study(
    "hierarchical-attention",
    "han",
    "chapter 5: HAN, HN-AVE, HN-MAX; sentence attention vs human ratings",
    HIERARCHICAL,
    _run,
    _summarise,
    data=_data,
    keep=("han",),
    notes="wall_seconds adds up the training time of every run; paper = Yang et al. (2016), "
    "Table 2, test accuracy in % on their corpora, not ours",
)
STUDIES = [STUDY]
