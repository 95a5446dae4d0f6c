"""Pictures of attention: heatmaps with token labels, text highlighted by weight.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state), so the
same function serves a notebook cell, a widget frame and a test. In a notebook a
returned ``Figure`` displays itself. Chinese tokens need a CJK font: on Debian/Ubuntu
``apt-get install fonts-noto-cjk`` (on Colab: ``!apt-get -qq install fonts-noto-cjk``).
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
from .functional import masked_softmax
from .local import window_positions
from .scores import make_score

__all__ = ["show_figures_in_notebooks", "heatmap", "highlight", "figure_to_png", "cjk_font", "score_weights_figure",
           "scaling_figure", "SCORE_EXPLORER_CONTROLS", "bleu_by_length_figure", "alignment_figure",
           "decoding_step_figure", "local_window_figure", "LOCAL_EXPLORER_CONTROLS", "cost_figure"]

_CJK_FONTS = ("Noto Sans CJK TC", "Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Serif CJK TC",
              "Source Han Sans TW", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
              "Microsoft JhengHei", "PingFang TC", "Heiti TC", "SimHei", "Arial Unicode MS")


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
        warnings.warn("no CJK font found, Chinese labels will show as boxes; "
                      "install one, e.g. `apt-get install fonts-noto-cjk`", stacklevel=3)
        return None
    return ["DejaVu Sans", font]


def _to_numpy(weights) -> np.ndarray:
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().float().cpu().numpy()
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D (L, S) array of weights, got shape {weights.shape}")
    return weights


def heatmap(weights, x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None,
            ax=None, title: str | None = None, cmap: str = "viridis", vmin: float | None = 0.0,
            vmax: float | None = None, annotate: bool = False, colorbar: bool = True,
            xlabel: str = "key / source", ylabel: str = "query / target"):
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
    ax.set_xticks(range(S), x_labels if x_labels is not None else range(S),
                  rotation=90 if x_labels is not None and max(map(len, x_labels), default=0) > 3 else 0,
                  family=family)
    ax.set_yticks(range(L), y_labels if y_labels is not None else range(L), family=family)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, family=_font_family([title]))
    if annotate:
        for t in range(L):
            for i in range(S):
                ax.text(i, t, f"{w[t, i]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if w[t, i] < 0.6 * (vmax or w.max() or 1) else "black")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax


class HighlightedText:
    """Tokens shaded by weight; shows as HTML in a notebook, as text elsewhere."""

    def __init__(self, tokens: Sequence[str], weights, color: str = "255, 127, 14"):
        w = np.asarray(weights.detach().cpu() if isinstance(weights, torch.Tensor) else weights,
                       dtype=float).reshape(-1)
        if len(tokens) != len(w):
            raise ValueError(f"highlight got {len(tokens)} tokens and {len(w)} weights")
        self.tokens, self.weights, self.color = list(tokens), w, color

    def _repr_html_(self) -> str:
        top = self.weights.max() if self.weights.size and self.weights.max() > 0 else 1.0
        spans = [f'<span title="{w:.3f}" style="background: rgba({self.color}, {w / top:.2f}); '
                 f'padding: 1px 3px; border-radius: 3px">{html.escape(t)}</span>'
                 for t, w in zip(self.tokens, self.weights)]
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




# --- Chapter 4: score functions ------------------------------------------------------------

#: The chapter-4 explorer's controls (defaults: those of :func:`score_weights_figure`).
SCORE_EXPLORER_CONTROLS = {
    "score": ["scaled_dot", "dot", "general", "additive", "concat", "location", "cosine"],
    "dim": [4, 16, 64, 256],
    "temperature": [0.5, 1.0, 2.0],
}


def score_weights_figure(score: str = "scaled_dot", dim: int = 16, temperature: float = 1.0,
                         queries: int = 5, keys: int = 8, seed: int = 0):
    """Chapter 4's figure: attention weights of one score function on random vectors.

    Queries and keys are ``N(0, 1)`` vectors of size ``dim`` (the same ones for every
    score, drawn from ``seed``); scores with parameters are initialised from ``seed``
    too. The weights are ``softmax(score(q, k) / temperature)``.
    """
    from matplotlib.figure import Figure

    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, queries, dim, generator=g)  # (1, L, d)
    k = torch.randn(1, keys, dim, generator=g)  # (1, S, d)
    torch.manual_seed(seed)
    module = make_score(score, query_dim=dim, key_dim=dim, hidden_dim=dim, max_len=keys)
    with torch.no_grad():
        weights = masked_softmax(module(q, k) / temperature)[0]  # (L, S)
    peak = weights.max(dim=-1).values.mean().item()
    fig = Figure(figsize=(4.6, 3.0), layout="constrained")
    heatmap(weights, [f"k{i + 1}" for i in range(keys)], [f"q{t + 1}" for t in range(queries)],
            ax=fig.add_subplot(), vmax=1.0,
            title=f"{score}, d={dim}, T={temperature:g}: mean max weight {peak:.2f}")
    return fig


def scaling_figure(dims: Sequence[int], stats: dict[str, dict[str, Sequence[float]]]):
    """Chapter 4: softmax saturation and gradient size vs dimension, scaled vs unscaled.

    ``stats[name]`` holds lists ``"max_weight"`` and ``"grad_norm"`` aligned with ``dims``.
    """
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8.0, 3.0), layout="constrained")
    ax_w, ax_g = fig.subplots(1, 2)
    for name, s in stats.items():
        ax_w.plot(dims, s["max_weight"], marker="o", label=name)
        ax_g.plot(dims, s["grad_norm"], marker="o", label=name)
    ax_w.set(xscale="log", xlabel="dimension d", ylabel="mean max softmax weight",
             title="saturation", ylim=(0, 1.05))
    ax_g.set(xscale="log", yscale="log", xlabel="dimension d",
             ylabel="‖∂loss/∂scores‖ (mean)", title="gradient reaching the scores")
    ax_w.legend()
    return fig


# --- Chapters 2-3: translation -------------------------------------------------------------

def bleu_by_length_figure(results: dict[str, Sequence[dict]], paper_note: str | None = None):
    """BLEU per source-length bucket, one line per model (the shape of Bahdanau's Fig. 2).

    ``results[name]`` is :func:`attention.metrics.bleu_by_length`'s list of rows.
    """
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    for name, rows in results.items():
        ax.plot([r["bucket"] for r in rows], [r["bleu"] for r in rows], marker="o", label=name)
    ax.set(xlabel="source length (characters)", ylabel="BLEU", ylim=(0, None),
           title="BLEU by source length (our CPU-scale run)")
    if paper_note:
        ax.text(0.99, 0.97, paper_note, transform=ax.transAxes, ha="right", va="top", fontsize=7)
    ax.legend()
    return fig


def alignment_figure(weights, source: Sequence[str], target: Sequence[str],
                     gold: set[tuple[int, int]] | None = None, title: str | None = None, ax=None):
    """An alignment matrix: rows = emitted target tokens, columns = source tokens.

    ``gold`` links ``(source position, target position)`` are outlined in red.
    """
    ax = heatmap(weights, list(source), list(target), ax=ax, title=title, vmax=1.0,
                 xlabel="source", ylabel="output")
    if gold:
        from matplotlib.patches import Rectangle
        for s, t in gold:
            if t < len(target) and s < len(source):
                ax.add_patch(Rectangle((s - 0.5, t - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.2))
    return ax


def decoding_step_figure(source: Sequence[str], output: Sequence[str], weights, contexts, step: int):
    """Chapter 3's explorer frame: at decoding ``step``, where the decoder looks,
    the context it builds and the token it emits.

    Args:
        source: source tokens (S). output: emitted tokens (T', with ``<eos>``).
        weights: ``(T', S)`` attention rows. contexts: ``(T', He)`` context vectors.
        step: 1-based decoding step.
    """
    from matplotlib.figure import Figure
    w, c = _to_numpy(weights), _to_numpy(contexts)
    fig = Figure(figsize=(6.4, 3.4), layout="constrained")
    ax_w, ax_c = fig.subplots(2, 1, height_ratios=[3, 1])
    family = _font_family(list(source) + list(output))
    if step > len(output):
        ax_w.text(0.5, 0.5, f"(the translation ended after {len(output)} steps)", ha="center",
                  va="center", transform=ax_w.transAxes)
        ax_w.set_axis_off()
        ax_c.set_axis_off()
        return fig
    t = step - 1
    ax_w.bar(range(len(source)), w[t], color="tab:blue")
    ax_w.set_xticks(range(len(source)), list(source), family=family)
    ax_w.set_ylim(0, 1)
    ax_w.set_ylabel("α (attention)")
    done = " ".join(output[:t])
    ax_w.set_title(f"step {step}: emits “{output[t]}”   (so far: {done or '—'})", family=family, fontsize=9)
    ax_c.imshow(c[t][None, :], aspect="auto", cmap="coolwarm", vmin=-abs(c).max(), vmax=abs(c).max())
    ax_c.set_yticks([])
    ax_c.set_xlabel(f"context c_{step} = Σ α_i h_i  ({c.shape[1]} numbers)")
    return fig


# --- Chapter 9: global and local attention -----------------------------------------------

LOCAL_EXPLORER_CONTROLS = {"D": [1, 2, 3, 5], "sigma_over_D": [0.25, 0.5, 1.0],
                           "p_t": [2.0, 5.5, 8.0, 11.5, 14.0]}


def local_window_figure(D: int = 3, sigma_over_D: float = 0.5, p_t: float = 8.0, S: int = 16,
                        seed: int = 0):
    """Chapter 9's explorer frame: the window ``[p_t − D, p_t + D]``, the Gaussian
    ``exp(−(s − p_t)²/2σ²)`` (Luong: ``σ = D/2``), the raw alignment (softmax inside the
    window) and the final weights (their product), over S source positions.

    The raw scores are fixed random numbers (from ``seed``), as if from a ``dot`` score.
    """
    from matplotlib.figure import Figure

    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(S, generator=g)  # one query's raw scores e_s
    s = torch.arange(S, dtype=torch.float)
    window = window_positions(torch.tensor([[p_t]]), D)[0, 0]  # (2D+1,)
    keep = (s[:, None] == window[None, :].float()).any(-1)  # (S,)
    raw = masked_softmax(scores, keep)
    sigma = sigma_over_D * D
    gauss = torch.exp(-(s - p_t) ** 2 / (2 * sigma ** 2))
    final = raw * gauss
    fig = Figure(figsize=(6.4, 3.0), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(s - 0.2, raw, width=0.4, color="tab:gray", label="raw alignment (softmax in window)")
    ax.bar(s + 0.2, final, width=0.4, color="tab:blue", label="final weight = raw × Gaussian")
    fine = torch.linspace(0, S - 1, 200)
    ax.plot(fine, torch.exp(-(fine - p_t) ** 2 / (2 * sigma ** 2)), color="tab:orange",
            label=f"Gaussian, σ = {sigma:g}")
    lo, hi = int(window[0]), int(window[-1])
    ax.axvspan(lo - 0.5, hi + 0.5, color="tab:orange", alpha=0.08)
    ax.axvline(p_t, color="tab:orange", ls="--", lw=1)
    ax.set(xlim=(-0.7, S - 0.3), ylim=(0, 1.05), xlabel="source position s",
           title=f"window [{lo}, {hi}] around p_t = {p_t:g} (D = {D}); weights sum to {final.sum():.2f}")
    ax.legend(fontsize=7, loc="upper right")
    return fig


def cost_figure(sizes: Sequence[int], costs: dict[str, Sequence[dict]]):
    """Chapter 9: time and memory saved for backward vs source length, global vs local."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8.0, 3.0), layout="constrained")
    ax_t, ax_m = fig.subplots(1, 2)
    for kind, rows in costs.items():
        ax_t.plot(sizes, [r["seconds"] * 1e3 for r in rows], marker="o", label=kind)
        ax_m.plot(sizes, [r["saved_bytes"] / 2**20 for r in rows], marker="o", label=kind)
    ax_t.set(xscale="log", yscale="log", xlabel="source length S (= target length)", ylabel="ms (forward + backward)",
             title="time")
    ax_m.set(xscale="log", yscale="log", xlabel="source length S (= target length)",
             ylabel="MiB saved for backward", title="memory")
    ax_t.legend()
    return fig


# --- Chapter 6: the Transformer ----------------------------------------------------------

__all__ += ["masks_figure", "positional_encoding_figure", "HEAD_KINDS", "head_map_figure", "training_curves_figure",
            "layer_cost_figure"]


def masks_figure(masks: dict, x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None):
    """Chapter 6: boolean keep masks side by side, one panel per ``masks[title]`` ``(L, S)``;
    a filled cell is True = the query of that row may attend to the key of that column."""
    from matplotlib.figure import Figure
    panels = {title: _to_numpy(torch.as_tensor(m).float()) for title, m in masks.items()}
    fig = Figure(figsize=(0.4 + sum(1.1 + 0.3 * m.shape[1] for m in panels.values()),
                          1.0 + 0.3 * max(m.shape[0] for m in panels.values())), layout="constrained")
    for ax, (title, m) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels.items()):
        L, S = m.shape
        ax.imshow(m, cmap="Blues", vmin=0, vmax=1.25)
        ax.set_xticks(range(S), list(x_labels)[:S] if x_labels is not None else range(S))
        ax.set_yticks(range(L), list(y_labels)[:L] if y_labels is not None else range(L))
        ax.set_xticks([s - 0.5 for s in range(1, S)], minor=True)
        ax.set_yticks([t - 0.5 for t in range(1, L)], minor=True)
        ax.grid(which="minor", color="white", lw=1)
        ax.tick_params(which="minor", length=0)
        ax.set(title=title, xlabel="key")
    fig.axes[0].set_ylabel("query")
    return fig


def positional_encoding_figure(table, dims: Sequence[int] = (0, 8, 16, 24), offsets: int = 40,
                               anchors: Sequence[int] = (0, 20, 50)):
    """Chapter 6: the sinusoids of §3.5 (``table`` ``(P, E)``, e.g. ``PositionalEncoding.table``):
    the whole table, a few of its dimensions as curves over the position, and the dot product
    ``PE(p) · PE(p + k)`` against the offset ``k`` for a few starting positions ``p``."""
    from matplotlib.figure import Figure
    pe = torch.as_tensor(table).detach().float().cpu()  # (P, E)
    P, E = pe.shape
    if max(anchors) + offsets >= P:
        raise ValueError(f"anchors {list(anchors)} + offsets {offsets} exceed the table's {P} positions")
    fig = Figure(figsize=(10.0, 2.8), layout="constrained")
    ax_t, ax_c, ax_d = fig.subplots(1, 3, width_ratios=[1.2, 1, 1])
    image = ax_t.imshow(pe.numpy(), aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    ax_t.set(xlabel="dimension", ylabel="position", title=f"PE, {P} positions × {E} dimensions")
    fig.colorbar(image, ax=ax_t, shrink=0.8)
    for d in dims:
        ax_c.plot(pe[:, d].numpy(), lw=1, label=f"dim {d} ({'sin' if d % 2 == 0 else 'cos'})")
    ax_c.set(xlabel="position", ylim=(-1.1, 1.6), title="a few dimensions")
    ax_c.legend(fontsize=7, ncol=2, loc="upper right")
    k = torch.arange(offsets + 1)
    for n, p in enumerate(anchors):  # the curves coincide: dashed and dotted lines show the ones beneath
        ax_d.plot(k.numpy(), (pe[p] * pe[p + k]).sum(-1).numpy(), lw=2.5 - 0.7 * (n % 3), ls=("-", "--", ":")[n % 3],
                  label=f"p = {p}")
    ax_d.set(xlabel="offset k", ylabel="PE(p) · PE(p+k)", title="dot product vs offset")
    ax_d.legend(fontsize=7)
    return fig


#: The maps of a Transformer the chapter-6 explorer shows (``TransformerMaps`` fields, in words).
HEAD_KINDS = ("encoder self", "decoder self", "cross")
_HEAD_AXES = {"encoder self": ("key: source token", "query: source token"),
              "decoder self": ("key: decoder input (written so far)", "query: the token it writes"),
              "cross": ("key: source token", "query: the token it writes")}


def head_map_figure(weights, x_labels: Sequence[str], y_labels: Sequence[str], kind: str = "cross",
                    layer: int = 1, head: int = 1):
    """Chapter 6's explorer frame: one head's attention map ``(L, S)`` of one layer, with its
    tokens as tick labels; ``kind`` is one of :data:`HEAD_KINDS` and names the axes.
    ``weights=None`` says that this stack has no such layer (encoder and decoder depths may differ)."""
    from matplotlib.figure import Figure
    if kind not in HEAD_KINDS:
        raise ValueError(f"kind must be one of {HEAD_KINDS}, got {kind!r}")
    if weights is None:
        fig = Figure(figsize=(4.0, 1.2), layout="constrained")
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, f"no layer {layer} for {kind} attention: its stack is shallower", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    w = _to_numpy(weights)
    L, S = w.shape
    fig = Figure(figsize=(1.6 + 0.36 * S, 1.3 + 0.3 * L), layout="constrained")
    xlabel, ylabel = _HEAD_AXES[kind]
    heatmap(w, list(x_labels), list(y_labels), ax=fig.add_subplot(), vmax=1.0, xlabel=xlabel, ylabel=ylabel,
            title=f"{kind} attention, layer {layer}, head {head}")
    return fig


def training_curves_figure(panels: dict, x: str = "seconds", y: str = "valid_bleu"):
    """Chapter 6: validation BLEU against training time, one panel per ``panels[title]``, one
    line per ``panels[title][label]`` (a list of per-epoch dicts with keys ``x`` and ``y``)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(4.0 * len(panels), 3.0), layout="constrained")
    for ax, (title, curves) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels.items()):
        for label, curve in curves.items():
            ax.plot([e[x] for e in curve], [e[y] for e in curve], marker=".", label=label)
        ax.set(title=title, xlabel="training seconds" if x == "seconds" else x,
               ylabel="validation BLEU" if y == "valid_bleu" else y, ylim=(0, None))
        ax.legend(fontsize=8)
    return fig


def layer_cost_figure(lengths, costs: dict, d: int):
    """Chapter 6: multiply-adds and measured seconds of one layer against the sequence length
    ``n``, one line per ``costs[kind]`` (a list of :func:`attention.cost.layer_cost` results)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8.0, 3.0), layout="constrained")
    left, right = fig.subplots(1, 2)
    for kind, rows in costs.items():
        label = "GRU" if kind == "rnn" else kind
        left.plot(lengths, [r["flops"] for r in rows], marker=".", label=label)
        right.plot(lengths, [r["seconds"] * 1e3 for r in rows], marker=".", label=label)
    left.axvline(d, color="0.6", lw=0.8, ls="--")
    left.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="multiply-adds (forward)",
             title=f"counted (d = {d}; dashed: n = d)")
    right.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="milliseconds (forward + backward)",
              title="measured on this machine")
    for ax in (left, right):
        ax.legend(fontsize=8)
    return fig


# Chapter 6, self-attention before the Transformer: LSTMN's intra-attention and Lin et al.'s rows.
__all__ += ["intra_attention_figure", "attention_rows_figure"]


def intra_attention_figure(tokens: Sequence[str], weights, word: int = 1, title: str | None = None):
    """LSTMN's explorer frame (Cheng et al. 2016, Fig. 1): word ``word`` (counted from 1) reads the
    words before it. Top: that word's row of the intra-attention over the sentence, the earlier words
    shaded by weight and the word itself boxed; bottom: the whole ``(T, T)`` map (row t = word t over
    the words i < t), the chosen row outlined. ``word`` beyond the sentence draws a note instead."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    tokens = list(tokens)
    T = len(tokens)
    if not 1 <= word <= T:
        fig = Figure(figsize=(4.5, 1.2), layout="constrained")
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, f"word {word}: this sentence has only {T} words", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    w = _to_numpy(weights)
    if w.shape != (T, T):
        raise ValueError(f"intra_attention_figure needs a ({T}, {T}) map for {T} tokens, got {w.shape}")
    family = _font_family(tokens)
    fig = Figure(figsize=(1.8 + 0.5 * T, 2.6 + 0.32 * T), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[1.1, max(T, 2) * 0.55])
    row = w[word - 1]
    cmap = _colormap("Oranges")
    scale = row.max() if row.max() > 0 else 1.0
    for i, token in enumerate(tokens):
        face = cmap(0.85 * row[i] / scale) if i < word - 1 else "white"
        color = "0.65" if i > word - 1 else "black"
        top.text(i, 0.5, token, ha="center", va="center", fontsize=9, family=family, color=color,
                 bbox=dict(boxstyle="round,pad=0.25", facecolor=face,
                           edgecolor="black" if i == word - 1 else "none"))
        if i < word - 1:
            top.text(i, 0.0, f"{row[i]:.2f}", ha="center", va="center", fontsize=7)
    top.set_xlim(-0.6, T - 0.4)
    top.set_ylim(-0.3, 0.9)
    top.set_axis_off()
    heading = (f"word {word} '{tokens[word - 1]}': no earlier word to read" if word == 1
               else f"word {word} '{tokens[word - 1]}' reads the {word - 1} word{'s' if word > 2 else ''} before it")
    top.set_title(title + "\n" + heading if title else heading, family=_font_family([heading]), fontsize=10)
    heatmap(w, tokens, tokens, ax=bottom, vmax=1.0, xlabel="earlier word i (memory)", ylabel="word t (reading)")
    bottom.add_patch(Rectangle((-0.5, word - 1.5), T, 1, fill=False, edgecolor="red", linewidth=1.5))
    return fig


def attention_rows_figure(tokens: Sequence[str], rows, row: int = 1, title: str | None = None,
                          row_labels: Sequence[str] | None = None):
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


def _colormap(name: str):
    """A matplotlib colormap by name (without pyplot)."""
    import matplotlib
    return matplotlib.colormaps[name]


# Chapter 5: hierarchical attention.
__all__ += ["DOCUMENT_VIEWS", "han_document_figure"]

#: what the bars of :func:`han_document_figure` show
DOCUMENT_VIEWS = ("HAN's sentence attention", "people's |rating|")


def han_document_figure(sentences: Sequence[Sequence[str]], word_weights, sentence_weights, ratings=None,
                        view: str = DOCUMENT_VIEWS[0], title: str | None = None, max_words: int = 16):
    """HAN's explorer frame: one document, a row per sentence. Left: a bar per sentence, HAN's sentence
    attention (``view`` 0) or the strength ``|rating|`` people gave it (``view`` 1, when ``ratings``
    are given, on the scale 0..4); right: the sentence's words, each shaded by its word attention
    (relative to the largest in its sentence). Sentences longer than ``max_words`` end in "…".

    Args:
        sentences: ``N`` sentences, lists of words.
        word_weights: ``(N, T)`` word attention (a row per sentence, padding ignored).
        sentence_weights: ``(N,)`` sentence attention.
        ratings: ``N`` human ratings (-4 .. +4), or None.
    """
    from matplotlib.figure import Figure
    sentences = [list(s) for s in sentences]
    N = len(sentences)
    words = _to_numpy(word_weights)
    alpha = np.asarray(_to_numpy(torch.as_tensor(sentence_weights).reshape(1, -1))[0])
    if words.shape[0] != N or alpha.shape[0] != N or words.shape[1] < max(len(s) for s in sentences):
        raise ValueError(f"han_document_figure got {N} sentences (longest {max(len(s) for s in sentences)} words), "
                         f"word weights {words.shape} and sentence weights {alpha.shape}")
    if view not in DOCUMENT_VIEWS:
        raise ValueError(f"view must be one of {DOCUMENT_VIEWS}, got {view!r}")
    if view == DOCUMENT_VIEWS[1] and ratings is None:
        raise ValueError("this document has no human ratings to show")
    if ratings is not None and len(ratings) != N:
        raise ValueError(f"han_document_figure got {len(ratings)} ratings for {N} sentences")
    family = _font_family([w for s in sentences for w in s])
    fig = Figure(figsize=(11, 1.1 + 0.42 * N), layout="constrained")
    bars, text = fig.subplots(1, 2, width_ratios=[1.3, 6])
    if view == DOCUMENT_VIEWS[0]:
        values, color, xmax, label = alpha, "tab:orange", max(float(alpha.max()), 1e-9) * 1.1, "sentence attention"
    else:
        values, color, xmax, label = np.abs(np.asarray(ratings, dtype=float)), "tab:blue", 4.0, "|rating| (0-4)"
    bars.barh(range(N), values, color=color)
    bars.set_yticks(range(N), [f"s{i + 1}" for i in range(N)])
    bars.set_ylim(N - 0.5, -0.5)
    bars.set_xlim(0, xmax)
    bars.set_xlabel(label)
    cmap = _colormap("Oranges")
    width = 0
    for i, sentence in enumerate(sentences):
        row = words[i, :len(sentence)]
        scale = row.max() if row.max() > 0 else 1.0
        x = 0
        shown = sentence[:max_words] + (["…"] if len(sentence) > max_words else [])
        for t, word in enumerate(shown):
            face = cmap(0.85 * row[t] / scale) if t < len(row) and word != "…" else "white"
            text.text(x, i, word, ha="left", va="center", fontsize=9, family=family or "monospace",
                      bbox=dict(boxstyle="square,pad=0.15", facecolor=face, edgecolor="none"))
            x += len(word) + 1
        width = max(width, x)
    text.set_xlim(-0.5, max(width, 40))
    text.set_ylim(N - 0.5, -0.5)
    text.set_axis_off()
    top = int(alpha.argmax())
    heading = f"HAN weighs s{top + 1} most ({alpha[top]:.2f}); words shaded by word attention within each sentence"
    fig.suptitle(title + "\n" + heading if title else heading, fontsize=10)
    return fig


__all__ += ["nested_attention_figure"]


def nested_attention_figure(src_tokens: Sequence[str], word_weights, source: int, written: Sequence[str],
                            char_weights, title: str | None = None):
    """The nested model's explorer frame: one word the character decoder writes. Top: the source
    sentence shaded by the word-level attention at that step, the word it weighs most (whose
    characters the decoder reads) boxed; bottom: the nested attention ``(K, L)``, a row per character
    written (``written``, ending in ``</s>``) over the characters of that source word."""
    from matplotlib.figure import Figure
    src_tokens = list(src_tokens)
    S = len(src_tokens)
    alpha = np.asarray(torch.as_tensor(word_weights, dtype=torch.float32).reshape(-1)[:S])
    beta = _to_numpy(char_weights)
    letters = list(src_tokens[source])
    if beta.shape[0] != len(written) or beta.shape[1] < len(letters):
        raise ValueError(f"nested_attention_figure got {len(written)} characters written and "
                         f"{len(letters)} source characters, char weights {beta.shape}")
    beta = beta[:, :len(letters)]
    fig = Figure(figsize=(max(6.0, 0.62 * S + 1.5), 2.2 + 0.36 * len(written)), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[1.0, max(len(written), 2) * 0.45])
    cmap = _colormap("Oranges")
    scale = alpha.max() if alpha.max() > 0 else 1.0
    for i, token in enumerate(src_tokens):
        top.text(i, 0.5, token, ha="center", va="center", fontsize=9,
                 bbox=dict(boxstyle="round,pad=0.25", facecolor=cmap(0.85 * alpha[i] / scale),
                           edgecolor="black" if i == source else "none"))
        top.text(i, 0.0, f"{alpha[i]:.2f}", ha="center", va="center", fontsize=7)
    top.set_xlim(-0.6, S - 0.4)
    top.set_ylim(-0.3, 0.9)
    top.set_axis_off()
    word = "".join(c for c in written if c != "</s>")
    heading = f"writing '{word}' letter by letter, reading the letters of '{src_tokens[source]}'"
    top.set_title(title + "\n" + heading if title else heading, fontsize=10)
    heatmap(beta, letters, list(written), ax=bottom, vmax=1.0, xlabel="character of the source word",
            ylabel="character written")
    return fig


# Chapter 7: memory-based attention.
__all__ += ["memory_hops_figure", "addressing_figure"]


def memory_hops_figure(sentences: Sequence[Sequence[str]], weights, hop: int = 1, supports: Sequence[int] = (),
                       question: Sequence[str] = (), answer: str | None = None, predicted: str | None = None):
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


def ntm_heads_figure(inputs, outputs, write_weights, read_weights, slots: int | None = None,
                     title: str | None = None):
    """What an NTM does on one copy sequence (Graves et al. 2014, Fig. 6): four panels over time,
    the input bits, the output bits (after the sigmoid), and the write and read weightings over a
    window of ``slots`` memory slots centred on slot 0, where both heads start (the memory is
    circular: a head that shifts by −1 from slot 0 goes on at slot N − 1, drawn above slot 0).
    ``inputs (T, bits + 1)``, ``outputs (T, bits)``, weightings ``(T, N)``."""
    from matplotlib.figure import Figure
    arrays = [np.asarray(torch.as_tensor(a, dtype=torch.float32).detach().cpu()) for a in
              (inputs, outputs, write_weights, read_weights)]
    T = arrays[0].shape[0]
    if any(a.ndim != 2 or a.shape[0] != T for a in arrays):
        raise ValueError("expected inputs (T, I), outputs (T, O), write and read weightings (T, N) with one T; got "
                         + ", ".join(str(a.shape) for a in arrays))
    N = arrays[2].shape[1]
    n = min(slots or N, N)
    order = [(k - n // 2) % N for k in range(n)]  # slots −n/2 … n/2 − 1, circularly
    fig = Figure(figsize=(9, 5.2), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True, height_ratios=[1, 2.2])
    panels = [("inputs", arrays[0].T), ("outputs", arrays[1].T), ("write weighting", arrays[2][:, order].T),
              ("read weighting", arrays[3][:, order].T)]
    for ax, (name, a) in zip(axes.flat, panels):
        ax.imshow(a, aspect="auto", cmap="Greys" if "put" in name else "Oranges", vmin=0, vmax=1,
                  interpolation="nearest")
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


def glimpse_figure(image, weights, words: Sequence[str], step: int = 1, sample: int | None = None,
                   title: str | None = None):
    """A captioner's explorer frame (chapter 8): the canvas ``image (H, W)`` with the attention
    ``weights (gh, gw)`` of step ``step`` (from 1) laid over it in orange, and the caption
    ``words`` below with the word written at that step in brackets. With ``sample`` (a grid cell
    index, g = r·gw + c) the cell a hard-attention draw picked is outlined: what hard attention
    would read, the only thing it reads."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    img, w = _to_numpy(image), _to_numpy(weights)
    if img.ndim != 2 or w.ndim != 2:
        raise ValueError(f"expected image (H, W) and weights (gh, gw); got {img.shape} and {w.shape}")
    H, W = img.shape
    gh, gw = w.shape
    if not 1 <= step <= max(len(words), 1):
        raise ValueError(f"step must be in 1..{len(words)}, got {step}")
    fig = Figure(figsize=(6.4, 3.0), layout="constrained")
    ax = fig.add_subplot()
    ax.imshow(img, cmap="Greys", vmin=0, vmax=1, extent=(0, W, H, 0), interpolation="nearest")
    peak = w.max() if w.max() > 0 else 1.0
    overlay = np.zeros((gh, gw, 4))
    overlay[..., :3] = (1.0, 0.5, 0.05)  # orange, as opaque as the weight is large
    overlay[..., 3] = 0.75 * w / peak
    ax.imshow(overlay, extent=(0, W, H, 0), interpolation="nearest")
    if sample is not None:
        r, c = divmod(int(sample), gw)
        ax.add_patch(Rectangle((c * W / gw, r * H / gh), W / gw, H / gh, fill=False, edgecolor="tab:blue",
                               linewidth=2.5))
    ax.set_xticks([])
    ax.set_yticks([])
    caption = " ".join(f"[{x}]" if i == step - 1 else x for i, x in enumerate(words))
    ax.set_xlabel(caption, fontsize=12)
    ax.set_title(title or f"step {step}: attention over the {gh}×{gw} grid", fontsize=10)
    return fig


def canvases_figure(images, captions: Sequence[Sequence[str]], boxes=None, grid: tuple[int, int] | None = None):
    """Chapter 8's data: a column of canvases ``images (n, H, W)``, each with its caption below and,
    if given, its digits' ``boxes`` (top, left, bottom, right) outlined and the model's annotation
    ``grid`` (gh, gw) drawn as thin lines."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    imgs = np.asarray(torch.as_tensor(images, dtype=torch.float32).detach().cpu())
    if imgs.ndim != 3 or len(captions) != imgs.shape[0]:
        raise ValueError(f"expected images (n, H, W) and n captions; got {imgs.shape} and {len(captions)} captions")
    n, H, W = imgs.shape
    fig = Figure(figsize=(3.4 * n, 1.9), layout="constrained")
    axes = fig.subplots(1, n, squeeze=False)[0]
    for i, ax in enumerate(axes):
        ax.imshow(imgs[i], cmap="Greys", vmin=0, vmax=1, extent=(0, W, H, 0), interpolation="nearest")
        for top, left, bottom, right in (boxes[i] if boxes is not None else []):
            ax.add_patch(Rectangle((left, top), right - left, bottom - top, fill=False, edgecolor="tab:green",
                                   linewidth=1.2))
        if grid is not None:
            gh, gw = grid
            for r in range(1, gh):
                ax.axhline(r * H / gh, color="0.6", linewidth=0.6)
            for c in range(1, gw):
                ax.axvline(c * W / gw, color="0.6", linewidth=0.6)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(" ".join(captions[i]), fontsize=10)
    return fig


# --- Chapter 11: the recorded results -------------------------------------------------------
__all__ += ["results_figure"]


def results_figure(rows: Sequence[dict], title: str | None = None):
    """One record of the leaderboard (:func:`attention.book.leaderboard.leaderboard` rows of one record)
    as horizontal bars, mean ± sd over the seeds, grey for models without attention, orange with."""
    from matplotlib.figure import Figure
    rows = list(rows)
    if not rows:
        raise ValueError("results_figure needs at least one row")
    n = len(rows)
    fig = Figure(figsize=(6.4, 0.9 + 0.32 * n), layout="constrained")
    ax = fig.subplots()
    means = [r["mean"] for r in rows]
    errors = [r["sd"] or 0.0 for r in rows]
    colours = ["tab:orange" if r["attention"] else "tab:gray" for r in rows]
    ax.barh(range(n), means, xerr=errors, color=colours, capsize=3)
    ax.set_yticks(range(n), [r["entry"][:40] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{rows[0]['metric']} (mean ± sd over {rows[0]['n']} seeds; grey: no attention)")
    ax.set_title(title or rows[0]["record"], fontsize=10)
    return fig
