"""Nested word/character attention (attention/models/nested.py), the spelling task
(attention/tasks/spelling.py, attention/data/spelling.py) and its recorded run (attention/studies/nested.py).

The model tests run on a toy task made here; the ``real`` tests read codespell's wheel and the
translation corpora through the cache (skipped when offline and not cached).
"""

import dataclasses
import json
import shutil
import subprocess

import pytest
import torch

from attention import results
from attention.checkpoints import load_checkpoint, save_checkpoint
from attention.data import Vocab
from attention.data.spelling import is_plain_word, load_codespell, misspellings_of, parse_codespell
from attention.models.nested import NestedConfig, NestedSeq2Seq
from attention.studies import nested
from attention.studies.base import run_study, study_status
from attention.tasks.spelling import Misspelt, SpellingData, spelling_data, spelling_loss, split_pairs

CODESPELL_TXT = (
    "teh->the\n"
    "abd->and, bad,\n"
    "alot->a lot, allot,\n"
    "Amercia->America\n"
    "dont->don't\n"
    "aas->ass, as,\n"
    "wich->which, witch, rich, needed to keep the order\n"
    "colour->color\n"
    "\n"
)

TOY = [
    ("the cat sat on the mat", "teh cat sat on teh mat"),
    ("the dog ran far", "teh dgo ran far"),
    ("a zebra sat on a mat", "a zebar sat on a mat"),
    ("the quokka ran", "teh quokka ran"),
    ("a cat ran far", "a cta ran far"),
    ("the zebra ran on", "teh zebra ran on"),
    ("a dog sat", "a dog sat"),
    ("the mat", "teh mat"),
]
RARE = {"zebra", "quokka"}  # target words left out of the target vocabulary: the character decoder spells them


def toy_data(rare_words=RARE) -> SpellingData:
    examples = []
    for right, wrong in TOY:
        tgt, src = tuple(right.split()), tuple(wrong.split())
        examples.append(Misspelt(src, tgt, tuple(s != t for s, t in zip(src, tgt))))
    src_vocab = Vocab.build([e.tgt for e in examples])  # correct words only: every misspelling is <unk>
    tgt_vocab = Vocab.build([[w for w in e.tgt if w not in rare_words] for e in examples])
    char_vocab = Vocab.build([w for e in examples for w in e.src + e.tgt])
    return SpellingData("toy", examples, examples, examples, src_vocab, tgt_vocab, char_vocab, 0)


def toy_model(data, char_level=True, **sizes):
    torch.manual_seed(0)
    cfg = dict(embed_dim=16, hidden_dim=16, char_embed_dim=8, char_hidden_dim=16, dropout=0.0) | sizes
    return NestedSeq2Seq(
        NestedConfig(len(data.src_vocab), len(data.tgt_vocab), len(data.char_vocab), char_level=char_level, **cfg)
    )


def forward(model, batch):
    return model(
        batch.src,
        batch.src_lengths,
        batch.tgt_in,
        tgt_unk=batch.tgt_unk,
        tgt_chars_in=batch.tgt_chars_in,
        **batch.inputs(),
    )


# ---------------------------------------------------------------- codespell


def test_parse_codespell_keeps_plain_single_word_pairs():
    pairs = parse_codespell(CODESPELL_TXT)
    assert pairs == {
        "teh": ("the",),
        "abd": ("and", "bad"),
        "aas": ("ass", "as"),
        "wich": ("which", "witch", "rich"),
        "colour": ("color",),
    }
    # "a lot" is two words, "America" capitalised, "don't" not alphabetic; the reason is dropped
    assert misspellings_of(pairs)["the"] == ("teh",)
    with pytest.raises(ValueError, match="dictionary.txt, line 2"):
        parse_codespell("teh->the\nno arrow here\n")


def test_split_pairs_is_deterministic_and_disjoint():
    pairs = {f"wrong{i}": (f"right{i % 7}",) for i in range(200)}
    train, held = split_pairs(pairs, 0.25, seed=3)
    assert (train, held) == split_pairs(pairs, 0.25, seed=3)
    flat = lambda side: {(w, r) for r, ws in side.items() for w in ws}  # noqa: E731
    assert not flat(train) & flat(held) and len(flat(train) | flat(held)) == len(pairs)
    assert 20 < len(flat(held)) < 80
    with pytest.raises(ValueError, match="heldout"):
        split_pairs(pairs, 1.0, seed=0)


def _real(loader, *args, **kwargs):
    try:
        return loader(*args, **kwargs)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        pytest.skip(f"offline and not cached: {e}")


def test_real_codespell_counts_and_pairs():
    pairs = _real(load_codespell)
    assert 55_000 < len(pairs) < 66_000
    assert all(is_plain_word(w) and is_plain_word(fixes[0]) and w != fixes[0] for w, fixes in pairs.items())
    assert pairs["teh"][0] == "the"
    assert 10_000 < len(misspellings_of(pairs)) < 20_000


def test_real_spelling_data_holds_test_misspellings_out_of_training():
    data = _real(spelling_data, n=1000, rate=0.3)
    assert (len(data.train), len(data.valid), len(data.test)) == (800, 100, 100)
    pairs = lambda part: {(w, e.tgt[i]) for e in part for i, w in enumerate(e.src) if e.misspelt[i]}  # noqa: E731
    train, test, valid = pairs(data.train), pairs(data.test), pairs(data.valid)
    assert train and test and valid
    assert not test & train and not valid & train  # held-out misspellings only
    assert all(w not in data.src_vocab for w, _ in test)  # so every test misspelling is <unk>
    seen = [w for e in data.train for w, m in zip(e.src, e.misspelt) if m]
    assert sum(w not in data.src_vocab for w in seen) > 0.9 * len(seen)  # and most training ones are too
    assert all(len(e.src) == len(e.tgt) <= 15 for e in data.train + data.test)
    again = spelling_data(n=1000, rate=0.3)
    assert again.fingerprint() == data.fingerprint()


# ---------------------------------------------------------------- the model


def test_char_encoder_reads_exactly_the_oov_source_words(device):
    data = toy_data()
    model = toy_model(data).to(device).eval()
    batch = data.collate(data.train).to(device)
    assert batch.oov.sum() > 0 and (~batch.oov & (batch.char_lengths > 0)).sum() > 0
    seen = []
    hook = model.char_encoder.register_forward_hook(lambda mod, args, out: seen.append(args[0].clone()))
    memory, _ = model.encode(batch.src, batch.src_lengths, **batch.inputs())
    hook.remove()
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], batch.chars[batch.oov])  # the rows it read: the OOV words, in order

    def states_with(b, i, char_id):
        chars = batch.chars.clone()
        chars[b, i, 0] = char_id
        return model.encode(batch.src, batch.src_lengths, chars, batch.char_lengths, batch.oov).memory.states

    (b_in, i_in), (b_oov, i_oov) = (~batch.oov & (batch.char_lengths > 0)).nonzero()[0], batch.oov.nonzero()[0]
    other = int(batch.chars[b_in, i_in, 0]) % (len(data.char_vocab) - 4) + 4
    torch.testing.assert_close(states_with(b_in, i_in, other), memory.states)  # in vocabulary: chars unused
    other = int(batch.chars[b_oov, i_oov, 0]) % (len(data.char_vocab) - 4) + 4
    assert not torch.allclose(states_with(b_oov, i_oov, other), memory.states)  # OOV: read from its chars


def test_char_decoder_runs_for_exactly_the_unk_targets(device):
    data = toy_data()
    model = toy_model(data).to(device).eval()
    batch = data.collate(data.train).to(device)
    assert 0 < batch.tgt_unk.sum() < (batch.tgt_out > 0).sum()
    sizes = []
    hook = model.char_cell.register_forward_hook(lambda mod, args, out: sizes.append(args[0].shape[0]))
    out = forward(model, batch)
    hook.remove()
    N, K = int(batch.tgt_unk.sum()), batch.tgt_chars_in.shape[2]
    assert sizes == [N] * K  # one call per character, on the N <unk> positions only
    assert torch.equal(out.char_rows, batch.tgt_unk)
    assert out.char_logits.shape == (N, K, len(data.char_vocab))
    assert torch.equal(out.oov, batch.oov)
    # the word each row spells attends over the characters of the source word argmax α picks
    torch.testing.assert_close(out.char_source, out.attention[batch.tgt_unk].argmax(-1))
    # greedy: characters are written exactly where the word decoder emitted <unk>
    result = model.greedy(batch.src, batch.src_lengths, **batch.inputs())
    written = (result.char_tokens != 0).any(-1)  # (B, T')
    assert torch.equal(written, result.tokens == data.tgt_vocab.unk_id)
    # without <unk> targets the character decoder does not run at all
    sizes.clear()
    hook = model.char_cell.register_forward_hook(lambda mod, args, out: sizes.append(args[0].shape[0]))
    out = model(
        batch.src,
        batch.src_lengths,
        batch.tgt_in,
        tgt_unk=torch.zeros_like(batch.tgt_unk),
        tgt_chars_in=batch.tgt_chars_in,
        **batch.inputs(),
    )
    hook.remove()
    assert sizes == [] and out.char_logits.shape[0] == 0


def test_word_model_ignores_characters(device):
    data = toy_data()
    model = toy_model(data, char_level=False).to(device).eval()
    batch = data.collate(data.train).to(device)
    out = forward(model, batch)
    assert out.char_logits is None and out.char_attention is None
    scrambled = model(batch.src, batch.src_lengths, batch.tgt_in, chars=torch.zeros_like(batch.chars))
    torch.testing.assert_close(scrambled.logits, out.logits)
    assert not hasattr(model, "char_encoder")


def test_padding_gets_exactly_zero_attention(device):
    data = toy_data()
    model = toy_model(data).to(device).eval()
    batch = data.collate(data.train).to(device)
    out = forward(model, batch)
    B, T, S = out.attention.shape
    real = torch.arange(S, device=device)[None, :] < batch.src_lengths[:, None]  # (B, S)
    assert (batch.src_lengths < S).any()  # some sentences are padded
    assert torch.all(out.attention.masked_select(~real[:, None, :].expand(B, T, S)) == 0)
    torch.testing.assert_close(out.attention.sum(-1), torch.ones(B, T, device=device))
    rows = batch.tgt_unk.nonzero(as_tuple=True)
    lengths = batch.char_lengths[rows[0], out.char_source]  # (N,) characters of each attended word
    N, K, L = out.char_attention.shape
    real = torch.arange(L, device=device)[None, :] < lengths[:, None]  # (N, L)
    assert (lengths < L).any()  # some words are padded
    assert torch.all(out.char_attention.masked_select(~real[:, None, :].expand(N, K, L)) == 0)
    torch.testing.assert_close(out.char_attention.sum(-1), torch.ones(N, K, device=device))


@pytest.mark.parametrize("char_level", [False, True])
def test_both_variants_overfit_a_tiny_set(device, char_level):
    data = toy_data(RARE if char_level else set())  # the word model needs every target word in its vocabulary
    model = toy_model(data, char_level=char_level).to(device)
    batch = data.collate(data.train).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        model.train()
        loss = spelling_loss(model, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    report = data.evaluate(model, data.train)
    assert report["accuracy"] == 1.0 and report["misspelt_accuracy"] == 1.0, report["outputs"]
    if char_level:
        assert report["n_rare_words"] == 3 and report["rare_word_accuracy"] == 1.0  # spelt by characters


def test_word_model_cannot_write_rare_words(device):
    data = toy_data()
    model = toy_model(data, char_level=False).to(device)
    report = data.evaluate(model, data.train)
    assert report["n_rare_words"] == 3 and report["rare_word_accuracy"] == 0.0  # <unk> is never right


def test_unk_replacement_copies_the_source_word_each_unk_attends_to(monkeypatch):
    """A word model that writes <unk> at every step, attending to its own position, corrects by
    UNK replacement exactly as copying the input does; attending elsewhere copies that word."""
    data = toy_data()
    model = toy_model(data, char_level=False)
    real = model.greedy

    def all_unk(src, src_lengths, *args, shift=0, **kwargs):
        out = real(src, src_lengths, *args, **kwargs)
        B, S = src.shape
        tokens = torch.full((B, S + 1), data.tgt_vocab.unk_id)
        tokens[torch.arange(B), src_lengths] = data.tgt_vocab.eos_id
        at = (torch.arange(S + 1).clamp(max=S - 1) + shift) % S
        attention = torch.nn.functional.one_hot(at, S).float().expand(B, S + 1, S)
        return dataclasses.replace(out, tokens=tokens, attention=attention)

    monkeypatch.setattr(model, "greedy", all_unk)
    replaced = data.evaluate(model, data.train, unk_replace=True)
    copy = data.copy_baseline(data.train)
    assert replaced["outputs"] == [list(e.src) for e in data.train]
    assert {k: v for k, v in replaced.items()} == copy
    assert replaced["rare_word_accuracy"] == 2 / 3  # quokka and zebra kept; zebar copied, not corrected
    plain = data.evaluate(model, data.train)  # without replacement the <unk> is written as it is
    assert plain["outputs"][0] == ["<unk>"] * len(data.train[0].src) and plain["accuracy"] == 0.0
    monkeypatch.setattr(model, "greedy", lambda *a, **k: all_unk(*a, shift=1, **k))
    assert data.correct(model, data.train[:1], unk_replace=True) == [["cat", "sat", "on", "teh", "mat", "teh"]]
    with pytest.raises(ValueError, match="without a character decoder"):
        data.correct(toy_model(data, char_level=True), data.train, unk_replace=True)


class _Path(NestedSeq2Seq):
    """A nested model whose character attention is made to read the source word's character k + shift
    at step k, and whose word attention picks the source word at the target's position."""

    shift = 0

    def forward(self, src, src_lengths, tgt_in, **kwargs):
        out = super().forward(src, src_lengths, tgt_in, **kwargs)
        N, K, L = out.char_attention.shape
        at = (torch.arange(K) + self.shift) % L
        out.char_attention = torch.nn.functional.one_hot(at, L).float().expand(N, K, L)
        out.char_source = kwargs["tgt_unk"].nonzero()[:, 1]
        return out


def test_the_character_path_by_hand():
    data = toy_data()
    model = toy_model(data, char_level=True)
    model.__class__ = _Path
    path = data.char_path(model, data.train)
    # rare targets: zebra (from zebar), quokka, zebra: 5 + 6 + 5 characters, each read on the diagonal
    assert (path["rare_words"], path["own_word"], path["characters"], path["near_diagonal"]) == (3, 1.0, 16, 1.0)
    # a character drawn at random from a word of n letters is within one of k for 2 (ends) or 3 of them
    assert path["diagonal_chance"] == pytest.approx((13 / 5 + 16 / 6 + 13 / 5) / 16)
    model.shift = 2  # two characters ahead (around the longest word, 6): never within one of the diagonal
    assert data.char_path(model, data.train)["near_diagonal"] == 0.0
    with pytest.raises(ValueError, match="character decoder"):
        data.char_path(toy_model(data, char_level=False), data.train)


def test_bad_config_and_input_raise_clear_errors(device):
    data = toy_data()
    with pytest.raises(ValueError, match="dropout"):
        NestedConfig(50, 50, 30, dropout=1.5)
    with pytest.raises(ValueError, match="char_vocab"):
        NestedConfig(50, 50, 3)
    with pytest.raises(ValueError, match="hidden_dim"):
        NestedConfig(50, 50, 30, hidden_dim=0)
    with pytest.raises(ValueError, match="char_level"):
        NestedConfig(50, 50, 30, char_level="yes")
    model = toy_model(data).to(device)
    batch = data.collate(data.train).to(device)
    with pytest.raises(ValueError, match="needs chars"):
        model.encode(batch.src, batch.src_lengths)
    with pytest.raises(ValueError, match="needs chars"):
        model.greedy(batch.src, batch.src_lengths)
    with pytest.raises(ValueError, match=r"chars must be \(B, S, L\)"):
        model.encode(batch.src, batch.src_lengths, batch.chars[:, :2], batch.char_lengths)
    with pytest.raises(ValueError, match="src_lengths"):
        model.encode(batch.src, batch.src_lengths + 10, **batch.inputs())
    with pytest.raises(ValueError, match="tgt_unk"):
        model(batch.src, batch.src_lengths, batch.tgt_in, **batch.inputs())
    with pytest.raises(ValueError, match="oov"):
        model.encode(batch.src, batch.src_lengths, batch.chars, batch.char_lengths, batch.oov.long())


def test_checkpoint_round_trip(device, tmp_path):
    data = toy_data()
    model = toy_model(data).to(device).eval()
    batch = data.collate(data.train).to(device)
    save_checkpoint(tmp_path / "m.pt", model)
    again, _ = load_checkpoint(tmp_path / "m.pt", expect="nested", map_location=device)
    torch.testing.assert_close(forward(again.eval(), batch).char_logits, forward(model, batch).char_logits)


# ---------------------------------------------------------------- the recorded run


def test_run_nested_resumes_and_records_once_every_run_is_done(tmp_path):
    data = toy_data()
    study = dataclasses.replace(nested.STUDY, data=lambda recipe, group: data).with_recipe(
        seeds=[0, 1], max_epochs=2, embed_dim=8, hidden_dim=8, char_embed_dim=4, char_hidden_dim=8
    )
    assert len(study_status(study, tmp_path)["missing"]) == 4
    calls = []

    def stop_after_one(study_, piece, data_, device):
        if calls:
            raise KeyboardInterrupt  # the run is interrupted during its second piece
        calls.append(piece.key)
        return nested.STUDY.run(study_, piece, data_, device)

    with pytest.raises(KeyboardInterrupt):
        run_study(dataclasses.replace(study, run=stop_after_one), tmp_path)
    assert study_status(study, tmp_path)["done"] == ["word/seed0"]
    assert not (tmp_path / "nested-spelling.json").exists()  # no record before every piece is done
    counted = dataclasses.replace(study, run=lambda s, p, d, dev: calls.append(p.key) or nested.STUDY.run(s, p, d, dev))
    record = run_study(counted, tmp_path)
    assert calls == ["word/seed0", "word+char/seed0", "word/seed1", "word+char/seed1"]  # word/seed0 was not rerun
    summary = record["metrics"]["summary"]
    assert set(summary) == {"word", "word+char"} and summary["word+char"]["accuracy"]["n"] == 2
    assert summary["word+char"]["parameters"]["n"] == 2 and set(summary["word"]) == set(nested.METRICS) | {
        "parameters",
        "converged",
        "unk_replacement",
    }
    assert set(summary["word+char"]) == set(summary["word"]) - {"unk_replacement"} | {"char_path"}
    assert set(summary["word"]["unk_replacement"]) == set(nested.REPLACED)
    for run in record["metrics"]["runs"]:  # UNK replacement changes only the words written as <unk>
        if run["variant"] == "word":
            assert run["unk_replacement"]["kept_accuracy"] >= run["kept_accuracy"] - 1e-12
        else:
            assert 0 <= run["char_path"]["near_diagonal"] <= 1 and run["char_path"]["rare_words"] == 3
    assert summary["word+char"]["parameters"]["mean"] > summary["word"]["parameters"]["mean"]
    assert all(0 <= r["accuracy"] <= 1 and 1 <= r["best_epoch"] <= 2 for r in record["metrics"]["runs"])
    assert record["metrics"]["data"]["test_words"] == record["metrics"]["runs"][0]["n_words"]
    assert results.load_result("nested-spelling", tmp_path)["command"] == "python -m attention nested"
    assert study_status(study, tmp_path)["missing"] == []


def test_the_record_regenerates_from_its_rows_alone(tmp_path):
    """The record's metrics, rebuilt from its own rows (no partial file, nothing trained), are the
    recorded ones: the study's summary is the one that wrote it."""
    recorded = results.load_result("nested-spelling")
    shutil.copy(results.RESULTS_DIR / "nested-spelling.json", tmp_path)
    assert study_status(nested.STUDY, tmp_path) == {
        "done": [p.key for p in nested.STUDY.pieces(nested.NESTED)],
        "missing": [],
    }
    again = run_study(nested.STUDY, tmp_path, write=False)
    assert again["recipe"] == recorded["recipe"] == json.loads(json.dumps(nested.NESTED))
    assert again["metrics"] == recorded["metrics"]
    assert (again["wall_seconds"], again["notes"], again["command"]) == (
        recorded["wall_seconds"],
        recorded["notes"],
        recorded["command"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nested-spelling.json"]  # nothing written


def test_the_copy_baseline_by_hand():
    data = toy_data()
    copy = data.copy_baseline(data.train)
    assert (copy["n_words"], copy["n_misspelt"], copy["n_rare_words"]) == (32, 9, 3)
    assert copy["accuracy"] == 23 / 32 and copy["misspelt_accuracy"] == 0.0 and copy["kept_accuracy"] == 1.0
    assert copy["rare_word_accuracy"] == 2 / 3  # zebra and quokka left alone; zebar is not zebra
    assert copy["exact_sentences"] == 1 / 8  # only "a dog sat" has no misspelling
    with pytest.raises(ValueError, match="1 outputs for 8 examples"):
        data.score(data.train, [["the"]])
