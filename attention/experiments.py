"""Translation experiments in a few calls, shared by chapters 2, 3 (and 9, 10).

    data = hsk_data()                               # HSK zh->en, split, vocabularies
    model = build_model(data, attention="additive")  # RNNsearch; attention=None: encoder–decoder
    history = fit(model, data, epochs=6)             # fixed updates: reruns give the same numbers
    report = evaluate(model, data)                   # sacreBLEU, BLEU by source length, outputs

A chapter that needs a model another chapter trained calls :func:`fit_cached`, which
retrains only when no checkpoint with the same recipe is in the cache (training on
one CPU thread is deterministic, so a cached model is the model it would train).
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from .data import Vocab, batches, collate, load_hsk, split
from .data.cache import default_cache_dir
from .metrics import BleuResult, bleu_by_length, corpus_bleu, detokenize
from .models import Seq2Seq, Seq2SeqConfig
from .train import History, TrainConfig, load_checkpoint, save_checkpoint, train

__all__ = ["TranslationData", "hsk_data", "build_model", "fit", "fit_cached", "translate",
           "evaluate", "join_pairs", "attention_links", "decode_steps", "TRANSLATION_RECIPE",
           "dates_data", "forced_attention", "alignment_error_rate", "load_result", "convergence"]


@dataclass
class TranslationData:
    name: str  # e.g. "hsk-zh-en"
    train: list  # Pair-like: .src, .tgt token tuples and .meta
    valid: list
    test: list
    src_vocab: Vocab
    tgt_vocab: Vocab
    tgt_lang: str = "en"  # selects the BLEU tokenizer
    seed: int = 0


def hsk_data(script: str = "traditional", seed: int = 0, min_freq: int = 1,
             cache_dir: str | None = None) -> TranslationData:
    """HSK zh->en (``shared/DATA.md``), split 80/10/10 with ``seed``; vocabularies from train only."""
    pairs = load_hsk(cache_dir, script=script)
    tr, va, te = split(pairs, valid=0.1, test=0.1, seed=seed)
    return TranslationData(f"hsk-{script}-zh-en", tr, va, te,
                           Vocab.build([p.src for p in tr], min_freq=min_freq),
                           Vocab.build([p.tgt for p in tr], min_freq=min_freq), "en", seed)


def build_model(data: TranslationData, attention: str | None = "additive", seed: int = 0,
                **config) -> Seq2Seq:
    """A :class:`Seq2Seq` sized for ``data`` (chapter defaults: E = H = 128, dropout 0.3)."""
    defaults = dict(embed_dim=128, hidden_dim=128, dropout=0.3)
    torch.manual_seed(seed)
    return Seq2Seq(Seq2SeqConfig(len(data.src_vocab), len(data.tgt_vocab), attention=attention,
                                 **(defaults | config)))


def fit(model: Seq2Seq, data: TranslationData, epochs: int = 6, batch_size: int = 32,
        lr: float = 2e-3, seed: int = 0, device=None, progress: bool = True,
        max_seconds: float | None = None) -> History:
    """Train on ``data.train`` for ``epochs`` (early stopping on ``data.valid``)."""
    device = device or next(model.parameters()).device
    model.to(device)
    torch.manual_seed(seed)
    valid = [b.to(device) for b in batches(data.valid, data.src_vocab, data.tgt_vocab, 128, shuffle=False)]

    def train_batches(epoch):
        for b in batches(data.train, data.src_vocab, data.tgt_vocab, batch_size, shuffle=True,
                         seed=seed * 1000 + epoch):
            yield b.to(device)

    cfg = TrainConfig(max_epochs=epochs, max_seconds=max_seconds, lr=lr, patience=3, progress=progress)
    return train(model, train_batches, lambda: valid, cfg)


def _recipe_key(model: Seq2Seq, data: TranslationData, **recipe) -> str:
    """Hash of everything that decides the trained weights, the training code included."""
    here = Path(__file__).parent
    code = hashlib.sha256(b"".join((here / f).read_bytes() for f in (
        "models/seq2seq.py", "train.py", "data/batching.py", "data/vocab.py", "scores.py",
        "functional.py"))).hexdigest()
    blob = json.dumps({"model": asdict(model.cfg), "data": data.name, "seed": data.seed,
                       "train": len(data.train), "torch": torch.__version__.split("+")[0],
                       "code": code, **recipe}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def fit_cached(model: Seq2Seq, data: TranslationData, cache_dir: str | None = None,
               retrain: bool = False, **fit_args) -> tuple[Seq2Seq, History | None]:
    """:func:`fit`, unless the cache holds a model trained with the same recipe.

    Returns ``(model, history)``; ``history`` is None when the model came from the cache.
    ``retrain=True`` always trains (a chapter showing its own training) and refreshes the
    cache for the chapters that reuse the model. Pass no ``max_seconds`` here: a time
    budget makes training depend on the machine.
    """
    if fit_args.get("max_seconds") is not None:
        raise ValueError("fit_cached needs a fixed number of epochs, not max_seconds")
    device = fit_args.get("device") or next(model.parameters()).device
    key = _recipe_key(model, data, **{k: v for k, v in fit_args.items() if k not in ("device", "progress")})
    path = default_cache_dir(cache_dir) / "models" / f"{key}.pt"
    if path.exists() and not retrain:
        cached, _ = load_checkpoint(path, Seq2Seq, Seq2SeqConfig, map_location=device)
        return cached.to(device), None
    history = fit(model, data, **fit_args)
    save_checkpoint(path, model, history=[dict(e) for e in history.epochs])
    return model, history


@dataclass
class Translated:
    source: list[str]  # source tokens
    reference: str  # the reference translation (raw text)
    hypothesis: list[str] = field(default_factory=list)  # emitted tokens, without <eos>
    attention: torch.Tensor | None = None  # (T', S) on the CPU: row t = where token t looked

    @property
    def text(self) -> str:
        return detokenize(self.hypothesis)


def translate(model: Seq2Seq, pairs: Sequence, data: TranslationData, beam_size: int = 1,
              max_len: int = 40, batch_size: int = 128) -> list[Translated]:
    """Translate ``pairs`` (greedy when ``beam_size == 1``), keeping the alignment matrices."""
    model.eval()
    device = next(model.parameters()).device
    out = []
    for i in range(0, len(pairs), batch_size):
        chunk = list(pairs[i:i + batch_size])
        batch = collate(chunk, data.src_vocab, data.tgt_vocab).to(device)
        if beam_size == 1:
            result = model.greedy(batch.src, batch.src_lengths, max_len=max_len)
        else:
            result = model.beam_search(batch.src, batch.src_lengths, beam_size=beam_size, max_len=max_len)
        for row, pair in enumerate(chunk):
            ids = result.tokens[row].tolist()
            n = ids.index(model.cfg.eos_id) if model.cfg.eos_id in ids else len(ids)
            n_src = len(pair.src)
            attn = None if result.attention is None else result.attention[row, :n + 1, :n_src].cpu()
            reference = getattr(pair, "meta", {}).get("tgt_text") or detokenize(pair.tgt)
            out.append(Translated(list(pair.src), reference, data.tgt_vocab.decode(ids[:n]), attn))
    return out


def evaluate(model: Seq2Seq, data: TranslationData, pairs: Sequence | None = None,
             edges: Sequence[int] = (1, 7, 10, 13, 100), beam_size: int = 1) -> dict:
    """Corpus BLEU (lowercased, since the vocabulary is), BLEU by source length, translations."""
    pairs = data.test if pairs is None else pairs
    done = translate(model, pairs, data, beam_size=beam_size)
    hyps = [t.text for t in done]
    refs = [t.reference.lower() for t in done]
    bleu: BleuResult = corpus_bleu(hyps, refs, data.tgt_lang)
    by_length = bleu_by_length(hyps, refs, [len(p.src) for p in pairs], edges, data.tgt_lang)
    return {"bleu": bleu, "by_length": by_length, "translations": done}


def join_pairs(pairs: Sequence, k: int, seed: int = 0) -> list:
    """Longer inputs from short ones: each new pair joins ``k`` pairs, sources and targets alike.

    HSK sentences are short (most ≤ 14 characters), so chapter 3 tests how models trained
    on single sentences cope with 2 or 3 of them in a row (they never saw such lengths).
    """
    from .data.translation import Pair
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    joined = []
    for i in range(0, len(order) - k + 1, k):
        group = [pairs[j] for j in order[i:i + k]]
        src = tuple(t for p in group for t in p.src)
        tgt = tuple(t for p in group for t in p.tgt)
        text = " ".join(p.meta.get("tgt_text", detokenize(p.tgt)) for p in group)
        joined.append(Pair(src, tgt, {"tgt_text": text, "joined": k}))
    return joined


def attention_links(attention: torch.Tensor) -> set[tuple[int, int]]:
    """Hard alignment from an attention matrix ``(T, S)``: each target token -> its argmax source.

    Returns ``{(source position, target position)}``, the convention of :func:`attention.metrics.aer`.
    """
    return {(int(s), t) for t, s in enumerate(attention.argmax(-1).tolist())}


@torch.no_grad()
def decode_steps(model: Seq2Seq, data: TranslationData, pair, max_len: int = 40) -> dict:
    """Greedy-decode one pair and keep, per step, the attention row and the context vector.

    Returns ``{"source", "output" (tokens, <eos> included), "weights" (T', S), "contexts" (T', He)}``.
    """
    model.eval()
    device = next(model.parameters()).device
    batch = collate([pair], data.src_vocab, data.tgt_vocab).to(device)
    result = model.greedy(batch.src, batch.src_lengths, max_len=max_len)
    ids = result.tokens[0].tolist()
    n = ids.index(model.cfg.eos_id) + 1 if model.cfg.eos_id in ids else len(ids)
    states = model.encode(batch.src, batch.src_lengths)["memory"]["states"][0]  # (S, He)
    weights = result.attention[0, :n, :len(pair.src)]  # (T', S)
    return {"source": list(pair.src), "output": data.tgt_vocab.decode(ids[:n], strip_special=False),
            "weights": weights.cpu(), "contexts": (weights @ states[:len(pair.src)]).cpu()}


#: The recipe chapters 2 and 3 train with: same data, seed and budget for both models.
TRANSLATION_RECIPE = {"epochs": 7, "lr": 3e-3, "batch_size": 32}


def dates_data(n: int = 4000, seed: int = 0) -> TranslationData:
    """The date task (zh/fr/de/en dates -> ISO) with gold links, split 80/10/10."""
    from .data import make_dates
    pairs = make_dates(n, seed=seed)
    tr, va, te = split(pairs, valid=0.1, test=0.1, seed=seed)
    return TranslationData("dates", tr, va, te, Vocab.build([p.src for p in tr]),
                           Vocab.build([p.tgt for p in tr]), "en", seed)


@torch.no_grad()
def forced_attention(model: Seq2Seq, data: TranslationData, pairs: Sequence) -> list[torch.Tensor]:
    """Alignment matrices ``(T, S)`` while the decoder is fed the *reference* (teacher forcing),
    so row t is where the model looks to produce reference token t."""
    model.eval()
    device = next(model.parameters()).device
    batch = collate(list(pairs), data.src_vocab, data.tgt_vocab).to(device)
    att = model(batch.src, batch.src_lengths, batch.tgt_in, return_attention=True).attention
    return [att[i, :len(p.tgt), :len(p.src)].cpu() for i, p in enumerate(pairs)]


def alignment_error_rate(model: Seq2Seq, data: TranslationData, pairs: Sequence | None = None,
                         aligned_only: bool = False) -> float:
    """Corpus AER of the argmax alignments of :func:`forced_attention` against the gold links.

    ``aligned_only`` drops the predicted links of target tokens that the gold aligns to
    nothing (the hyphens of ``YYYY-MM-DD``): an argmax must point somewhere, a gold link need not.
    """
    from .metrics import aer
    pairs = data.test if pairs is None else pairs
    links = [attention_links(a) for a in forced_attention(model, data, pairs)]
    if aligned_only:
        links = [{(s, t) for s, t in A if t in {j for _, j in p.sure}} for A, p in zip(links, pairs)]
    return aer(links, [p.sure for p in pairs], [p.possible for p in pairs])


# --- command line: runs too long for a notebook, recorded in attention/results/ ----------------

RESULTS = Path(__file__).parent / "results"


def load_result(name: str) -> dict:
    """A recorded run, e.g. ``load_result("hsk-convergence")`` (see :func:`convergence`)."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"no recorded result {path}; run `python -m attention.experiments "
                                f"{name.split('-')[-1]}` to make it")
    return json.loads(path.read_text())


def convergence(epochs: int = 40, seed: int = 0, out: str | None = None, progress: bool = False) -> dict:
    """Train both chapter-3 models until early stopping; record BLEU, time and versions.

    ``python -m attention.experiments convergence`` writes ``attention/results/hsk-convergence.json``
    (shipped with the package, so Colab has it too), which chapter 3 reads with
    :func:`load_result` -- building the book does not retrain for minutes.
    """
    import platform
    import sacrebleu

    from . import __version__
    from .device import setup
    device = setup(seed)
    data = hsk_data(seed=seed)
    record = {"command": "python -m attention.experiments convergence", "seed": seed,
              "max_epochs": epochs, "recipe": {k: v for k, v in TRANSLATION_RECIPE.items() if k != "epochs"},
              "versions": {"attention": __version__, "torch": torch.__version__,
                           "sacrebleu": sacrebleu.__version__, "python": platform.python_version()},
              "machine": {"device": device.type, "threads": torch.get_num_threads(),
                          "processor": platform.processor() or platform.machine()},
              "models": {}}
    for name, attention in (("encoder-decoder", None), ("RNNsearch", "additive")):
        model = build_model(data, attention=attention, seed=seed).to(device)
        recipe = dict(TRANSLATION_RECIPE, epochs=epochs)
        history = fit(model, data, seed=seed, device=device, progress=progress, **recipe)
        report = evaluate(model, data)
        joined = {str(k): evaluate(model, data, join_pairs(data.test, k))["bleu"].score for k in (2, 3)}
        record["models"][name] = {
            "bleu": report["bleu"].score, "signature": report["bleu"].signature,
            "by_length": report["by_length"], "joined_bleu": joined,
            "epochs_run": len(history.epochs), "best_epoch": history.best_epoch,
            "train_seconds": round(history.seconds, 1), "stopped": history.stopped,
            "parameters": sum(p.numel() for p in model.parameters()),
            "history": history.epochs}
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(record, indent=1) + "\n")
    return record


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m attention.experiments",
                                     description="Experiments too long for a notebook.")
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convergence", help="chapter 3: both models trained to early stopping")
    conv.add_argument("--epochs", type=int, default=40, help="upper bound on epochs")
    conv.add_argument("--seed", type=int, default=0)
    conv.add_argument("--out", default=str(RESULTS / "hsk-convergence.json"))
    abl = sub.add_parser("ablation", help="chapter 9: every score x global/local x input feeding")
    abl.add_argument("--budget", default="small", help="'small' (the book's) or 'test' (seconds)")
    abl.add_argument("--seed", type=int, default=0)
    abl.add_argument("--out", default=None, help="default: attention/results/ablation-<budget>.json")
    args = parser.parse_args(argv)
    if args.command == "ablation":
        from .ablation import run_ablation
        out = args.out or str(RESULTS / f"ablation-{args.budget}.json")
        record = run_ablation(args.budget, args.seed, out=out, progress=True)  # one line per variant
        print(f"{len(record['results'])} variants in {record['wall_seconds']} s; wrote {out}")
    if args.command == "convergence":
        record = convergence(args.epochs, args.seed, args.out, progress=True)
        for name, m in record["models"].items():
            print(f"{name}: BLEU {m['bleu']:.2f} after {m['train_seconds']} s "
                  f"({m['epochs_run']} epochs, best {m['best_epoch']})")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
