"""Run the same code on a laptop CPU, a CI runner and a Colab GPU.

Every notebook starts with ``device = attention.setup(seed=0)``: seeds, one CPU thread,
CUDA when there is a GPU, and figures that display themselves in Jupyter and Colab.

The seed given to :func:`setup` is the session's seed (:func:`session_seed`): the builders and
the training loop (``experiments.build_model``, ``experiments.fit``, ``ablation.build_variant``)
use it when no seed is passed to them. ``$ATTENTION_SEED`` replaces it, so one notebook can be
executed under other seeds without editing it: that is how ``python -m attention bands`` measures
how much a live training cell varies (see CONTRIBUTING.md, "Numbers that travel").
"""

from __future__ import annotations

import io
import os
import random

import numpy as np
import torch

__all__ = [
    "get_device",
    "seed_everything",
    "set_threads",
    "setup",
    "session_seed",
    "show_figures_in_notebooks",
    "SEED_ENV",
]

#: the environment variable that replaces the seed a notebook gives :func:`setup`
SEED_ENV = "ATTENTION_SEED"
_SESSION_SEED = 0


def get_device(prefer: str | None = None) -> torch.device:
    """CUDA when available (Colab's free GPU), else CPU.

    ``prefer`` (or the environment variable ``ATTENTION_DEVICE``) forces one, e.g. ``"cpu"``.
    """
    name = prefer or os.environ.get("ATTENTION_DEVICE")
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (all devices) so reruns print the same numbers."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def set_threads(n: int | None = 1) -> None:
    """Small models on a 2-core CPU are steadier (and nearly as fast) on one thread."""
    if n is not None:
        torch.set_num_threads(n)


def setup(seed: int = 0, threads: int | None = 1, device: str | None = None) -> torch.device:
    """Seed, set CPU threads, let figures display in notebooks; return the device to use.

    ``$ATTENTION_SEED``, when set, replaces ``seed`` (and becomes :func:`session_seed`)."""
    global _SESSION_SEED
    override = os.environ.get(SEED_ENV, "").strip()
    if override:
        try:
            seed = int(override)
        except ValueError:
            raise ValueError(f"${SEED_ENV} must be an integer seed, got {override!r}") from None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"setup(seed=...) takes a non-negative integer, got {seed!r}")
    _SESSION_SEED = seed
    seed_everything(seed)
    set_threads(threads)
    show_figures_in_notebooks()
    return get_device(device)


def session_seed(seed: int | None = None) -> int:
    """``seed`` when given, else the seed of the last :func:`setup` (0 before any)."""
    return _SESSION_SEED if seed is None else seed


def _figure_png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def show_figures_in_notebooks() -> None:
    """Let a returned matplotlib ``Figure`` display as a PNG in IPython/Jupyter/Colab.

    The book's figures are made without pyplot (no global state), so no backend shows them; this
    registers a PNG formatter for ``matplotlib.figure.Figure`` by name, so matplotlib is imported
    only by the code that draws. :func:`setup` calls it; outside IPython it does nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.formatters["image/png"].for_type_by_name("matplotlib.figure", "Figure", _figure_png)
