"""Chapter 7, memory-based attention (``notebooks/07-memory.ipynb``): a memory network's hops, NTM
addressing and an NTM's heads on a copy; their figures and explorers."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from ...addressing import address
from ...models import MemN2N, MemN2NConfig
from ...tasks.qa import QAData, babi_data
from ...viz import _to_numpy
from ...widgets import Explorer, explorer, register_explorer

__all__ = [
    "memory_hops_figure",
    "addressing_figure",
    "ntm_heads_figure",
    "memory_explorer",
    "addressing_explorer",
    "ADDRESSING_CONTROLS",
]


def memory_hops_figure(
    sentences: Sequence[Sequence[str]],
    weights,
    hop: int = 1,
    supports: Sequence[int] = (),
    question: Sequence[str] = (),
    answer: str | None = None,
    predicted: str | None = None,
):
    """A memory network's explorer frame: the story's sentences, one row each, with the weight hop
    ``hop`` (from 1) gives each as a bar; the supporting facts are starred; the other hops' weights
    are drawn as thin outlines for comparison. ``weights``: ``(K, M)`` over the M sentences."""
    from matplotlib.figure import Figure

    w = _to_numpy(weights)
    K, M = w.shape
    if M < len(sentences):
        raise ValueError(f"memory_hops_figure got {len(sentences)} sentences and weights over {M} slots")
    if not 1 <= hop <= K:
        raise ValueError(f"hop must be in 1..{K}, got {hop}")
    n = len(sentences)
    fig = Figure(figsize=(8.5, 1.3 + 0.32 * n), layout="constrained")
    ax = fig.add_subplot()
    for k in range(K):
        if k != hop - 1:
            ax.barh(range(n), w[k, :n], fill=False, edgecolor="0.7", linewidth=0.8)
    ax.barh(range(n), w[hop - 1, :n], color="tab:orange", alpha=0.85)
    labels = [("★ " if i in set(supports) else "") + " ".join(s) for i, s in enumerate(sentences)]
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"weight of hop {hop} of {K} (grey outlines: the other hops)")
    heading = " ".join(question) + "?"
    if answer is not None:
        heading += f"   answer: {answer}"
    if predicted is not None:
        heading += f"   model: {predicted}" + (" ✓" if predicted == answer else " ✗")
    ax.set_title(heading + "\n★ = supporting fact", fontsize=10)
    return fig


def addressing_figure(steps: dict, title: str | None = None):
    """NTM addressing's explorer frame: one bar chart per stage (content, interpolated, shifted,
    sharpened), each a weighting ``(N,)`` over the memory slots, the previous weighting outlined
    on the interpolation panel when ``steps`` has ``"previous"``."""
    from matplotlib.figure import Figure

    stages = [s for s in steps if s != "previous"]
    fig = Figure(figsize=(2.3 * len(stages), 2.4), layout="constrained")
    axes = fig.subplots(1, len(stages), sharey=True)
    for ax, stage in zip(axes, stages):
        w = np.asarray(torch.as_tensor(steps[stage], dtype=torch.float32).reshape(-1))
        ax.bar(range(len(w)), w, color="tab:orange")
        if stage == "interpolated" and "previous" in steps:
            prev = np.asarray(torch.as_tensor(steps["previous"], dtype=torch.float32).reshape(-1))
            ax.bar(range(len(prev)), prev, fill=False, edgecolor="0.4", linewidth=0.8)
        ax.set_title(stage, fontsize=10)
        ax.set_xticks(range(len(w)))
        ax.set_xlabel("slot")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("weight")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def ntm_heads_figure(inputs, outputs, write_weights, read_weights, slots: int | None = None, title: str | None = None):
    """What an NTM does on one copy sequence (Graves et al. 2014, Fig. 6): four panels over time,
    the input bits, the output bits (after the sigmoid), and the write and read weightings over a
    window of ``slots`` memory slots centred on slot 0, where both heads start (the memory is
    circular: a head that shifts by −1 from slot 0 goes on at slot N − 1, drawn above slot 0).
    ``inputs (T, bits + 1)``, ``outputs (T, bits)``, weightings ``(T, N)``."""
    from matplotlib.figure import Figure

    arrays = [
        np.asarray(torch.as_tensor(a, dtype=torch.float32).detach().cpu())
        for a in (inputs, outputs, write_weights, read_weights)
    ]
    T = arrays[0].shape[0]
    if any(a.ndim != 2 or a.shape[0] != T for a in arrays):
        raise ValueError(
            "expected inputs (T, I), outputs (T, O), write and read weightings (T, N) with one T; got "
            + ", ".join(str(a.shape) for a in arrays)
        )
    N = arrays[2].shape[1]
    n = min(slots or N, N)
    order = [(k - n // 2) % N for k in range(n)]  # slots −n/2 … n/2 − 1, circularly
    fig = Figure(figsize=(9, 5.2), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True, height_ratios=[1, 2.2])
    panels = [
        ("inputs", arrays[0].T),
        ("outputs", arrays[1].T),
        ("write weighting", arrays[2][:, order].T),
        ("read weighting", arrays[3][:, order].T),
    ]
    for ax, (name, a) in zip(axes.flat, panels):
        ax.imshow(
            a, aspect="auto", cmap="Greys" if "put" in name else "Oranges", vmin=0, vmax=1, interpolation="nearest"
        )
        ax.set_title(name, fontsize=10)
        if "weighting" in name:
            ticks = list(range(0, n, max(1, n // 8)))
            ax.set_yticks(ticks, [str(order[k]) for k in ticks])
            ax.set_ylabel("slot")
        else:
            ax.set_yticks(range(0, a.shape[0], 2))
            ax.set_ylabel("bit")
    for ax in axes[1]:
        ax.set_xlabel("time step")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


@torch.no_grad()
def _story_hops(model, data: QAData, qa) -> tuple[Tensor, str]:
    """A memory network's hop weights ``(K, M)`` on one question, and its predicted answer."""
    model.eval()
    device = next(model.parameters()).device
    batch = data.collate([qa]).to(device)
    out = model(batch.story, batch.question)
    return out.attention["hops"][0].cpu(), data.answers[int(out.logits[0].argmax())]


def _demo_memory():
    """An untrained two-hop memory network on a few generated task-2 questions: enough to drive the widget."""
    data = babi_data(2, n_train=20, n_test=6)
    torch.manual_seed(0)
    return MemN2N(MemN2NConfig(len(data.vocab), len(data.answers), embed_dim=16, hops=2)), data


@register_explorer("memory")
def memory_explorer(model=None, data=None, questions=None, mode: str = "auto") -> Explorer:
    """Chapter 7: pick a question about a story and a hop; see which sentences that hop reads (bars),
    beside the other hops (outlines), with the supporting facts starred
    (:func:`memory_hops_figure`). The static page holds questions × hops frames.

    Args:
        model, data: a trained :class:`~attention.models.MemN2N` and its
            :class:`~attention.tasks.qa.QAData`; without them, an untrained demo on generated questions.
        questions: the :class:`~attention.data.babi.QA` offered (default: the first three test
            questions with at least four sentences before them).
    """
    if model is None:
        model, data = _demo_memory()
    if questions is None:
        questions = ([q for q in data.test if len(q.story) >= 4] + list(data.test))[:3]
    frames = {}
    for i, qa in enumerate(questions):
        weights, predicted = _story_hops(model, data, qa)
        kept, supports = data.memory(qa)
        frames[f"{i + 1}. {' '.join(qa.question)}? ({len(kept)} sentences)"] = (qa, kept, supports, weights, predicted)
    hops = model.cfg.hops

    def draw(question: str = next(iter(frames)), hop: int = 1):
        qa, kept, supports, weights, predicted = frames[question]
        return memory_hops_figure(kept, weights, hop, supports, qa.question, qa.answer, predicted)

    return explorer(draw, {"question": list(frames), "hop": list(range(1, hops + 1))}, mode=mode)


#: the values the NTM addressing explorer offers for each control
ADDRESSING_CONTROLS = {"beta": [1.0, 20.0], "g": [0.0, 0.5, 1.0], "shift": [-1, 0, 1], "gamma": [1.0, 3.0]}


@register_explorer("addressing")
def addressing_explorer(mode: str = "auto", **defaults) -> Explorer:
    """Chapter 7: one NTM addressing step on a fixed memory of 8 slots (Graves et al. 2014, §3.3):
    key strength ``beta``, interpolation gate ``g``, a shift of −1, 0 or +1 slot and the sharpening
    ``gamma`` -> the weighting after each stage (``attention.addressing.address``, :func:`addressing_figure`).
    The key is closest to slot 2; the previous weighting sat on slot 6."""
    g = torch.Generator().manual_seed(7)
    memory = torch.randn(1, 8, 6, generator=g)
    key = (memory[0, 2] + 0.6 * memory[0, 5])[None]  # (1, W)
    previous = torch.zeros(1, 8)
    previous[0, 6] = 1.0

    def draw(beta: float = 20.0, g: float = 1.0, shift: int = 0, gamma: float = 1.0):
        kernel = torch.zeros(3)
        kernel[shift + 1] = 1.0
        kernel = 0.7 * kernel + 0.1  # (3,) 0.8 on the shift, 0.1 either side: blurred, as a trained head emits
        steps = address(memory, key, beta, g, previous, kernel, gamma)
        return addressing_figure(
            {"previous": previous[0]} | {k: v[0] for k, v in steps.items()},
            title=f"β = {beta:g}, g = {g:g}, shift {shift:+d}, γ = {gamma:g}",
        )

    return explorer(draw, ADDRESSING_CONTROLS, defaults=defaults, mode=mode)
