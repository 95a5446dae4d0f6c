"""The playground (book/playground.md): the book's RNNsearch models exported to ONNX
(``python -m attention export-web``), tokenised in JavaScript as in Python, and equal to PyTorch.

The browser half (the page types a sentence and a date and gets the Python model's output) is in
tests/test_site.py."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from babel.dates import format_date
from conftest import load_or_skip

from attention import experiments as ex
from attention.book import webexport
from attention.book.webexport import OnnxTranslator, parity, tokenize

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "_build" / "html" / "playground-models"
ORT_VENDORED = ROOT / "_build" / "html" / "vendor" / "onnxruntime"


@pytest.fixture(scope="module")
def dates():
    return ex.dates_data(n=4000)


def test_dates_tokenize_as_the_data_does_from_the_text_people_write(dates):
    for pair in dates.valid + dates.test:
        written = format_date(pair.date, format=pair.style, locale=pair.language)  # CLDR, as babel writes it
        assert tokenize(written, "dates", dates.src_vocab) == list(pair.src), written


def test_the_dates_tokenizer_cuts_letter_runs_into_known_pieces(dates):
    v = dates.src_vocab
    assert tokenize("1984年3月27日星期二", "dates", v) == ["1984", "年", "3", "月", "27", "日", "星期二"]
    assert tokenize("27. März 2024", "dates", v) == ["27", ".", "März", "2024"]
    assert tokenize("Zorglub 3", "dates", v) == ["Zorglub", "3"]  # unknown: one token, read as <unk>
    with pytest.raises(ValueError, match="tokenizer must be"):
        tokenize("x", "words", v)


def test_chinese_is_read_character_by_character():
    data = load_or_skip(ex.hsk_data)
    for pair in data.test[:200]:
        assert tokenize(pair.meta["src_text"], "chars") == list(pair.src)


def test_only_rnnsearch_models_are_exported(dates, tmp_path):
    luong = ex.build_model(dates, attention="general", model="luong")
    with pytest.raises(ValueError, match="the playground exports RNNsearch"):
        webexport.export_model(luong, dates, tmp_path, "dates")


@pytest.mark.parametrize("name", ["dates", "dates-transformer"])
def test_the_exported_date_models_decode_like_pytorch(name, tmp_path):
    """RNNsearch (encoder + one step with its state) and the Transformer (encoder + the prefix's last
    position, every layer's and head's cross-attention) give PyTorch's greedy outputs and weights."""
    model, data = webexport.playground_model(name)
    entry = webexport.export_model(model, data, tmp_path, name)
    assert set(entry["files"]) == {"encoder.onnx", "step.onnx", "vocab.json"}
    meta = json.loads((tmp_path / name / "vocab.json").read_text())
    assert meta["src"] == data.src_vocab.itos and meta["examples"][0]["tokens"] == list(data.test[0].src)
    translator = OnnxTranslator.load(tmp_path / name)
    result = parity(model, data, translator, data.test[:80], max_len=12)
    assert result["token_agreement"] >= 0.99 and result["max_weight_diff"] <= 1e-4, result
    _, weights = translator.greedy(data.src_vocab.encode(data.test[0].src), 12)
    if name == "dates-transformer":
        assert meta["kind"] == "transformer" and weights.shape[1:] == (
            meta["layers"],
            meta["heads"],
            len(data.test[0].src),
        )
    else:
        assert meta["kind"] == "rnnsearch" and weights.shape[1:] == (len(data.test[0].src),)
    torch.testing.assert_close(torch.from_numpy(weights).sum(-1), torch.ones(weights.shape[:-1]))
    _steered_like_pytorch(model, data, translator, name)


def _steered_like_pytorch(model, data, translator, name):
    """The step graphs take the weights: the model's own weights fed back give its own output, and
    an edited step (all the weight on one source token, at step 0 or 1) gives, through ONNX, the
    tokens and next-token probabilities of the torch model with the same override (its hook)."""
    hook_at = (model.cfg.decoder_layers - 1, None) if name == "dates-transformer" else None  # every head
    changed = 0
    for pair in data.test[:6]:
        ids = data.src_vocab.encode(pair.src)
        own = translator.decode(ids, 12)
        theirs = webexport.steer(model, ids, 12, {})
        assert own["ids"] == theirs["ids"]
        np.testing.assert_allclose(own["probs"], theirs["probs"], atol=1e-4)
        first = own["weights"][0] if hook_at is None else own["weights"][0][hook_at[0], 1]
        head = None if hook_at is None else (hook_at[0], 1)  # one head, as the model had it
        assert translator.decode(ids, 12, {0: first}, head)["ids"] == own["ids"]  # "as the model had it"
        for t, pos in ((0, 0), (1, len(ids) - 1)):
            edits = {t: np.eye(len(ids), dtype=np.float32)[pos]}
            mine = translator.decode(ids, 12, edits, hook_at)
            ref = webexport.steer(model, ids, 12, edits, hook_at)
            assert mine["ids"] == ref["ids"], (pair.src, edits, mine["ids"], ref["ids"])
            np.testing.assert_allclose(mine["probs"], ref["probs"], atol=1e-4)
            w = mine["weights"][t] if hook_at is None else mine["weights"][t][hook_at[0]]  # (S,) or (H, S)
            np.testing.assert_allclose(w, np.broadcast_to(edits[t], w.shape), atol=1e-6)  # the weights it used
            changed += mine["ids"] != own["ids"]
    assert changed, "no edit changed any output: the override does not reach the decoder"
    with pytest.raises(ValueError, match="hook_at"):
        if name == "dates-transformer":
            translator.decode(ids, 12, {0: first})
        else:
            raise ValueError("RNNsearch has one attention: no hook_at")


def _built_manifest():
    path = BUILT / "manifest.json"
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no {path}: scripts/test.sh builds the site, which exports the playground's models")
        pytest.skip("no site build (bash scripts/build-site.sh exports the playground's models)")
    return json.loads(path.read_text())


def test_the_sites_models_equal_pytorch_on_the_whole_test_split():
    manifest = _built_manifest()
    assert set(manifest["models"]) == set(webexport.PLAYGROUND)
    for name, entry in manifest["models"].items():
        p = entry["parity"]
        assert p["token_agreement"] >= 0.99, (name, p)
        assert p["max_weight_diff"] <= 1e-4, (name, p)
        assert p["sentences"] >= 100, (name, p)
        steered = entry["steered"]  # the first step edited three ways on 20 test sentences
        assert steered["edits"] == 60 and steered["same_output"] == 1.0, (name, steered)


def test_the_playground_adds_under_30_mb_to_the_site():
    """The runtime and every model together. A visitor downloads the runtime and the first model
    when the page opens, and another model only when choosing it (``load`` in playground.js), so
    the first load is checked too: the runtime plus the first model under 16 MB. The Chinese model
    (about 12 MB: its English vocabulary holds HSK's and the dictionary's words) is the largest."""
    manifest = _built_manifest()
    files = [f for folder in (BUILT, ORT_VENDORED) for f in folder.rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    print(f"playground assets: {size / 2**20:.1f} MB in {len(files)} files")
    assert size < 30 * 2**20, f"{size / 2**20:.1f} MB"
    first = next(iter(manifest["models"]))
    runtime = sum(f.stat().st_size for f in ORT_VENDORED.rglob("*") if f.is_file())
    opening = runtime + sum(f.stat().st_size for f in (BUILT / first).rglob("*") if f.is_file())
    print(f"opening the page ({first}): {opening / 2**20:.1f} MB")
    assert opening < 16 * 2**20, f"{opening / 2**20:.1f} MB"
