"""Explorers: move a control, watch the attention figure change.

One explorer, two paths (``CONTRIBUTING.md``, "Adding an explorer": thin widgets around ``viz``):

* **live** -- in Jupyter or Colab: controls plus an ``Image``; every change
  recomputes the figure in the kernel. Uses only widgets that exist in both
  ipywidgets 7.7 (Colab's front end) and 8.
* **static** -- on the website, which has no kernel: every combination of the
  controls is drawn once at build time, and the frames sit in nested ``Stack``
  widgets whose ``selected_index`` is ``jslink``-ed to the controls, so the browser
  switches frames by itself (needs ipywidgets 8, which builds the site).

``mode="auto"`` picks static when the book build sets ``ATTENTION_BOOK_STATIC=1``
(``book/_ext``), live otherwise. ipywidgets is imported only when an explorer is made.
"""
from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from .data import Vocab, collate, make_dates
from .studies.captioning import build_captioner
from .data.digits import caption
from .data.documents import Document
from .metrics import spearman
from .data.aspects import TaggedSentence
from .book.leaderboard import leaderboard
from .book.benchviz import GROUPS, benchmark_figure
from .results import load_result
from .explain import adversarial, logits_with_weights, permuted, uniform, without_top
from .models import (CMLA, AttentionPooling, AttentionPoolingConfig, CMLAConfig, HANClassifier, HANConfig, LSTMNClassifier, MemN2N, MemN2NConfig, NestedConfig, NestedSeq2Seq, LSTMNConfig, Seq2Seq, Seq2SeqConfig, SelfAttentiveClassifier,
                     SelfAttentiveConfig, Transformer, TransformerConfig)
from .tasks import ClassificationData, Example, TranslationData, decode_steps
from .addressing import address
from .tasks.documents import DocumentData
from .tasks.captions import digit_captions
from .tasks.qa import QAData, babi_data
from .tasks.tagging import TaggingData
from .tasks.spelling import Misspelt, SpellingData
from .viz import (DOCUMENT_VIEWS, HEAD_KINDS, LOCAL_EXPLORER_CONTROLS, SCORE_EXPLORER_CONTROLS, attention_rows_figure,
                  decoding_step_figure, figure_to_png, addressing_figure, han_document_figure, head_map_figure, memory_hops_figure, nested_attention_figure, intra_attention_figure, local_window_figure,
                  score_weights_figure, glimpse_figure, results_figure)

__all__ = ["Explorer", "explorer", "score_explorer", "decoding_explorer", "local_explorer", "head_explorer",
           "EXPLORERS", "glimpse_explorer"]


class Explorer:
    """What :func:`explorer` returns: the widget tree plus handles for tests.

    Attributes:
        widget: the top-level ipywidgets box (displayed by the notebook).
        controls: name -> control widget.
        mode: ``"live"`` or ``"static"``.
        image: the live ``Image`` widget (live mode only).
        frames: number of precomputed frames (static mode only).
    """

    def __init__(self, widget, controls: dict, mode: str, image=None, frames: int = 0,
                 links: list | None = None):
        self.widget, self.controls, self.mode, self.image, self.frames = (
            widget, controls, mode, image, frames)
        self.links = links or []  # static mode: the jslinks (control.index -> Stack.selected_index)

    def _ipython_display_(self):  # ipywidgets 7 and 8 both honour this
        from IPython.display import display
        display(self.widget)


_LABEL = {"description_width": "initial"}  # show the whole control name (ipywidgets 7 and 8)


def _make_control(widgets, name: str, options: Sequence[Any], default: Any):
    labelled = [(str(o), o) for o in options]
    if all(isinstance(o, (int, float)) for o in options):
        return widgets.SelectionSlider(options=labelled, value=default, description=name,
                                       continuous_update=True, style=_LABEL)
    return widgets.Dropdown(options=labelled, value=default, description=name, style=_LABEL)


def explorer(draw: Callable[..., Any], controls: dict[str, Sequence[Any]],
             defaults: dict[str, Any] | None = None, mode: str = "auto", dpi: int = 72) -> Explorer:
    """Build an explorer around ``draw(**values) -> matplotlib Figure``.

    Args:
        draw: the viz function; called with one value per control.
        controls: name -> the values a reader may pick (numbers become a slider,
            anything else a dropdown).
        defaults: starting values; by default ``draw``'s own defaults (else each
            control's first value), so the starting frame is ``draw()``, the figure
            the book shows.
        mode: ``"live"``, ``"static"`` or ``"auto"`` (see module docstring).
    """
    import ipywidgets as widgets

    signature = inspect.signature(draw).parameters
    start = {name: signature[name].default if name in signature
             and signature[name].default in opts else opts[0]
             for name, opts in controls.items()}
    defaults = start | dict(defaults or {})
    unknown = set(defaults) - set(controls)
    if unknown:
        raise ValueError(f"defaults name unknown controls {sorted(unknown)}; controls: {list(controls)}")
    for name, value in defaults.items():
        if value not in controls[name]:
            raise ValueError(f"default {name}={value!r} is not among its options {list(controls[name])}")
    if mode == "auto":
        mode = "static" if os.environ.get("ATTENTION_BOOK_STATIC") == "1" else "live"
    if mode not in ("live", "static"):
        raise ValueError(f"mode must be 'live', 'static' or 'auto', got {mode!r}")
    ctrl = {name: _make_control(widgets, name, opts, defaults[name]) for name, opts in controls.items()}
    box = widgets.HBox if len(ctrl) < 3 else widgets.VBox
    if mode == "live":
        return _live(widgets, draw, ctrl, box, dpi)
    return _static(widgets, draw, controls, ctrl, box, dpi)


def _live(widgets, draw, ctrl, box, dpi) -> Explorer:
    def render() -> bytes:
        return figure_to_png(draw(**{name: c.value for name, c in ctrl.items()}), dpi=dpi)

    image = widgets.Image(value=render(), format="png")

    def redraw(change=None):
        image.value = render()

    for c in ctrl.values():
        c.observe(redraw, names="value")
    return Explorer(widgets.VBox([box(list(ctrl.values())), image]), ctrl, "live", image=image)


def _static(widgets, draw, controls, ctrl, box, dpi) -> Explorer:
    if not hasattr(widgets, "Stack"):
        raise RuntimeError("the static explorer needs ipywidgets >= 8 (Stack); "
                           "use mode='live' in a running kernel")
    names = list(controls)
    n_frames = 0
    links = []

    def level(depth: int, chosen: dict):
        """A Stack over the options of control ``depth``, each child one level deeper."""
        nonlocal n_frames
        if depth == len(names):
            n_frames += 1
            return widgets.Image(value=figure_to_png(draw(**chosen), dpi=dpi), format="png")
        name = names[depth]
        children = [level(depth + 1, chosen | {name: v}) for v in controls[name]]
        stack = widgets.Stack(children, selected_index=ctrl[name].index)
        links.append(widgets.jslink((ctrl[name], "index"), (stack, "selected_index")))
        return stack

    frames = level(0, {})
    return Explorer(widgets.VBox([box(list(ctrl.values())), frames]), ctrl, "static",
                    frames=n_frames, links=links)


def score_explorer(mode: str = "auto", **defaults) -> Explorer:
    """Chapter 4: score function × dimension × temperature -> attention weights.

    Calling ``viz.score_weights_figure()`` with no arguments draws its first frame.
    """
    return explorer(score_weights_figure, SCORE_EXPLORER_CONTROLS, defaults, mode=mode)


def decoding_explorer(model=None, data=None, pairs=None, max_steps: int = 12,
                      mode: str = "auto") -> Explorer:
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
    steps = {"".join(p.src) if data.name.startswith("hsk") else " ".join(p.src): decode_steps(model, data, p)
             for p in pairs}

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


def local_explorer(mode: str = "auto", **defaults) -> Explorer:
    """Chapter 9: window half-width D, σ (as a fraction of D) and p_t -> the Gaussian
    window, the raw alignment and the final weights (``viz.local_window_figure``)."""
    return explorer(local_window_figure, LOCAL_EXPLORER_CONTROLS, defaults, mode=mode)


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
        x, y = {"encoder self": (m["source"], m["source"]), "decoder self": (m["fed"], m["written"]),
                "cross": (m["source"], m["written"])}[kind]
        weights = layers[layer - 1][head - 1] if layer <= len(layers) else None  # (L, S)
        return head_map_figure(weights, x, y, kind=kind, layer=layer, head=head)

    controls = {"sentence": list(maps), "kind": list(HEAD_KINDS),
                "layer": list(range(1, max(cfg.encoder_layers, cfg.decoder_layers) + 1)),
                "head": list(range(1, cfg.num_heads + 1))}
    return explorer(draw, controls, mode=mode)


@torch.no_grad()
def _head_maps(model, data: TranslationData, pair, max_len: int) -> dict:
    """Greedy-decode ``pair`` and return its tokens and every map, per layer ``(H, L, S)`` on the CPU."""
    model.eval()
    device = next(model.parameters()).device
    batch = collate([pair], data.src_vocab, data.tgt_vocab).to(device)
    ids = model.greedy(batch.src, batch.src_lengths, max_len=max_len).tokens[0].tolist()
    ids = ids[:ids.index(model.cfg.eos_id) + 1] if model.cfg.eos_id in ids else ids
    fed = [model.cfg.bos_id] + ids[:-1]  # what the decoder reads at each position
    out = model(batch.src, batch.src_lengths, torch.tensor([fed], device=device), return_attention=True)
    return {"source": list(pair.src), "written": data.tgt_vocab.decode(ids, strip_special=False),
            "fed": data.tgt_vocab.decode(fed, strip_special=False),
            **{kind: [w[0].cpu() for w in layers] for kind, layers in zip(
                HEAD_KINDS, (out.maps.encoder_self, out.maps.decoder_self, out.maps.cross))}}


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
    return chosen + [p for p in pairs if p not in chosen][:n - len(chosen)]


def _demo_transformer():
    """A small untrained Transformer on a few generated dates: enough to drive the widget."""
    pairs = make_dates(12, seed=0)
    src, tgt = Vocab.build([p.src for p in pairs]), Vocab.build([p.tgt for p in pairs])
    data = TranslationData("dates-demo", pairs, pairs, pairs, src, tgt)
    torch.manual_seed(0)
    return Transformer(TransformerConfig(len(src), len(tgt), d_model=16, num_heads=2, num_layers=2, d_ff=32)), data


#: Every chapter's explorer by name; the Colab (ipywidgets 7.7) test drives each one.
EXPLORERS: dict[str, Callable[..., Explorer]] = {
    "scores": score_explorer,
    "decoding": decoding_explorer,
    "local": local_explorer,
    "heads": head_explorer,
}


# Chapter 6, self-attention before the Transformer: LSTMN and Lin et al.'s structured self-attention.
__all__ += ["lstmn_explorer", "rows_explorer"]

#: a few hand-written movie sentences for the untrained demo models of the two explorers below
_DEMO_SENTENCES = ("the plot is thin but the acting is wonderful .",
                   "a dull , lifeless film that never finds its story .",
                   "funny and sad at once , and never boring .")


def _demo_sentiment() -> ClassificationData:
    """The demo sentences as a tiny classification set (labels made up): enough to drive a widget."""
    examples = [Example(tuple(s.split()), i % 2) for i, s in enumerate(_DEMO_SENTENCES)]
    vocab = Vocab.build([e.tokens for e in examples])
    return ClassificationData("sentiment-demo", examples, examples, examples, vocab, ["negative", "positive"])


def _short_sentences(examples: Sequence, n: int = 3, shortest: int = 5, longest: int = 12) -> list:
    """The first ``n`` examples with ``shortest`` to ``longest`` words (topped up with the first ones)."""
    chosen = [e for e in examples if shortest <= len(e.tokens) <= longest][:n]
    return chosen + [e for e in examples if e not in chosen][:n - len(chosen)]


@torch.no_grad()
def _sentence_attention(model, data: ClassificationData, example, name: str) -> Tensor:
    """The attention ``name`` of ``model`` on one sentence, on the CPU, real words only."""
    model.eval()
    device = next(model.parameters()).device
    batch = data.collate([example]).to(device)
    T = len(example.tokens)
    weights = model(*data.inputs(batch)).attention[name][0].cpu()
    if name == "rows":  # (R, T)
        return weights[..., :T]
    return weights[:T] if name == "features" else weights[:T, :T]  # (T, F) or (T, T)


def lstmn_explorer(model=None, data=None, sentences=None, mode: str = "auto") -> Explorer:
    """Chapter 6: pick a sentence and one of its words; see how the LSTMN's intra-attention spreads
    that word's reading over the words before it (Cheng et al.'s Fig. 1), beside the sentence's
    whole lower-triangular map (``viz.intra_attention_figure``).

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
        model = LSTMNClassifier(LSTMNConfig(len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=16,
                                            attention_dim=16))
    sentences = list(sentences if sentences is not None else _short_sentences(data.test))
    maps = {" ".join(e.tokens): (list(e.tokens), _sentence_attention(model, data, e, "intra")) for e in sentences}
    longest = max(len(tokens) for tokens, _ in maps.values())

    def draw(sentence: str = next(iter(maps)), word: int = min(longest, 6)):
        tokens, weights = maps[sentence]
        return intra_attention_figure(tokens, weights, word)

    return explorer(draw, {"sentence": list(maps), "word": list(range(1, longest + 1))}, mode=mode)


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
            models[name] = SelfAttentiveClassifier(SelfAttentiveConfig(
                len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=16, attention_dim=8, rows=4,
                mlp_dim=16, penalty=coefficient))
    rows = {m.cfg.rows for m in models.values()}
    if len(rows) != 1:
        raise ValueError(f"rows_explorer needs models with the same number of rows; got {sorted(rows)}")
    sentences = list(sentences if sentences is not None else _short_sentences(data.test))
    weights = {" ".join(e.tokens): {name: (list(e.tokens), _sentence_attention(m, data, e, "rows"))
                                    for name, m in models.items()} for e in sentences}

    def draw(sentence: str = next(iter(weights)), model: str = next(iter(models)), row: int = 1):
        tokens, A = weights[sentence][model]
        return attention_rows_figure(tokens, A, row, title=model)

    controls = {"sentence": list(weights), "model": list(models), "row": list(range(1, rows.pop() + 1))}
    return explorer(draw, controls, mode=mode)


EXPLORERS |= {"lstmn": lstmn_explorer, "rows": rows_explorer}


# Chapter 5, hierarchical attention.
__all__ += ["han_explorer"]


def _demo_documents() -> DocumentData:
    """The demo sentences as two tiny documents with made-up ratings: enough to drive the widget."""
    sentences = [tuple(s.split()) for s in _DEMO_SENTENCES]
    docs = [Document(tuple(sentences), 1, {"ratings": [0.5, -2.0, 1.5]}),
            Document(tuple(sentences[::-1]), 0, {"ratings": [1.5, -2.0, 0.5]})]
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


def han_explorer(model=None, data=None, documents=None, mode: str = "auto") -> Explorer:
    """Chapter 5: pick a document; see HAN's sentence attention beside each sentence, the words
    shaded by word attention, and switch the bars to the strength of the rating people gave each
    sentence (``viz.han_document_figure``). The static page holds documents × 2 frames.

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
        model = HANClassifier(HANConfig(len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=8,
                                        attention_dim=16))
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
        title = f"{len(d.sentences)} sentences" + ("" if rho is None else
                                                    f"; Spearman(attention, |rating|) = {rho:+.2f}")
        return han_document_figure(d.sentences, words, sentences, ratings, view=view, title=title)

    views = list(DOCUMENT_VIEWS) if rated else [DOCUMENT_VIEWS[0]]
    return explorer(draw, {"document": list(frames), "view": views}, mode=mode)


EXPLORERS |= {"han": han_explorer}


__all__ += ["nested_explorer"]

#: hand-made misspelt sentences (codespell pairs) for the untrained demo model of nested_explorer
_DEMO_MISSPELT = (("i", "will", "recieve", "it", "tomorow"), ("i", "will", "receive", "it", "tomorrow")), \
                 (("the", "wheather", "is", "beatiful"), ("the", "weather", "is", "beautiful"))


def _demo_spelling():
    """Two misspelt sentences and an untrained nested model whose vocabularies lack the corrections."""
    examples = [Misspelt(src, tgt, tuple(s != t for s, t in zip(src, tgt))) for src, tgt in _DEMO_MISSPELT]
    keep = [[w for w, m in zip(e.src, e.misspelt) if not m] for e in examples]
    src_vocab = Vocab.build(keep)
    tgt_vocab = Vocab.build(keep)  # the corrected words are <unk>: the character decoder writes them
    char_vocab = Vocab.build([w for e in examples for w in e.src + e.tgt])
    data = SpellingData("spelling-demo", examples, examples, examples, src_vocab, tgt_vocab, char_vocab)
    torch.manual_seed(0)
    model = NestedSeq2Seq(NestedConfig(len(src_vocab), len(tgt_vocab), len(char_vocab), embed_dim=16,
                                       hidden_dim=16, char_embed_dim=8, char_hidden_dim=8, char_level=True))
    return model, data


@torch.no_grad()
def _written_words(model, data: SpellingData, example) -> list[dict]:
    """Every word the character decoder writes for ``example`` under teacher forcing: its source
    position, word attention ``(S,)``, characters written and nested attention ``(K, L)``."""
    model.eval()
    device = next(model.parameters()).device
    batch = data.collate([example]).to(device)
    out = model(batch.src, batch.src_lengths, batch.tgt_in, batch.chars, batch.char_lengths, batch.oov,
                batch.tgt_unk, batch.tgt_chars_in)
    if out.char_attention is None:
        raise ValueError("nested_explorer needs a model with char_level=True")
    words = []
    for n, t in enumerate(out.char_rows[0].nonzero().flatten().tolist()):
        target = example.tgt[t]
        written = list(target) + ["</s>"]
        words.append({"position": t, "source": int(out.char_source[n]), "alpha": out.attention[0, t].cpu(),
                      "written": written, "beta": out.char_attention[n, :len(written)].cpu(), "target": target})
    return words


def nested_explorer(model=None, data=None, examples=None, mode: str = "auto") -> Explorer:
    """Chapter 5: pick a word that the nested model writes letter by letter (a word its word
    vocabulary lacks) in a misspelt sentence; see which source word the word-level attention picks and
    how the character attention moves over that word's letters as each letter is written
    (``viz.nested_attention_figure``). One frame per word offered.

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
    frames |= dict(list(other.items())[:max(0, 2 - len(frames))])
    if not frames:
        raise ValueError("none of these sentences has a word the character decoder writes")

    def draw(word: str = next(iter(frames))):
        e, w = frames[word]
        return nested_attention_figure(e.src, w["alpha"], w["source"], w["written"], w["beta"])

    return explorer(draw, {"word": list(frames)}, mode=mode)


EXPLORERS |= {"nested": nested_explorer}


# Chapter 7, memory-based attention.
__all__ += ["memory_explorer", "addressing_explorer", "ADDRESSING_CONTROLS"]


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


def memory_explorer(model=None, data=None, questions=None, mode: str = "auto") -> Explorer:
    """Chapter 7: pick a question about a story and a hop; see which sentences that hop reads (bars),
    beside the other hops (outlines), with the supporting facts starred
    (``viz.memory_hops_figure``). The static page holds questions × hops frames.

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


def addressing_explorer(mode: str = "auto", **defaults) -> Explorer:
    """Chapter 7: one NTM addressing step on a fixed memory of 8 slots (Graves et al. 2014, §3.3):
    key strength ``beta``, interpolation gate ``g``, a shift of −1, 0 or +1 slot and the sharpening
    ``gamma`` -> the weighting after each stage (``attention.addressing.address``, ``viz.addressing_figure``).
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
        return addressing_figure({"previous": previous[0]} | {k: v[0] for k, v in steps.items()},
                                 title=f"β = {beta:g}, g = {g:g}, shift {shift:+d}, γ = {gamma:g}")

    return explorer(draw, ADDRESSING_CONTROLS, defaults=defaults, mode=mode)


EXPLORERS |= {"memory": memory_explorer, "addressing": addressing_explorer}


# --- chapter 8: soft and hard attention over an image ---------------------------------------------

#: what the glimpse explorer shows at a step: the soft weights, or cells that hard draws pick from them
GLIMPSE_VIEWS = ["weights", "hard draw 1", "hard draw 2"]


def _demo_captions():
    """Untrained soft and hard captioners on a few composed digit rows: enough to drive the widget."""
    data = digit_captions(n_train=8, n_valid=4, n_test=4)
    return {kind: build_captioner(data, kind, seed=0) for kind in ("soft", "hard")}, data


def glimpse_explorer(models: dict | None = None, data=None, examples=None, mode: str = "auto") -> Explorer:
    """Chapter 8: pick a canvas of handwritten digits, a model, a step of its caption and a view:
    the soft weights over the annotation grid at that step, or a cell that a hard-attention draw
    picks from those weights (``viz.glimpse_figure``). Draws are seeded: the static page and a
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

    def draw(image: str = next(iter(frames))[0], model: str = next(iter(models)), step: int = 1,
             view: str = "weights"):
        picture, weights, words = frames[image, model]
        k = min(step, len(words))
        sample = None
        if view != "weights":
            g = torch.Generator().manual_seed(1000 * k + GLIMPSE_VIEWS.index(view))
            sample = int(torch.multinomial(weights[k - 1].reshape(-1), 1, generator=g))
        return glimpse_figure(picture, weights[k - 1], words, k, sample,
                              title=f"{model} attention, step {k}" + (f", {view}" if sample is not None else ""))

    return explorer(draw, {"image": list(dict.fromkeys(i for i, _ in frames)), "model": list(models),
                           "step": list(range(1, steps + 1)), "view": GLIMPSE_VIEWS}, mode=mode)


EXPLORERS |= {"glimpse": glimpse_explorer}


# --- chapter 4, part 2: attention whose score is a vector; coupled aspect/opinion attention ---------
__all__ += ["features_explorer", "coupled_explorer", "chosen_features"]


def _demo_features():
    """An untrained multi-dimensional attention model on the demo sentences: enough to drive the widget."""
    data = _demo_sentiment()
    torch.manual_seed(0)
    return AttentionPooling(AttentionPoolingConfig(len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=8,
                                                   attention_dim=16, mlp_dim=16)), data


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
    taken += [k for k in order if k not in taken][:n - len(taken)]
    return sorted(taken)


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
    maps = {" ".join(e.tokens): (list(e.tokens), _sentence_attention(model, data, e, "features"))
            for e in sentences}
    shown = chosen_features([P for _, P in maps.values()], features)

    def draw(sentence: str = next(iter(maps)), feature: int = shown[0]):
        tokens, P = maps[sentence]
        rows = P[:, shown].T  # (features, T)
        return attention_rows_figure(tokens, rows, shown.index(feature) + 1, row_labels=[f"feature {k}" for k in shown],
                                     title="multi-dimensional attention: one distribution per feature")

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
        return attention_rows_figure(labels, weights, list(rows).index(attention) + 1, row_labels=list(rows),
                                     title="coupled attention; [model/silver]: A aspect, P opinion")

    return explorer(draw, {"sentence": list(frames), "attention": list(rows)}, mode=mode)


EXPLORERS |= {"features": features_explorer, "coupled": coupled_explorer}


# --- chapter 10: do the weights explain the decision? -------------------------------------------
__all__ += ["faithfulness_explorer", "WEIGHT_VARIANTS"]

#: what the faithfulness explorer puts in place of the model's attention
WEIGHT_VARIANTS = ["the model's own", "permuted", "uniform", "without top", "adversarial"]


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
        variants = {"the model's own": own, "permuted": permuted(own, lengths, torch.Generator().manual_seed(0)),
                    "uniform": uniform(own, lengths), "without top": without_top(own, lengths),
                    "adversarial": adversarial(model, tokens, lengths, own, eps)}
        with torch.no_grad():
            positive = {k: torch.softmax(logits_with_weights(model, tokens, lengths, w), -1)[0, -1].item()
                        for k, w in variants.items()}
        rows = torch.stack([w[0].mean(-1).cpu() for w in variants.values()])  # (5, T)
        frames[" ".join(e.tokens)] = (list(e.tokens), rows, positive)

    def draw(sentence: str = next(iter(frames)), weights: str = WEIGHT_VARIANTS[0]):
        tokens, rows, positive = frames[sentence]
        title = f"P({data.labels[-1]}) = {positive[weights]:.3f}\n(own weights: {positive[WEIGHT_VARIANTS[0]]:.3f})"
        return attention_rows_figure(tokens, rows, WEIGHT_VARIANTS.index(weights) + 1, row_labels=WEIGHT_VARIANTS,
                                     title=title)

    return explorer(draw, {"sentence": list(frames), "weights": WEIGHT_VARIANTS}, mode=mode)


EXPLORERS |= {"faithfulness": faithfulness_explorer}


# --- chapter 11: every recorded comparison ------------------------------------------------------
__all__ += ["results_explorer"]


def results_explorer(rows: Sequence[dict] | None = None, mode: str = "auto") -> Explorer:
    """Chapter 11: pick a recorded comparison of the book and see its models' headline metric, mean
    ± sd over the seeds, models without attention in grey (``viz.results_figure``). One frame per
    record of the leaderboard.

    Args:
        rows: leaderboard rows (default: :func:`attention.book.leaderboard.leaderboard` of the package's
            registry).
    """
    rows = list(leaderboard() if rows is None else rows)
    by_record: dict[str, list] = {}
    for r in rows:
        by_record.setdefault(r["record"], []).append(r)

    def draw(record: str = next(iter(by_record))):
        return results_figure(by_record[record], title=f"{record}\n{by_record[record][0]['command']}")

    return explorer(draw, {"record": list(by_record)}, mode=mode)


EXPLORERS |= {"results": results_explorer}


# --- appendix: the benchmark ----------------------------------------------------------------------
__all__ += ["benchmark_explorer"]


def benchmark_explorer(record: dict | None = None, device: str = "cpu", mode: str = "auto") -> Explorer:
    """The performance appendix: one group of the recorded benchmark at a time (kernels against
    PyTorch's, scores against the dot score, local against global attention, every model family's
    training step), from the record ``benchmark`` (``python -m attention bench``).

    Args:
        record: a ``benchmark`` record (default: the package's registry).
        device: which section of the record (``"cpu"``; ``"cuda"`` once a GPU run recorded it).
    """
    record = load_result("benchmark") if record is None else record
    section = record["metrics"][device]

    def draw(group: str = "kernels"):
        return benchmark_figure(section["rows"], group, title=section["label"])

    return explorer(draw, {"group": list(GROUPS)}, mode=mode)


EXPLORERS |= {"benchmark": benchmark_explorer}
