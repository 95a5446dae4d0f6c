"""Handwritten digits, and canvases holding a row of them to caption (chapter 8).

Shape legend: N digit images, H x W canvas (default 16 x 40), k digits on a canvas.

Source (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:
PyPI ``scikit-learn`` 1.9.1, the wheel
``scikit_learn-1.9.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl`` (about 9 MB,
read from the wheel, never installed), the file ``sklearn/datasets/data/digits.csv.gz`` (57,523
bytes). The wheel is platform-specific: its own sha256 is pinned, and so is the member's, so a
reader on another Python or platform (Colab's 3.12) whose wheel holds a byte-identical file is
accepted. License: BSD-3-Clause (scikit-learn). The data are the test set of the UCI "Optical
Recognition of Handwritten Digits" (Alpaydin & Kaynak, 1998): **1,797 images of 8 x 8 pixels**,
each pixel the count (0..16) of set pixels in a 4 x 4 block of a 32 x 32 bitmap, about 180 of
each digit 0..9. Each CSV row is the 64 pixel values (row by row), then the label.

Composition (:func:`compose_split`): the 1,797 digit images are first split into disjoint pools
(:func:`split_pools`: 70 / 15 / 15 %, stratified by label, from a seed), so no digit image of the
test canvases is ever seen in training. A canvas of ``height x width`` zeros then receives a row
of ``n_digits`` digits drawn from one pool, left to right: the free columns
``width - 8 k`` are spread over the k + 1 gaps at random (so the 8 x 8 boxes never overlap) and
each digit gets a random vertical offset in ``0 .. height - 8``. Pixels are scaled to [0, 1]
(value / 16). Each :class:`DigitImage` records the canvas, the labels, the boxes
``(top, left, bottom, right)`` (bottom and right exclusive) and the source indices, in reading
order; :func:`verify` re-renders it from the sources and boxes and checks every fact.

The caption of a canvas is its digits as words in reading order (:data:`WORDS`): a canvas with
3, 1, 4 is captioned ``three one four``.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass

import torch
from torch import Tensor

from .cache import SOURCES, fetch, read_member

__all__ = [
    "WORDS",
    "DIGIT",
    "DigitImage",
    "parse_digits",
    "load_digits",
    "split_pools",
    "render",
    "compose_split",
    "verify",
    "caption",
]

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
DIGIT = 8  # the side of a digit image, in pixels
MAX_VALUE = 16  # the largest pixel value of the UCI images


@dataclass(frozen=True)
class DigitImage:
    """A canvas with a row of digits, in reading order (left to right)."""

    image: Tensor  # (H, W) float in [0, 1]
    labels: tuple[int, ...]  # (k,) the digits 0..9
    boxes: tuple[tuple[int, int, int, int], ...]  # (k,) (top, left, bottom, right), bottom/right exclusive
    sources: tuple[int, ...]  # (k,) indices into load_digits()'s images

    def __len__(self) -> int:
        return len(self.labels)


def caption(example: DigitImage) -> list[str]:
    """The caption's words: the digits as words, in reading order."""
    return [WORDS[d] for d in example.labels]


def parse_digits(text: str, where: str = "digits.csv") -> tuple[Tensor, Tensor]:
    """Images ``(N, 8, 8)`` uint8 in 0..16 and labels ``(N,)`` long from the CSV text.

    Raises ``ValueError`` naming ``where`` and the row (1-based) of a malformed row.
    """
    images, labels = [], []
    for row, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != DIGIT * DIGIT + 1:
            raise ValueError(
                f"{where}, row {row}: expected {DIGIT * DIGIT} pixels and a label, got {len(cells)} values"
            )
        try:
            values = [float(c) for c in cells]
        except ValueError:
            raise ValueError(f"{where}, row {row}: a value is not a number: {line[:60]!r}") from None
        if any(v != int(v) for v in values):
            raise ValueError(f"{where}, row {row}: values must be whole numbers")
        *pixels, label = (int(v) for v in values)
        if not all(0 <= p <= MAX_VALUE for p in pixels):
            raise ValueError(f"{where}, row {row}: pixel values must lie in 0..{MAX_VALUE}")
        if not 0 <= label <= 9:
            raise ValueError(f"{where}, row {row}: the label {label} is not a digit 0..9")
        images.append(pixels)
        labels.append(label)
    if not images:
        raise ValueError(f"{where}: no rows")
    return (
        torch.tensor(images, dtype=torch.uint8).view(-1, DIGIT, DIGIT),  # (N, 8, 8)
        torch.tensor(labels, dtype=torch.long),
    )


def load_digits(cache_dir: str | os.PathLike | None = None) -> tuple[Tensor, Tensor]:
    """The 1,797 UCI digits from the pinned scikit-learn wheel: images ``(1797, 8, 8)`` uint8 in
    0..16 and labels ``(1797,)`` long; see the module docstring."""
    source = SOURCES["digits"]
    raw = gzip.decompress(read_member(fetch(source, cache_dir), source.member))
    return parse_digits(raw.decode("ascii"), where=source.member)


def split_pools(
    labels: Tensor,
    seed: int = 0,
    fractions: tuple[float, float, float] = (0.7, 0.15, 0.15),
) -> dict[str, list[int]]:
    """Disjoint pools ``{"train", "valid", "test"}`` of digit-image indices, stratified by label.

    Each digit's images are permuted from ``seed`` and cut at the cumulative ``fractions``; every
    pool is returned sorted. The same labels and seed always give the same pools.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"fractions must be three shares >= 0 summing to 1; got {fractions}")
    g = torch.Generator().manual_seed(seed)
    pools = {"train": [], "valid": [], "test": []}
    for d in range(10):
        idx = (labels == d).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=g)].tolist()
        a = round(fractions[0] * len(idx))
        b = round((fractions[0] + fractions[1]) * len(idx))
        pools["train"] += idx[:a]
        pools["valid"] += idx[a:b]
        pools["test"] += idx[b:]
    return {k: sorted(v) for k, v in pools.items()}


def render(sources, boxes, images: Tensor, height: int, width: int) -> Tensor:
    """The ``(height, width)`` float canvas with ``images[s] / 16`` pasted into each box."""
    canvas = torch.zeros(height, width)
    for s, (top, left, bottom, right) in zip(sources, boxes):
        canvas[top:bottom, left:right] = images[s].float() / MAX_VALUE
    return canvas


def _range(n_digits: int | tuple[int, int]) -> tuple[int, int]:
    lo, hi = (n_digits, n_digits) if isinstance(n_digits, int) else tuple(n_digits)
    if not 1 <= lo <= hi:
        raise ValueError(f"n_digits must be >= 1 or a range (lo, hi) with 1 <= lo <= hi; got {n_digits!r}")
    return lo, hi


def compose_split(
    images: Tensor,
    labels: Tensor,
    pool,
    n: int,
    seed: int,
    height: int = 16,
    width: int = 40,
    n_digits: int | tuple[int, int] = 3,
) -> list[DigitImage]:
    """``n`` canvases of ``height x width``, each a row of digits drawn from ``pool`` (indices into
    ``images (N, 8, 8)``) with replacement; ``n_digits`` a number or a range ``(lo, hi)``.

    Deterministic under ``seed`` (a private generator; the global RNG is untouched).
    """
    lo, hi = _range(n_digits)
    if height < DIGIT or width < DIGIT * hi:
        raise ValueError(
            f"a {height} x {width} canvas cannot hold {hi} digits of {DIGIT} x {DIGIT} side by "
            f"side; need height >= {DIGIT} and width >= {DIGIT * hi}"
        )
    pool = torch.as_tensor(list(pool), dtype=torch.long)
    if n > 0 and len(pool) == 0:
        raise ValueError("the pool of digit images is empty")
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        k = int(torch.randint(lo, hi + 1, (1,), generator=g))
        sources = pool[torch.randint(len(pool), (k,), generator=g)].tolist()
        free = width - DIGIT * k  # columns left empty, spread over the k + 1 gaps
        offsets = torch.randint(free + 1, (k,), generator=g).sort().values.tolist()
        tops = torch.randint(height - DIGIT + 1, (k,), generator=g).tolist()
        boxes = tuple((t, o + DIGIT * i, t + DIGIT, o + DIGIT * (i + 1)) for i, (t, o) in enumerate(zip(tops, offsets)))
        out.append(
            DigitImage(
                render(sources, boxes, images, height, width),
                tuple(int(labels[s]) for s in sources),
                boxes,
                tuple(sources),
            )
        )
    return out


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def verify(example: DigitImage, images: Tensor, labels: Tensor) -> None:
    """Check a composed canvas against the digit images it claims to hold; raise ``ValueError``
    naming the first thing wrong: the counts, a box's size or place (inside the canvas, no
    overlap, reading order), a label that is not its source's, or a pixel that differs from the
    canvas re-rendered from ``sources`` and ``boxes``."""
    if example.image.dim() != 2:
        raise ValueError(f"the image must be (H, W); got {tuple(example.image.shape)}")
    H, W = example.image.shape
    k = len(example.sources)
    if not (len(example.labels) == len(example.boxes) == k) or k == 0:
        raise ValueError(
            f"an example needs as many labels, boxes and sources (>= 1); got "
            f"{len(example.labels)}, {len(example.boxes)}, {k}"
        )
    for i, box in enumerate(example.boxes):
        top, left, bottom, right = box
        if bottom - top != DIGIT or right - left != DIGIT:
            raise ValueError(f"box {i} {box} is not {DIGIT} x {DIGIT}")
        if top < 0 or left < 0 or bottom > H or right > W:
            raise ValueError(f"box {i} {box} lies outside the {H} x {W} canvas")
    for i in range(k):
        for j in range(i + 1, k):
            if _overlap(example.boxes[i], example.boxes[j]):
                raise ValueError(f"boxes {i} {example.boxes[i]} and {j} {example.boxes[j]} overlap")
    for i in range(1, k):
        if example.boxes[i][1] <= example.boxes[i - 1][1]:
            raise ValueError(
                f"boxes are not in reading order: box {i} starts at x = {example.boxes[i][1]}, "
                f"box {i - 1} at x = {example.boxes[i - 1][1]}"
            )
    for i, s in enumerate(example.sources):
        if not 0 <= s < len(images):
            raise ValueError(f"source {i} is {s}, not an index into the {len(images)} digit images")
        if example.labels[i] != int(labels[s]):
            raise ValueError(f"label {i} is {example.labels[i]} but its source image {s} is a {int(labels[s])}")
    expected = render(example.sources, example.boxes, images, H, W)
    wrong = (expected != example.image).nonzero()
    if len(wrong):
        r, c = wrong[0].tolist()
        raise ValueError(
            f"{len(wrong)} pixels differ from the canvas re-rendered from the sources and boxes, "
            f"first at (row {r}, column {c}): {float(example.image[r, c])} instead of "
            f"{float(expected[r, c])}"
        )
