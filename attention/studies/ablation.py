"""The controlled ablation of chapter 9: every score × global/local × input feeding, one budget.

    python -m attention ablation --budget small

trains every variant on the same data (HSK zh->en for BLEU, the date task for AER),
with the same seed, the same number of updates and the same parameter budget (±10 %:
each variant's hidden size is chosen so its parameter count lands closest to the
reference, Luong's global-general with input feeding), and records the run as
``attention/results/ablation-<budget>.json`` through :func:`attention.results.record_result`.
Chapters 9 and 4 read that file, so building the book never retrains dozens of models.
Training runs on one CPU thread, so a rerun with the same seed on the same machine
gives the same numbers.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..device import session_seed, setup
from ..experiments import alignment_error_rate, dates_data, ding_data, evaluate, fit, hsk_data, translate
from ..models import LuongConfig, LuongSeq2Seq, Seq2Seq, Seq2SeqConfig
from ..results import PartialRuns, mean_sd, record_result
from ..scores import SCORES, is_content_based

__all__ = ["Variant", "VARIANTS", "BUDGETS", "CONVERGED", "PAIR_KEYS", "build_variant", "match_budget", "exact_match", "run_ablation",
           "run_converged", "converged_variants", "converged_status"]

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
    "small": {"hsk_epochs": 4, "dates_n": 4000, "dates_epochs": 4, "batch_size": 32, "lr": 3e-3,
              "hidden_dim": 128, "dates_hidden_dim": 48, "window": 3, "dropout": 0.3, "dates_dropout": 0.1},
    "test": {"hsk_epochs": 0, "dates_n": 200, "dates_epochs": 1, "batch_size": 32, "lr": 3e-3,
             "hidden_dim": 16, "dates_hidden_dim": 16, "window": 2, "dropout": 0.3, "dates_dropout": 0.1},
}


def build_variant(variant: Variant, data, hidden_dim: int, window: int, seed: int | None = None,
                  embed_dim: int | None = None, dropout: float = 0.3):
    """A model of ``variant`` for ``data`` with the given hidden size; ``seed`` (the initial
    weights) defaults to the session's (:func:`attention.device.session_seed`)."""
    torch.manual_seed(session_seed(seed))
    sizes = dict(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab),
                 embed_dim=embed_dim or hidden_dim, hidden_dim=hidden_dim, dropout=dropout,
                 attention_dim=hidden_dim)
    if variant.decoder == "bahdanau":
        return Seq2Seq(Seq2SeqConfig(attention=variant.attention, **sizes))
    return LuongSeq2Seq(LuongConfig(attention=variant.attention, local=variant.local, window=window,
                                    input_feeding=variant.input_feeding, **sizes))


def count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def match_budget(variant: Variant, data, hidden_dim: int, window: int, tolerance: float = 0.10) -> int:
    """The hidden size whose parameter count is closest to the reference variant's at ``hidden_dim``.

    Raises ``ValueError`` when no size lands within ``tolerance`` of the reference.
    """
    target = count(build_variant(REFERENCE, data, hidden_dim, window, embed_dim=hidden_dim))
    candidates = range(max(8, hidden_dim // 2), hidden_dim * 2 + 1, 4 if hidden_dim >= 32 else 1)
    best = min(candidates, key=lambda h: abs(count(build_variant(variant, data, h, window,
                                                                 embed_dim=hidden_dim)) - target))
    got = count(build_variant(variant, data, best, window, embed_dim=hidden_dim))
    if abs(got - target) > tolerance * target:
        raise ValueError(f"{variant.name}: no hidden size within {tolerance:.0%} of {target} parameters "
                         f"(best {best}: {got})")
    return best


def _train(v: Variant, data, hidden: int, window: int, dropout: float, epochs: int, seed: int, device,
           **fit_args):
    """Build ``v`` at the parameter budget of the reference at ``hidden`` and train it (``fit``)."""
    h = match_budget(v, data, hidden, window)
    model = build_variant(v, data, h, window, seed, embed_dim=hidden, dropout=dropout).to(device)
    history = fit(model, data, epochs=epochs, seed=seed, device=device, progress=False, **fit_args)
    return model, history


def exact_match(model, data) -> float:
    """The share of test sentences translated exactly (greedy decoding), the date task's accuracy."""
    outputs = translate(model, data.test, data)
    return sum(o.hypothesis == list(p.tgt) for o, p in zip(outputs, data.test)) / len(outputs)


def run_ablation(budget: str = "small", seed: int = 0, variants: list[Variant] | None = None,
                 directory: str | Path | None = None, progress: bool = False) -> dict:
    """Train and evaluate ``variants`` (default: all) and return the record. It is written (in
    ``directory``, default the package's results folder) when a directory is given or every
    variant was run, so a partial run never replaces the book's record."""
    if budget not in BUDGETS:
        raise ValueError(f"unknown budget {budget!r}; choose one of {sorted(BUDGETS)}")
    recipe = BUDGETS[budget]
    variants = VARIANTS if variants is None else variants
    device = setup(seed)
    start = time.perf_counter()
    hsk = hsk_data(seed=seed) if recipe["hsk_epochs"] else None
    dates = dates_data(n=recipe["dates_n"], seed=seed)
    results = []
    for v in variants:
        row = {"variant": v.name, "attention": v.attention, "local": v.local,
               "input_feeding": v.input_feeding, "decoder": v.decoder}
        if hsk is not None:
            model, history = _train(v, hsk, recipe["hidden_dim"], recipe["window"], recipe["dropout"],
                                    recipe["hsk_epochs"], seed, device, batch_size=recipe["batch_size"], lr=recipe["lr"])
            row |= {"hidden_dim": model.cfg.hidden_dim, "parameters": count(model),
                    "bleu": evaluate(model, hsk)["bleu"].score,
                    "train_seconds": round(history.seconds, 1), "best_epoch": history.best_epoch}
        model, history = _train(v, dates, recipe["dates_hidden_dim"], recipe["window"], recipe["dates_dropout"],
                                recipe["dates_epochs"], seed, device, batch_size=recipe["batch_size"], lr=recipe["lr"])
        row |= {"dates_hidden_dim": model.cfg.hidden_dim, "dates_parameters": count(model),
                "dates_accuracy": exact_match(model, dates),
                "aer": None if v.attention is None else alignment_error_rate(model, dates),
                "aer_aligned": None if v.attention is None else alignment_error_rate(model, dates, aligned_only=True),
                "dates_train_seconds": round(history.seconds, 1)}
        results.append(row)
        if progress:
            print({k: (round(x, 3) if isinstance(x, float) else x) for k, x in row.items()}, flush=True)
    return record_result(f"ablation-{budget}", command=f"python -m attention ablation --budget {budget}",
                         recipe=dict(recipe, budget=budget), seeds=[seed],
                         metrics={"reference": REFERENCE.name, "results": results},
                         wall_seconds=time.perf_counter() - start, device=device, directory=directory,
                         write=directory is not None or variants == VARIANTS)


# --- trained to convergence, several seeds, two language pairs -------------------------------

#: The recorded grid: every variant trained until its validation BLEU stops improving, on HSK
#: zh->en, Ding de->en and the date task, with three seeds. The full grid (41 variants) would
#: take about a day on two cores, so it is trimmed to the variants the chapters compare (on Ding,
#: the slowest pair, to the no-attention baseline, RNNsearch and global against local); the
#: record lists what was left out of each pair. ``max_epochs`` is a cap per pair.
CONVERGED = {
    "pairs": ["hsk", "ding", "dates"], "seeds": [0, 1, 2],
    "variants": ["none+feed", "bahdanau-additive", "global-dot+feed", "global-general+feed",
                 "global-concat+feed", "global-additive+feed", "global-location+feed", "global-general",
                 "local-m-general+feed", "local-p-general+feed"],
    "ding_variants": ["none+feed", "bahdanau-additive", "global-dot+feed", "global-general+feed",
                      "local-m-general+feed", "local-p-general+feed"],
    "max_epochs": {"hsk": 60, "ding": 60, "dates": 30}, "batch_size": 32, "lr": 3e-3, "window": 3,
    "patience": 5, "hidden_dim": 64, "dropout": 0.3,  # HSK and Ding (validation BLEU is noisy)
    "ding_n": None, "ding_min_freq": 1, "ding_corpus_min_count": 3,
    "dates_n": 4000, "dates_hidden_dim": 48, "dates_dropout": 0.1, "dates_patience": 3,
}
#: the recipe keys each pair's pieces depend on (besides its epoch cap): a piece is reused only
#: under the same values
PAIR_KEYS = {
    "hsk": ["batch_size", "lr", "window", "patience", "hidden_dim", "dropout"],
    "ding": ["batch_size", "lr", "window", "patience", "hidden_dim", "dropout",
             "ding_n", "ding_min_freq", "ding_corpus_min_count"],
    "dates": ["batch_size", "lr", "window", "dates_patience", "dates_hidden_dim",
              "dates_dropout", "dates_n"],
}
BUDGETS["converged"] = CONVERGED
BUDGETS["converged-test"] = CONVERGED | {
    "pairs": ["dates"], "seeds": [0, 1], "variants": ["global-general+feed", "local-p-dot"],
    "max_epochs": {"dates": 2}, "dates_n": 200, "dates_hidden_dim": 16}


def converged_variants(recipe: dict, pair: str | None = None) -> list[Variant]:
    """The variants of a converged budget (those of ``pair``, when it has its own list)."""
    names = recipe.get(f"{pair}_variants", recipe["variants"])
    by_name = {v.name: v for v in VARIANTS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; choose from {sorted(by_name)}")
    return [by_name[n] for n in names]


def _keys(recipe: dict) -> list[str]:
    """Every piece of a converged budget: ``pair/variant/seed<k>``."""
    return [f"{p}/{v.name}/seed{s}" for p in recipe["pairs"] for v in converged_variants(recipe, p)
            for s in recipe["seeds"]]


def _pair_data(pair: str, recipe: dict):
    """The data of a pair; the split is fixed (seed 0) so that seeds vary only the training."""
    if pair == "hsk":
        return hsk_data(seed=0)
    if pair == "ding":
        return ding_data(n=recipe["ding_n"], seed=0, min_freq=recipe["ding_min_freq"],
                         corpus_min_count=recipe["ding_corpus_min_count"])
    if pair == "dates":
        return dates_data(n=recipe["dates_n"], seed=0)
    raise ValueError(f"unknown pair {pair!r}; choose 'hsk', 'ding' or 'dates'")


def _run_one(v: Variant, pair: str, data, recipe: dict, seed: int, device) -> dict:
    dates = pair == "dates"
    model, history = _train(v, data, recipe["dates_hidden_dim" if dates else "hidden_dim"], recipe["window"],
                            recipe["dates_dropout" if dates else "dropout"], recipe["max_epochs"][pair], seed, device,
                            batch_size=recipe["batch_size"], lr=recipe["lr"],
                            patience=recipe["dates_patience" if dates else "patience"])
    row = {"hidden_dim": model.cfg.hidden_dim, "parameters": count(model), "bleu": evaluate(model, data)["bleu"].score,
           "valid_bleu": history.epochs[history.best_epoch - 1]["valid_bleu"],
           "best_epoch": history.best_epoch, "epochs_run": len(history.epochs), "stopped": history.stopped,
           "train_seconds": round(history.seconds, 1)}
    if dates:
        row["accuracy"] = exact_match(model, data)
        row["aer"] = None if v.attention is None else alignment_error_rate(model, data)
        row["aer_aligned"] = None if v.attention is None else alignment_error_rate(model, data, aligned_only=True)
    return row


def converged_status(budget: str = "converged", directory: str | Path | None = None) -> dict[str, list[str]]:
    """``{"done": [...], "missing": [...]}``: the pieces (pair/variant/seed) of a converged budget."""
    if budget not in BUDGETS or "variants" not in BUDGETS[budget]:
        raise ValueError(f"unknown converged budget {budget!r}; choose 'converged' or 'converged-test'")
    recipe = BUDGETS[budget]
    stores = _stores(budget, recipe, directory)
    keys = _keys(recipe)
    done = [k for k in keys if k in stores[k.split("/")[0]]]
    return {"done": done, "missing": [k for k in keys if k not in done]}


def _stores(budget: str, recipe: dict, directory) -> dict[str, PartialRuns]:
    """One store of finished pieces per pair, stamped with its epoch cap and the recipe keys that
    pair depends on, so that changing (say) the Ding recipe keeps the HSK and date pieces. A piece
    that stopped early under a lower cap is kept when the cap is raised: with the same seed it
    runs the same updates and stops at the same epoch."""
    def stamp(pair):
        return {"max_epochs": recipe["max_epochs"][pair]} | {k: recipe[k] for k in PAIR_KEYS[pair]}

    def reuse_if_stopped_early(pair):
        def reuse(old: dict, result: dict) -> bool:
            rest = {k: v for k, v in old.items() if k != "max_epochs"}
            return (rest == {k: v for k, v in stamp(pair).items() if k != "max_epochs"}
                    and old.get("max_epochs", 0) <= recipe["max_epochs"][pair]
                    and str(result.get("stopped", "")).startswith("early stopping"))
        return reuse

    return {pair: PartialRuns(f"ablation-{budget}-{pair}", stamp(pair), directory, reuse_if_stopped_early(pair))
            for pair in recipe["pairs"]}


def run_converged(budget: str = "converged", pairs: list[str] | None = None, seeds: list[int] | None = None,
                  directory: str | Path | None = None, progress: bool = False) -> dict | None:
    """Run the pieces of ``budget`` (pair × variant × seed) that are not done yet, keeping each
    finished piece in :class:`~attention.results.PartialRuns`; once every piece of the budget is
    done, write the record ``ablation-<budget>`` and return it (else return None).

    Two processes can share the work: give each its own ``pairs``.
    """
    if budget not in BUDGETS or "variants" not in BUDGETS[budget]:
        raise ValueError(f"unknown converged budget {budget!r}; choose 'converged' or 'converged-test'")
    recipe = BUDGETS[budget]
    device = setup(0)
    stores = _stores(budget, recipe, directory)
    for pair in pairs or recipe["pairs"]:
        if pair not in recipe["pairs"]:
            raise ValueError(f"pair {pair!r} is not in budget {budget!r} ({recipe['pairs']})")
        done, data = stores[pair], None
        for seed in seeds if seeds is not None else recipe["seeds"]:
            for v in converged_variants(recipe, pair):
                key = f"{pair}/{v.name}/seed{seed}"
                if key in done:
                    continue
                data = data or _pair_data(pair, recipe)
                setup(seed)
                row = _run_one(v, pair, data, recipe, seed, device)
                done.add(key, row)
                if progress:
                    print(key, {k: (round(x, 3) if isinstance(x, float) else x) for k, x in row.items()}, flush=True)
    keys = _keys(recipe)
    if any(k not in stores[k.split("/")[0]] for k in keys):
        return None
    runs = [{"pair": k.split("/")[0], "variant": k.split("/")[1], "seed": int(k.split("/seed")[1]),
             **stores[k.split("/")[0]].get(k)} for k in keys]
    summary: dict = {}
    for pair in recipe["pairs"]:
        for v in converged_variants(recipe, pair):
            rows = [r for r in runs if r["pair"] == pair and r["variant"] == v.name]
            cell = {m: mean_sd([r[m] for r in rows]) for m in ("bleu", "valid_bleu", "best_epoch")}
            for m in ("accuracy", "aer", "aer_aligned"):
                if rows[0].get(m) is not None:
                    cell[m] = mean_sd([r[m] for r in rows])
            cell["parameters"] = rows[0]["parameters"]
            cell["converged"] = all(r["best_epoch"] < r["epochs_run"] for r in rows)
            summary.setdefault(pair, {})[v.name] = cell
    data = {}
    for pair in recipe["pairs"]:  # what each pair trained and tested on, for the chapters to print
        d = _pair_data(pair, recipe)
        lengths = [len(p.src) for p in d.test]
        data[pair] = {"name": d.name, "train": len(d.train), "valid": len(d.valid), "test": len(d.test),
                      "test_source_tokens": mean_sd(lengths)["mean"],
                      "vocab": {"source": len(d.src_vocab), "target": len(d.tgt_vocab)}}
    trimmed = {pair: [v.name for v in VARIANTS if v not in converged_variants(recipe, pair)]
               for pair in recipe["pairs"]}
    return record_result(
        f"ablation-{budget}", command=f"python -m attention ablation --budget {budget}",
        recipe=recipe, seeds=list(recipe["seeds"]),
        metrics={"reference": REFERENCE.name, "trimmed": trimmed, "data": data, "summary": summary, "runs": runs},
        wall_seconds=sum(r["train_seconds"] for r in runs), device=device, directory=directory,
        notes="wall_seconds adds up the training time of every piece; the pieces ran in two processes, "
              "possibly over several sessions")
