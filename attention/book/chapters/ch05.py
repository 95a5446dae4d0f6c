"""Chapter 5, hierarchical attention (``notebooks/05-hierarchical.ipynb``) and nested attention
(``notebooks/05b-nested-attention.ipynb``): HAN's document figure and explorer, the nested model's."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from ...data import Vocab
from ...data.documents import Document
from ...metrics import spearman
from ...models import HANClassifier, HANConfig, NestedConfig, NestedSeq2Seq
from ...tasks.documents import DocumentData
from ...tasks.spelling import Misspelt, SpellingData
from ...viz import _colormap, _font_family, _to_numpy, heatmap
from ...widgets import Explorer, explorer, register_explorer
from .common import _DEMO_SENTENCES

__all__ = ["DOCUMENT_VIEWS", "han_document_figure", "han_explorer", "nested_attention_figure", "nested_explorer"]


#: what the bars of :func:`han_document_figure` show
DOCUMENT_VIEWS = ("HAN's sentence attention", "people's |rating|")


def han_document_figure(
    sentences: Sequence[Sequence[str]],
    word_weights,
    sentence_weights,
    ratings=None,
    view: str = DOCUMENT_VIEWS[0],
    title: str | None = None,
    max_words: int = 16,
):
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
        raise ValueError(
            f"han_document_figure got {N} sentences (longest {max(len(s) for s in sentences)} words), "
            f"word weights {words.shape} and sentence weights {alpha.shape}"
        )
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
        row = words[i, : len(sentence)]
        scale = row.max() if row.max() > 0 else 1.0
        x = 0
        shown = sentence[:max_words] + (["…"] if len(sentence) > max_words else [])
        for t, word in enumerate(shown):
            face = cmap(0.85 * row[t] / scale) if t < len(row) and word != "…" else "white"
            text.text(
                x,
                i,
                word,
                ha="left",
                va="center",
                fontsize=9,
                family=family or "monospace",
                bbox=dict(boxstyle="square,pad=0.15", facecolor=face, edgecolor="none"),
            )
            x += len(word) + 1
        width = max(width, x)
    text.set_xlim(-0.5, max(width, 40))
    text.set_ylim(N - 0.5, -0.5)
    text.set_axis_off()
    top = int(alpha.argmax())
    heading = f"HAN weighs s{top + 1} most ({alpha[top]:.2f}); words shaded by word attention within each sentence"
    fig.suptitle(title + "\n" + heading if title else heading, fontsize=10)
    return fig


def _demo_documents() -> DocumentData:
    """The demo sentences as two tiny documents with made-up ratings: enough to drive the widget."""
    sentences = [tuple(s.split()) for s in _DEMO_SENTENCES]
    docs = [
        Document(tuple(sentences), 1, {"ratings": [0.5, -2.0, 1.5]}),
        Document(tuple(sentences[::-1]), 0, {"ratings": [1.5, -2.0, 0.5]}),
    ]
    vocab = Vocab.build([d.tokens for d in docs])
    return DocumentData("documents-demo", docs, docs, docs, vocab, ["negative", "positive"])


@torch.no_grad()
def _document_attention(model, data: DocumentData, document) -> tuple[Tensor, Tensor]:
    """HAN's word ``(N, T)`` and sentence ``(N,)`` attention on one document, on the CPU."""
    model.eval()
    device = next(model.parameters()).device
    batch = data.collate([document]).to(device)
    attention = model(*data.inputs(batch)).attention
    if "sentence" not in attention:
        raise ValueError("han_explorer needs a model with attention (HANConfig.pool='attention' or 'mean')")
    return attention["word"][0].cpu(), attention["sentence"][0].cpu()


@register_explorer("han")
def han_explorer(model=None, data=None, documents=None, mode: str = "auto") -> Explorer:
    """Chapter 5: pick a document; see HAN's sentence attention beside each sentence, the words
    shaded by word attention, and switch the bars to the strength of the rating people gave each
    sentence (:func:`han_document_figure`). The static page holds documents × 2 frames.

    Args:
        model, data: a trained :class:`~attention.models.HANClassifier` and its
            :class:`~attention.tasks.documents.DocumentData`; without them, an untrained demo HAN on
            two hand-written documents (to try the widget).
        documents: the :class:`~attention.data.documents.Document`\\ s offered, ideally with
            ``meta["ratings"]`` (VADER's); default: the first three test documents.
    """
    if model is None:
        data = _demo_documents()
        torch.manual_seed(0)
        model = HANClassifier(
            HANConfig(len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=8, attention_dim=16)
        )
    documents = list(documents if documents is not None else data.test[:3])
    frames = {}
    for i, d in enumerate(documents):
        name = f"{i + 1}. " + " ".join(d.sentences[0][:8]) + (" …" if len(d.sentences[0]) > 8 else "")
        frames[name] = (d, *_document_attention(model, data, d))
    rated = all("ratings" in d.meta for d in documents)

    def draw(document: str = next(iter(frames)), view: str = DOCUMENT_VIEWS[0]):
        d, words, sentences = frames[document]
        ratings = d.meta.get("ratings")
        rho = spearman(sentences.tolist(), [abs(r) for r in ratings]) if ratings else None
        title = f"{len(d.sentences)} sentences" + (
            "" if rho is None else f"; Spearman(attention, |rating|) = {rho:+.2f}"
        )
        return han_document_figure(d.sentences, words, sentences, ratings, view=view, title=title)

    views = list(DOCUMENT_VIEWS) if rated else [DOCUMENT_VIEWS[0]]
    return explorer(draw, {"document": list(frames), "view": views}, mode=mode)


# --- nested attention: a word written letter by letter ------------------------------------------


def nested_attention_figure(
    src_tokens: Sequence[str], word_weights, source: int, written: Sequence[str], char_weights, title: str | None = None
):
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
        raise ValueError(
            f"nested_attention_figure got {len(written)} characters written and "
            f"{len(letters)} source characters, char weights {beta.shape}"
        )
    beta = beta[:, : len(letters)]
    fig = Figure(figsize=(max(6.0, 0.62 * S + 1.5), 2.2 + 0.36 * len(written)), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[1.0, max(len(written), 2) * 0.45])
    cmap = _colormap("Oranges")
    scale = alpha.max() if alpha.max() > 0 else 1.0
    for i, token in enumerate(src_tokens):
        top.text(
            i,
            0.5,
            token,
            ha="center",
            va="center",
            fontsize=9,
            bbox=dict(
                boxstyle="round,pad=0.25",
                facecolor=cmap(0.85 * alpha[i] / scale),
                edgecolor="black" if i == source else "none",
            ),
        )
        top.text(i, 0.0, f"{alpha[i]:.2f}", ha="center", va="center", fontsize=7)
    top.set_xlim(-0.6, S - 0.4)
    top.set_ylim(-0.3, 0.9)
    top.set_axis_off()
    word = "".join(c for c in written if c != "</s>")
    heading = f"writing '{word}' letter by letter, reading the letters of '{src_tokens[source]}'"
    top.set_title(title + "\n" + heading if title else heading, fontsize=10)
    heatmap(
        beta,
        letters,
        list(written),
        ax=bottom,
        vmax=1.0,
        xlabel="character of the source word",
        ylabel="character written",
    )
    return fig


#: hand-made misspelt sentences (codespell pairs) for the untrained demo model of nested_explorer
_DEMO_MISSPELT = (
    (("i", "will", "recieve", "it", "tomorow"), ("i", "will", "receive", "it", "tomorrow")),
    (("the", "wheather", "is", "beatiful"), ("the", "weather", "is", "beautiful")),
)


def _demo_spelling():
    """Two misspelt sentences and an untrained nested model whose vocabularies lack the corrections."""
    examples = [Misspelt(src, tgt, tuple(s != t for s, t in zip(src, tgt))) for src, tgt in _DEMO_MISSPELT]
    keep = [[w for w, m in zip(e.src, e.misspelt) if not m] for e in examples]
    src_vocab = Vocab.build(keep)
    tgt_vocab = Vocab.build(keep)  # the corrected words are <unk>: the character decoder writes them
    char_vocab = Vocab.build([w for e in examples for w in e.src + e.tgt])
    data = SpellingData("spelling-demo", examples, examples, examples, src_vocab, tgt_vocab, char_vocab)
    torch.manual_seed(0)
    model = NestedSeq2Seq(
        NestedConfig(
            len(src_vocab),
            len(tgt_vocab),
            len(char_vocab),
            embed_dim=16,
            hidden_dim=16,
            char_embed_dim=8,
            char_hidden_dim=8,
            char_level=True,
        )
    )
    return model, data


@torch.no_grad()
def _written_words(model, data: SpellingData, example) -> list[dict]:
    """Every word the character decoder writes for ``example`` under teacher forcing: its source
    position, word attention ``(S,)``, characters written and nested attention ``(K, L)``."""
    model.eval()
    device = next(model.parameters()).device
    batch = data.collate([example]).to(device)
    out = model(
        batch.src,
        batch.src_lengths,
        batch.tgt_in,
        batch.chars,
        batch.char_lengths,
        batch.oov,
        batch.tgt_unk,
        batch.tgt_chars_in,
    )
    if out.char_attention is None:
        raise ValueError("nested_explorer needs a model with char_level=True")
    words = []
    for n, t in enumerate(out.char_rows[0].nonzero().flatten().tolist()):
        target = example.tgt[t]
        written = list(target) + ["</s>"]
        words.append(
            {
                "position": t,
                "source": int(out.char_source[n]),
                "alpha": out.attention[0, t].cpu(),
                "written": written,
                "beta": out.char_attention[n, : len(written)].cpu(),
                "target": target,
            }
        )
    return words


@register_explorer("nested")
def nested_explorer(model=None, data=None, examples=None, mode: str = "auto") -> Explorer:
    """Chapter 5: pick a word that the nested model writes letter by letter (a word its word
    vocabulary lacks) in a misspelt sentence; see which source word the word-level attention picks and
    how the character attention moves over that word's letters as each letter is written
    (:func:`nested_attention_figure`). One frame per word offered.

    Args:
        model, data: a trained :class:`~attention.models.nested.NestedSeq2Seq` with ``char_level=True``
            and its :class:`~attention.tasks.spelling.SpellingData`; without them, an untrained demo
            model on two hand-made sentences (to try the widget).
        examples: the sentences to take the words from (default: the test sentences); the first
            six words written for a misspelt source word are offered, topped up with other written words.
    """
    if model is None:
        model, data = _demo_spelling()
    examples = list(examples if examples is not None else data.test)
    misspelt, other = {}, {}
    for e in examples:
        if len(misspelt) >= 6:
            break
        for w in _written_words(model, data, e):
            label = f"{e.src[w['source']]} → {w['target']}   ({' '.join(e.src)})"
            (misspelt if e.misspelt[w["source"]] else other)[label] = (e, w)
    frames = dict(list(misspelt.items())[:6])
    frames |= dict(list(other.items())[: max(0, 2 - len(frames))])
    if not frames:
        raise ValueError("none of these sentences has a word the character decoder writes")

    def draw(word: str = next(iter(frames))):
        e, w = frames[word]
        return nested_attention_figure(e.src, w["alpha"], w["source"], w["written"], w["beta"])

    return explorer(draw, {"word": list(frames)}, mode=mode)
