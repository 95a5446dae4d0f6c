"""Two rated sentences joined into one sequence, labelled by both polarities (chapter 6).

A sentence's attention has one place to look; a sequence made of two sentences, each deciding half
of the label, has two. Each example is two of VADER's human-rated movie-review sentences
(``CONTRIBUTING.md``, "Data"), each rated strongly (``|rating| >= min_rating``), written one after
the other (with a separator token between them, by default), and its label is the pair of their
polarities, first then second:

    ====  =====  ======
    label first  second
    ====  =====  ======
    0     −      −
    1     −      +
    2     +      −
    3     +      +
    ====  =====  ======

A classifier must read both sentences to do better than half right; where the second sentence
starts is kept in ``meta["second"]``, so the attention mass on each half can be measured
(``book/06-transformer.md``, "Structured self-attention: r rows and a penalty").

    data = joined_data()   # 4 balanced classes; chance and the majority class are 0.25
"""

from __future__ import annotations

import random
from typing import Sequence

from ..data import Vocab, split
from ..data.sentiment import Sentence, load_vader_movie_snippets
from .classification import ClassificationData

__all__ = ["PAIR_LABELS", "SEPARATOR", "strong_sentences", "joined_pairs", "joined_data"]

#: class index -> the polarities of the first and the second sentence (index = 2·first + second)
PAIR_LABELS = ("--", "-+", "+-", "++")
SEPARATOR = "<sep>"  # the token written between the two sentences


def strong_sentences(sentences: Sequence[Sentence], min_rating: float, max_tokens: int | None = None) -> list[Sentence]:
    """The sentences whose mean human rating is at least ``min_rating`` away from 0 (and, given
    ``max_tokens``, of at most that many tokens)."""
    if not min_rating > 0:
        raise ValueError(f"min_rating must be > 0 (a strong rating is far from neutral), got {min_rating}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be None or at least 1, got {max_tokens}")
    return [
        s
        for s in sentences
        if abs(s.meta["rating"]) >= min_rating and (max_tokens is None or len(s.tokens) <= max_tokens)
    ]


def joined_pairs(sentences: Sequence[Sentence], n: int, seed: int = 0, separator: str | None = SEPARATOR):
    """``n`` examples, each two different sentences of ``sentences`` (:class:`Sentence` objects with
    ``label`` 0 or 1 and ``meta["rating"]``) joined, with ``separator`` between them (None: none).

    The labels cycle 0, 1, 2, 3 (balanced when ``n`` is a multiple of 4); label ``2·a + b`` joins a
    sentence of polarity ``a`` to one of polarity ``b``, each drawn with ``random.Random(seed)``.
    Each example is a :class:`Sentence` whose ``meta`` holds ``second`` (the position where the
    second sentence starts), ``first_length`` (the first sentence's tokens: the separator, if
    any, sits between) and ``ratings`` (both)."""
    pools = {y: [s for s in sentences if s.label == y] for y in (0, 1)}
    if any(len(p) < 2 for p in pools.values()):
        raise ValueError(
            f"need at least two sentences of each polarity; got {len(pools[0])} negative, {len(pools[1])} positive"
        )
    rng = random.Random(seed)
    middle = () if separator is None else (separator,)
    out = []
    for i in range(n):
        label = i % len(PAIR_LABELS)
        a, b = divmod(label, 2)
        first = rng.choice(pools[a])
        second = rng.choice(pools[b])
        while second is first:
            second = rng.choice(pools[b])
        tokens = (*first.tokens, *middle, *second.tokens)
        meta = {
            "second": len(first.tokens) + len(middle),
            "first_length": len(first.tokens),
            "ratings": [first.meta["rating"], second.meta["rating"]],
        }
        out.append(Sentence(tokens, label, meta))
    return out


def joined_data(
    min_rating: float = 1.5,
    max_tokens: int | None = 20,
    sizes: tuple[int, int, int] = (2000, 400, 800),
    min_freq: int = 2,
    seed: int = 0,
    separator: str | None = SEPARATOR,
    cache_dir: str | None = None,
) -> ClassificationData:
    """Joined pairs (:func:`joined_pairs`) of VADER's sentences rated ``|rating| >= min_rating``, of
    at most ``max_tokens`` tokens each (None: any length; short sentences keep the pairs quick to
    train on).

    The strong sentences are split 80/10/10 by :func:`attention.data.split` with ``seed`` (the same
    on every platform) *before* any pair is made, so no test or validation sentence occurs in a
    training pair; then ``sizes`` pairs are drawn per split (train, valid, test), balanced over the
    four classes of :data:`PAIR_LABELS`. The vocabulary comes from the training pairs; words seen
    fewer than ``min_freq`` times there become ``<unk>``."""
    if any(n < 4 or n % 4 for n in sizes):
        raise ValueError(f"every split needs a positive multiple of 4 pairs (balanced classes), got sizes={sizes}")
    pool = strong_sentences(load_vader_movie_snippets(cache_dir), min_rating, max_tokens)
    parts = split(pool, valid=0.1, test=0.1, seed=seed)
    train, valid, test = (
        joined_pairs(part, n, seed=seed * 10 + i, separator=separator) for i, (part, n) in enumerate(zip(parts, sizes))
    )
    vocab = Vocab.build([e.tokens for e in train], min_freq=min_freq)
    name = f"vader-joined-{min_rating:g}" + ("" if max_tokens is None else f"-{max_tokens}w")
    return ClassificationData(name, train, valid, test, vocab, list(PAIR_LABELS), seed)
