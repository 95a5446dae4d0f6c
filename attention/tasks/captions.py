"""Captioning a row of handwritten digits (chapter 8): "show, attend and tell" on a small scale.

Shape legend: B batch, H x W canvas, T caption length with ``<bos>`` and ``<eos>``, n digits
(the most in the batch), T' generated steps, gh x gw the model's annotation grid, G = gh * gw.

The examples are :class:`~attention.data.digits.DigitImage` canvases (real UCI digits, see
:mod:`attention.data.digits`); the caption is the digits as words in reading order. A
:class:`CaptionBatch` holds ``images (B, 1, H, W)``, ``captions (B, T)`` =
``[<bos>, w_1 .. w_n, <eos>]`` padded with ``<pad>`` = 0, the digits' ``boxes (B, n, 4)``
(top, left, bottom, right; padded with -1) and ``lengths (B,)``, the number of digits.

The contract with a captioning model (``attention/models/captioner.py``):

* ``model.loss(images (B, 1, H, W), captions (B, T)) -> (mean loss, n)``: the model defines its
  own objective (soft attention is trained by backpropagation, hard attention by REINFORCE with a
  baseline, Xu et al. 2015, §4), so :meth:`CaptionData.loss` only delegates to it;
* ``model.generate(images, max_len) -> (tokens (B, T'), attention (B, T', G))``: greedy decoding,
  tokens without ``<bos>``, each row stopping at ``<eos>`` (padded with 0 after it), and the
  weights over the G grid cells at each step;
* ``model.grid = (gh, gw)``: the annotation grid's shape, grid cell g = r * gw + c.

    data = digit_captions()               # 6,000 / 1,000 / 1,000 canvases of 3 digits
    data.evaluate(model)["exact_match"]
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

import torch
from torch import Tensor, nn

from ..data.digits import WORDS, DigitImage, caption, compose_split, load_digits, split_pools
from ..data.vocab import SPECIALS, Vocab
from ..metrics import corpus_bleu
from .base import Task, fingerprint_tokens

__all__ = ["CaptionBatch", "CaptionData", "digit_captions", "caption_vocab", "alignment_hit"]


def caption_vocab() -> Vocab:
    """``<pad>`` = 0, ``<unk>`` = 1 (never used), ``<bos>`` = 2, ``<eos>`` = 3, then ``zero`` .. ``nine`` (4 .. 13)."""
    return Vocab(SPECIALS + WORDS)


@dataclass
class CaptionBatch:
    """A batch of canvases and their captions (CPU tensors until ``.to(device)``)."""

    images: Tensor  # (B, 1, H, W) float in [0, 1]
    captions: Tensor  # (B, T) long, [<bos>, w_1 .. w_n, <eos>] padded with <pad> = 0
    boxes: Tensor  # (B, n, 4) long, (top, left, bottom, right) of each digit, -1 = padding
    lengths: Tensor  # (B,) long, the number of digits of each canvas

    def to(self, device) -> "CaptionBatch":
        return CaptionBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def alignment_hit(weights: Tensor, box, grid: tuple[int, int], height: int, width: int) -> bool:
    """Does the grid cell with the largest of ``weights (G,)`` overlap ``box`` (top, left, bottom,
    right)? Cell (r, c) covers the pixels [r H/gh, (r+1) H/gh) x [c W/gw, (c+1) W/gw)."""
    gh, gw = grid
    r, c = divmod(int(weights.argmax()), gw)
    top, left, bottom, right = box
    return (
        r * height / gh < bottom
        and top < (r + 1) * height / gh
        and c * width / gw < right
        and left < (c + 1) * width / gw
    )


@dataclass
class CaptionData(Task):
    """Digit canvases and their captions as a :class:`Task`; the metric is ``exact_match``."""

    name: str
    train: list  # DigitImage
    valid: list
    test: list
    vocab: Vocab
    height: int = 16
    width: int = 40
    n_digits: int | tuple[int, int] = 3
    seed: int = 0
    metric = "exact_match"

    def collate(self, examples: Sequence[DigitImage]) -> CaptionBatch:
        if not examples:
            raise ValueError("a batch needs at least one example")
        B, n = len(examples), max(len(e) for e in examples)
        images = torch.stack([e.image for e in examples])[:, None]  # (B, 1, H, W)
        captions = torch.zeros(B, n + 2, dtype=torch.long)  # (B, T), T = n + 2
        boxes = torch.full((B, n, 4), -1, dtype=torch.long)
        for b, e in enumerate(examples):
            ids = self.vocab.encode(caption(e), add_bos_eos=True)
            captions[b, : len(ids)] = torch.tensor(ids)
            boxes[b, : len(e)] = torch.tensor(e.boxes, dtype=torch.long)
        return CaptionBatch(images, captions, boxes, torch.tensor([len(e) for e in examples]))

    def _batches(self, examples: Sequence[DigitImage], batch_size: int, order: list[int]):
        for i in range(0, len(order), batch_size):
            yield self.collate([examples[j] for j in order[i : i + batch_size]])

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        g = torch.Generator().manual_seed(seed * 100_003 + epoch)
        return self._batches(self.train, batch_size, torch.randperm(len(self.train), generator=g).tolist())

    def valid_batches(self):
        return self._batches(self.valid, 128, list(range(len(self.valid))))

    def loss(self, model: nn.Module, batch: CaptionBatch) -> tuple[Tensor, int]:
        """The model's own objective: ``model.loss(images, captions) -> (mean loss, n)`` (see the
        module docstring; soft and hard attention are trained differently)."""
        out = model.loss(batch.images, batch.captions)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError("model.loss(images, captions) must return (mean loss, n)")
        return out

    def _hypothesis(self, row: list[int]) -> tuple[list[str], int]:
        """The words of one generated row and its number of steps (through ``<eos>``, if any)."""
        steps = row.index(self.vocab.eos_id) + 1 if self.vocab.eos_id in row else len(row)
        return self.vocab.decode(row), steps

    @torch.no_grad()
    def evaluate(
        self,
        model: nn.Module,
        examples: Sequence[DigitImage] | None = None,
        batch_size: int = 128,
        max_len: int | None = None,
    ) -> dict:
        """Greedy captions of ``examples`` (default: the test split), scored.

        Returns a dict with ``exact_match`` (share of captions entirely right), ``bleu`` (corpus
        BLEU-4, 0..100, of the captions as sentences ending in "." for ``<eos>``: with 3-word
        captions and no end mark there would be no 4-grams and BLEU would be 0 whatever the
        model said), ``digit_accuracy`` (share of reference positions k with the right word at
        k), ``alignment`` (over generated words at positions k < n: share whose most attended
        grid cell overlaps digit k's box; ``alignment_steps`` counts them), ``n``,
        ``hypotheses`` (word lists) and ``attention``: per example a ``(T', gh, gw)`` tensor,
        the steps through ``<eos>``.
        """
        examples = self.test if examples is None else examples
        model.eval()
        device = next(iter(model.parameters()), torch.empty(0)).device
        gh, gw = model.grid
        if max_len is None:
            max_len = max((len(e) for e in examples), default=0) + 2
        hyps, maps, exact, right, positions, hits, steps_aligned = [], [], 0, 0, 0, 0, 0
        hyp_text, ref_text = [], []
        for i in range(0, len(examples), batch_size):
            chunk = examples[i : i + batch_size]
            batch = self.collate(chunk).to(device)
            tokens, attention = model.generate(batch.images, max_len)  # (B, T'), (B, T', G)
            if attention.shape[-1] != gh * gw:
                raise ValueError(f"the attention has {attention.shape[-1]} cells but model.grid is {(gh, gw)}")
            tokens, attention = tokens.cpu(), attention.float().cpu()
            for b, e in enumerate(chunk):
                words, steps = self._hypothesis(tokens[b].tolist())
                ref = caption(e)
                hyps.append(words)
                maps.append(attention[b, :steps].reshape(steps, gh, gw))
                exact += words == ref
                right += sum(w == r for w, r in zip(words, ref))
                positions += len(ref)
                for k in range(min(len(words), len(e))):
                    hits += alignment_hit(attention[b, k], e.boxes[k], (gh, gw), self.height, self.width)
                    steps_aligned += 1
                ended = self.vocab.eos_id in tokens[b].tolist()
                hyp_text.append(" ".join(words) + "." * ended)  # detokenized: sacreBLEU splits off the "."
                ref_text.append(" ".join(ref) + ".")
        n = len(examples)
        return {
            "exact_match": exact / max(n, 1),
            "bleu": corpus_bleu(hyp_text, ref_text).score if n else 0.0,
            "digit_accuracy": right / max(positions, 1),
            "alignment": hits / max(steps_aligned, 1),
            "alignment_steps": steps_aligned,
            "n": n,
            "hypotheses": hyps,
            "attention": maps,
        }

    def validation_metric(self, model: nn.Module) -> float:
        return self.evaluate(model, self.valid)["exact_match"]

    def fingerprint(self) -> dict:
        def key(examples):
            return [(e.sources, e.boxes) for e in examples]

        return {
            "task": "captions",
            "name": self.name,
            "seed": self.seed,
            "height": self.height,
            "width": self.width,
            "n_digits": self.n_digits,
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens(key(self.train), key(self.valid), key(self.test)),
            "vocab": fingerprint_tokens(self.vocab.itos),
        }


def digit_captions(
    n_train: int = 6000,
    n_valid: int = 1000,
    n_test: int = 1000,
    seed: int = 0,
    height: int = 16,
    width: int = 40,
    n_digits: int | tuple[int, int] = 3,
    cache_dir=None,
) -> CaptionData:
    """Canvases of real UCI digits (:mod:`attention.data.digits`) to caption: each split is composed
    from its own pool of digit images (70 / 15 / 15 % of the 1,797, stratified), so the validation
    and test canvases hold only digit images never seen in training."""
    images, labels = load_digits(cache_dir)
    pools = split_pools(labels, seed)
    splits = [
        compose_split(images, labels, pools[name], n, seed * 3 + i, height, width, n_digits)
        for i, (name, n) in enumerate([("train", n_train), ("valid", n_valid), ("test", n_test)])
    ]
    return CaptionData("digits-captions", *splits, caption_vocab(), height, width, n_digits, seed)
