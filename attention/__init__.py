"""attention -- every attention mechanism of the survey, readable and tested.

The code behind "Attention in NLP: an interactive textbook". Modules:

* ``functional`` -- masked softmax, ``attend``, scaled dot-product attention
* ``masks``      -- padding / causal / window masks and the one mask converter
* ``scores``     -- every score function of survey §4, one API, by name
* ``layers``     -- ``Attention`` (any score) and ``MultiHeadAttention``
* ``viz``        -- heatmaps and text highlighting (imports matplotlib lazily)
* ``widgets``    -- explorers: live ipywidgets, or precomputed frames for the website
* ``device``     -- device choice, seeding, threads
* ``models``, ``data``, ``tasks``, ``experiments``, ``train`` -- the models, corpora, tasks and training
* ``results``    -- the registry of recorded runs

That is the library; it imports nothing of the book. The book's own code sits in two subpackages:
``attention.studies`` (one study per recorded run, ``python -m attention <study>``) and
``attention.book`` (each chapter's figures and explorers, the exercises, the tools, the command line).
"""

__version__ = "0.1.0"  # first: submodules read it while the package initialises

from .device import get_device, seed_everything, set_threads, setup
from .functional import attend, masked_softmax, scaled_dot_product_attention
from .layers import Attention, MultiHeadAttention
from .masks import causal_mask, lengths_to_mask, to_keep_mask, window_mask
from .scores import SCORES, make_score

__all__ = [
    "Attention",
    "MultiHeadAttention",
    "SCORES",
    "attend",
    "causal_mask",
    "get_device",
    "lengths_to_mask",
    "make_score",
    "masked_softmax",
    "scaled_dot_product_attention",
    "seed_everything",
    "set_threads",
    "setup",
    "to_keep_mask",
    "window_mask",
]
