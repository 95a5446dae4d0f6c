"""One small runnable example per model family: the GPU check (``attention/book/gpu_check.py``) and the
benchmark (``attention/book/bench.py``) run every family through it.

Shape legend: B batch (4 in every example), S source length, T target length, N sentences of a
document (memory slots of a story), J words per sentence, K characters of a word, G image
locations, V vocabulary.

Every name of the model registry (``attention/models/registry.py``, :data:`MODELS`) has a builder
here. ``example(name, seed)`` builds the family with a small config through
:func:`attention.models.build` and draws a padded batch and random targets, all from ``seed``:

    ex = example("seq2seq")
    ex.loss().backward()        # one training step's loss: model(*ex.inputs) against the targets
    ex.attention()              # (B, T, S): the map the chapter plots, each row a distribution
    ex = ex.to("cuda")          # model, inputs and targets on another device

Batches are padded wherever a model takes lengths (the first row is full, the last one half as
long), so that every mask is exercised. Sequence models (seq2seq, luong, transformer, nested,
show-attend-tell) are trained by teacher forcing through ``forward``, and their map is the
cross-attention of that pass. Dropout is 0 everywhere: the same seed gives the same loss.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..models import build

__all__ = ["FamilyExample", "example", "EXAMPLES"]

B = 4  # the batch size of every example
PAD, UNK, BOS, EOS = 0, 1, 2, 3  # special ids, as the configs' defaults have them
FIRST = 4  # the first ordinary word (or character) id of the sequence models


@dataclass
class FamilyExample:
    """A model family, small, with one batch: what a device check or a benchmark needs to run it."""

    name: str  # the registry name
    model: nn.Module  # built with a small config (one forward + backward well under 0.2 s on a CPU)
    inputs: tuple  # what ``model(*inputs)`` takes, batch first (tensors, and None for unused options)
    tokens: int  # the input positions one batch holds, padding included (for tokens per second)
    targets: tuple  # the random targets the criterion compares the output with
    criterion: Callable[..., Tensor]  # (output, *targets) -> the scalar loss
    read_weights: Callable[[nn.Module, tuple], Tensor | None]  # (model, inputs) -> the plotted map

    def loss(self) -> Tensor:
        """One scalar training loss: ``model(*inputs)`` against the targets (in the model's mode)."""
        return self.criterion(self.model(*self.inputs), *self.targets)

    @torch.no_grad()
    def attention(self) -> Tensor | None:
        """The attention map the chapter plots, in eval mode: one tensor whose last dim is a
        distribution (sums to 1 over the real positions, 0 on padding), or None without attention."""
        training = self.model.training
        self.model.eval()
        try:
            return self.read_weights(self.model, self.inputs)
        finally:
            self.model.train(training)

    def to(self, device) -> "FamilyExample":
        """The example on ``device``: the model moved in place, inputs and targets copied."""

        def move(values: tuple) -> tuple:
            return tuple(v.to(device) if isinstance(v, Tensor) else v for v in values)

        return dataclasses.replace(
            self, model=self.model.to(device), inputs=move(self.inputs), targets=move(self.targets)
        )


#: registry name -> ``seed -> FamilyExample``
EXAMPLES: dict[str, Callable[[int], FamilyExample]] = {}


def example(name: str, seed: int = 0) -> FamilyExample:
    """The small example of family ``name``; the same seed gives the same weights and batch."""
    if name not in EXAMPLES:
        raise KeyError(f"no example for model family {name!r} (examples: {sorted(EXAMPLES)})")
    return EXAMPLES[name](seed)


def _family(name: str):
    """Register a builder under ``name``. It draws from torch's global generator, seeded with
    ``seed`` inside ``fork_rng``, so building an example leaves the caller's random state alone."""

    def register(builder: Callable[[str], FamilyExample]) -> Callable[[int], FamilyExample]:
        @functools.wraps(builder)
        def seeded(seed: int = 0) -> FamilyExample:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                return builder(name)

        EXAMPLES[name] = seeded
        return seeded

    return register


# --- random padded batches --------------------------------------------------------------------


def _lengths(L: int, rows: int = B) -> Tensor:
    """``(rows,)`` lengths in ``[L // 2, L]``: the first row full, the last ``L // 2`` (padded)."""
    lengths = torch.randint(max(1, L // 2), L + 1, (rows,))
    lengths[0], lengths[-1] = L, max(1, L // 2)
    return lengths


def _ids(lengths: Tensor, L: int, low: int, high: int) -> Tensor:
    """Random ids in ``[low, high)``: ``lengths (...)`` -> ``(..., L)``, PAD after each length."""
    ids = torch.randint(low, high, (*lengths.shape, L))
    real = torch.arange(L) < lengths[..., None]  # (..., L)
    return ids.masked_fill(~real, PAD)


def _decoder_io(lengths: Tensor, L: int, vocab: int) -> tuple[Tensor, Tensor]:
    """Teacher forcing's pair, ``(..., L)`` each: ``out = y_1 … y_n <eos> <pad>…`` (n + 1 = length)
    and ``in = <bos> y_1 … y_n <pad>…``."""
    out = _ids(lengths, L, FIRST, vocab)
    out.scatter_(-1, (lengths - 1)[..., None], EOS)
    bos = torch.full((*lengths.shape, 1), BOS)
    return torch.cat([bos, out[..., :-1]], -1).masked_fill(out == PAD, PAD), out


def _translation(src_vocab: int, tgt_vocab: int, S: int = 7, T: int = 6) -> tuple[Tensor, ...]:
    """``src (B, S)``, ``src_lengths (B,)``, ``tgt_in`` and ``tgt_out (B, T)``, all padded."""
    src_lengths = _lengths(S)
    tgt_in, tgt_out = _decoder_io(_lengths(T), T, tgt_vocab)
    return _ids(src_lengths, S, FIRST, src_vocab), src_lengths, tgt_in, tgt_out


def _sentences(vocab: int, T: int = 8) -> tuple[Tensor, Tensor]:
    """``tokens (B, T)`` and ``lengths (B,)``, padded."""
    lengths = _lengths(T)
    return _ids(lengths, T, 1, vocab), lengths


def _document(vocab: int, N: int = 4, J: int = 5) -> tuple[Tensor, Tensor]:
    """``ids (B, N, J)`` and words per sentence ``(B, N)``: real sentences first (at least N // 2),
    each 1..J words, then empty ones (length 0)."""
    real = torch.arange(N) < _lengths(N)[:, None]  # (B, N)
    words = torch.randint(1, J + 1, (B, N)) * real  # (B, N)
    return _ids(words, J, 1, vocab), words


# --- losses and maps --------------------------------------------------------------------------


def _token_loss(out, targets: Tensor) -> Tensor:
    """Cross-entropy of ``out.logits (B, T, V)`` over the real target tokens ``(B, T)``."""
    return F.cross_entropy(out.logits.flatten(0, 1), targets.flatten(), ignore_index=PAD)


def _class_loss(out, labels: Tensor) -> Tensor:
    """Cross-entropy of ``out.logits (B, C)`` against ``labels (B,)``."""
    return F.cross_entropy(out.logits, labels)


def _bits_loss(logits: Tensor, bits: Tensor) -> Tensor:
    """Binary cross-entropy of ``logits (B, T, O)`` against ``bits (B, T, O)``."""
    return F.binary_cross_entropy_with_logits(logits, bits)


def _teacher_forced(model: nn.Module, inputs: tuple) -> Tensor:
    """The cross-attention of teacher forcing, ``(B, T, S)`` (``return_attention=True``)."""
    return model(*inputs, return_attention=True).attention


def _named(key: str) -> Callable[[nn.Module, tuple], Tensor]:
    """The map ``key`` of the ``attention`` dict a classifier (or tagger) returns."""
    return lambda model, inputs: model(*inputs).attention[key]


def _classifier(
    name: str,
    model: nn.Module,
    inputs: tuple,
    classes: int,
    weights: Callable[[nn.Module, tuple], Tensor | None],
    tokens: int | None = None,
) -> FamilyExample:
    """A classifier of ``inputs`` into ``classes`` with random labels; ``tokens`` defaults to the
    positions of ``inputs[0]``."""
    tokens = inputs[0].numel() if tokens is None else tokens
    return FamilyExample(name, model, inputs, tokens, (torch.randint(classes, (B,)),), _class_loss, weights)


def _no_attention(model: nn.Module, inputs: tuple) -> None:
    """The map of a family without attention."""
    return None


def _translator(name: str, model: nn.Module, vocab: int) -> FamilyExample:
    """A translation model trained by teacher forcing; its map the cross-attention."""
    src, src_lengths, tgt_in, tgt_out = _translation(vocab, vocab)
    return FamilyExample(
        name, model, (src, src_lengths, tgt_in), src.numel() + tgt_in.numel(), (tgt_out,), _token_loss, _teacher_forced
    )


# --- one builder per family -------------------------------------------------------------------


@_family("seq2seq")
def _seq2seq(name: str) -> FamilyExample:
    """RNNsearch (``attention/models/seq2seq.py``): a BiGRU and additive attention."""
    model = build(name, dict(src_vocab=16, tgt_vocab=16, embed_dim=16, hidden_dim=16, dropout=0.0))
    return _translator(name, model, 16)


@_family("luong")
def _luong(name: str) -> FamilyExample:
    """Luong's global "general" attention with input feeding (``attention/models/luong.py``)."""
    model = build(name, dict(src_vocab=16, tgt_vocab=16, embed_dim=16, hidden_dim=16, dropout=0.0))
    return _translator(name, model, 16)


@_family("transformer")
def _transformer(name: str) -> FamilyExample:
    """The Transformer (``attention/models/transformer.py``); the map is the last decoder layer's
    cross-attention averaged over heads."""
    model = build(
        name, dict(src_vocab=16, tgt_vocab=16, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=16)
    )
    return _translator(name, model, 16)


@_family("nested")
def _nested(name: str) -> FamilyExample:
    """Nested word/character attention (``attention/models/nested.py``): ``<unk>`` source words read by
    the character encoder, ``<unk>`` target words spelt by the character decoder. The loss adds the
    word and character cross-entropies; the map is the word-level attention ``(B, T, S)``."""
    words, chars, S, T, L, K = 12, 10, 7, 6, 5, 5
    model = build(
        name,
        dict(
            src_vocab=words,
            tgt_vocab=words,
            char_vocab=chars,
            embed_dim=8,
            hidden_dim=8,
            char_embed_dim=8,
            char_hidden_dim=8,
            dropout=0.0,
        ),
    )
    src, src_lengths, tgt_in, tgt_out = _translation(words, words, S, T)
    src = src.masked_fill((torch.rand(B, S) < 0.3) & (src != PAD), UNK)  # out-of-vocabulary source words
    src[0, 0] = UNK
    char_lengths = torch.randint(1, L + 1, (B, S)) * (src != PAD)  # (B, S), 0 for padding words
    src_chars = _ids(char_lengths, L, FIRST, chars)  # (B, S, L)
    tgt_out = tgt_out.masked_fill((torch.rand(B, T) < 0.3) & (tgt_out >= FIRST), UNK)  # words spelt out
    tgt_out[0, 0] = UNK
    tgt_in[:, 1:] = tgt_in[:, 1:].masked_fill(tgt_out[:, :-1] == UNK, UNK)  # tgt_in is tgt_out, shifted
    tgt_unk = tgt_out == UNK  # (B, T): the next word is <unk>
    tgt_chars_in, tgt_chars_out = _decoder_io(torch.randint(2, K + 1, (B, T)), K, chars)  # (B, T, K) each
    inputs = (src, src_lengths, tgt_in, src_chars, char_lengths, None, tgt_unk, tgt_chars_in)

    def loss(out, tgt_out: Tensor, spelt: Tensor) -> Tensor:
        char_loss = F.cross_entropy(out.char_logits.flatten(0, 1), spelt.flatten(), ignore_index=PAD)
        return _token_loss(out, tgt_out) + char_loss

    return FamilyExample(
        name,
        model,
        inputs,
        src.numel() + tgt_in.numel(),
        (tgt_out, tgt_chars_out[tgt_unk]),
        loss,
        lambda model, inputs: model(*inputs).attention,
    )


@_family("show-attend-tell")
def _show_attend_tell(name: str) -> FamilyExample:
    """Show, Attend and Tell with soft attention (``attention/models/captioner.py``), on noise images;
    the map is α ``(B, T, G)``, zero rows after a caption's end."""
    vocab, T = 12, 6
    model = build(
        name,
        dict(
            vocab=vocab,
            embed_dim=8,
            hidden_dim=16,
            annotation_dim=8,
            attention_dim=8,
            bos_id=BOS,
            eos_id=EOS,
            image_height=8,
            image_width=16,
            cnn_channels=8,
            conv_layers=2,
            pools=2,
        ),
    )  # G = 2 × 4 locations
    images = torch.rand(B, 1, 8, 16)
    _, targets = _decoder_io(_lengths(T), T, vocab)  # y_1 … <eos>, (B, T)
    captions = torch.cat([torch.full((B, 1), BOS), targets], 1)  # (B, T + 1)
    return FamilyExample(
        name,
        model,
        (images, captions),
        captions.numel(),
        (targets,),
        _token_loss,
        lambda model, inputs: model(*inputs).weights,
    )


@_family("attention-pooling")
def _attention_pooling(name: str) -> FamilyExample:
    """Multi-dimensional attention pooling (``attention/models/featurewise.py``). The model returns
    ``P (B, T, F)``, a distribution over the words in dim 1; the map is ``(B, F, T)``."""
    model = build(name, dict(vocab=20, classes=3, embed_dim=8, hidden_dim=6, attention_dim=5, mlp_dim=8))
    return _classifier(
        name, model, _sentences(20), 3, lambda model, inputs: model(*inputs).attention["features"].transpose(1, 2)
    )  # (B, F, T)


@_family("bilstm-pooling")
def _bilstm_pooling(name: str) -> FamilyExample:
    """The BiLSTM mean-pooling baseline (``attention/models/pooling.py``): no attention."""
    model = build(name, dict(vocab=20, classes=3, embed_dim=8, hidden_dim=6, mlp_dim=8))
    return _classifier(name, model, _sentences(20), 3, _no_attention)


@_family("self-attentive")
def _self_attentive(name: str) -> FamilyExample:
    """Lin et al.'s structured self-attention (``attention/models/selfattentive.py``): rows ``(B, R, T)``."""
    model = build(name, dict(vocab=20, classes=3, embed_dim=8, hidden_dim=6, attention_dim=5, rows=3, mlp_dim=8))
    return _classifier(name, model, _sentences(20), 3, _named("rows"))


@_family("lstmn")
def _lstmn(name: str) -> FamilyExample:
    """The LSTMN (``attention/models/lstmn.py``): intra-attention ``(B, T, T)``, strictly lower
    triangular (the first word's row and padded rows are all 0)."""
    model = build(name, dict(vocab=20, classes=3, embed_dim=8, hidden_dim=8, attention_dim=6))
    return _classifier(name, model, _sentences(20), 3, _named("intra"))


@_family("han")
def _han(name: str) -> FamilyExample:
    """The hierarchical attention network (``attention/models/han.py``). The map is the word attention
    ``(B, N, T)`` (padded sentences all 0); the sentence attention is ``attention["sentence"]``."""
    model = build(name, dict(vocab=20, classes=3, embed_dim=8, hidden_dim=5, attention_dim=6))
    return _classifier(name, model, _document(20), 3, _named("word"))


@_family("memn2n")
def _memn2n(name: str) -> FamilyExample:
    """The end-to-end memory network (``attention/models/memn2n.py``): hops ``(B, K, N)`` over a story."""
    model = build(name, dict(vocab=20, answers=6, embed_dim=8, hops=2, memory_size=4))
    return _reader(name, model)


@_family("dmn")
def _dmn(name: str) -> FamilyExample:
    """The dynamic memory network (``attention/models/dmn.py``): gates ``(B, P, N)`` per pass."""
    model = build(name, dict(vocab=20, answers=6, embed_dim=8, hidden_dim=12, gate_dim=10, passes=2))
    return _reader(name, model)


@_family("dmn-paper")
def _dmn_paper(name: str) -> FamilyExample:
    """Kumar et al.'s DMN as written (``attention/models/dmn_paper.py``): sigmoid gates ``(B, P, N)`` per pass."""
    model = build(name, dict(vocab=20, answers=6, embed_dim=8, hidden_dim=12, gate_dim=10, passes=2))
    return _reader(name, model)


def _reader(name: str, model: nn.Module) -> FamilyExample:
    """A story of 4 sentences and a question, 6 answers: what memory networks read; map ``"hops"``."""
    story, _ = _document(20)
    question, _ = _document(20, N=1)
    question = question[:, 0]  # (B, J)
    return _classifier(name, model, (story, question), 6, _named("hops"), story.numel() + question.numel())


@_family("cmla")
def _cmla(name: str) -> FamilyExample:
    """Coupled multi-layer attentions (``attention/models/cmla.py``), a tagger: random aspect and
    opinion tags on the real words; the map stacks both kinds, ``(B, 2, layers, T)``."""
    model = build(name, dict(vocab=20, embed_dim=8, hidden_dim=5, slices=3, rnn_dim=4, layers=2))
    tokens, lengths = _sentences(20)
    padding = tokens == PAD
    aspect, opinion = (torch.randint(2, tokens.shape).masked_fill(padding, -100) for _ in range(2))  # (B, T)

    def loss(out, aspect: Tensor, opinion: Tensor) -> Tensor:
        return sum(
            F.cross_entropy(out.logits[kind].flatten(0, 1), tags.flatten(), ignore_index=-100)
            for kind, tags in (("aspect", aspect), ("opinion", opinion))
        )

    def weights(model: nn.Module, inputs: tuple) -> Tensor:
        maps = model(*inputs).attention
        return torch.stack([maps["aspect"], maps["opinion"]], 1)  # (B, 2, layers, T)

    return FamilyExample(name, model, (tokens, lengths), tokens.numel(), (aspect, opinion), loss, weights)


@_family("ntm")
def _ntm(name: str) -> FamilyExample:
    """A Neural Turing Machine (``attention/models/ntm.py``) on random bits (no padding: no lengths);
    the map stacks the read and write weightings, ``(B, 2, T, N)``."""
    bits, T = 4, 6
    model = build(name, dict(bits=bits, memory_slots=8, memory_width=6, controller_size=16))
    inputs = torch.randint(2, (B, T, bits + 1)).float()  # (B, T, bits + 1)

    def weights(model: nn.Module, inputs: tuple) -> Tensor:
        out = model(*inputs)
        return torch.stack([out.read_weights, out.write_weights], 1)  # (B, 2, T, N)

    return FamilyExample(
        name,
        model,
        (inputs,),
        B * T,
        (torch.randint(2, (B, T, bits)).float(),),
        lambda out, bits: _bits_loss(out.logits, bits),
        weights,
    )


@_family("copy-lstm")
def _copy_lstm(name: str) -> FamilyExample:
    """The NTM paper's LSTM baseline (``attention/models/ntm.py``): logits only, no attention."""
    bits, T = 4, 6
    model = build(name, dict(bits=bits, hidden=16))
    inputs = torch.randint(2, (B, T, bits + 1)).float()  # (B, T, bits + 1)
    return FamilyExample(
        name, model, (inputs,), B * T, (torch.randint(2, (B, T, bits)).float(),), _bits_loss, _no_attention
    )
