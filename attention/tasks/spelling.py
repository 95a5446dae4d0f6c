"""Spelling correction as a task: English sentences with real misspellings injected (chapter 5).

Shape legend: B batch, S source length (words), T target length (S + 1 with ``<eos>``),
L characters of a source word, K characters of a target word + 1 (``<bos>`` or ``<eos>``).

    data = spelling_data()                 # ~4,000 sentences, misspelt from codespell's pairs
    data.evaluate(model)                   # word accuracy, accuracy on the misspelt words

Sentences: the English side of the HSK and Ding corpora (:mod:`attention.data.translation`),
lowercased word tokens, at most ``max_len`` tokens, duplicates dropped. Misspellings: codespell's
real ones (:mod:`attention.data.spelling`). The *pairs* (misspelling, correction) are split first:
a fraction ``heldout`` goes to valid and test only, so the test sentences carry misspellings never
seen in training. Then each word of a sentence that is the correction of some pair of its side is
replaced, with probability ``rate``, by one of those misspellings (all draws from ``seed``). The
source is the misspelt sentence, the target the correct one (same length). Vocabularies come from
train only: source words seen fewer than ``min_freq`` times at positions that were not misspelt are
``<unk>`` (so every misspelling is, unless it is also a common real word), target words seen
fewer than ``tgt_min_freq`` times are ``<unk>`` (rare words, for the character decoder of
:class:`attention.models.nested.NestedSeq2Seq`); one character vocabulary.

With the defaults (``n=4000, rate=0.3, heldout=0.2``, seed 0), from the 20,639 unique sentences of
at most 15 tokens: train 3,200 sentences (25,605 words, 4,153 misspelt, 3,095 rare), valid 400
(3,183 words, 313 misspelt, 589 rare), test 400 (3,198 words, 325 misspelt, 593 rare; "rare" =
``<unk>`` in the target vocabulary); 1,686 source words, 1,940 target words, 57 characters. Every
misspelling of every split is ``<unk>`` in the source vocabulary.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import Vocab, load_ding_de_en, load_hsk, split
from ..data.spelling import load_codespell, misspellings_of
from .base import Task, epoch_seed, fingerprint_tokens

__all__ = ["Misspelt", "SpellingBatch", "SpellingData", "spelling_data", "spelling_loss", "split_pairs", "misspell"]


@dataclass
class Misspelt:
    """One sentence: the misspelt words, the correct ones, and which positions were misspelt."""

    src: tuple[str, ...]  # source tokens (with misspellings)
    tgt: tuple[str, ...]  # target tokens (correct), same length
    misspelt: tuple[bool, ...]  # per position, True = src differs from tgt
    meta: dict = field(default_factory=dict)

    def __iter__(self):  # `src, tgt = example`, like a translation Pair
        return iter((self.src, self.tgt))


@dataclass
class SpellingBatch:
    """A padded batch of :class:`Misspelt` sentences (padding id 0)."""

    src: Tensor  # (B, S) source word ids
    src_lengths: Tensor  # (B,)
    chars: Tensor  # (B, S, L) character ids of each source word
    char_lengths: Tensor  # (B, S) characters per source word, 0 for padding
    oov: Tensor  # (B, S) bool, the source word is <unk> in the source vocabulary
    misspelt: Tensor  # (B, S) bool, the source word is a misspelling
    tgt_in: Tensor  # (B, T) <bos> + target ids
    tgt_out: Tensor  # (B, T) target ids + <eos>
    tgt_unk: Tensor  # (B, T) bool, tgt_out is <unk> in the target vocabulary (a real word)
    tgt_chars_in: Tensor  # (B, T, K) <bos> + characters of tgt_out's word (pad elsewhere)
    tgt_chars_out: Tensor  # (B, T, K) characters + <eos> of tgt_out's word (pad elsewhere)
    index: Tensor  # (B,) positions of these sentences in the list given to `collate`

    def to(self, device, non_blocking: bool = False) -> "SpellingBatch":
        return SpellingBatch(
            **{f.name: getattr(self, f.name).to(device, non_blocking=non_blocking) for f in fields(self)}
        )

    def __len__(self) -> int:
        return self.src.shape[0]

    def inputs(self) -> dict:
        """The keyword arguments of :class:`~attention.models.nested.NestedSeq2Seq` besides ``tgt_in``."""
        return dict(chars=self.chars, char_lengths=self.char_lengths, oov=self.oov)


def split_pairs(pairs: dict[str, tuple[str, ...]], heldout: float, seed: int) -> tuple[dict, dict]:
    """``(train, held out)`` ``{correct word: misspellings}``: each (misspelling, correction) pair
    goes to the held-out side with probability ``heldout`` (drawn from ``seed``)."""
    if not 0 < heldout < 1:
        raise ValueError(f"heldout must be in (0, 1), got {heldout}")
    rng = random.Random(seed)
    train, held = {}, {}
    for wrong in sorted(pairs):
        side = held if rng.random() < heldout else train
        side[wrong] = pairs[wrong]
    return misspellings_of(train), misspellings_of(held)


def misspell(
    tokens: Sequence[str], options: dict[str, tuple[str, ...]], rate: float, rng: random.Random
) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """Replace each word that has misspellings in ``options``, with probability ``rate``."""
    out, flags = [], []
    for w in tokens:
        if w in options and rng.random() < rate:
            out.append(rng.choice(options[w]))
            flags.append(True)
        else:
            out.append(w)
            flags.append(False)
    return tuple(out), tuple(flags)


def _pad(rows: list[list[int]], width: int | None = None) -> Tensor:
    out = torch.zeros(len(rows), max([width or 1] + [len(r) for r in rows]), dtype=torch.long)  # 0 = <pad>
    for b, row in enumerate(rows):
        out[b, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def spelling_loss(model: nn.Module, batch: SpellingBatch) -> Tensor:
    """Mean cross-entropy over the target words, plus (with a character decoder) the mean
    cross-entropy over the characters of the ``<unk>`` target words (Ji et al. 2017, §3.4)."""
    out = model(
        batch.src,
        batch.src_lengths,
        batch.tgt_in,
        tgt_unk=batch.tgt_unk,
        tgt_chars_in=batch.tgt_chars_in,
        **batch.inputs(),
    )
    pad = model.cfg.pad_id
    loss = F.cross_entropy(out.logits.reshape(-1, out.logits.shape[-1]), batch.tgt_out.reshape(-1), ignore_index=pad)
    if out.char_logits is not None and out.char_logits.shape[0] > 0:
        gold = batch.tgt_chars_out[out.char_rows]  # (N, K)
        loss = loss + F.cross_entropy(
            out.char_logits.reshape(-1, out.char_logits.shape[-1]), gold.reshape(-1), ignore_index=pad
        )
    return loss


@dataclass
class SpellingData(Task):
    name: str
    train: list  # Misspelt
    valid: list
    test: list
    src_vocab: Vocab  # source words (min_freq on train: most misspellings are <unk>)
    tgt_vocab: Vocab  # target words
    char_vocab: Vocab  # characters of every word
    seed: int = 0
    metric = "accuracy"

    def collate(self, examples: Sequence[Misspelt], index: Sequence[int] | None = None) -> SpellingBatch:
        """One :class:`SpellingBatch`."""
        sv, tv, cv = self.src_vocab, self.tgt_vocab, self.char_vocab
        src = _pad([sv.encode(e.src) for e in examples])  # (B, S)
        B, S = src.shape
        L = max(len(w) for e in examples for w in e.src)
        chars = torch.zeros(B, S, L, dtype=torch.long)
        char_lengths = torch.zeros(B, S, dtype=torch.long)
        for b, e in enumerate(examples):
            for i, w in enumerate(e.src):
                chars[b, i, : len(w)] = torch.tensor(cv.encode(w))
                char_lengths[b, i] = len(w)
        tgt = [tv.encode(e.tgt) for e in examples]
        tgt_in = _pad([[tv.bos_id] + t for t in tgt])  # (B, T)
        tgt_out = _pad([t + [tv.eos_id] for t in tgt])  # (B, T)
        T = tgt_in.shape[1]
        K = max(len(w) for e in examples for w in e.tgt) + 1
        tgt_chars_in = torch.zeros(B, T, K, dtype=torch.long)
        tgt_chars_out = torch.zeros(B, T, K, dtype=torch.long)
        for b, e in enumerate(examples):
            for t, w in enumerate(e.tgt):
                ids = cv.encode(w)
                tgt_chars_in[b, t, : len(ids) + 1] = torch.tensor([cv.bos_id] + ids)
                tgt_chars_out[b, t, : len(ids) + 1] = torch.tensor(ids + [cv.eos_id])
        return SpellingBatch(
            src=src,
            src_lengths=torch.tensor([len(e.src) for e in examples]),
            chars=chars,
            char_lengths=char_lengths,
            oov=(src == sv.unk_id),
            misspelt=_pad([list(map(int, e.misspelt)) for e in examples]).bool(),
            tgt_in=tgt_in,
            tgt_out=tgt_out,
            tgt_unk=(tgt_out == tv.unk_id),
            tgt_chars_in=tgt_chars_in,
            tgt_chars_out=tgt_chars_out,
            index=torch.tensor(list(range(len(examples))) if index is None else list(index)),
        )

    def _batches(self, examples: Sequence[Misspelt], batch_size: int, order: list[int]):
        for start in range(0, len(order), batch_size):
            group = order[start : start + batch_size]
            yield self.collate([examples[i] for i in group], group)

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        """Shuffled from ``seed`` and ``epoch``, then sorted by length inside pools of 50 batches."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        rng = random.Random(epoch_seed(seed, epoch))
        order = list(range(len(self.train)))
        rng.shuffle(order)
        pool = 50 * batch_size
        order = [
            i
            for s in range(0, len(order), pool)
            for i in sorted(order[s : s + pool], key=lambda i: len(self.train[i].src))
        ]
        groups = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        rng.shuffle(groups)
        for group in groups:
            yield self.collate([self.train[i] for i in group], group)

    def valid_batches(self):
        return list(self._batches(self.valid, 128, list(range(len(self.valid)))))

    def loss(self, model: nn.Module, batch: SpellingBatch) -> tuple[Tensor, int]:
        """:func:`spelling_loss`, over the batch's target tokens."""
        return spelling_loss(model, batch), int((batch.tgt_out != model.cfg.pad_id).sum())

    @torch.no_grad()
    def correct(
        self, model: nn.Module, examples: Sequence[Misspelt], batch_size: int = 128, unk_replace: bool = False
    ) -> list[list[str]]:
        """Greedy corrections: per sentence the emitted words (without ``<eos>``), each ``<unk>``
        replaced by the character decoder's word when the model has one. ``unk_replace`` (a model
        without a character decoder): each ``<unk>`` is replaced by the source word its step attends
        to most, Luong et al.'s (2015) *UNK replacement*, the word level's own way to write a word
        its vocabulary lacks."""
        model.eval()
        device = next(model.parameters()).device
        out = []
        for start in range(0, len(examples), batch_size):
            group = examples[start : start + batch_size]
            batch = self.collate(group).to(device)
            result = model.greedy(batch.src, batch.src_lengths, **batch.inputs())
            tokens = result.tokens.tolist()
            chars = None if result.char_tokens is None else result.char_tokens.tolist()
            if unk_replace and chars is not None:
                raise ValueError("unk_replace is for a model without a character decoder (char_level=False)")
            attended = result.attention.argmax(-1).tolist() if unk_replace else None  # (B, T') j*
            for b, ids in enumerate(tokens):
                words = []
                for t, i in enumerate(ids):
                    if i == self.tgt_vocab.eos_id:
                        break
                    if i == self.tgt_vocab.unk_id and chars is not None:
                        words.append("".join(self.char_vocab.decode(chars[b][t])) or "<unk>")
                    elif i == self.tgt_vocab.unk_id and unk_replace:
                        words.append(group[b].src[attended[b][t]])
                    else:
                        words.append(self.tgt_vocab.itos[i])
                out.append(words)
        return out

    @torch.no_grad()
    def char_path(self, model: nn.Module, examples: Sequence[Misspelt] | None = None, batch_size: int = 128) -> dict:
        """Where the nested attention reads while it spells the rare words, teacher-forced on the
        correct sentences (a model with a character decoder).

        For each rare target word ``y_t`` (``<unk>`` to the target vocabulary) the word attention
        picks a source word ``j*`` and the character attention ``β`` reads its characters:
        ``own_word`` is the share of rare words whose ``j*`` is ``t`` (the source word at the same
        position, the one to correct); ``near_diagonal`` is the share of their characters ``k``
        (the end of the word left out) whose most-weighted source character ``i`` has
        ``|i − k| ≤ 1``, and ``diagonal_chance`` what a character drawn uniformly from the source
        word would score. Counted over the rare words whose ``j*`` is ``t``."""
        if not getattr(model.cfg, "char_level", False):
            raise ValueError("char_path needs a model with a character decoder (char_level=True)")
        examples = self.test if examples is None else examples
        model.eval()
        device = next(model.parameters()).device
        words = own = steps = near = 0
        chance = 0.0
        for start in range(0, len(examples), batch_size):
            group = examples[start : start + batch_size]
            batch = self.collate(group).to(device)
            out = model(
                batch.src, batch.src_lengths, batch.tgt_in, tgt_unk=batch.tgt_unk,
                tgt_chars_in=batch.tgt_chars_in, **batch.inputs(),
            )  # fmt: skip
            rows = batch.tgt_unk.nonzero().tolist()  # (N, 2): sentence b, target position t
            top = out.char_attention.argmax(-1).tolist()  # (N, K)
            for (b, t), source, path in zip(rows, out.char_source.tolist(), top):
                words += 1
                if source != t:
                    continue
                own += 1
                n_src, n_tgt = len(group[b].src[t]), len(group[b].tgt[t])
                for k in range(n_tgt):
                    steps += 1
                    near += abs(path[k] - k) <= 1
                    chance += sum(abs(i - k) <= 1 for i in range(n_src)) / n_src
        return {
            "rare_words": words,
            "own_word": own / max(words, 1),
            "characters": steps,
            "near_diagonal": near / max(steps, 1),
            "diagonal_chance": chance / max(steps, 1),
        }

    def evaluate(
        self,
        model: nn.Module,
        examples: Sequence[Misspelt] | None = None,
        batch_size: int = 128,
        unk_replace: bool = False,
    ) -> dict:
        """Word accuracy (greedy, position by position against the correct sentence; a missing word
        is wrong), the accuracy on the misspelt positions and on the other ones, and the counts;
        ``unk_replace``: of the corrections with UNK replacement (:meth:`correct`)."""
        examples = self.test if examples is None else examples
        return self.score(examples, self.correct(model, examples, batch_size, unk_replace=unk_replace))

    def score(self, examples: Sequence[Misspelt], outputs: Sequence[Sequence[str]]) -> dict:
        """:meth:`evaluate`'s numbers for any ``outputs`` (one token sequence per example), e.g.
        :meth:`copy_baseline`'s. Rare words are the targets the target vocabulary lacks."""
        if len(outputs) != len(examples):
            raise ValueError(f"{len(outputs)} outputs for {len(examples)} examples")
        right = misspelt_right = n_misspelt = kept_right = unk_right = n_unk = 0
        n = 0
        for e, out in zip(examples, outputs):
            for i, (gold, flag) in enumerate(zip(e.tgt, e.misspelt)):
                ok = i < len(out) and out[i] == gold
                n += 1
                right += ok
                if flag:
                    n_misspelt += 1
                    misspelt_right += ok
                else:
                    kept_right += ok
                if gold not in self.tgt_vocab:
                    n_unk += 1
                    unk_right += ok
        return {
            "accuracy": right / max(n, 1),
            "misspelt_accuracy": misspelt_right / max(n_misspelt, 1),
            "kept_accuracy": kept_right / max(n - n_misspelt, 1),
            "rare_word_accuracy": unk_right / max(n_unk, 1),
            "n_words": n,
            "n_misspelt": n_misspelt,
            "n_rare_words": n_unk,
            "exact_sentences": sum(tuple(o) == e.tgt for e, o in zip(examples, outputs)) / max(len(examples), 1),
            "outputs": [list(o) for o in outputs],
        }

    def copy_baseline(self, examples: Sequence[Misspelt] | None = None) -> dict:
        """:meth:`score` of writing every source word unchanged: right on every word left alone,
        wrong on every misspelt one. What a corrector must beat on the words it should change
        without losing on the words it should keep."""
        examples = self.test if examples is None else examples
        return self.score(examples, [list(e.src) for e in examples])

    def validation_metric(self, model: nn.Module) -> float:
        """Word accuracy of greedy corrections of the validation split."""
        return self.evaluate(model, self.valid)["accuracy"]

    def fingerprint(self) -> dict:
        return {
            "task": "spelling",
            "name": self.name,
            "seed": self.seed,
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens(
                [(e.src, e.tgt) for e in self.train],
                [(e.src, e.tgt) for e in self.valid],
                [(e.src, e.tgt) for e in self.test],
            ),
            "vocab": fingerprint_tokens(self.src_vocab.itos, self.tgt_vocab.itos, self.char_vocab.itos),
        }


def english_sentences(max_len: int, cache_dir: str | None = None) -> list[tuple[str, ...]]:
    """The English sides of HSK and Ding, purely alphabetic-or-punctuation tokens, 1..max_len tokens, unique."""
    sentences = [p.tgt for p in load_hsk(cache_dir)] + [p.tgt for p in load_ding_de_en(cache_dir)]
    return [s for s in dict.fromkeys(sentences) if 0 < len(s) <= max_len]


def spelling_data(
    seed: int = 0,
    n: int | None = 4000,
    rate: float = 0.3,
    heldout: float = 0.2,
    min_freq: int = 2,
    tgt_min_freq: int = 2,
    max_len: int = 15,
    cache_dir: str | None = None,
) -> SpellingData:
    """Misspelt English sentences -> correct ones; see the module docstring.

    ``n`` sentences are drawn with ``seed`` (all when None); ``rate`` is the probability that a
    word with known misspellings is misspelt; ``heldout`` the share of (misspelling, correction)
    pairs kept for valid and test only.
    """
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    if max_len < 1 or min_freq < 1 or tgt_min_freq < 1:
        raise ValueError(f"max_len, min_freq and tgt_min_freq must be >= 1, got {max_len}, {min_freq}, {tgt_min_freq}")
    sentences = english_sentences(max_len, cache_dir)
    if n is not None:
        if not 0 < n <= len(sentences):
            raise ValueError(f"n must be in 1..{len(sentences)}, got {n}")
        sentences = random.Random(seed).sample(sentences, n)
    train_options, held_options = split_pairs(load_codespell(cache_dir), heldout, seed)
    tr, va, te = split(sentences, valid=0.1, test=0.1, seed=seed)
    rng = random.Random(seed + 1)
    parts = []
    for part, options in ((tr, train_options), (va, held_options), (te, held_options)):
        examples = []
        for tokens in part:
            src, flags = misspell(tokens, options, rate, rng)
            examples.append(Misspelt(src, tokens, flags))
        parts.append(examples)
    train, valid, test = parts
    # source words from train, the misspelt positions left out: a misspelling is <unk> unless it is
    # also a real word seen min_freq times, so training sees misspellings as the test does
    src_vocab = Vocab.build([[w for w, m in zip(e.src, e.misspelt) if not m] for e in train], min_freq=min_freq)
    tgt_vocab = Vocab.build([e.tgt for e in train], min_freq=tgt_min_freq)
    char_vocab = Vocab.build([w for e in train for w in e.src + e.tgt])
    name = f"spelling-{'all' if n is None else n}-rate{rate:g}"
    return SpellingData(name, train, valid, test, src_vocab, tgt_vocab, char_vocab, seed)
