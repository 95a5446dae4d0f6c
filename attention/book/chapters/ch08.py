"""Chapter 8, soft and hard attention over an image (``notebooks/08-soft-hard.ipynb``): the canvases,
a captioner's glimpse and its explorer."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ...data.digits import caption
from ...results import load_result
from ...studies.captioning import build_captioner
from ...tasks.captions import digit_captions
from ...viz import _to_numpy
from ...widgets import Explorer, explorer, register_explorer

__all__ = [
    "glimpse_figure",
    "canvases_figure",
    "GLIMPSE_VIEWS",
    "glimpse_explorer",
    "variance_figure",
    "VARIANCE_VIEWS",
    "variance_explorer",
]


def glimpse_figure(
    image, weights, words: Sequence[str], step: int = 1, sample: int | None = None, title: str | None = None
):
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
        ax.add_patch(
            Rectangle((c * W / gw, r * H / gh), W / gw, H / gh, fill=False, edgecolor="tab:blue", linewidth=2.5)
        )
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
        for top, left, bottom, right in boxes[i] if boxes is not None else []:
            ax.add_patch(
                Rectangle((left, top), right - left, bottom - top, fill=False, edgecolor="tab:green", linewidth=1.2)
            )
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


#: what the glimpse explorer shows at a step: the soft weights, or cells that hard draws pick from them
GLIMPSE_VIEWS = ["weights", "hard draw 1", "hard draw 2"]


def _demo_captions():
    """Untrained soft and hard captioners on a few composed digit rows: enough to drive the widget."""
    data = digit_captions(n_train=8, n_valid=4, n_test=4)
    return {kind: build_captioner(data, kind, seed=0) for kind in ("soft", "hard")}, data


@register_explorer("glimpse")
def glimpse_explorer(models: dict | None = None, data=None, examples=None, mode: str = "auto") -> Explorer:
    """Chapter 8: pick a canvas of handwritten digits, a model, a step of its caption and a view:
    the soft weights over the annotation grid at that step, or a cell that a hard-attention draw
    picks from those weights (:func:`glimpse_figure`). Draws are seeded: the static page and a
    rerun show the same cells.

    Args:
        models: name -> trained :class:`~attention.models.captioner.ShowAttendTell`; without them,
            untrained demo models.
        data: their :class:`~attention.tasks.captions.CaptionData`.
        examples: the canvases offered (default: the first three test canvases).
    """
    if models is None:
        models, data = _demo_captions()
    examples = list(data.test[:3] if examples is None else examples)
    frames, steps = {}, 1
    for i, e in enumerate(examples):
        label = f"{i + 1}. " + " ".join(caption(e))
        batch = data.collate([e])
        for name, model in models.items():
            device = next(model.parameters()).device
            model.eval()
            tokens, attention = model.generate(batch.images.to(device), len(e) + 2)  # (1, T'), (1, T', G)
            tokens, attention = tokens[0].cpu().tolist(), attention[0].float().cpu()
            n = tokens.index(data.vocab.eos_id) + 1 if data.vocab.eos_id in tokens else len(tokens)
            words = [data.vocab.itos[t] for t in tokens[:n]]
            frames[label, name] = (batch.images[0, 0], attention[:n].reshape(n, *model.grid), words)
            steps = max(steps, n)

    def draw(image: str = next(iter(frames))[0], model: str = next(iter(models)), step: int = 1, view: str = "weights"):
        picture, weights, words = frames[image, model]
        k = min(step, len(words))
        sample = None
        if view != "weights":
            g = torch.Generator().manual_seed(1000 * k + GLIMPSE_VIEWS.index(view))
            sample = int(torch.multinomial(weights[k - 1].reshape(-1), 1, generator=g))
        return glimpse_figure(
            picture,
            weights[k - 1],
            words,
            k,
            sample,
            title=f"{model} attention, step {k}" + (f", {view}" if sample is not None else ""),
        )

    return explorer(
        draw,
        {
            "image": list(dict.fromkeys(i for i, _ in frames)),
            "model": list(models),
            "step": list(range(1, steps + 1)),
            "view": GLIMPSE_VIEWS,
        },
        mode=mode,
    )


#: the colours of the three baselines in the variance figures
BASELINE_COLOURS = {"none": "tab:red", "moving": "tab:blue", "learned": "tab:green"}
#: what the variance explorer's "seeds" control shows
VARIANCE_VIEWS = ["mean over seeds", "each seed"]


def _variance_curves(metrics: dict) -> dict[str, dict[int, list[float]]]:
    """baseline -> update -> the runs' variance of their own estimator there (one value per seed)."""
    out: dict[str, dict[int, list[float]]] = {}
    for r in metrics["runs"]:
        for p in r["curve"]:
            out.setdefault(r["baseline"], {}).setdefault(p["update"], []).append(p["own"]["mean_variance"])
    return out


def variance_figure(metrics: dict, update: int | None = None, view: str = "mean over seeds"):
    """Chapter 8: the variance of each run's REINFORCE gradient on one batch, at the updates the
    record ``reinforce-variance`` measured (``metrics``: its metrics), one line per baseline (the
    mean over the seeds, or each seed); with ``update``, a marker there and, on the right, each
    baseline's variance relative to no baseline at those same parameters."""
    from matplotlib.figure import Figure

    if view not in VARIANCE_VIEWS:
        raise ValueError(f"view must be one of {VARIANCE_VIEWS}; got {view!r}")
    curves = _variance_curves(metrics)
    updates = sorted({u for c in curves.values() for u in c})
    if update is not None and update not in updates:
        raise ValueError(f"update {update} was not measured; the record has {updates}")
    fig = Figure(figsize=(8.4, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[2.2, 1])
    for name, curve in curves.items():
        xs = sorted(curve)
        colour = BASELINE_COLOURS.get(name, "tab:grey")
        if view == "each seed":
            for k in range(min(len(curve[u]) for u in xs)):
                left.plot(xs, [curve[u][k] for u in xs], color=colour, alpha=0.6, lw=1, label=name if k == 0 else None)
        else:
            left.plot(xs, [float(np.mean(curve[u])) for u in xs], color=colour, lw=2, marker="o", ms=3, label=name)
    left.set_xscale("symlog", linthresh=25)
    ticks = [u for u in updates if u in (0, 25, 100, 400, 1600, 6400)] if len(updates) > 6 else updates
    left.set_xticks(ticks, [str(u) for u in ticks])
    left.minorticks_off()
    left.set_yscale("log")
    left.set_xlabel("update (0 = before training)")
    left.set_ylabel("variance of the gradient, one batch")
    left.legend(title="baseline", fontsize=8)
    ratios = {}
    at = updates[0] if update is None else update
    for r in metrics["runs"]:
        for p in r["curve"]:
            if p["update"] == at:
                ratios.setdefault(r["baseline"], []).append(p["ratio"])
    left.axvline(at, color="black", lw=0.8, ls="--")
    names = list(curves)
    for i, name in enumerate(names):
        values = ratios.get(name, [])
        colour = BASELINE_COLOURS.get(name, "tab:grey")
        right.bar(i, float(np.mean(values)) if values else 0.0, color=colour, alpha=0.5)
        right.scatter([i] * len(values), values, color=colour, s=12, zorder=3)
    right.axhline(1.0, color="black", lw=0.8)
    right.set_yscale("log")
    right.set_xticks(range(len(names)), names)
    right.set_title(f"variance / no baseline's, update {at}", fontsize=9)
    return fig


@register_explorer("reinforce")
def variance_explorer(metrics: dict | None = None, mode: str = "auto") -> Explorer:
    """Chapter 8: pick an update of training and how to show the seeds; the figure is
    :func:`variance_figure` of the record ``reinforce-variance`` (default) or of ``metrics``."""
    if metrics is None:
        metrics = load_result("reinforce-variance")["metrics"]
    updates = sorted({p["update"] for r in metrics["runs"] for p in r["curve"]})

    def draw(update: int = updates[0], view: str = VARIANCE_VIEWS[0]):
        return variance_figure(metrics, update, view)

    return explorer(draw, {"update": updates, "view": VARIANCE_VIEWS}, mode=mode)
