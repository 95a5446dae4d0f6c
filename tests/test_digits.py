"""attention.data.digits and attention.tasks.captions: the UCI digits, canvases, the checker, the task.

Most tests run on small digit images made here. The ``real`` tests read scikit-learn's wheel
through the cache (~9 MB the first time; skipped when offline and not cached, except under CI).
"""

import dataclasses
import gzip
import hashlib
import subprocess
import zipfile

import pytest
import torch
from conftest import load_or_skip
from torch import nn

from attention.data import SOURCES, fetch, read_member
from attention.data.digits import WORDS, caption, compose_split, load_digits, parse_digits, render, split_pools, verify
from attention.tasks.captions import CaptionBatch, CaptionData, caption_vocab, digit_captions

SOURCE = SOURCES["digits"]


def fake_digits(n=200):
    """``n`` random 8 x 8 images in 0..16, labels 0..9 in turn."""
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 17, (n, 8, 8), generator=g, dtype=torch.uint8), torch.arange(n) % 10


def csv_row(pixels, label):
    return ",".join(str(v) for v in list(pixels) + [label])


def fake_task(n_digits=3, n=(40, 10, 12), height=16, width=40):
    images, labels = fake_digits()
    pools = split_pools(labels, seed=0)
    splits = [
        compose_split(images, labels, pools[k], m, i, height, width, n_digits)
        for i, (k, m) in enumerate(zip(("train", "valid", "test"), n))
    ]
    return CaptionData("digits-captions", *splits, caption_vocab(), height, width, n_digits, 0)


# ---------------------------------------------------------------- the source and the parser


def test_source_is_pinned_to_the_wheel_and_its_member():
    assert (SOURCE.kind, SOURCE.name, SOURCE.version) == ("pypi-wheel", "scikit-learn", "1.9.1")
    assert SOURCE.artifact == "scikit_learn-1.9.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    assert SOURCE.member == "sklearn/datasets/data/digits.csv.gz"
    assert SOURCE.member_sha256 == "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"


def test_parse_digits_shapes_and_values():
    text = csv_row([min(v, 16) for v in range(64)], 3) + "\n" + csv_row([0] * 64, 9) + "\n\n"
    images, labels = parse_digits(text)
    assert images.shape == (2, 8, 8) and images.dtype == torch.uint8
    assert labels.tolist() == [3, 9] and labels.dtype == torch.long
    assert images[0, 0, 5] == 5 and images[0, 1, 2] == 10 and images[0, 7, 7] == 16  # row by row
    assert parse_digits("0.0," * 64 + "1.0")[1].tolist() == [1]  # written as floats: fine


@pytest.mark.parametrize(
    "row, message",
    [
        (csv_row([0] * 63, 1), r"digits.csv, row 2: expected 64 pixels and a label, got 64 values"),
        (csv_row([0] * 63 + ["x"], 1), r"digits.csv, row 2: a value is not a number"),
        (csv_row([0] * 63 + [17], 1), r"digits.csv, row 2: pixel values must lie in 0..16"),
        (csv_row([0] * 64, 10), r"digits.csv, row 2: the label 10 is not a digit"),
        (csv_row([0.5] * 64, 1), r"digits.csv, row 2: values must be whole numbers"),
    ],
)
def test_malformed_csv_is_rejected_with_the_row(row, message):
    with pytest.raises(ValueError, match=message):
        parse_digits(csv_row([0] * 64, 0) + "\n" + row)
    with pytest.raises(ValueError, match="no rows"):
        parse_digits("\n")


def test_corrupted_cached_wheel_gives_the_sha256_error(tmp_path):
    bad = tmp_path / SOURCE.artifact
    bad.write_bytes(b"not a wheel")
    with pytest.raises(ValueError, match=f"(?s)sha256 mismatch for scikit-learn 1.9.1.*expected {SOURCE.sha256}"):
        load_digits(tmp_path)
    assert bad.read_bytes() == b"not a wheel"  # left in place for inspection
    # a zip whose digits.csv.gz is not the pinned one is refused too (the member's hash)
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr(SOURCE.member, gzip.compress((csv_row([0] * 64, 1) + "\n").encode()))
    with pytest.raises(ValueError, match="sha256 mismatch"):
        fetch(SOURCE, tmp_path)


def test_offline_without_cache_says_what_to_do(tmp_path, monkeypatch):
    def run(cmd, cwd, **kwargs):
        raise subprocess.CalledProcessError(1, cmd, stderr="ERROR: network is unreachable")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(
        RuntimeError,
        match=r"(?s)offline.*pip download --no-deps --only-binary=:all: "
        r"scikit-learn==1\.9\.1",
    ):
        load_digits(tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- pools, composition, the checker


def test_pools_are_disjoint_stratified_and_deterministic():
    images, labels = fake_digits(1000)
    pools = split_pools(labels, seed=0)
    assert pools == split_pools(labels, seed=0) and pools != split_pools(labels, seed=1)
    sets = {k: set(v) for k, v in pools.items()}
    assert not (sets["train"] & sets["valid"] or sets["train"] & sets["test"] or sets["valid"] & sets["test"])
    assert set().union(*sets.values()) == set(range(1000))
    assert [len(pools[k]) for k in ("train", "valid", "test")] == [700, 150, 150]
    assert labels[pools["test"]].bincount().tolist() == [15] * 10  # stratified
    with pytest.raises(ValueError, match="summing to 1"):
        split_pools(labels, fractions=(0.5, 0.2, 0.2))


def test_composition_is_deterministic_valid_and_draws_from_its_pool():
    images, labels = fake_digits()
    pool = split_pools(labels)["test"]
    a = compose_split(images, labels, pool, 30, seed=5)
    b = compose_split(images, labels, pool, 30, seed=5)
    assert all(torch.equal(x.image, y.image) and x.boxes == y.boxes and x.sources == y.sources for x, y in zip(a, b))
    assert [x.sources for x in a] != [x.sources for x in compose_split(images, labels, pool, 30, seed=6)]
    for e in a:
        verify(e, images, labels)
        assert e.image.shape == (16, 40) and e.image.dtype == torch.float32 and len(e) == 3
        assert set(e.sources) <= set(pool) and 0 <= e.image.min() and e.image.max() <= 1
        assert caption(e) == [WORDS[d] for d in e.labels]
    varied = compose_split(images, labels, pool, 40, seed=0, height=12, width=48, n_digits=(2, 5))
    assert {len(e) for e in varied} == {2, 3, 4, 5}
    for e in varied:
        verify(e, images, labels)
    with pytest.raises(ValueError, match="cannot hold 6 digits"):
        compose_split(images, labels, pool, 1, 0, width=40, n_digits=6)
    with pytest.raises(ValueError, match="n_digits"):
        compose_split(images, labels, pool, 1, 0, n_digits=(3, 2))


def test_verify_names_what_is_wrong():
    images, labels = fake_digits()
    e = compose_split(images, labels, range(200), 1, seed=0)[0]
    verify(e, images, labels)
    tampered = e.image.clone()
    tampered[e.boxes[1][0] + 2, e.boxes[1][1] + 3] += 0.5
    with pytest.raises(ValueError, match=r"1 pixels differ .* first at \(row"):
        verify(dataclasses.replace(e, image=tampered), images, labels)
    swapped = (e.labels[1], e.labels[0]) + e.labels[2:]
    assert swapped != e.labels
    with pytest.raises(ValueError, match=r"label 0 is \d but its source image \d+ is a \d"):
        verify(dataclasses.replace(e, labels=swapped), images, labels)
    t, l, b, r = e.boxes[0]
    overlapping = (e.boxes[0], (t, l + 4, b, r + 4)) + e.boxes[2:]
    with pytest.raises(ValueError, match=r"boxes 0 .* and 1 .* overlap"):
        verify(dataclasses.replace(e, boxes=overlapping), images, labels)
    with pytest.raises(ValueError, match="outside the 16 x 40 canvas"):
        verify(dataclasses.replace(e, boxes=((t, -1, b, 7),) + e.boxes[1:]), images, labels)
    with pytest.raises(ValueError, match="is not 8 x 8"):
        verify(dataclasses.replace(e, boxes=((t, l, b, r + 1),) + e.boxes[1:]), images, labels)
    reversed_ = dataclasses.replace(e, boxes=e.boxes[::-1], sources=e.sources[::-1], labels=e.labels[::-1])
    with pytest.raises(ValueError, match="not in reading order"):
        verify(reversed_, images, labels)
    with pytest.raises(ValueError, match="as many labels, boxes and sources"):
        verify(dataclasses.replace(e, labels=e.labels[:2]), images, labels)
    assert torch.equal(render(e.sources, e.boxes, images, 16, 40), e.image)


# ---------------------------------------------------------------- the task


def test_batches_have_the_documented_shapes_and_padding():
    task = fake_task(n_digits=(2, 3), n=(40, 10, 12))
    batch = task.collate(task.train[:8])
    B, n = 8, max(len(e) for e in task.train[:8])
    assert batch.images.shape == (B, 1, 16, 40) and batch.images.dtype == torch.float32
    assert batch.captions.shape == (B, n + 2) and batch.boxes.shape == (B, n, 4)
    assert batch.lengths.tolist() == [len(e) for e in task.train[:8]]
    vocab = task.vocab
    assert vocab.itos[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"] and vocab.itos[4:] == list(WORDS)
    for b, e in enumerate(task.train[:8]):
        k = len(e)
        row = batch.captions[b].tolist()
        assert row[0] == vocab.bos_id and row[k + 1] == vocab.eos_id and row[k + 2 :] == [0] * (n - k)
        assert vocab.decode(row) == caption(e)
        assert batch.boxes[b, :k].tolist() == [list(x) for x in e.boxes]
        assert (batch.boxes[b, k:] == -1).all()
    assert isinstance(batch.to("cpu"), CaptionBatch)
    epoch = [x.lengths.tolist() for x in task.train_batches(16, seed=0, epoch=0)]
    assert epoch == [x.lengths.tolist() for x in task.train_batches(16, seed=0, epoch=0)]
    assert sum(len(x) for x in epoch) == 40 and sum(len(x.lengths) for x in task.valid_batches()) == 10


class FakeCaptioner(nn.Module):
    """Looks each canvas up among ``examples`` and answers from its record: the right caption and
    attention on the grid cell holding each digit's centre, or (``wrong``) the caption reversed,
    with attention on the first cell."""

    grid = (2, 5)

    def __init__(self, examples, vocab, wrong=False):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.examples, self.vocab, self.wrong = list(examples), vocab, wrong
        self.seen_loss = None

    def loss(self, images, captions):
        self.seen_loss = (images.shape, captions.shape)
        return (images.mean() * self.scale), captions.shape[0]

    def generate(self, images, max_len):
        B, G = images.shape[0], self.grid[0] * self.grid[1]
        tokens = torch.zeros(B, max_len, dtype=torch.long)
        attention = torch.full((B, max_len, G), 1.0 / G)
        for b in range(B):
            e = next(x for x in self.examples if torch.equal(x.image, images[b, 0]))
            words = caption(e)[::-1] if self.wrong else caption(e)
            ids = self.vocab.encode(words) + [self.vocab.eos_id]
            tokens[b, : len(ids)] = torch.tensor(ids)
            for k, (t, l, _bottom, _r) in enumerate(e.boxes):
                cell = ((t + 4) * 2 // 16) * 5 + (l + 4) * 5 // 40
                attention[b, k] = 0.0
                attention[b, k, 0 if self.wrong else cell] = 1.0
        return tokens, attention


def test_evaluate_a_perfect_and_a_wrong_captioner():
    task = fake_task(n=(10, 10, 30))
    good = task.evaluate(FakeCaptioner(task.test, task.vocab), batch_size=7)
    assert good["exact_match"] == 1.0 and good["digit_accuracy"] == 1.0 and good["alignment"] == 1.0
    assert good["bleu"] == pytest.approx(100.0) and good["n"] == 30 and good["alignment_steps"] == 90
    assert len(good["attention"]) == 30 and good["attention"][0].shape == (4, 2, 5)  # 3 words + <eos>
    assert good["hypotheses"][0] == caption(task.test[0])
    bad = task.evaluate(FakeCaptioner(task.test, task.vocab, wrong=True))
    assert bad["exact_match"] < 1.0 and bad["digit_accuracy"] < 1.0 and bad["alignment"] < 1.0
    assert bad["bleu"] < good["bleu"]
    model = FakeCaptioner(task.valid, task.vocab)
    assert task.validation_metric(model) == 1.0
    batch = next(iter(task.valid_batches()))
    loss, n = task.loss(model, batch)
    assert n == 10 and model.seen_loss == ((10, 1, 16, 40), (10, 5)) and torch.isfinite(loss)


def test_fingerprint_changes_with_the_examples():
    a, b = fake_task(), fake_task(n=(41, 10, 12))
    assert a.fingerprint() == fake_task().fingerprint() and a.fingerprint() != b.fingerprint()
    assert a.name == "digits-captions" and a.metric == "exact_match"


# ---------------------------------------------------------------- the real digits


def test_real_digits_and_captions(tmp_path, capsys):
    images, labels = load_or_skip(load_digits)
    assert images.shape == (1797, 8, 8) and images.dtype == torch.uint8 and int(images.max()) == 16
    assert labels.shape == (1797,) and labels.min() == 0 and labels.max() == 9
    assert labels.bincount().tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # another build of the wheel with a byte-identical member is accepted (Colab's Python)
    member = read_member(fetch(SOURCE), SOURCE.member)
    assert len(member) == 57523 and hashlib.sha256(member).hexdigest() == SOURCE.member_sha256
    with zipfile.ZipFile(tmp_path / SOURCE.artifact, "w") as z:
        z.writestr(SOURCE.member, member)
    other_images, other_labels = load_digits(tmp_path)
    assert torch.equal(other_images, images) and torch.equal(other_labels, labels)

    data = digit_captions(n_train=300, n_valid=50, n_test=50)
    pools = split_pools(labels, data.seed)
    test_pool = set(pools["test"])
    assert all(set(e.sources) <= test_pool for e in data.test)
    assert not {s for e in data.train for s in e.sources} & (
        {s for e in data.test for s in e.sources} | {s for e in data.valid for s in e.sources}
    )
    for e in data.train + data.valid + data.test:
        verify(e, images, labels)
    assert data.fingerprint() == digit_captions(n_train=300, n_valid=50, n_test=50).fingerprint()
    with capsys.disabled():
        print(f"\ndigits: {len(images)} images; pools {[len(v) for v in pools.values()]}")
