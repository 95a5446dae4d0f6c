"""The playground's models: the book's RNNsearch translators exported to ONNX for the browser.

    python -m attention export-web --out _build/html/playground-models

For each model of :data:`PLAYGROUND` it writes ``<out>/<name>/encoder.onnx`` (the source, once),
``<out>/<name>/step.onnx`` (one decoder step: for RNNsearch the previous word and state in, the
logits, the new state and **the step's attention weights** out; for the Transformer the prefix in,
the logits and the last position's cross-attention of every layer and head out) and ``<out>/<name>/vocab.json`` (vocabularies, the
tokenizer, examples with the torch model's own outputs), plus ``<out>/manifest.json``. The page
``book/playground.md`` runs them with onnxruntime-web, greedy decoding written in JavaScript the
way :func:`attention.models.decoding.greedy` decodes.

**Steering.** The legacy ONNX tracer has no optional inputs, so each step graph always takes the
weights a reader may impose, and a 0/1 switch, and mixes ``use · given + (1 − use) · own``
through the model's own ``weights_hook`` (one graph: switched off, it is the model's step):
RNNsearch's step takes ``weights_in (1, S)`` and ``use (1,)``, the Transformer's ``override
(layers, H, T, S)`` and ``use (layers, H, T)``, one row per layer, head and prefix position, so a
step edited once stays edited when later steps recompute the prefix. The graphs check nothing
(``check_weights`` is skipped under tracing); the page checks what it feeds.

The models are the chapters' own, kept with the package: chapter 3's date RNNsearch
(``attention/results/models/kept-dates-rnnsearch.pt``, :func:`attention.experiments.fit_kept`), chapter
3's Chinese→English RNNsearch of the record ``dictionary`` (HSK and CC-CEDICT, trained to convergence,
seed 0: :func:`attention.studies.dictionary.dictionary_model`), and the date Transformer of chapter
10's alignment record (chapter 6's model, seed 0). Parity is measured, not assumed: :func:`parity` decodes the test split with
onnxruntime (Python) and with the torch model and reports the token agreement and the largest
difference of the attention weights; :func:`steer_parity` does the same for steered decodings
(both in :mod:`attention.book.webparity`, with :class:`OnnxTranslator`, and re-exported here).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Sequence

import torch
from babel.dates import format_date
from torch import Tensor, nn

from ..checkpoints import load_checkpoint
from ..data import Pair, Vocab
from ..device import seed_everything, set_threads
from ..experiments import dates_data, load_kept, translate
from ..models.interface import EncoderMemory
from ..studies.alignment import ALIGNMENT, alignment_model_path
from ..studies.dictionary import dictionary_model
from .webparity import OnnxTranslator, parity, steer, steer_parity

__all__ = [
    "PLAYGROUND",
    "playground_model",
    "export_model",
    "OnnxTranslator",
    "parity",
    "steer",
    "steer_parity",
    "tokenize",
    "export_web",
]

#: name -> what the page shows; the recipe is the chapter's (the model cache key depends on it)
PLAYGROUND = {
    "dates": {
        "title": "Dates in Chinese, French, German or English → ISO (chapters 3 and 9)",
        "tokenizer": "dates",
        "max_len": 12,
    },
    "hsk": {
        "title": "Chinese → English: RNNsearch taught HSK and CC-CEDICT (chapter 3)",
        "tokenizer": "chars",
        "max_len": 40,
        "examples": ["機器學習", "機器學習很有趣"],  # the survey's example first, then test sentences
    },
    "dates-transformer": {
        "title": "Dates → ISO: the Transformer (chapters 6 and 10), every layer and head",
        "tokenizer": "dates",
        "max_len": 12,
    },
}

#: a dates source: digits, a run of letters (with the dot of an abbreviation), or one mark
DATE_CHUNK = re.compile(r"[0-9]+|[^\W\d_]+\.?|[^\w\s]")


def playground_model(name: str, device: str = "cpu") -> tuple[nn.Module, object]:
    """``(model, data)`` of a playground model: the book's kept models, so the page runs on every
    machine the model the chapters print (chapter 3's date RNNsearch, :func:`attention.experiments.fit_kept`;
    its Chinese→English RNNsearch of the record ``dictionary``; the date Transformer of chapter
    10's alignment record)."""
    seed_everything(0)
    set_threads(1)
    if name == "dates":
        data = dates_data(n=4000)
        model, _ = load_kept("dates-rnnsearch", device=device)
    elif name == "hsk":  # chapter 3's dictionary record, seed 0, kept
        model, data = dictionary_model(device=device)
    elif name == "dates-transformer":  # chapter 6's model of chapter 10's alignment record, seed 0, kept
        data = dates_data(n=ALIGNMENT["dates_n"], seed=0)
        path = alignment_model_path()
        if not path.exists():
            raise FileNotFoundError(f"no {path}: `python -m attention alignment` keeps its seed-0 model there")
        model, _ = load_checkpoint(path, expect="transformer", map_location=device)
    else:
        raise ValueError(f"unknown playground model {name!r}; choose one of {sorted(PLAYGROUND)}")
    return model.eval(), data


def tokenize(text: str, kind: str, vocab: Vocab | None = None) -> list[str]:
    """The source tokens of ``text``, as the page's JavaScript splits them.

    ``"chars"``: every character but whitespace (chapter 3's Chinese). ``"dates"``: digits, marks,
    and runs of letters, each run cut into the longest pieces the vocabulary knows (年月日星期四 ->
    年, 月, ...), an abbreviation keeping its dot when the vocabulary has it (``avr.``).
    """
    if kind == "chars":
        return [ch for ch in text if not ch.isspace()]
    if kind != "dates":
        raise ValueError(f"tokenizer must be 'chars' or 'dates', got {kind!r}")
    if vocab is None:
        raise ValueError("the dates tokenizer needs the vocabulary")
    tokens = []
    for chunk in DATE_CHUNK.findall(text):
        if not chunk[0].isalpha():
            tokens.append(chunk)
            continue
        if chunk.endswith(".") and chunk not in vocab:
            tokens += _longest_pieces(chunk[:-1], vocab) + ["."]
        else:
            tokens += _longest_pieces(chunk, vocab)
    return tokens


def _longest_pieces(run: str, vocab: Vocab) -> list[str]:
    """``run`` cut greedily into the longest prefixes the vocabulary holds; the rest as one unknown."""
    pieces, i = [], 0
    while i < len(run):
        for j in range(len(run), i, -1):
            if run[i:j] in vocab:
                pieces.append(run[i:j])
                i = j
                break
        else:
            pieces.append(run[i:])
            break
    return pieces


class _Encoder(nn.Module):
    """One unpadded source: ``src (1, S)`` -> states ``(1, S, He)``, keys ``U_a h_i`` ``(1, S, A)``, ``s_0``.
    The same computation as :meth:`Seq2Seq.encode` for a batch of one (no padding, so no packing)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        m = self.model
        states, final = m.encoder.rnn(m.encoder.embed(src))  # (1, S, He), (2, 1, H)
        summary = final.transpose(0, 1).reshape(1, -1)  # (1, He)
        return states, m.score.project_keys(states), torch.tanh(m.init_state(summary))


class _Step(nn.Module):
    """:meth:`Seq2Seq.step` for one sentence: ``y_prev (1,)``, ``s_prev (1, Hd)``, states, keys,
    ``weights (1, S)``, ``use (1,)`` -> logits ``(1, V)``, ``s_t``, the weights used ``(1, S)``.

    The step always goes through the model's ``weights_hook``, which mixes ``use · weights +
    (1 − use) · α_t``: with ``use = 0`` the model's own weights (the graph has no optional
    inputs), with ``use = 1`` the reader's. The page checks the weights it feeds; the graph cannot
    (``check_weights`` checks nothing under tracing)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, y_prev: Tensor, s_prev: Tensor, states: Tensor, keys: Tensor, weights: Tensor, use: Tensor):
        keep = torch.ones_like(states[:, :, 0], dtype=torch.bool)  # (1, S): every position is real
        memory = EncoderMemory(states, keep, keep.sum(1), keys=keys)
        step = self.model.step(y_prev, s_prev, memory, weights_hook=lambda own: use * weights + (1 - use) * own)
        return step.logits, step.state, step.weights


class _TransformerEncoder(nn.Module):
    """The Transformer's encoder stack for one unpadded source: ``src (1, S)`` -> memory ``(1, S, E)``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> Tensor:
        memory, _ = self.model.encoder_stack(self.model.embed(src, self.model.src_embed))
        return memory


class _TransformerStep(nn.Module):
    """One decoding step of the Transformer over the whole prefix ``(1, T)`` (causal, so the last
    position is what a cached step computes): its logits ``(1, V)`` and the cross-attention of the
    last position in every layer and head, ``(1, layers, H, S)``.

    ``override (layers, H, T, S)`` and ``use (layers, H, T)`` steer it: where ``use`` is 1, that
    layer's head reads the memory with ``override``'s row at that position instead of its own
    (``decoder_stack(cross_weights_hook=)``, mixed ``use · override + (1 − use) · own``, so zeros
    everywhere decode as the model does). A row edited at step ``t`` stays edited at every later
    step, which recomputes position ``t``: what cached decoding with ``Transformer.step``'s hook
    at step ``t`` computes."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, prefix: Tensor, memory: Tensor, override: Tensor, use: Tensor) -> tuple[Tensor, Tensor]:
        m = self.model

        def steer(own: Tensor, layer: int) -> Tensor:  # own (1, H, T, S)
            u = use[layer][None, :, :, None]  # (1, H, T, 1)
            return u * override[layer][None] + (1 - u) * own

        hidden, _, cross = m.decoder_stack(
            m.embed(prefix, m.tgt_embed), memory, need_weights=True, cross_weights_hook=steer
        )
        return m.output(hidden[:, -1]), torch.stack([c[:, :, -1] for c in cross], 1)


def _export_transformer(model: nn.Module, src: Tensor, folder: Path) -> None:
    with torch.no_grad():
        memory = _TransformerEncoder(model)(src)
        torch.onnx.export(
            _TransformerEncoder(model),
            (src,),
            folder / "encoder.onnx",
            input_names=["src"],
            output_names=["memory"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={"src": {1: "S"}, "memory": {1: "S"}},
        )
        prefix = torch.tensor([[model.cfg.bos_id, model.cfg.bos_id]])
        N, H, S = model.cfg.decoder_layers, model.cfg.num_heads, src.shape[1]
        override = torch.full((N, H, 2, S), 1 / S)  # (layers, H, T, S)
        use = torch.zeros(N, H, 2)  # (layers, H, T)
        torch.onnx.export(
            _TransformerStep(model),
            (prefix, memory, override, use),
            folder / "step.onnx",
            input_names=["prefix", "memory", "override", "use"],
            output_names=["logits", "cross"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={
                "prefix": {1: "T"},
                "memory": {1: "S"},
                "override": {2: "T", 3: "S"},
                "use": {2: "T"},
                "cross": {3: "S"},
            },
        )


def _check_exportable(model: nn.Module) -> None:
    if type(model).__name__ == "Transformer":
        return
    cfg = model.cfg
    problems = [
        f"{k}={getattr(cfg, k)!r}"
        for k, ok in (
            ("cell", cfg.cell == "gru"),
            ("attention", cfg.attention == "additive"),
            ("reverse_source", not cfg.reverse_source),
            ("bidirectional", cfg.bidirectional),
        )
        if not ok
    ]
    if type(model).__name__ != "Seq2Seq" or problems:
        raise ValueError(
            f"the playground exports RNNsearch (seq2seq, GRU, additive, bidirectional) or the "
            f"Transformer; got "
            f"{type(model).__name__} with {', '.join(problems) or 'another class'}"
        )


def export_model(model: nn.Module, data, out: str | Path, name: str) -> dict:
    """Write ``encoder.onnx``, ``step.onnx`` and ``vocab.json`` of ``model`` into ``out/name``
    (``name``: one of :data:`PLAYGROUND`, whose entry gives the page's title, tokenizer and length)."""
    if name not in PLAYGROUND:
        raise ValueError(
            f"unknown playground model {name!r}; choose one of {sorted(PLAYGROUND)} "
            "(each names the title, tokenizer and output length the page uses)"
        )
    _check_exportable(model)
    model = model.cpu().eval()
    folder = Path(out) / name
    folder.mkdir(parents=True, exist_ok=True)
    src = torch.tensor([data.src_vocab.encode(data.test[0].src)])  # (1, S)
    transformer = type(model).__name__ == "Transformer"
    if transformer:
        _export_transformer(model, src, folder)
    else:
        _export_rnnsearch(model, src, folder)
    spec = PLAYGROUND[name]
    examples = _examples(model, data, spec)
    vocab = {
        "name": name,
        "title": spec["title"],
        "tokenizer": spec["tokenizer"],
        "max_len": spec["max_len"],
        "kind": "transformer" if transformer else "rnnsearch",
        "layers": model.cfg.decoder_layers if transformer else 1,
        "heads": model.cfg.num_heads if transformer else 1,
        "src": data.src_vocab.itos,
        "tgt": data.tgt_vocab.itos,
        "pad_id": model.cfg.pad_id,
        "unk_id": Vocab.unk_id,
        "bos_id": model.cfg.bos_id,
        "eos_id": model.cfg.eos_id,
        "examples": examples,
    }
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    return {"files": {f.name: f.stat().st_size for f in sorted(folder.iterdir())}}


def _export_rnnsearch(model: nn.Module, src: Tensor, folder: Path) -> None:
    with torch.no_grad():
        states, keys, s0 = _Encoder(model)(src)
        torch.onnx.export(
            _Encoder(model),
            (src,),
            folder / "encoder.onnx",
            input_names=["src"],
            output_names=["states", "keys", "s0"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={"src": {1: "S"}, "states": {1: "S"}, "keys": {1: "S"}},
        )
        y = torch.tensor([model.cfg.bos_id])
        weights = torch.full((1, src.shape[1]), 1 / src.shape[1])  # (1, S)
        torch.onnx.export(
            _Step(model),
            (y, s0, states, keys, weights, torch.zeros(1)),
            folder / "step.onnx",
            input_names=["y_prev", "s_prev", "states", "keys", "weights_in", "use"],
            output_names=["logits", "state", "weights"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={"states": {1: "S"}, "keys": {1: "S"}, "weights_in": {1: "S"}, "weights": {1: "S"}},
        )


def _examples(model, data, spec, n: int = 6) -> list[dict]:
    """The spec's ``examples`` and then test sources, ``n`` in all, as people write them, with the
    torch model's greedy output (the page offers them as examples; the browser test types them)."""
    own = [
        Pair(tuple(tokenize(t, spec["tokenizer"], data.src_vocab)), (), {"src_text": t})
        for t in spec.get("examples", [])
    ]
    pairs = (own + list(data.test))[:n]
    outputs = translate(model, pairs, data, max_len=spec["max_len"])
    out = []
    for p, o in zip(pairs, outputs):
        if hasattr(p, "date"):  # a date, written as CLDR writes it (what tokenize() reads back)
            text = format_date(p.date, format=p.style, locale=p.language)
        else:
            text = p.meta["src_text"]
        out.append({"text": text, "tokens": list(p.src), "output": o.hypothesis})
    return out


def export_web(out: str | Path, names: Sequence[str] | None = None, check: bool = True, progress: bool = True) -> dict:
    """Export every playground model into ``out`` and write ``out/manifest.json``; with ``check``,
    measure parity on the test split (:func:`parity`) and store it in the manifest."""
    out = Path(out)
    if isinstance(names, str):
        raise ValueError(f"names must be a list of playground models, e.g. [{names!r}]; got the string {names!r}")
    names = list(names or PLAYGROUND)
    unknown = [n for n in names if n not in PLAYGROUND]
    if unknown:  # before anything is exported
        raise ValueError(f"unknown playground models {unknown}; choose among {sorted(PLAYGROUND)}")
    manifest = {"models": {}}
    for name in names:
        start = time.perf_counter()
        model, data = playground_model(name)
        entry = export_model(model, data, out, name)
        entry["title"] = PLAYGROUND[name]["title"]
        if check:
            translator = OnnxTranslator.load(out / name)
            entry["parity"] = parity(model, data, translator, data.test, PLAYGROUND[name]["max_len"])
            hook_at = (model.cfg.decoder_layers - 1, None) if translator.kind == "transformer" else None
            entry["steered"] = steer_parity(
                model, data, translator, data.test[:20], PLAYGROUND[name]["max_len"], hook_at
            )
        entry["seconds"] = round(time.perf_counter() - start, 1)
        manifest["models"][name] = entry
        if progress:
            size = sum(entry["files"].values()) / 2**20
            check_line = (
                ""
                if not check
                else (
                    f"; onnxruntime vs torch on {entry['parity']['sentences']} test sentences: tokens "
                    f"{entry['parity']['token_agreement']:.2%} equal, weights within {entry['parity']['max_weight_diff']:.1e}; "
                    f"{entry['steered']['edits']} steered decodings {entry['steered']['same_output']:.0%} identical"
                )
            )
            print(f"{name}: {size:.1f} MB{check_line}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest
