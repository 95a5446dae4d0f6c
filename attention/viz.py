"""Pictures of attention: heatmaps with token labels, text highlighted by weight.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state), so the
same function serves a notebook cell, a widget frame and a test. In a notebook a
returned ``Figure`` displays itself. Chinese tokens need a CJK font: on Debian/Ubuntu
``apt-get install fonts-noto-cjk`` (on Colab: ``!apt-get -qq install fonts-noto-cjk``).

This module holds what every chapter draws with: fonts, :func:`heatmap`, :func:`highlight`,
:func:`figure_to_png`, colormaps, and the figures several chapters share (:func:`alignment_figure`,
:func:`attention_rows_figure`). Each chapter's own figures live with its explorers in the book,
``attention/book/chapters/chNN.py``.
"""

from __future__ import annotations

import html
import io
import warnings
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from .device import show_figures_in_notebooks

__all__ = [
    "show_figures_in_notebooks",
    "heatmap",
    "highlight",
    "HighlightedText",
    "figure_to_png",
    "cjk_font",
    "alignment_figure",
    "attention_rows_figure",
]


_CJK_FONTS = (
    "Noto Sans CJK TC",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Serif CJK TC",
    "Source Han Sans TW",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft JhengHei",
    "PingFang TC",
    "Heiti TC",
    "SimHei",
    "Arial Unicode MS",
)


@lru_cache(maxsize=1)
def cjk_font() -> str | None:
    """Name of an installed font that draws Chinese characters, or None."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in _CJK_FONTS if name in installed), None)


def _has_cjk(labels: Sequence[str]) -> bool:
    return any("\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for s in labels for ch in s)


def _font_family(labels: Sequence[str]) -> list[str] | None:
    """Latin text in DejaVu Sans, CJK glyphs falling back to a CJK font."""
    if not _has_cjk(labels):
        return None
    font = cjk_font()
    if font is None:
        warnings.warn(
            "no CJK font found, Chinese labels will show as boxes; install one, e.g. `apt-get install fonts-noto-cjk`",
            stacklevel=3,
        )
        return None
    return ["DejaVu Sans", font]


def _to_numpy(weights) -> np.ndarray:
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().float().cpu().numpy()
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D (L, S) array of weights, got shape {weights.shape}")
    return weights


def heatmap(
    weights,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    ax=None,
    title: str | None = None,
    cmap: str = "viridis",
    vmin: float | None = 0.0,
    vmax: float | None = None,
    annotate: bool = False,
    colorbar: bool = True,
    xlabel: str = "key / source",
    ylabel: str = "query / target",
):
    """Draw an ``(L, S)`` attention matrix: row t = query t, column i = key i.

    Args:
        weights: tensor or array ``(L, S)`` (rows usually sum to 1).
        x_labels, y_labels: token labels of the keys (columns) and queries (rows).
        ax: a matplotlib Axes; a new ``Figure`` is made when None.
        annotate: print each weight in its cell (for small matrices).

    Returns:
        The Axes (its ``.figure`` is the figure).
    """
    w = _to_numpy(weights)
    L, S = w.shape
    for labels, n, what in ((x_labels, S, "x_labels (keys)"), (y_labels, L, "y_labels (queries)")):
        if labels is not None and len(labels) != n:
            raise ValueError(f"{what} has {len(labels)} labels for {n} weights of shape {w.shape}")
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(0.9 + 0.45 * S, 0.8 + 0.4 * L), layout="constrained")
        ax = fig.add_subplot()
    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    family = _font_family(list(x_labels or []) + list(y_labels or []))
    ax.set_xticks(
        range(S),
        x_labels if x_labels is not None else range(S),
        rotation=90 if x_labels is not None and max(map(len, x_labels), default=0) > 3 else 0,
        family=family,
    )
    ax.set_yticks(range(L), y_labels if y_labels is not None else range(L), family=family)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, family=_font_family([title]))
    if annotate:
        for t in range(L):
            for i in range(S):
                ax.text(
                    i,
                    t,
                    f"{w[t, i]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if w[t, i] < 0.6 * (vmax or w.max() or 1) else "black",
                )
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax


class HighlightedText:
    """Tokens shaded by weight; shows as HTML in a notebook, as text elsewhere."""

    def __init__(self, tokens: Sequence[str], weights, color: str = "255, 127, 14"):
        w = np.asarray(weights.detach().cpu() if isinstance(weights, torch.Tensor) else weights, dtype=float).reshape(
            -1
        )
        if len(tokens) != len(w):
            raise ValueError(f"highlight got {len(tokens)} tokens and {len(w)} weights")
        self.tokens, self.weights, self.color = list(tokens), w, color

    def _repr_html_(self) -> str:
        top = self.weights.max() if self.weights.size and self.weights.max() > 0 else 1.0
        spans = [
            f'<span title="{w:.3f}" style="background: rgba({self.color}, {w / top:.2f}); '
            f'padding: 1px 3px; border-radius: 3px">{html.escape(t)}</span>'
            for t, w in zip(self.tokens, self.weights)
        ]
        return '<p style="line-height: 2">' + " ".join(spans) + "</p>"

    def __repr__(self) -> str:
        return " ".join(f"{t}({w:.2f})" for t, w in zip(self.tokens, self.weights))


def highlight(tokens: Sequence[str], weights, color: str = "255, 127, 14") -> HighlightedText:
    """Shade each token by its attention weight (darkest = largest weight)."""
    return HighlightedText(tokens, weights, color)


def figure_to_png(fig, dpi: int = 72) -> bytes:
    """Render a figure to PNG bytes (for widget frames)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _colormap(name: str):
    """A matplotlib colormap by name (without pyplot)."""
    import matplotlib

    return matplotlib.colormaps[name]


# --- figures several chapters share -------------------------------------------------------


def alignment_figure(
    weights,
    source: Sequence[str],
    target: Sequence[str],
    gold: set[tuple[int, int]] | None = None,
    title: str | None = None,
    ax=None,
):
    """An alignment matrix: rows = emitted target tokens, columns = source tokens.

    ``gold`` links ``(source position, target position)`` are outlined in red.
    """
    ax = heatmap(weights, list(source), list(target), ax=ax, title=title, vmax=1.0, xlabel="source", ylabel="output")
    if gold:
        from matplotlib.patches import Rectangle

        for s, t in gold:
            if t < len(target) and s < len(source):
                ax.add_patch(Rectangle((s - 0.5, t - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.2))
    return ax


def attention_rows_figure(
    tokens: Sequence[str], rows, row: int = 1, title: str | None = None, row_labels: Sequence[str] | None = None
):
    """Lin et al.'s explorer frame: attention row ``row`` (counted from 1) of ``rows`` ``(R, T)`` as bars
    over the sentence's words, above the ``R`` rows as a heatmap with the chosen one outlined
    (``row_labels`` names the rows; default ``row 1 … row R``). Chapter 4's explorers draw feature-wise
    and coupled attention with it too."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    tokens = list(tokens)
    w = _to_numpy(rows)
    R, T = w.shape
    if T != len(tokens):
        raise ValueError(f"attention_rows_figure got {len(tokens)} tokens and rows over {T} words")
    if not 1 <= row <= R:
        raise ValueError(f"row must be in 1..{R}, got {row}")
    family = _font_family(tokens)
    fig = Figure(figsize=(1.8 + 0.45 * T, 3.4 + 0.3 * R), layout="constrained")
    bars, grid = fig.subplots(2, 1, height_ratios=[2.2, max(R, 1) * 0.45 + 0.8])
    bars.bar(range(T), w[row - 1], color="tab:orange")
    bars.set_xticks(range(T), tokens, rotation=90, family=family)
    bars.set_xlim(-0.6, T - 0.4)
    bars.set_ylim(0, 1)
    bars.set_ylabel("weight")
    top = int(w[row - 1].argmax())
    labels = list(row_labels) if row_labels is not None else [f"row {r}" for r in range(1, R + 1)]
    if len(labels) != R:
        raise ValueError(f"attention_rows_figure got {len(labels)} row labels for {R} rows")
    heading = f"row {row} of {R}" if row_labels is None else f"{labels[row - 1]} ({row} of {R})"
    heading += f": largest weight {w[row - 1, top]:.2f} on '{tokens[top]}'"
    bars.set_title(title + "\n" + heading if title else heading, family=_font_family([heading]), fontsize=10)
    heatmap(w, tokens, labels, ax=grid, vmax=1.0, xlabel="word", ylabel="attention row")
    grid.add_patch(Rectangle((-0.5, row - 1.5), T, 1, fill=False, edgecolor="red", linewidth=1.5))
    return fig
