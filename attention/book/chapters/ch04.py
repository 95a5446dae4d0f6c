"""Chapter 4, score functions (``notebooks/04-scores.ipynb``) and attention whose score is a vector,
coupled aspect/opinion attention (``notebooks/04b-coupled-attention.ipynb``): their figures and explorers."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from ...data import Vocab
from ...data.aspects import TaggedSentence
from ...functional import masked_softmax
from ...models import CMLA, CMLAConfig
from ...scores import make_score
from ...tasks.tagging import TaggingData
from ...viz import attention_rows_figure, heatmap
from ...widgets import Explorer, explorer, register_explorer
from .common import _DEMO_SENTENCES, _demo_features, _sentence_attention, _short_sentences

__all__ = [
    "SCORE_EXPLORER_CONTROLS",
    "score_weights_figure",
    "scaling_figure",
    "score_explorer",
    "chosen_features",
    "features_explorer",
    "coupled_explorer",
]


#: The chapter-4 explorer's controls (defaults: those of :func:`score_weights_figure`).
SCORE_EXPLORER_CONTROLS = {
    "score": ["scaled_dot", "dot", "general", "additive", "concat", "location", "cosine"],
    "dim": [4, 16, 64, 256],
    "temperature": [0.5, 1.0, 2.0],
}


def score_weights_figure(
    score: str = "scaled_dot", dim: int = 16, temperature: float = 1.0, queries: int = 5, keys: int = 8, seed: int = 0
):
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
    heatmap(
        weights,
        [f"k{i + 1}" for i in range(keys)],
        [f"q{t + 1}" for t in range(queries)],
        ax=fig.add_subplot(),
        vmax=1.0,
        title=f"{score}, d={dim}, T={temperature:g}: mean max weight {peak:.2f}",
    )
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
    ax_w.set(xscale="log", xlabel="dimension d", ylabel="mean max softmax weight", title="saturation", ylim=(0, 1.05))
    ax_g.set(
        xscale="log",
        yscale="log",
        xlabel="dimension d",
        ylabel="‖∂loss/∂scores‖ (mean)",
        title="gradient reaching the scores",
    )
    ax_w.legend()
    return fig


@register_explorer("scores")
def score_explorer(mode: str = "auto", **defaults) -> Explorer:
    """Chapter 4: score function × dimension × temperature -> attention weights.

    Calling ``score_weights_figure()`` with no arguments draws its first frame.
    """
    return explorer(score_weights_figure, SCORE_EXPLORER_CONTROLS, defaults, mode=mode)


# --- part 2: attention whose score is a vector; coupled aspect/opinion attention ----------------


def chosen_features(maps: Sequence[Tensor], n: int = 12, overlap: float = 0.5) -> list[int]:
    """``n`` features (columns of each ``(T, F)`` map) worth showing, in increasing order: the most
    peaked on average over ``maps`` that read *differently* -- a feature is taken only if its
    distributions overlap (``Σ_t min(p, q)``, averaged over the maps) less than ``overlap`` with
    every feature taken before; the rest are filled up by peakedness."""
    peak = torch.stack([P.max(dim=0).values for P in maps]).mean(0)  # (F,)
    order = peak.argsort(descending=True).tolist()

    def shared(j: int, k: int) -> float:
        return sum(torch.minimum(P[:, j], P[:, k]).sum().item() for P in maps) / len(maps)

    taken = []
    for k in order:
        if len(taken) < n and all(shared(j, k) < overlap for j in taken):
            taken.append(k)
    taken += [k for k in order if k not in taken][: n - len(taken)]
    return sorted(taken)


@register_explorer("features")
def features_explorer(model=None, data=None, sentences=None, features: int = 12, mode: str = "auto") -> Explorer:
    """Chapter 4: pick a sentence and a feature; see that feature's distribution over the words
    (multi-dimensional attention gives every feature its own), above the distributions of the
    ``features`` features shown (``viz.attention_rows_figure``). The features offered are the same
    for every sentence: the most peaked ones on average (:func:`chosen_features`). The static page
    holds sentences × features frames (3 × 12 by default).

    Args:
        model, data: a trained :class:`~attention.models.featurewise.AttentionPooling` with
            ``pool="features"`` and its :class:`~attention.tasks.ClassificationData`; without them,
            an untrained demo model on three hand-written sentences.
        sentences: the examples offered (default: the first three test sentences of 5 to 12 words).
    """
    if model is None:
        model, data = _demo_features()
    if model.cfg.pool != "features":
        raise ValueError(f"features_explorer needs a model with pool='features'; got pool={model.cfg.pool!r}")
    sentences = list(sentences if sentences is not None else _short_sentences(data.test))
    maps = {" ".join(e.tokens): (list(e.tokens), _sentence_attention(model, data, e, "features")) for e in sentences}
    shown = chosen_features([P for _, P in maps.values()], features)

    def draw(sentence: str = next(iter(maps)), feature: int = shown[0]):
        tokens, P = maps[sentence]
        rows = P[:, shown].T  # (features, T)
        return attention_rows_figure(
            tokens,
            rows,
            shown.index(feature) + 1,
            row_labels=[f"feature {k}" for k in shown],
            title="multi-dimensional attention: one distribution per feature",
        )

    return explorer(draw, {"sentence": list(maps), "feature": shown}, mode=mode)


#: the rows of the coupled explorer's heatmap, by name: (kind, layer counted from 1)
def _coupled_rows(layers: int) -> dict[str, tuple[str, int]]:
    return {f"{kind}, layer {n}": (kind, n) for n in range(1, layers + 1) for kind in ("aspect", "opinion")}


def _demo_coupled():
    """An untrained two-layer CMLA on the demo sentences with made-up tags: enough to drive the widget."""
    sentences = [tuple(s.split()) for s in _DEMO_SENTENCES]
    examples = [TaggedSentence(t, tuple(0 for _ in t)) for t in sentences]
    data = TaggingData("aspects-demo", examples, examples, examples, Vocab.build(sentences))
    torch.manual_seed(0)
    return CMLA(CMLAConfig(len(data.vocab), embed_dim=16, hidden_dim=8, slices=4, rnn_dim=8)), data


@register_explorer("coupled")
def coupled_explorer(model=None, data=None, sentences=None, mode: str = "auto") -> Explorer:
    """Chapter 4: pick a review sentence and one of CMLA's attentions (aspect or opinion, at each
    layer); see its weights over the words, above all of them. Each word is labelled with the tag
    the model gives it (``A`` aspect, ``P`` opinion) and, after a slash, the silver tag, so that the
    figure shows where the model and the rule disagree. The static page holds sentences × attentions
    frames (3 × 4 for two layers).

    Args:
        model, data: a trained :class:`~attention.models.cmla.CMLA` and its
            :class:`~attention.tasks.tagging.TaggingData`; without them, an untrained demo model.
        sentences: the examples offered (default: the first three test sentences of 5 to 14 words
            that have an aspect and an opinion).
    """
    if model is None:
        model, data = _demo_coupled()
    if sentences is None:
        both = [e for e in data.test if 1 in e.tags and 2 in e.tags]
        sentences = _short_sentences(both or data.test, longest=14)
    rows = _coupled_rows(model.cfg.layers)
    frames = {}
    for e in sentences:
        report = data.evaluate(model, [e])
        attention, predicted = report["attention"][0], report["predictions"][0]
        mark = {0: "", 1: "A", 2: "P"}
        labels = []
        for i, word in enumerate(e.tokens):
            ours = "A" if predicted["aspect"][i] else "P" if predicted["opinion"][i] else ""
            silver = mark[e.tags[i]]
            labels.append(word + (f" [{ours or '-'}/{silver or '-'}]" if ours or silver else ""))
        weights = torch.stack([attention[kind][n - 1] for kind, n in rows.values()])  # (2N, T)
        frames[" ".join(e.tokens)] = (labels, weights)

    def draw(sentence: str = next(iter(frames)), attention: str = next(iter(rows))):
        labels, weights = frames[sentence]
        return attention_rows_figure(
            labels,
            weights,
            list(rows).index(attention) + 1,
            row_labels=list(rows),
            title="coupled attention; [model/silver]: A aspect, P opinion",
        )

    return explorer(draw, {"sentence": list(frames), "attention": list(rows)}, mode=mode)
