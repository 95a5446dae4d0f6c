"""Chapter 3's recorded run: RNNsearch given a dictionary, and the survey's example 機器學習.

    python -m attention dictionary            # both variants, 5 seeds, resumable
    python -m attention dictionary --status   # the runs done and missing

HSK's 3,429 training sentences hold every character of 機器學習 (machine learning) but neither
word in that sense, so a model trained on them alone cannot translate the survey's example.
CC-CEDICT (``CONTRIBUTING.md``, "Data") has 機器 "machine", 學習 "to learn; to study", 深度學習
"deep learning (artificial intelligence)" and 機器翻譯 "machine translation", but not 機器學習
itself: a model that writes "machine learning" composes it from parts it was taught apart.

The data (:func:`dictionary_data`): chapter 3's HSK split (seed 0), plus the dictionary entries
whose headword is 1 to ``max_source`` characters, every one of them in HSK's training
characters (so the source vocabulary stays HSK's), each read as its first sense without notes
(:func:`attention.data.translation.gloss_core`), of 1 to ``max_target`` words, every word of them
at least ``min_count`` times among those entries; one pair per headword (its first entry).

*Compounds* are the entries that split into two kept entries whose glosses, one after the other,
are the compound's gloss (世界 "world" + 銀行 "bank" = 世界銀行 "world bank"): for them the
right alignment is known, each English word on the characters of its own part. A random
``compound_test`` share of them is held out of training, their parts kept in it; the rest of the
entries are split ``held_out`` / ``held_out`` / rest into validation, test and training. The
HSK sentences are repeated ``hsk_repeats`` times in every epoch, since the dictionary's pairs are
nine times as many and much shorter.

Both variants are chapter 3's RNNsearch (E = H = 128), trained until HSK's validation BLEU stops
improving: ``"HSK"`` on HSK alone, ``"HSK+CEDICT"`` on both. Each run records HSK test BLEU, the
dictionary test's BLEU and exact match, the held-out compounds' exact match and *alignment
accuracy* (the share of their English words whose largest teacher-forced attention weight falls
on the characters of their own part; chance: the share of the source those characters are), and
the translations of :data:`DICTIONARY`'s ``probes`` with their attention. Seed 0's HSK+CEDICT
model is kept beside the record: chapter 3's figures and explorer and the playground use it.
"""

from __future__ import annotations

import random
from collections import Counter

import torch

from ..checkpoints import load_checkpoint
from ..data import Pair, Vocab
from ..data.translation import cedict_pairs, gloss_core, load_cedict, tokenize_words
from ..experiments import build_model, evaluate, hsk_data, translate
from ..results import mean_sd
from ..tasks.translation import TranslationData, forced_attention
from .base import Study, fit_piece, summarise_variants, training_row

__all__ = [
    "DICTIONARY",
    "dictionary_entries",
    "compounds",
    "dictionary_data",
    "compound_alignment",
    "dictionary_model",
    "STUDY",
    "STUDIES",
]

DICTIONARY = {
    "script": "traditional",
    "max_source": 4,
    "max_target": 4,
    "min_count": 3,
    "held_out": 0.05,
    "compound_test": 0.5,
    "split_seed": 0,
    "hsk_repeats": 2,
    "limit": None,  # the first this many kept entries only (a test's smaller recipe)
    "variants": ["HSK", "HSK+CEDICT"],
    "seeds": [0, 1, 2, 3, 4],
    "max_epochs": 40,
    "patience": 5,
    "lr": 3e-3,
    "batch_size": 64,
    "probes": ["機器學習", "機器學習很有趣", "機器翻譯", "深度學習", "我家有五口人。", "我喜歡學習中文。"],
}


def dictionary_entries(recipe: dict, characters: set[str]) -> list[Pair]:
    """The kept CC-CEDICT pairs, in the dictionary's order (the module's docstring says which)."""
    first: dict[tuple, Pair] = {}
    for pair in cedict_pairs(load_cedict(), script=recipe["script"]):
        if len(pair.src) > recipe["max_source"] or pair.src in first or not set(pair.src) <= characters:
            continue
        gloss = gloss_core(pair.meta["tgt_text"])
        tgt = tokenize_words(gloss)
        if 1 <= len(tgt) <= recipe["max_target"]:
            first[pair.src] = Pair(pair.src, tgt, {**pair.meta, "tgt_text": gloss})
    counts = Counter(w for p in first.values() for w in p.tgt)
    kept = [p for p in first.values() if all(counts[w] >= recipe["min_count"] for w in p.tgt)]
    return kept[: recipe["limit"]] if recipe["limit"] else kept


def compounds(entries: list[Pair]) -> list[Pair]:
    """The entries that split into two entries whose glosses, in order, are the entry's gloss;
    ``meta["split"]`` is the number of characters of the first part, ``meta["split_words"]`` the
    number of words of its gloss (the first split that works)."""
    gloss = {p.src: p.tgt for p in entries}
    out = []
    for p in entries:
        for i in range(1, len(p.src)):
            left, right = gloss.get(p.src[:i]), gloss.get(p.src[i:])
            if left is not None and right is not None and left + right == p.tgt:
                out.append(Pair(p.src, p.tgt, {**p.meta, "split": i, "split_words": len(left)}))
                break
    return out


def _split(recipe: dict, entries: list[Pair]) -> dict[str, list[Pair]]:
    """``compounds`` (held out, their parts in training), ``valid``, ``test``, ``train``."""
    rng = random.Random(recipe["split_seed"])
    found = compounds(entries)
    rng.shuffle(found)
    held = found[: round(len(found) * recipe["compound_test"])]
    if not held:
        raise ValueError(
            f"no compound is held out of {len(entries)} entries ({len(found)} compounds, compound_test "
            f"{recipe['compound_test']}): raise limit or compound_test"
        )
    held_src = {p.src for p in held}
    parts = {q for p in held for q in (p.src[: p.meta["split"]], p.src[p.meta["split"] :])}
    rest = [p for p in entries if p.src not in held_src]
    free = [p for p in rest if p.src not in parts]
    rng.shuffle(free)
    n = round(len(rest) * recipe["held_out"])
    out_src = {p.src for p in free[: 2 * n]}
    return {
        "compounds": held,
        "valid": free[:n],
        "test": free[n : 2 * n],
        "train": [p for p in rest if p.src not in out_src],
    }


def dictionary_data(recipe: dict, group: str = "") -> dict:
    """``{"HSK": data, "HSK+CEDICT": data, "dictionary": splits}``: chapter 3's HSK task, the same
    with the dictionary's training pairs added, and the dictionary's splits
    (:func:`dictionary_entries`; ``compounds``, ``valid``, ``test``, ``train``). Both tasks
    validate and test on HSK."""
    hsk = hsk_data(script=recipe["script"], seed=0)
    entries = dictionary_entries(recipe, {c for p in hsk.train for c in p.src})
    splits = _split(recipe, entries)
    train = list(hsk.train) * recipe["hsk_repeats"] + splits["train"]
    both = TranslationData(
        f"hsk-cedict-{recipe['script']}-zh-en",
        train,
        hsk.valid,
        hsk.test,
        Vocab.build([p.src for p in train]),
        Vocab.build([p.tgt for p in train]),
        hsk.tgt_lang,
        seed=0,
    )
    return {"HSK": hsk, "HSK+CEDICT": both, "dictionary": splits}


def own_part_accuracy(pairs: list[Pair], attentions) -> dict:
    """Over the English words of ``pairs`` (compounds, :func:`compounds`) and their attention
    matrices ``(T, S)``: the share of words whose largest weight falls on the characters of their
    own part (``accuracy``), and the share a uniformly random source position would hit (``chance``)."""
    hits = chance = words = 0
    for p, a in zip(pairs, attentions, strict=True):
        i, m, s = p.meta["split"], p.meta["split_words"], len(p.src)
        if tuple(a.shape) != (len(p.tgt), s):
            raise ValueError(
                f"{p.meta.get('src_text', p.src)}: attention {tuple(a.shape)}, expected ({len(p.tgt)}, {s})"
            )
        for t, j in enumerate(a.argmax(-1).tolist()):
            own = range(0, i) if t < m else range(i, s)
            hits += j in own
            chance += len(own) / s
            words += 1
    return {"accuracy": hits / words, "chance": chance / words, "words": words}


@torch.no_grad()
def compound_alignment(model, data: TranslationData, pairs: list[Pair]) -> dict:
    """:func:`own_part_accuracy` of ``model``'s teacher-forced attention on ``pairs``."""
    return own_part_accuracy(pairs, forced_attention(model, data, pairs))


def _exact(outputs, pairs) -> float:
    return sum(o.hypothesis == list(p.tgt) for o, p in zip(outputs, pairs)) / len(pairs)


def _run(study: Study, piece, shared: dict, device):
    recipe, data = study.recipe, shared[piece.variant]
    model = build_model(data, attention="additive", seed=piece.seed).to(device)
    history = fit_piece(model, data, recipe, piece.seed, device)
    model.eval()
    row = {"bleu": evaluate(model, data)["bleu"].score, **training_row(history, model, valid="bleu")}
    splits = shared["dictionary"]
    for name in ("test", "compounds"):
        pairs = splits[name]
        outputs = translate(model, pairs, data, max_len=recipe["max_target"] + 4)
        row[f"{name}_exact"] = _exact(outputs, pairs)
        row[f"{name}_bleu"] = evaluate(model, data, pairs, edges=None)["bleu"].score
    row["compound_alignment"] = compound_alignment(model, data, splits["compounds"])
    probes = [Pair(tuple(c for c in text if not c.isspace()), (), {"tgt_text": ""}) for text in recipe["probes"]]
    row["probes"] = {
        text: {"output": o.text, "attention": [[round(x, 4) for x in r] for r in o.attention.tolist()]}
        for text, o in zip(recipe["probes"], translate(model, probes, data))
    }
    row["curve"] = [{"epoch": e["epoch"], "valid_bleu": round(e["valid_bleu"], 3)} for e in history.epochs]
    return row, model, {"src_vocab": data.src_vocab, "tgt_vocab": data.tgt_vocab, "data": data.name}


def dictionary_model(device=None, directory=None) -> tuple[torch.nn.Module, TranslationData]:
    """``(model, data)``: the kept seed-0 HSK+CEDICT RNNsearch in eval mode and chapter 3's HSK
    task read through its vocabularies (kept in the checkpoint, so CC-CEDICT need not be fetched
    to use it; ``data.train`` is empty)."""
    path = STUDY.model_path("HSK+CEDICT", directory)
    if not path.exists():
        raise FileNotFoundError(f"no {path}: `python -m attention dictionary` keeps its seed-0 HSK+CEDICT model there")
    model, extra = load_checkpoint(path, expect="seq2seq", map_location=device or "cpu")
    hsk = hsk_data(script=extra["recipe"]["script"], seed=0)
    data = TranslationData(
        extra["data"], [], hsk.valid, hsk.test, extra["src_vocab"], extra["tgt_vocab"], hsk.tgt_lang, seed=0
    )
    return model.eval(), data


def _baselines(splits: dict, data: TranslationData) -> dict:
    """What the dictionary's scores stand beside: the most common gloss of the training entries
    written for every test entry (``majority_exact``) and the share of test entries whose every
    English word is in the target vocabulary (``vocabulary_ceiling``: no model can do better)."""
    common = Counter(p.tgt for p in splits["train"]).most_common(1)[0][0]
    out = {}
    for name in ("test", "compounds"):
        pairs = splits[name]
        out[name] = {
            "n": len(pairs),
            "majority_gloss": " ".join(common),
            "majority_exact": sum(p.tgt == common for p in pairs) / len(pairs),
            "vocabulary_ceiling": sum(all(w in data.tgt_vocab for w in p.tgt) for p in pairs) / len(pairs),
        }
    return out


def _summarise(study: Study, runs: list[dict], shared) -> dict:
    metrics = (
        "bleu",
        "valid_bleu",
        "test_exact",
        "test_bleu",
        "compounds_exact",
        "compounds_bleu",
        "best_epoch",
        "epochs_run",
    )
    summary = summarise_variants(runs, metrics, values=study.recipe["variants"])
    for variant, cell in summary.items():
        rows = [r for r in runs if r["variant"] == variant]
        cell["compound_alignment"] = mean_sd([r["compound_alignment"]["accuracy"] for r in rows])
        cell["compound_alignment_chance"] = rows[0]["compound_alignment"]["chance"]
        cell["probes"] = {text: [r["probes"][text]["output"] for r in rows] for text in study.recipe["probes"]}
    data = shared()
    splits = data["dictionary"]
    return {
        "summary": summary,
        "baselines": _baselines(splits, data["HSK+CEDICT"]),
        "sizes": {
            "dictionary_train": len(splits["train"]),
            "dictionary_valid": len(splits["valid"]),
            "dictionary_test": len(splits["test"]),
            "compounds_held_out": len(splits["compounds"]),
            "hsk_train": len(data["HSK"].train),
            "source_vocabulary": len(data["HSK+CEDICT"].src_vocab),
            "target_vocabulary": {v: len(data[v].tgt_vocab) for v in study.recipe["variants"]},
        },
        "runs": runs,
    }


STUDY = Study(
    "dictionary",
    "dictionary",
    "chapter 3: RNNsearch on HSK with and without CC-CEDICT's entries; 機器學習 and held-out compounds, 5 seeds",
    DICTIONARY,
    _run,
    _summarise,
    data=dictionary_data,
    keep=("HSK+CEDICT",),
)
STUDIES = [STUDY]
