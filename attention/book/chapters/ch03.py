"""Chapters 2-3, translation with attention (``notebooks/03-bahdanau.ipynb``, ``03b-alignment.ipynb``):
BLEU by source length, and the decoding explorer (where the decoder looks at each step)."""

from __future__ import annotations

from typing import Sequence

import torch

from ...data import Vocab, make_dates
from ...models import Seq2Seq, Seq2SeqConfig
from ...tasks import TranslationData, decode_steps
from ...viz import _font_family, _to_numpy
from ...widgets import Explorer, explorer, register_explorer

__all__ = ["bleu_by_length_figure", "decoding_step_figure", "decoding_explorer"]


def bleu_by_length_figure(
    results: dict[str, Sequence[dict]],
    paper_note: str | None = None,
    title: str | None = None,
    trained_up_to: str | None = None,
):
    """BLEU per source-length bucket, one line per model (the shape of Bahdanau's Fig. 2).

    ``results[name]`` is :func:`attention.metrics.bleu_by_length`'s list of rows, or rows whose
    ``bleu`` is a :func:`attention.results.mean_sd` over seeds (drawn as mean ± sd).
    ``trained_up_to``: the last bucket of training lengths, marked with a line after it.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    for name, rows in results.items():
        buckets = [r["bucket"] for r in rows]
        if rows and isinstance(rows[0]["bleu"], dict):
            means = [r["bleu"]["mean"] for r in rows]
            sds = [r["bleu"]["sd"] or 0.0 for r in rows]
            ax.errorbar(buckets, means, yerr=sds, marker="o", capsize=3, label=name)
        else:
            ax.plot(buckets, [r["bleu"] for r in rows], marker="o", label=name)
    if trained_up_to is not None:
        at = [r["bucket"] for r in next(iter(results.values()))].index(trained_up_to)
        ax.axvline(at + 0.5, color="0.6", linestyle=":", linewidth=1)
        ax.text(at + 0.55, 0.02, "longer than training", transform=ax.get_xaxis_transform(), fontsize=7, color="0.4")
    ax.set(
        xlabel="source length (characters)",
        ylabel="BLEU",
        ylim=(0, None),
        title=title or "BLEU by source length (our CPU-scale run)",
    )
    if paper_note:
        ax.text(0.99, 0.97, paper_note, transform=ax.transAxes, ha="right", va="top", fontsize=7)
    ax.legend()
    return fig


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
        ax_w.text(
            0.5,
            0.5,
            f"(the translation ended after {len(output)} steps)",
            ha="center",
            va="center",
            transform=ax_w.transAxes,
        )
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


@register_explorer("decoding")
def decoding_explorer(model=None, data=None, pairs=None, max_steps: int = 12, mode: str = "auto") -> Explorer:
    """Chapter 3: pick a sentence and a decoding step; see that step's attention row,
    the context it builds and the token it emits.

    Args:
        model, data: a trained :class:`~attention.models.Seq2Seq` with attention and its
            :class:`~attention.experiments.TranslationData`; without them, an untrained
            demo model on the date task (to try the widget).
        pairs: the sentences offered (default: the first 6 test pairs).
    """
    if model is None:
        model, data = _demo_translator()
    pairs = list(pairs if pairs is not None else data.test[:6])
    steps = {
        "".join(p.src) if data.name.startswith("hsk") else " ".join(p.src): decode_steps(model, data, p) for p in pairs
    }

    def draw(sentence: str = next(iter(steps)), step: int = 1):
        d = steps[sentence]
        return decoding_step_figure(d["source"], d["output"], d["weights"], d["contexts"], step)

    return explorer(draw, {"sentence": list(steps), "step": list(range(1, max_steps + 1))}, mode=mode)


def _demo_translator():
    """A small untrained RNNsearch on a few generated dates: enough to drive the widget."""
    pairs = make_dates(12, seed=0)
    src, tgt = Vocab.build([p.src for p in pairs]), Vocab.build([p.tgt for p in pairs])
    data = TranslationData("dates-demo", pairs, pairs, pairs, src, tgt)
    torch.manual_seed(0)
    return Seq2Seq(Seq2SeqConfig(len(src), len(tgt), embed_dim=16, hidden_dim=16)), data
