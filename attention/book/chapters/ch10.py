"""Chapter 10, do the weights explain the decision? (``notebooks/10-evaluation.ipynb``): the faithfulness
explorer (the model's own weights against permuted, uniform, without-top and adversarial ones)."""

from __future__ import annotations

import torch

from ...explain import adversarial, logits_with_weights, permuted, uniform, without_top
from ...viz import attention_rows_figure
from ...widgets import Explorer, explorer, register_explorer
from .common import _demo_features, _short_sentences

__all__ = ["WEIGHT_VARIANTS", "faithfulness_explorer", "forest_figure"]


#: what the faithfulness explorer puts in place of the model's attention
WEIGHT_VARIANTS = ["the model's own", "permuted", "uniform", "without top", "adversarial"]


@register_explorer("faithfulness")
def faithfulness_explorer(model=None, data=None, sentences=None, eps: float = 0.01, mode: str = "auto") -> Explorer:
    """Chapter 10: pick a sentence and a set of weights -- the model's own attention, the same
    weights permuted over the words, uniform weights, the weights without their largest entry, or
    adversarial weights as different as possible whose output stays within ``eps`` -- and see the
    weights (averaged over the features) above all five, with the probability of the positive class
    that the classifier gives with them (:mod:`attention.explain`). The static page holds
    sentences × 5 frames.

    Args:
        model, data: a trained :class:`~attention.models.featurewise.AttentionPooling` and its
            :class:`~attention.tasks.ClassificationData`; without them, an untrained demo model.
        sentences: the examples offered (default: the first three test sentences of 5 to 12 words).
    """
    if model is None:
        model, data = _demo_features()
    sentences = list(sentences if sentences is not None else _short_sentences(data.test))
    model.eval()
    device = next(model.parameters()).device
    frames = {}
    for e in sentences:
        batch = data.collate([e]).to(device)
        tokens, lengths = batch.tokens, batch.lengths
        with torch.no_grad():
            own = model(tokens, lengths).attention["features"]  # (1, T, F)
        variants = {
            "the model's own": own,
            "permuted": permuted(own, lengths, torch.Generator().manual_seed(0)),
            "uniform": uniform(own, lengths),
            "without top": without_top(own, lengths),
            "adversarial": adversarial(model, tokens, lengths, own, eps),
        }
        with torch.no_grad():
            positive = {
                k: torch.softmax(logits_with_weights(model, tokens, lengths, w), -1)[0, -1].item()
                for k, w in variants.items()
            }
        rows = torch.stack([w[0].mean(-1).cpu() for w in variants.values()])  # (5, T)
        frames[" ".join(e.tokens)] = (list(e.tokens), rows, positive)

    def draw(sentence: str = next(iter(frames)), weights: str = WEIGHT_VARIANTS[0]):
        tokens, rows, positive = frames[sentence]
        title = f"P({data.labels[-1]}) = {positive[weights]:.3f}\n(own weights: {positive[WEIGHT_VARIANTS[0]]:.3f})"
        return attention_rows_figure(
            tokens, rows, WEIGHT_VARIANTS.index(weights) + 1, row_labels=WEIGHT_VARIANTS, title=title
        )

    return explorer(draw, {"sentence": list(frames), "weights": WEIGHT_VARIANTS}, mode=mode)


def forest_figure(gains: list[dict], title: str = "with attention − without, mean over seeds and its 95 % interval"):
    """Chapter 10: one line per gain of :func:`attention.book.leaderboard.attention_gains` (the
    record, the entry and its baseline), the difference as a point and its interval over seeds as
    a bar; one panel per metric, since BLEU and accuracy do not share a scale."""
    from matplotlib.figure import Figure

    metrics = list(dict.fromkeys(g["metric"] for g in gains))
    heights = [len([g for g in gains if g["metric"] == m]) for m in metrics]
    fig = Figure(figsize=(7.5, 0.9 + 0.22 * sum(heights) + 0.5 * len(metrics)), layout="constrained")
    axes = fig.subplots(len(metrics), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    for ax, metric in zip(axes, metrics):
        rows = [g for g in gains if g["metric"] == metric]
        ys = list(range(len(rows)))[::-1]
        for y, g in zip(ys, rows):
            colour = "tab:blue" if g["beyond_interval"] else "0.55"
            if g["low"] is not None:
                ax.plot([g["low"], g["high"]], [y, y], color=colour, linewidth=1.5)
            ax.plot([g["difference"]], [y], "o", color=colour, markersize=4)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(
            ys, [f"{g['record']}: {g['entry']}  vs  {g['baseline'].split(' / ')[-1]}" for g in rows], fontsize=7
        )
        ax.set_xlabel(f"{metric}: with attention − without", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    axes[0].set_title(title, fontsize=9)
    return fig
