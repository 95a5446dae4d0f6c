"""Data: real corpora fetched from package registries, vocabularies, batches, gold alignments.

* ``cache``       -- :func:`fetch` a pinned package release into a cache, :func:`read_member`
* ``translation`` -- :func:`load_hsk` (zh->en, CC-BY-SA-4.0), :func:`load_ding_de_en`
                     (de->en, GPL-2+)
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
from .translation import (Pair, load_ding_de_en, load_hsk, parse_ding, parse_hsk,
                          tokenize_chars, tokenize_words)
from .vocab import Vocab

__all__ = [
    "Batch", "DatePair", "Pair", "SOURCES", "Source", "Vocab", "aer", "batches", "collate",
    "date_pair", "default_cache_dir", "fetch", "load_ding_de_en", "load_hsk", "make_dates",
    "parse_ding", "parse_hsk", "read_member", "split", "tokenize_chars", "tokenize_words",
]
