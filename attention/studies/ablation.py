"""The controlled ablation of chapter 9: every score × global/local × input feeding, one budget.

    python -m attention ablation --budget small       # every variant, one seed, four epochs
    python -m attention ablation --budget converged   # to early stopping, 3 seeds, three tasks
    python -m attention ablation --budget converged --only 'hsk/*'   # one pair (another process
    python -m attention ablation --budget converged --status         #   can take another)

trains every variant on the same data (HSK zh->en for BLEU, the date task for AER),
with the same seed, the same number of updates and the same parameter budget (±10 %:
each variant's hidden size is chosen so its parameter count lands closest to the
reference, Luong's global-general with input feeding), and records the run as
``attention/results/ablation-<budget>.json`` through :func:`attention.results.record_result`.
Chapters 9 and 4 read that file, so building the book never retrains dozens of models.
Training runs on one CPU thread, so a rerun with the same seed on the same machine
gives the same numbers. Each budget is declared as a :class:`~attention.studies.base.Study`
(:data:`STUDIES`): ``small`` and ``test`` (a seconds-long version for the tests) train one piece
per variant; ``converged`` and ``converged-test`` one per pair × variant × seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..device import session_seed
from ..experiments import alignment_error_rate, dates_data, ding_data, evaluate, fit, hsk_data, translate
from ..models import LuongConfig, LuongSeq2Seq, Seq2Seq, Seq2SeqConfig, count_parameters
from ..results import mean_sd
from ..scores import SCORES, is_content_based
from .base import Piece, Study, size_to_budget, summarise_variants, training_row

__all__ = [
    "Variant",
    "VARIANTS",
    "REFERENCE",
    "BUDGETS",
    "BUDGET_ORDER",
    "CONVERGED",
    "PAIR_KEYS",
    "build_variant",
    "match_budget",
    "exact_match",
    "converged_variants",
    "SMALL_STUDY",
    "TEST_STUDY",
    "CONVERGED_STUDY",
    "CONVERGED_TEST_STUDY",
    "STUDIES",
]

SCORE_NAMES = list(SCORES)  # every score of chapter 4


@dataclass(frozen=True)
class Variant:
    attention: str | None  # score name; None = no attention
    local: str | None = None  # None (global), "m" or "p"
    input_feeding: bool = True
    decoder: str = "luong"  # "luong", or "bahdanau" (chapter 3's RNNsearch)

    @property
    def name(self) -> str:
        if self.decoder == "bahdanau":
            return "bahdanau-additive"
        where = "global" if self.local is None else f"local-{self.local}"
        what = "none" if self.attention is None else f"{where}-{self.attention}"
        return what + ("+feed" if self.input_feeding else "")


def _variants() -> list[Variant]:
    out = [Variant(None, None, feed) for feed in (True, False)]
    out.append(Variant("additive", decoder="bahdanau", input_feeding=False))
    for score in SCORE_NAMES:
        for local in (None, "m", "p"):
            if local and not is_content_based(score):
                continue  # location predicts absolute positions: global only
            out += [Variant(score, local, feed) for feed in (True, False)]
    return out


VARIANTS: list[Variant] = _variants()
REFERENCE = Variant("general", None, True)

#: budget name -> training recipe (same updates for every variant)
BUDGETS = {
    "small": {
        "hsk_epochs": 4,
        "dates_n": 4000,
        "dates_epochs": 4,
        "batch_size": 32,
        "lr": 3e-3,
        "hidden_dim": 128,
        "dates_hidden_dim": 48,
        "window": 3,
        "dropout": 0.3,
        "dates_dropout": 0.1,
    },
    "test": {
        "hsk_epochs": 0,
        "dates_n": 200,
        "dates_epochs": 1,
        "batch_size": 32,
        "lr": 3e-3,
        "hidden_dim": 16,
        "dates_hidden_dim": 16,
        "window": 2,
        "dropout": 0.3,
        "dates_dropout": 0.1,
    },
}


def build_variant(
    variant: Variant,
    data,
    hidden_dim: int,
    window: int,
    seed: int | None = None,
    embed_dim: int | None = None,
    dropout: float = 0.3,
):
    """A model of ``variant`` for ``data`` with the given hidden size; ``seed`` (the initial
    weights) defaults to the session's (:func:`attention.device.session_seed`)."""
    torch.manual_seed(session_seed(seed))
    sizes = dict(
        src_vocab=len(data.src_vocab),
        tgt_vocab=len(data.tgt_vocab),
        embed_dim=embed_dim or hidden_dim,
        hidden_dim=hidden_dim,
        dropout=dropout,
        attention_dim=hidden_dim,
    )
    if variant.decoder == "bahdanau":
        return Seq2Seq(Seq2SeqConfig(attention=variant.attention, **sizes))
    return LuongSeq2Seq(
        LuongConfig(
            attention=variant.attention,
            local=variant.local,
            window=window,
            input_feeding=variant.input_feeding,
            **sizes,
        )
    )


def match_budget(variant: Variant, data, hidden_dim: int, window: int, tolerance: float = 0.10) -> int:
    """The hidden size whose parameter count is closest to the reference variant's at ``hidden_dim``.

    Raises ``ValueError`` when no size lands within ``tolerance`` of the reference.
    """
    target = count_parameters(build_variant(REFERENCE, data, hidden_dim, window, embed_dim=hidden_dim))
    candidates = range(max(8, hidden_dim // 2), hidden_dim * 2 + 1, 4 if hidden_dim >= 32 else 1)
    return size_to_budget(
        lambda h: build_variant(variant, data, h, window, embed_dim=hidden_dim),
        target,
        candidates,
        tolerance,
        what=variant.name,
    )


def _train(v: Variant, data, hidden: int, window: int, dropout: float, epochs: int, seed: int, device, **fit_args):
    """Build ``v`` at the parameter budget of the reference at ``hidden`` and train it (``fit``)."""
    h = match_budget(v, data, hidden, window)
    model = build_variant(v, data, h, window, seed, embed_dim=hidden, dropout=dropout).to(device)
    history = fit(model, data, epochs=epochs, seed=seed, device=device, progress=False, **fit_args)
    return model, history


def exact_match(model, data) -> float:
    """The share of test sentences translated exactly (greedy decoding), the date task's accuracy."""
    outputs = translate(model, data.test, data)
    return sum(o.hypothesis == list(p.tgt) for o, p in zip(outputs, data.test)) / len(outputs)


# --- one budget, one seed: every variant on both tasks -------------------------------------------


def _by_name(names) -> list[Variant]:
    by_name = {v.name: v for v in VARIANTS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; choose from {sorted(by_name)}")
    return [by_name[n] for n in names]


#: the order of a budget's rows: the three baselines, then Luong et al.'s scores, then the others
BUDGET_ORDER = ("dot", "general", "concat", "location", "scaled_dot", "cosine", "additive")


def _budget_pieces(recipe: dict) -> list[Piece]:
    """One piece per variant, seed 0: those named in ``recipe["variants"]`` (in that order) when
    given, else all 41, in :data:`BUDGET_ORDER` (the order of the recorded grid)."""
    if recipe.get("variants") is not None:
        variants = _by_name(recipe["variants"])
    else:

        def place(v: Variant) -> int:
            if v.attention is None or v.decoder == "bahdanau":
                return -1
            return BUDGET_ORDER.index(v.attention) if v.attention in BUDGET_ORDER else len(BUDGET_ORDER)

        variants = sorted(VARIANTS, key=place)  # stable: each score's placements keep their order
    return [Piece(f"{v.name}/seed0", v.name, 0, {"variant": v.name}) for v in variants]


def _budget_recorded(study: Study, record: dict) -> dict[str, dict]:
    """The record keeps one row per variant in ``metrics["results"]``."""
    rows = {r["variant"]: r for r in record["metrics"].get("results") or []}
    return {
        p.key: {k: v for k, v in rows[p.variant].items() if k != "variant"}
        for p in study.pieces(study.recipe)
        if p.variant in rows
    }


def _budget_data(recipe: dict, group: str) -> dict:
    """Both tasks, split with seed 0 (the budget's one seed)."""
    return {"hsk": hsk_data(seed=0) if recipe["hsk_epochs"] else None, "dates": dates_data(n=recipe["dates_n"], seed=0)}


def _budget_run(study: Study, piece: Piece, data: dict, device) -> dict:
    recipe, seed, (v,) = study.recipe, piece.seed, _by_name([piece.variant])
    row = {"attention": v.attention, "local": v.local, "input_feeding": v.input_feeding, "decoder": v.decoder}
    if data["hsk"] is not None:
        hsk = data["hsk"]
        model, history = _train(
            v,
            hsk,
            recipe["hidden_dim"],
            recipe["window"],
            recipe["dropout"],
            recipe["hsk_epochs"],
            seed,
            device,
            batch_size=recipe["batch_size"],
            lr=recipe["lr"],
        )
        row |= {
            "hidden_dim": model.cfg.hidden_dim,
            "parameters": count_parameters(model),
            "bleu": evaluate(model, hsk)["bleu"].score,
            "train_seconds": round(history.seconds, 1),
            "best_epoch": history.best_epoch,
        }
    dates = data["dates"]
    model, history = _train(
        v,
        dates,
        recipe["dates_hidden_dim"],
        recipe["window"],
        recipe["dates_dropout"],
        recipe["dates_epochs"],
        seed,
        device,
        batch_size=recipe["batch_size"],
        lr=recipe["lr"],
    )
    row |= {
        "dates_hidden_dim": model.cfg.hidden_dim,
        "dates_parameters": count_parameters(model),
        "dates_accuracy": exact_match(model, dates),
        "aer": None if v.attention is None else alignment_error_rate(model, dates),
        "aer_aligned": None if v.attention is None else alignment_error_rate(model, dates, aligned_only=True),
        "dates_train_seconds": round(history.seconds, 1),
    }
    return row


def _budget_summary(study: Study, runs: list[dict], data) -> dict:
    return {"reference": REFERENCE.name, "results": runs}


def _budget_seconds(runs: list[dict]) -> float:
    """The training seconds of every variant on both tasks. (The record written before the budgets
    were declared as studies timed the whole run, data and evaluation included: 2884.1 s for
    ``small``, against 2800.6 s of training.)"""
    return sum(r.get("train_seconds", 0.0) + r["dates_train_seconds"] for r in runs)


def _budget_study(budget: str, about: str) -> Study:
    return Study(
        f"ablation-{budget}",
        f"ablation --budget {budget}",
        about,
        dict(BUDGETS[budget], budget=budget),
        _budget_run,
        _budget_summary,
        data=_budget_data,
        pieces=_budget_pieces,
        recorded=_budget_recorded,
        wall=_budget_seconds,
        notes="wall_seconds adds up the training time of every variant on both tasks; building the "
        "data and evaluating the models are not counted",
    )


# --- trained to convergence, several seeds, two language pairs -------------------------------

#: The recorded grid: every variant trained until its validation BLEU stops improving, on HSK
#: zh->en, Ding de->en and the date task, with three seeds. The full grid (41 variants) would
#: take about a day on two cores, so it is trimmed to the variants the chapters compare (on Ding,
#: the slowest pair, to the no-attention baseline, RNNsearch and global against local); the
#: record lists what was left out of each pair. ``max_epochs`` is a cap per pair.
CONVERGED = {
    "pairs": ["hsk", "ding", "dates"],
    "seeds": [0, 1, 2],
    "variants": [
        "none+feed",
        "bahdanau-additive",
        "global-dot+feed",
        "global-general+feed",
        "global-concat+feed",
        "global-additive+feed",
        "global-location+feed",
        "global-general",
        "local-m-general+feed",
        "local-p-general+feed",
    ],
    "ding_variants": [
        "none+feed",
        "bahdanau-additive",
        "global-dot+feed",
        "global-general+feed",
        "local-m-general+feed",
        "local-p-general+feed",
    ],
    "max_epochs": {"hsk": 60, "ding": 60, "dates": 30},
    "batch_size": 32,
    "lr": 3e-3,
    "window": 3,
    "patience": 5,
    "hidden_dim": 64,
    "dropout": 0.3,  # HSK and Ding (validation BLEU is noisy)
    "ding_n": None,
    "ding_min_freq": 1,
    "ding_corpus_min_count": 3,
    "dates_n": 4000,
    "dates_hidden_dim": 48,
    "dates_dropout": 0.1,
    "dates_patience": 3,
}
#: the recipe keys each pair's pieces depend on (besides its epoch cap): a piece is reused only
#: under the same values
PAIR_KEYS = {
    "hsk": ["batch_size", "lr", "window", "patience", "hidden_dim", "dropout"],
    "ding": [
        "batch_size",
        "lr",
        "window",
        "patience",
        "hidden_dim",
        "dropout",
        "ding_n",
        "ding_min_freq",
        "ding_corpus_min_count",
    ],
    "dates": ["batch_size", "lr", "window", "dates_patience", "dates_hidden_dim", "dates_dropout", "dates_n"],
}
BUDGETS["converged"] = CONVERGED
BUDGETS["converged-test"] = CONVERGED | {
    "pairs": ["dates"],
    "seeds": [0, 1],
    "variants": ["global-general+feed", "local-p-dot"],
    "max_epochs": {"dates": 2},
    "dates_n": 200,
    "dates_hidden_dim": 16,
}


def converged_variants(recipe: dict, pair: str | None = None) -> list[Variant]:
    """The variants of a converged budget (those of ``pair``, when it has its own list)."""
    return _by_name(recipe.get(f"{pair}_variants", recipe["variants"]))


def _converged_pieces(recipe: dict) -> list[Piece]:
    """Every piece of a converged budget: ``pair/variant/seed<k>``, grouped by pair."""
    return [
        Piece(f"{p}/{v.name}/seed{s}", v.name, s, {"pair": p, "variant": v.name, "seed": s}, group=p)
        for p in recipe["pairs"]
        for v in converged_variants(recipe, p)
        for s in recipe["seeds"]
    ]


def _pair_data(recipe: dict, pair: str):
    """The data of a pair; the split is fixed (seed 0) so that seeds vary only the training."""
    if pair == "hsk":
        return hsk_data(seed=0)
    if pair == "ding":
        return ding_data(
            n=recipe["ding_n"],
            seed=0,
            min_freq=recipe["ding_min_freq"],
            corpus_min_count=recipe["ding_corpus_min_count"],
        )
    if pair == "dates":
        return dates_data(n=recipe["dates_n"], seed=0)
    raise ValueError(f"unknown pair {pair!r}; choose 'hsk', 'ding' or 'dates'")


def _pair_stamp(recipe: dict, pair: str) -> dict:
    """What a pair's pieces depend on: its epoch cap and its :data:`PAIR_KEYS`, so that changing
    (say) the Ding recipe keeps the HSK and date pieces."""
    return {"max_epochs": recipe["max_epochs"][pair]} | {k: recipe[k] for k in PAIR_KEYS[pair]}


def _stopped_early(recipe: dict, pair: str, old: dict, row: dict) -> bool:
    """A piece that stopped early under a lower epoch cap is kept when the cap is raised: with the
    same seed it runs the same updates and stops at the same epoch."""
    rest = {k: v for k, v in old.items() if k != "max_epochs"}
    return (
        rest == {k: v for k, v in _pair_stamp(recipe, pair).items() if k != "max_epochs"}
        and old.get("max_epochs", 0) <= recipe["max_epochs"][pair]
        and str(row.get("stopped", "")).startswith("early stopping")
    )


def _converged_run(study: Study, piece: Piece, data, device) -> dict:
    recipe, pair, seed, (v,) = study.recipe, piece.group, piece.seed, _by_name([piece.variant])
    dates = pair == "dates"
    model, history = _train(
        v,
        data,
        recipe["dates_hidden_dim" if dates else "hidden_dim"],
        recipe["window"],
        recipe["dates_dropout" if dates else "dropout"],
        recipe["max_epochs"][pair],
        seed,
        device,
        batch_size=recipe["batch_size"],
        lr=recipe["lr"],
        patience=recipe["dates_patience" if dates else "patience"],
    )
    row = {
        "hidden_dim": model.cfg.hidden_dim,
        "bleu": evaluate(model, data)["bleu"].score,
        **training_row(history, model, valid="bleu"),
    }
    if dates:
        row["accuracy"] = exact_match(model, data)
        row["aer"] = None if v.attention is None else alignment_error_rate(model, data)
        row["aer_aligned"] = None if v.attention is None else alignment_error_rate(model, data, aligned_only=True)
    return row


def _converged_summary(study: Study, runs: list[dict], data) -> dict:
    recipe = study.recipe
    summary = {
        pair: summarise_variants(
            [r for r in runs if r["pair"] == pair],
            ("bleu", "valid_bleu", "best_epoch", "accuracy", "aer", "aer_aligned"),
            values=[v.name for v in converged_variants(recipe, pair)],
        )
        for pair in recipe["pairs"]
    }
    info = {}
    for pair in recipe["pairs"]:  # what each pair trained and tested on, for the chapters to print
        d = data(pair)
        lengths = [len(p.src) for p in d.test]
        info[pair] = {
            "name": d.name,
            "train": len(d.train),
            "valid": len(d.valid),
            "test": len(d.test),
            "test_source_tokens": mean_sd(lengths)["mean"],
            "vocab": {"source": len(d.src_vocab), "target": len(d.tgt_vocab)},
        }
    trimmed = {
        pair: [v.name for v in VARIANTS if v not in converged_variants(recipe, pair)] for pair in recipe["pairs"]
    }
    return {"reference": REFERENCE.name, "trimmed": trimmed, "data": info, "summary": summary, "runs": runs}


def _converged_study(budget: str, about: str) -> Study:
    """The pieces of a pair share its data and its stamp (:func:`_pair_stamp`): one partial file per
    pair, ``partial/ablation-<budget>-<pair>.jsonl``."""
    return Study(
        f"ablation-{budget}",
        f"ablation --budget {budget}",
        about,
        BUDGETS[budget],
        _converged_run,
        _converged_summary,
        data=_pair_data,
        pieces=_converged_pieces,
        stamp=_pair_stamp,
        reuse=_stopped_early,
        notes="wall_seconds adds up the training time of every piece; the pieces ran in two processes, "
        "possibly over several sessions",
    )


SMALL_STUDY = _budget_study("small", "chapter 9: every score x global/local x input feeding, one seed, 4 epochs")
TEST_STUDY = _budget_study("test", "the budget 'small' cut to seconds, for the tests")
CONVERGED_STUDY = _converged_study(
    "converged", "chapters 4 and 9: the ablation trained to early stopping, 3 seeds, HSK, Ding and the dates"
)
CONVERGED_TEST_STUDY = _converged_study("converged-test", "the budget 'converged' cut to seconds, for the tests")
STUDIES = [SMALL_STUDY, TEST_STUDY, CONVERGED_STUDY, CONVERGED_TEST_STUDY]
