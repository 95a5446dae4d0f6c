"""Translation as a task: corpora, batches, the loss, BLEU, and what attention aligns.

Shape legend: B batch, S source length, T target length, V target vocabulary, He encoder dim.

    data = hsk_data()                       # HSK zh->en, split 80/10/10, vocabularies from train
    translate(model, data.test[:5], data)   # greedy (or beam) outputs with their attention maps
    data.evaluate(model)                    # sacreBLEU, BLEU by source length, the translations

Any :class:`~attention.models.base.SequenceModel` can be trained on a :class:`TranslationData`
with :func:`attention.experiments.fit`.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import Vocab, batches, collate, load_ding_de_en, load_hsk, make_dates, split
from ..data.translation import Pair
from ..metrics import BleuResult, aer, bleu_by_length, corpus_bleu, detokenize
from .base import Task, epoch_seed, fingerprint_tokens

__all__ = [
    "TranslationData",
    "hsk_data",
    "ding_data",
    "common_word_pairs",
    "dates_data",
    "sequence_loss",
    "Translated",
    "translate",
    "join_pairs",
    "attention_links",
    "drop_unaligned",
    "decode_steps",
    "forced_attention",
    "alignment_error_rate",
]


def sequence_loss(model: nn.Module, batch, label_smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy over the real (non-padding) target tokens."""
    out = model(batch.src, batch.src_lengths, batch.tgt_in)
    logits = out.logits  # (B, T, V)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        batch.tgt_out.reshape(-1),
        ignore_index=model.cfg.pad_id,
        label_smoothing=label_smoothing,
    )


@dataclass
class TranslationData(Task):
    name: str  # e.g. "hsk-traditional-zh-en"
    train: list  # Pair-like: .src, .tgt token tuples and .meta
    valid: list
    test: list
    src_vocab: Vocab
    tgt_vocab: Vocab
    tgt_lang: str = "en"  # selects the BLEU tokenizer
    seed: int = 0
    decode_len: int = 40  # the longest translation evaluate() decodes, in target tokens
    metric = "bleu"  # what training selects on (a class attribute, not a field)

    def validation_metric(self, model: nn.Module) -> float:
        """Corpus BLEU of greedy translations of the validation split (lowercased)."""
        return self.evaluate(model, self.valid, edges=None)["bleu"].score

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        return batches(
            self.train, self.src_vocab, self.tgt_vocab, batch_size, shuffle=True, seed=epoch_seed(seed, epoch)
        )

    def valid_batches(self):
        return batches(self.valid, self.src_vocab, self.tgt_vocab, 128, shuffle=False)

    def loss(self, model: nn.Module, batch, label_smoothing: float = 0.0) -> tuple[Tensor, int]:
        """:func:`sequence_loss`, averaged over the batch's real target tokens."""
        return (
            sequence_loss(model, batch, label_smoothing=label_smoothing),
            int((batch.tgt_out != model.cfg.pad_id).sum()),
        )

    def evaluate(
        self,
        model: nn.Module,
        examples: Sequence | None = None,
        edges: Sequence[int] | None = (1, 7, 10, 13, 100),
        beam_size: int = 1,
    ) -> dict:
        """Corpus BLEU (lowercased, since the vocabulary is: sacreBLEU's ``case:lc``), BLEU by
        source length (none when ``edges`` is None), and the translations."""
        pairs = self.test if examples is None else examples
        done = translate(model, pairs, self, beam_size=beam_size, max_len=self.decode_len)
        hyps = [t.text for t in done]
        refs = [t.reference for t in done]  # sacreBLEU lowercases both sides: the signature says case:lc
        bleu: BleuResult = corpus_bleu(hyps, refs, self.tgt_lang, lowercase=True)
        by_length = (
            []
            if edges is None
            else bleu_by_length(hyps, refs, [len(t.source) for t in done], edges, self.tgt_lang, lowercase=True)
        )
        return {"bleu": bleu, "by_length": by_length, "translations": done}

    def fingerprint(self) -> dict:
        return {
            "task": "translation",
            "name": self.name,
            "seed": self.seed,
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens([(p.src, p.tgt) for p in self.train], [(p.src, p.tgt) for p in self.valid]),
            "vocab": fingerprint_tokens(self.src_vocab.itos, self.tgt_vocab.itos),
        }


def hsk_data(
    script: str = "traditional", seed: int = 0, min_freq: int = 1, cache_dir: str | None = None
) -> TranslationData:
    """HSK zh->en (``CONTRIBUTING.md``, "Data"), split 80/10/10 with ``seed``; vocabularies from train only."""
    pairs = load_hsk(cache_dir, script=script)
    tr, va, te = split(pairs, valid=0.1, test=0.1, seed=seed)
    return TranslationData(
        f"hsk-{script}-zh-en",
        tr,
        va,
        te,
        Vocab.build([p.src for p in tr], min_freq=min_freq),
        Vocab.build([p.tgt for p in tr], min_freq=min_freq),
        "en",
        seed,
    )


def common_word_pairs(pairs: Sequence, min_count: int) -> list:
    """The pairs whose every source word and every target word occurs at least ``min_count``
    times in ``pairs`` (counted on each side separately), in their order."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    src_counts = Counter(w for p in pairs for w in p.src)
    tgt_counts = Counter(w for p in pairs for w in p.tgt)
    return [
        p
        for p in pairs
        if all(src_counts[w] >= min_count for w in p.src) and all(tgt_counts[w] >= min_count for w in p.tgt)
    ]


def ding_data(
    n: int | None = 6000, seed: int = 0, min_freq: int = 2, corpus_min_count: int = 1, cache_dir: str | None = None
) -> TranslationData:
    """Ding de->en example sentences (``CONTRIBUTING.md``, "Data"), split 80/10/10.

    ``corpus_min_count``: keep only the pairs whose every word (German and English) occurs at
    least this often in the whole corpus. The dictionary's examples are diverse (19,517 German and
    13,761 English word types in 17,349 pairs), so at the size of the book's models most words
    are seen once; ``corpus_min_count=3`` keeps 5,304 pairs over a vocabulary a small model can
    learn (the same kind of selection as keeping short, frequent-word sentences). Then ``n`` pairs
    are drawn with ``seed`` (all when None); word vocabularies come from train, and words seen
    fewer than ``min_freq`` times there become ``<unk>``.
    """
    pairs = load_ding_de_en(cache_dir)
    pairs = common_word_pairs(pairs, corpus_min_count)
    if n is not None:
        if not 0 < n <= len(pairs):
            raise ValueError(f"n must be in 1..{len(pairs)}, got {n}")
        pairs = random.Random(seed).sample(pairs, n)
    tr, va, te = split(pairs, valid=0.1, test=0.1, seed=seed)
    name = (
        "ding-de-en" + ("" if corpus_min_count == 1 else f"-common{corpus_min_count}") + ("" if n is None else f"-{n}")
    )
    return TranslationData(
        name,
        tr,
        va,
        te,
        Vocab.build([p.src for p in tr], min_freq=min_freq),
        Vocab.build([p.tgt for p in tr], min_freq=min_freq),
        "en",
        seed,
    )


def dates_data(n: int = 4000, seed: int = 0) -> TranslationData:
    """The date task (zh/fr/de/en dates -> ISO) with gold links, split 80/10/10."""
    pairs = make_dates(n, seed=seed)
    tr, va, te = split(pairs, valid=0.1, test=0.1, seed=seed)
    return TranslationData(
        "dates", tr, va, te, Vocab.build([p.src for p in tr]), Vocab.build([p.tgt for p in tr]), "en", seed
    )


@dataclass
class Translated:
    source: list[str]  # source tokens
    reference: str  # the reference translation (raw text)
    hypothesis: list[str] = field(default_factory=list)  # emitted tokens, without <eos>
    attention: torch.Tensor | None = None  # (T', S) on the CPU: row t = where token t looked

    @property
    def text(self) -> str:
        return detokenize(self.hypothesis)


def translate(
    model, pairs: Sequence, data: TranslationData, beam_size: int = 1, max_len: int = 40, batch_size: int = 128
) -> list[Translated]:
    """Translate ``pairs`` (greedy when ``beam_size == 1``), keeping the alignment matrices.

    ``pairs``: ``Pair``/``DatePair`` objects or plain ``(source tokens, target tokens)`` tuples
    (the target is the reference; give ``()`` when there is none).
    """
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    model.eval()
    device = next(model.parameters()).device
    out = []
    for i in range(0, len(pairs), batch_size):
        chunk = list(pairs[i : i + batch_size])
        batch = collate(chunk, data.src_vocab, data.tgt_vocab).to(device)
        if beam_size == 1:
            result = model.greedy(batch.src, batch.src_lengths, max_len=max_len)
        else:
            result = model.beam_search(batch.src, batch.src_lengths, beam_size=beam_size, max_len=max_len)
        for row, pair in enumerate(chunk):
            src, tgt = pair  # a Pair, a DatePair, or a plain (source, target) tuple
            ids = result.tokens[row].tolist()
            n = ids.index(model.cfg.eos_id) if model.cfg.eos_id in ids else len(ids)
            attn = None if result.attention is None else result.attention[row, : n + 1, : len(src)].cpu()
            reference = getattr(pair, "meta", {}).get("tgt_text") or detokenize(tgt)
            out.append(Translated(list(src), reference, data.tgt_vocab.decode(ids[:n]), attn))
    return out


def join_pairs(pairs: Sequence, k: int, seed: int = 0) -> list:
    """Longer inputs from short ones: each new pair joins ``k`` pairs, sources and targets alike.

    HSK sentences are short (most ≤ 14 characters), so chapter 3 tests how models trained
    on single sentences cope with 2 or 3 of them in a row (they never saw such lengths).
    """
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    joined = []
    for i in range(0, len(order) - k + 1, k):
        group = [pairs[j] for j in order[i : i + k]]
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
def decode_steps(model, data: TranslationData, pair, max_len: int = 40) -> dict:
    """Greedy-decode one pair and keep, per step, the attention row and the context vector.

    Returns ``{"source", "output" (tokens, <eos> included), "weights" (T', S), "contexts" (T', He)}``.
    """
    model.eval()
    device = next(model.parameters()).device
    batch = collate([pair], data.src_vocab, data.tgt_vocab).to(device)
    result = model.greedy(batch.src, batch.src_lengths, max_len=max_len)
    ids = result.tokens[0].tolist()
    n = ids.index(model.cfg.eos_id) + 1 if model.cfg.eos_id in ids else len(ids)
    states = model.encode(batch.src, batch.src_lengths).memory.states[0]  # (S, He)
    weights = result.attention[0, :n, : len(pair.src)]  # (T', S)
    return {
        "source": list(pair.src),
        "output": data.tgt_vocab.decode(ids[:n], strip_special=False),
        "weights": weights.cpu(),
        "contexts": (weights @ states[: len(pair.src)]).cpu(),
    }


@torch.no_grad()
def forced_attention(model, data: TranslationData, pairs: Sequence) -> list[torch.Tensor]:
    """Alignment matrices ``(T, S)`` while the decoder is fed the *reference* (teacher forcing),
    so row t is where the model looks to produce reference token t."""
    model.eval()
    device = next(model.parameters()).device
    batch = collate(list(pairs), data.src_vocab, data.tgt_vocab).to(device)
    att = model(batch.src, batch.src_lengths, batch.tgt_in, return_attention=True).attention
    return [att[i, : len(p.tgt), : len(p.src)].cpu() for i, p in enumerate(pairs)]


def drop_unaligned(links: Sequence[set], pairs: Sequence) -> list[set]:
    """Each pair's predicted ``(source, target)`` links without those of target tokens that the
    gold (``pair.sure``) aligns to nothing."""
    return [{(s, t) for s, t in A if t in {j for _, j in p.sure}} for A, p in zip(links, pairs)]


def alignment_error_rate(
    model, data: TranslationData, pairs: Sequence | None = None, aligned_only: bool = False
) -> float:
    """Corpus AER of the argmax alignments of :func:`forced_attention` against the gold links.

    ``aligned_only`` drops the predicted links of target tokens that the gold aligns to
    nothing (the hyphens of ``YYYY-MM-DD``): an argmax must point somewhere, a gold link need not.
    """
    pairs = data.test if pairs is None else pairs
    links = [attention_links(a) for a in forced_attention(model, data, pairs)]
    if aligned_only:
        links = drop_unaligned(links, pairs)
    return aer(links, [p.sure for p in pairs], [p.possible for p in pairs])
