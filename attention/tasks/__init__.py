"""Tasks: a dataset with its splits, how it is batched, what is minimised and what is reported.

* ``base``           -- :class:`Task`, the interface :func:`attention.experiments.fit` trains on
* ``translation``    -- :class:`TranslationData` (HSK zh->en, the date task): BLEU, alignments, AER
* ``classification`` -- :class:`ClassificationData`: labelled token sequences, accuracy;
  :func:`sentiment_data` (Rotten Tomatoes, VADER's movie sentences)
* ``documents``      -- :class:`DocumentData`: documents as lists of sentences, padded at two levels;
  :func:`document_data` (Pang & Lee's movie reviews)
* ``joined``         -- :func:`joined_data`: two of VADER's rated sentences joined, labelled by both
  polarities (four classes)
* ``copy``           -- :class:`CopyData`: the NTM copy task (random bit vectors, read back after a delimiter)
* ``qa``             -- :class:`QAData`: questions over a story (bAbI format) for memory networks;
  :func:`babi_data`
* ``spelling``       -- :class:`SpellingData`: codespell's misspellings in English sentences, to correct
* ``captions``       -- :class:`CaptionData`: rows of real handwritten digits to caption;
  :func:`digit_captions`

A new task (question answering, captioning) subclasses :class:`Task` in a file of its own here;
``CONTRIBUTING.md`` ("Adding a task") says what each method must do.
"""

from .base import Task, fingerprint_tokens
from .classification import SENTIMENT_CORPORA, ClassificationBatch, ClassificationData, Example, sentiment_data
from .copy import CopyData, copy_data
from .documents import DocumentBatch, DocumentData, document_data, documents_batch
from .joined import PAIR_LABELS, joined_data, joined_pairs
from .qa import QABatch, QAData, babi_data
from .spelling import SpellingData, spelling_data
from .captions import CaptionBatch, CaptionData, digit_captions
from .tagging import TaggingBatch, TaggingData, aspect_data
from .translation import (
    Translated,
    TranslationData,
    alignment_error_rate,
    attention_links,
    dates_data,
    decode_steps,
    ding_data,
    forced_attention,
    hsk_data,
    join_pairs,
    sequence_loss,
    translate,
)

__all__ = [
    "TaggingBatch",
    "TaggingData",
    "aspect_data",
    "CaptionBatch",
    "CaptionData",
    "digit_captions",
    "SENTIMENT_CORPORA",
    "ClassificationBatch",
    "ClassificationData",
    "CopyData",
    "DocumentBatch",
    "DocumentData",
    "Example",
    "QABatch",
    "QAData",
    "SpellingData",
    "babi_data",
    "copy_data",
    "document_data",
    "documents_batch",
    "PAIR_LABELS",
    "joined_data",
    "joined_pairs",
    "spelling_data",
    "Task",
    "Translated",
    "TranslationData",
    "alignment_error_rate",
    "attention_links",
    "dates_data",
    "decode_steps",
    "ding_data",
    "fingerprint_tokens",
    "forced_attention",
    "hsk_data",
    "join_pairs",
    "sentiment_data",
    "sequence_loss",
    "translate",
]
