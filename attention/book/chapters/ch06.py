"""Chapter 6, the Transformer (``notebooks/06-transformer.ipynb``) and self-attention before it,
LSTMN's intra-attention and Lin et al.'s rows (``notebooks/06b-intra-attention.ipynb``): figures and explorers."""

from __future__ import annotations

from typing import Sequence

import torch

from ...data import Vocab, collate, make_dates
from ...models import (
    LSTMNClassifier,
    LSTMNConfig,
    SelfAttentiveClassifier,
    SelfAttentiveConfig,
    Transformer,
    TransformerConfig,
)
from ...tasks import TranslationData
from ...viz import _colormap, _font_family, _to_numpy, attention_rows_figure, heatmap
from ...widgets import Explorer, explorer, register_explorer
from .common import _demo_sentiment, _sentence_attention, _short_sentences

__all__ = [
    "masks_figure",
    "positional_encoding_figure",
    "HEAD_KINDS",
    "head_map_figure",
    "training_curves_figure",
    "layer_cost_figure",
    "stability_figure",
    "budget_figure",
    "head_explorer",
    "intra_attention_figure",
    "lstmn_explorer",
    "rows_explorer",
]


def masks_figure(masks: dict, x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None):
    """Chapter 6: boolean keep masks side by side, one panel per ``masks[title]`` ``(L, S)``;
    a filled cell is True = the query of that row may attend to the key of that column."""
    from matplotlib.figure import Figure

    panels = {title: _to_numpy(torch.as_tensor(m).float()) for title, m in masks.items()}
    fig = Figure(
        figsize=(
            0.4 + sum(1.1 + 0.3 * m.shape[1] for m in panels.values()),
            1.0 + 0.3 * max(m.shape[0] for m in panels.values()),
        ),
        layout="constrained",
    )
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


def positional_encoding_figure(
    table, dims: Sequence[int] = (0, 8, 16, 24), offsets: int = 40, anchors: Sequence[int] = (0, 20, 50)
):
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
        ax_d.plot(
            k.numpy(),
            (pe[p] * pe[p + k]).sum(-1).numpy(),
            lw=2.5 - 0.7 * (n % 3),
            ls=("-", "--", ":")[n % 3],
            label=f"p = {p}",
        )
    ax_d.set(xlabel="offset k", ylabel="PE(p) · PE(p+k)", title="dot product vs offset")
    ax_d.legend(fontsize=7)
    return fig


#: The maps of a Transformer the chapter-6 explorer shows (``TransformerMaps`` fields, in words).
HEAD_KINDS = ("encoder self", "decoder self", "cross")


_HEAD_AXES = {
    "encoder self": ("key: source token", "query: source token"),
    "decoder self": ("key: decoder input (written so far)", "query: the token it writes"),
    "cross": ("key: source token", "query: the token it writes"),
}


def head_map_figure(
    weights, x_labels: Sequence[str], y_labels: Sequence[str], kind: str = "cross", layer: int = 1, head: int = 1
):
    """Chapter 6's explorer frame: one head's attention map ``(L, S)`` of one layer, with its
    tokens as tick labels; ``kind`` is one of :data:`HEAD_KINDS` and names the axes.
    ``weights=None`` says that this stack has no such layer (encoder and decoder depths may differ)."""
    from matplotlib.figure import Figure

    if kind not in HEAD_KINDS:
        raise ValueError(f"kind must be one of {HEAD_KINDS}, got {kind!r}")
    if weights is None:
        fig = Figure(figsize=(4.0, 1.2), layout="constrained")
        ax = fig.add_subplot()
        ax.text(
            0.5,
            0.5,
            f"no layer {layer} for {kind} attention: its stack is shallower",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_axis_off()
        return fig
    w = _to_numpy(weights)
    L, S = w.shape
    fig = Figure(figsize=(1.6 + 0.36 * S, 1.3 + 0.3 * L), layout="constrained")
    xlabel, ylabel = _HEAD_AXES[kind]
    heatmap(
        w,
        list(x_labels),
        list(y_labels),
        ax=fig.add_subplot(),
        vmax=1.0,
        xlabel=xlabel,
        ylabel=ylabel,
        title=f"{kind} attention, layer {layer}, head {head}",
    )
    return fig


def training_curves_figure(panels: dict, x: str = "seconds", y: str = "valid_bleu"):
    """Chapter 6: validation BLEU against training time, one panel per ``panels[title]``, one
    line per ``panels[title][label]`` (a list of per-epoch dicts with keys ``x`` and ``y``)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.0 * len(panels), 3.0), layout="constrained")
    for ax, (title, curves) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels.items()):
        for label, curve in curves.items():
            ax.plot([e[x] for e in curve], [e[y] for e in curve], marker=".", label=label)
        ax.set(
            title=title,
            xlabel="training seconds" if x == "seconds" else x,
            ylabel="validation BLEU" if y == "valid_bleu" else y,
            ylim=(0, None),
        )
        ax.legend(fontsize=8)
    return fig


def stability_figure(summary: dict):
    """Chapter 6: the training loss and the gradient norm (before clipping) over the first updates,
    one line per recipe of the ``transformer-stability`` record's ``summary`` (means over seeds)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.4, 3.0), layout="constrained")
    loss_ax, norm_ax = fig.subplots(1, 2)
    for label, cell in summary.items():
        style = "-" if label.startswith("pre") else "--"
        loss_ax.plot(cell["update"], cell["loss"], style, label=label)
        norm_ax.plot(cell["update"], cell["grad_norm"], style, label=label)
    loss_ax.set(title="training loss", xlabel="update", ylabel="loss (label-smoothed)")
    norm_ax.set(title="gradient norm before clipping", xlabel="update", ylabel="norm", yscale="log")
    loss_ax.legend(fontsize=8)
    return fig


def budget_figure(summary: dict, systems: Sequence[str] | None = None):
    """Chapter 6: test BLEU (mean and ± sd over seeds) against the training budget, one line per
    system of the ``transformer-final`` record's ``summary`` (keys: budgets in seconds)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.6, 3.2), layout="constrained")
    ax = fig.subplots()
    for name in systems or list(summary):
        budgets = sorted((b for b in summary[name] if b.replace(".", "").isdigit()), key=float)
        means = [summary[name][b]["bleu"]["mean"] for b in budgets]
        sds = [summary[name][b]["bleu"]["sd"] or 0.0 for b in budgets]
        ax.errorbar([float(b) for b in budgets], means, yerr=sds, marker="o", capsize=3, label=name)
    ax.set(xlabel="training budget (s, one CPU thread)", ylabel="test BLEU", ylim=(0, None))
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
    left.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length n",
        ylabel="multiply-adds (forward)",
        title=f"counted (d = {d}; dashed: n = d)",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length n",
        ylabel="milliseconds (forward + backward)",
        title="measured on this machine",
    )
    for ax in (left, right):
        ax.legend(fontsize=8)
    return fig


@register_explorer("heads")
def head_explorer(model=None, data=None, pairs=None, max_len: int = 24, mode: str = "auto") -> Explorer:
    """Chapter 6: pick a sentence, a kind of attention (encoder self, decoder self, cross), a layer
    and a head; see that head's map while the Transformer translates the sentence.

    The sentence is decoded greedily (at most ``max_len`` tokens), then fed back in one teacher-forced
    pass that returns every map (:class:`~attention.models.TransformerMaps`); by causality these are
    the maps the decoder computed step by step. Decoder rows are labelled by the token each writes.
    The static page holds sentences × 3 kinds × layers × heads frames (72 for chapter 6's three dates,
    two layers and four heads).

    Args:
        model, data: a trained :class:`~attention.models.Transformer` and its
            :class:`~attention.experiments.TranslationData`; without them, an untrained demo
            Transformer on the date task (to try the widget).
        pairs: the sentences offered (default: the first test pair of each of three languages, or
            the first three test pairs).
    """
    if model is None:
        model, data = _demo_transformer()
    pairs = list(pairs if pairs is not None else _a_few_sentences(data.test))
    maps = {_sentence_label(p, data): _head_maps(model, data, p, max_len) for p in pairs}
    cfg = model.cfg  # the layer shown first is the decoder's last

    def draw(sentence: str = next(iter(maps)), kind: str = "cross", layer: int = cfg.decoder_layers, head: int = 1):
        m = maps[sentence]
        layers = m[kind]
        x, y = {
            "encoder self": (m["source"], m["source"]),
            "decoder self": (m["fed"], m["written"]),
            "cross": (m["source"], m["written"]),
        }[kind]
        weights = layers[layer - 1][head - 1] if layer <= len(layers) else None  # (L, S)
        return head_map_figure(weights, x, y, kind=kind, layer=layer, head=head)

    controls = {
        "sentence": list(maps),
        "kind": list(HEAD_KINDS),
        "layer": list(range(1, max(cfg.encoder_layers, cfg.decoder_layers) + 1)),
        "head": list(range(1, cfg.num_heads + 1)),
    }
    return explorer(draw, controls, mode=mode)


@torch.no_grad()
def _head_maps(model, data: TranslationData, pair, max_len: int) -> dict:
    """Greedy-decode ``pair`` and return its tokens and every map, per layer ``(H, L, S)`` on the CPU."""
    model.eval()
    device = next(model.parameters()).device
    batch = collate([pair], data.src_vocab, data.tgt_vocab).to(device)
    ids = model.greedy(batch.src, batch.src_lengths, max_len=max_len).tokens[0].tolist()
    ids = ids[: ids.index(model.cfg.eos_id) + 1] if model.cfg.eos_id in ids else ids
    fed = [model.cfg.bos_id] + ids[:-1]  # what the decoder reads at each position
    out = model(batch.src, batch.src_lengths, torch.tensor([fed], device=device), return_attention=True)
    return {
        "source": list(pair.src),
        "written": data.tgt_vocab.decode(ids, strip_special=False),
        "fed": data.tgt_vocab.decode(fed, strip_special=False),
        **{
            kind: [w[0].cpu() for w in layers]
            for kind, layers in zip(HEAD_KINDS, (out.maps.encoder_self, out.maps.decoder_self, out.maps.cross))
        },
    }


def _sentence_label(pair, data: TranslationData) -> str:
    text = "".join(pair.src) if data.name.startswith("hsk") else " ".join(pair.src)
    language = getattr(pair, "language", "")
    return f"{language}: {text}" if language else text


def _a_few_sentences(pairs, n: int = 3) -> list:
    """The first pair of each language (date pairs know theirs), topped up in order to ``n`` pairs."""
    chosen, languages = [], set()
    for p in pairs:
        language = getattr(p, "language", "")
        if language and language not in languages and len(chosen) < n:
            chosen.append(p)
            languages.add(language)
    return chosen + [p for p in pairs if p not in chosen][: n - len(chosen)]


def _demo_transformer():
    """A small untrained Transformer on a few generated dates: enough to drive the widget."""
    pairs = make_dates(12, seed=0)
    src, tgt = Vocab.build([p.src for p in pairs]), Vocab.build([p.tgt for p in pairs])
    data = TranslationData("dates-demo", pairs, pairs, pairs, src, tgt)
    torch.manual_seed(0)
    return Transformer(TransformerConfig(len(src), len(tgt), d_model=16, num_heads=2, num_layers=2, d_ff=32)), data


# --- self-attention before the Transformer: LSTMN and Lin et al.'s structured self-attention ----


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
        ax.text(
            0.5, 0.5, f"word {word}: this sentence has only {T} words", ha="center", va="center", transform=ax.transAxes
        )
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
        top.text(
            i,
            0.5,
            token,
            ha="center",
            va="center",
            fontsize=9,
            family=family,
            color=color,
            bbox=dict(boxstyle="round,pad=0.25", facecolor=face, edgecolor="black" if i == word - 1 else "none"),
        )
        if i < word - 1:
            top.text(i, 0.0, f"{row[i]:.2f}", ha="center", va="center", fontsize=7)
    top.set_xlim(-0.6, T - 0.4)
    top.set_ylim(-0.3, 0.9)
    top.set_axis_off()
    heading = (
        f"word {word} '{tokens[word - 1]}': no earlier word to read"
        if word == 1
        else f"word {word} '{tokens[word - 1]}' reads the {word - 1} word{'s' if word > 2 else ''} before it"
    )
    top.set_title(title + "\n" + heading if title else heading, family=_font_family([heading]), fontsize=10)
    heatmap(w, tokens, tokens, ax=bottom, vmax=1.0, xlabel="earlier word i (memory)", ylabel="word t (reading)")
    bottom.add_patch(Rectangle((-0.5, word - 1.5), T, 1, fill=False, edgecolor="red", linewidth=1.5))
    return fig


@register_explorer("lstmn")
def lstmn_explorer(model=None, data=None, sentences=None, mode: str = "auto") -> Explorer:
    """Chapter 6: pick a sentence and one of its words; see how the LSTMN's intra-attention spreads
    that word's reading over the words before it (Cheng et al.'s Fig. 1), beside the sentence's
    whole lower-triangular map (:func:`intra_attention_figure`).

    The word control runs over the positions of the longest sentence offered; a shorter sentence
    says so for the positions it lacks. The static page holds sentences × positions frames
    (3 × at most 12 by default).

    Args:
        model, data: a trained :class:`~attention.models.LSTMNClassifier` and its
            :class:`~attention.tasks.ClassificationData`; without them, an untrained demo LSTMN on
            three hand-written sentences (to try the widget).
        sentences: the examples offered (default: the first three test sentences of 5 to 12 words).
    """
    if model is None:
        data = _demo_sentiment()
        torch.manual_seed(0)
        model = LSTMNClassifier(
            LSTMNConfig(len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=16, attention_dim=16)
        )
    sentences = list(sentences if sentences is not None else _short_sentences(data.test))
    maps = {" ".join(e.tokens): (list(e.tokens), _sentence_attention(model, data, e, "intra")) for e in sentences}
    longest = max(len(tokens) for tokens, _ in maps.values())

    def draw(sentence: str = next(iter(maps)), word: int = min(longest, 6)):
        tokens, weights = maps[sentence]
        return intra_attention_figure(tokens, weights, word)

    return explorer(draw, {"sentence": list(maps), "word": list(range(1, longest + 1))}, mode=mode)


@register_explorer("rows")
def rows_explorer(models: dict | None = None, data=None, sentences=None, mode: str = "auto") -> Explorer:
    """Chapter 6: pick a sentence, a model (e.g. Lin et al.'s with and without the penalty) and one
    of its ``r`` attention rows; see that row's weights over the words, above all ``r`` rows
    (``viz.attention_rows_figure``). The static page holds sentences × models × rows frames
    (3 × 2 × 4 = 24 for the chapter's models).

    Args:
        models: name -> a trained :class:`~attention.models.SelfAttentiveClassifier`, all with the
            same number of rows; without them, two untrained demo models (penalty 1 and 0) on three
            hand-written sentences (to try the widget).
        data: their :class:`~attention.tasks.ClassificationData`.
        sentences: the examples offered (default: the first three test sentences of 5 to 12 words).
    """
    if models is None:
        data = _demo_sentiment()
        models = {}
        for seed, (name, coefficient) in enumerate((("with penalty", 1.0), ("without penalty", 0.0))):
            torch.manual_seed(seed)
            models[name] = SelfAttentiveClassifier(
                SelfAttentiveConfig(
                    len(data.vocab),
                    len(data.labels),
                    embed_dim=16,
                    hidden_dim=16,
                    attention_dim=8,
                    rows=4,
                    mlp_dim=16,
                    penalty=coefficient,
                )
            )
    rows = {m.cfg.rows for m in models.values()}
    if len(rows) != 1:
        raise ValueError(f"rows_explorer needs models with the same number of rows; got {sorted(rows)}")
    sentences = list(sentences if sentences is not None else _short_sentences(data.test))
    weights = {
        " ".join(e.tokens): {
            name: (list(e.tokens), _sentence_attention(m, data, e, "rows")) for name, m in models.items()
        }
        for e in sentences
    }

    def draw(sentence: str = next(iter(weights)), model: str = next(iter(models)), row: int = 1):
        tokens, A = weights[sentence][model]
        return attention_rows_figure(tokens, A, row, title=model)

    controls = {"sentence": list(weights), "model": list(models), "row": list(range(1, rows.pop() + 1))}
    return explorer(draw, controls, mode=mode)
