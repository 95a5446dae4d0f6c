"""Run the same code on a laptop CPU, a CI runner and a Colab GPU.

Every notebook starts with ``device = attention.setup(seed=0)``: seeds, one CPU thread,
CUDA when there is a GPU, and figures that display themselves in Jupyter and Colab.
"""
from __future__ import annotations

import os
import random

import numpy as np
import torch

from .viz import show_figures_in_notebooks

__all__ = ["get_device", "seed_everything", "set_threads", "setup"]


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
    """Seed, set CPU threads, let figures display in notebooks; return the device to use."""
    seed_everything(seed)
    set_threads(threads)
    show_figures_in_notebooks()
    return get_device(device)
