"""The decoders' one override of their attention weights (``weights_hook``): between the softmax and
the context, in ``Seq2Seq.step``, ``LuongSeq2Seq.step`` (global attention) and ``decoding.greedy``;
what ``explain.decoder_report`` decodes with (chapter 10)."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attention import explain as fa
from attention.data import Pair, Vocab, collate
from attention.models import LuongConfig, LuongSeq2Seq, Seq2Seq, Seq2SeqConfig, Transformer, TransformerConfig
from attention.models.decoding import greedy
from attention.models.seq2seq import check_weights, override_attention

ROOT = Path(__file__).resolve().parents[1]
V_SRC, V_TGT = 11, 9


def padded_batch(device, B=3, S=6):
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([6, 3, 1])
    src = torch.randint(4, V_SRC, (B, S), generator=g).masked_fill(torch.arange(S)[None] >= lengths[:, None], 0)
    return src.to(device), lengths.to(device)


def rnnsearch(device, **kw):
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(V_SRC, V_TGT, embed_dim=8, hidden_dim=6, attention_dim=5, dropout=0.1, **kw)
    return Seq2Seq(cfg).to(device).eval()


def luong(device, **kw):
    torch.manual_seed(0)
    cfg = LuongConfig(V_SRC, V_TGT, embed_dim=8, hidden_dim=6, attention_dim=5, dropout=0.1, **kw)
    return LuongSeq2Seq(cfg).to(device).eval()


def identity(w, t):
    return w


MODELS = {
    "rnnsearch": lambda d: rnnsearch(d),
    "rnnsearch-dot": lambda d: rnnsearch(d, attention="dot"),  # no projected keys: the other branch
    "luong-general": lambda d: luong(d),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_models_own_weights_through_the_hook_change_nothing(device, name):
    model = MODELS[name](device)
    src, lengths = padded_batch(device)
    plain = greedy(model, src, lengths, max_len=7)
    hooked = greedy(model, src, lengths, max_len=7, weights_hook=identity)
    assert torch.equal(hooked.tokens, plain.tokens)
    torch.testing.assert_close(hooked.attention, plain.attention, atol=1e-6, rtol=0)
    # step by step on the same inputs: the logits, to 1e-6 (bit for bit on the CPU: the same product)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        hooked_state = state
        y = torch.full((3,), model.cfg.bos_id, device=device)
        for t in range(plain.tokens.shape[1]):
            a = model.step(y, state, memory)
            b = model.step(y, hooked_state, memory, weights_hook=lambda w: w)
            torch.testing.assert_close(b.logits, a.logits, atol=1e-6, rtol=0)
            if device == "cpu":
                assert torch.equal(b.logits, a.logits) and torch.equal(b.weights, a.weights)
            state, hooked_state, y = a.state, b.state, plain.tokens[:, t]


def test_greedy_gives_the_hook_each_steps_index_and_weights(device):
    model = rnnsearch(device)
    src, lengths = padded_batch(device)
    seen = []

    def spy(w, t):
        seen.append((t, w.clone()))
        return w

    out = greedy(model, src, lengths, max_len=5, weights_hook=spy)
    assert [t for t, _ in seen] == list(range(out.tokens.shape[1]))
    torch.testing.assert_close(torch.stack([w for _, w in seen], 1), out.attention)


@pytest.mark.parametrize("make", [rnnsearch, luong])
def test_all_weight_on_one_source_word_makes_the_context_that_words_state(device, make):
    model = make(device)
    src, lengths = padded_batch(device)
    memory, state = model.encode(src, lengths)
    positions = torch.tensor([4, 2, 0], device=device)  # each inside its sentence
    one_hot = torch.nn.functional.one_hot(positions, src.shape[1]).float()  # (B, S)
    context, used = override_attention(lambda w: one_hot, torch.rand_like(one_hot), memory)
    torch.testing.assert_close(context, memory.states[torch.arange(3), positions])
    assert torch.equal(used, one_hot)
    # through the step: its logits are those of that word's state put in by hand as c_t
    y_prev = torch.full((3,), model.cfg.bos_id, device=device)
    with torch.no_grad():
        step = model.step(y_prev, state, memory, weights_hook=lambda w: one_hot)
        c = memory.states[torch.arange(3), positions]  # (B, He)
        y = model.tgt_embed(y_prev)
        if make is rnnsearch:
            s = model.cell(torch.cat([y, c], -1), state)
            logits = model.output(torch.tanh(model.pre_output(torch.cat([s, c, y], -1))))
        else:
            h = model.cell(torch.cat([y, state.feed], -1), state.rnn)
            logits = model.output(torch.tanh(model.W_c(torch.cat([c, h], -1))))
    torch.testing.assert_close(step.logits, logits)
    assert torch.equal(step.weights, one_hot)


def test_uniform_weights_through_greedy_read_the_mean_state(device):
    model = rnnsearch(device)
    src, lengths = padded_batch(device)
    out = greedy(model, src, lengths, max_len=4, weights_hook=lambda w, t: fa.TRANSFORMS["uniform"](w, lengths, None))
    real = torch.arange(6, device=device)[None] < lengths[:, None]  # (B, S)
    expected = real / lengths[:, None]
    torch.testing.assert_close(out.attention, expected[:, None].expand_as(out.attention))


def hooked_step_error(device, returned, match, kind=ValueError):
    model = rnnsearch(device)
    src, lengths = padded_batch(device)
    memory, state = model.encode(src, lengths)
    y = torch.full((3,), model.cfg.bos_id, device=device)
    with pytest.raises(kind, match=match):
        model.step(y, state, memory, weights_hook=lambda w: returned(w))


def test_a_hook_with_the_wrong_shape_is_refused_naming_both(device):
    hooked_step_error(device, lambda w: w[:, :5], re.escape("(B, S) = (3, 6); got (3, 5)"))
    hooked_step_error(device, lambda w: w[:, None], re.escape("(B, S) = (3, 6); got (3, 1, 6)"))
    hooked_step_error(
        device, lambda w: w.tolist(), re.escape("a tensor of weights (B, S) = (3, 6); got list"), TypeError
    )


def test_a_hook_returning_no_distribution_over_the_real_words_is_refused(device):
    def at(w, b, i, value):
        w = w.clone()
        w[b, i] = value
        return w

    hooked_step_error(device, lambda w: at(w, 0, 1, float("nan")), r"not finite .* row 0 .* position 1")
    hooked_step_error(device, lambda w: at(w, 0, 1, float("inf")), "not finite")
    hooked_step_error(device, lambda w: at(w, 0, 1, -w[0, 1]), r"negative weights; row 0 .* position 1")
    hooked_step_error(device, lambda w: at(w, 1, 4, 0.1), r"weight on padding .*row 1 \(source length 3\), position 4")
    hooked_step_error(device, lambda w: w * 2, r"summing to 1 .*within 0.0001.*rows \[0, 1, 2\]")
    hooked_step_error(device, lambda w: w.double(), "dtype torch.float32; got torch.float64")
    hooked_step_error(device, lambda w: (w > 0).float() / 3, r"sums \[2.0, 0.333333\] in rows \[0, 2\]")


def test_check_weights_on_an_empty_row_and_within_the_tolerance():
    mask = torch.tensor([[True, True, False], [False, False, False]])
    check_weights(torch.tensor([[0.5, 0.5 + 5e-5, 0.0], [0.0, 0.0, 0.0]]), mask)  # no real word: all zero
    with pytest.raises(ValueError, match="weight on padding"):
        check_weights(torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]), mask)


def test_models_without_weights_to_replace_refuse_a_hook(device):
    src, lengths = padded_batch(device)
    with pytest.raises(ValueError, match=r"has none \(attention=None\)"):
        greedy(rnnsearch(device, attention=None), src, lengths, max_len=3, weights_hook=identity)
    with pytest.raises(ValueError, match="global attention; .*local='m'"):
        greedy(luong(device, local="m", window=2), src, lengths, max_len=3, weights_hook=identity)
    with pytest.raises(ValueError, match="global attention; .*attention=None"):
        greedy(luong(device, attention=None), src, lengths, max_len=3, weights_hook=identity)
    torch.manual_seed(0)
    cfg = TransformerConfig(V_SRC, V_TGT, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    with pytest.raises(ValueError, match="weights_hook needs a model whose step.*got Transformer"):
        greedy(Transformer(cfg).to(device), src, lengths, max_len=3, weights_hook=identity)


def test_decoder_report_with_the_identity_transform_matches_exactly(device, monkeypatch):
    """On a random model, with references set to its own greedy outputs: its own decoding and the
    identity through the hook both match every sentence; the other transforms run."""
    src_vocab = Vocab.build([["a", "b", "c", "d", "e", "f", "g"]])
    tgt_vocab = Vocab.build([["w", "x", "y", "z", "v"]])
    sources = [("a", "b", "c", "d", "e", "f"), ("g", "a", "b"), ("c",), ("d", "d", "e", "f")]
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(len(src_vocab), len(tgt_vocab), embed_dim=8, hidden_dim=6, attention_dim=5, dropout=0.0)
    model = Seq2Seq(cfg).to(device)
    placeholder = SimpleNamespace(src_vocab=src_vocab, tgt_vocab=tgt_vocab)
    monkeypatch.setitem(fa.TRANSFORMS, "identity", lambda w, n, g: w)
    first = fa.decoder_report(model, placeholder, [Pair(s, ()) for s in sources])
    assert first["identity"]["changed"] == 0.0
    # the references: what the model says (decoded as the report decodes it)
    batch = collate([(s, ()) for s in sources], src_vocab, tgt_vocab).to(device)
    ids = greedy(model, batch.src, batch.src_lengths, max_len=40).tokens.tolist()
    refs = [tgt_vocab.decode(r[: r.index(cfg.eos_id)] if cfg.eos_id in r else r) for r in ids]
    data = SimpleNamespace(
        src_vocab=src_vocab, tgt_vocab=tgt_vocab, test=[Pair(s, tuple(r)) for s, r in zip(sources, refs)]
    )
    report = fa.decoder_report(model, data)
    assert report["own"] == {"exact_match": 1.0, "changed": 0.0}
    assert report["identity"] == {"exact_match": 1.0, "changed": 0.0}
    assert report["n"] == 4 and all(0 <= report[k]["changed"] <= 1 for k in ("permuted", "uniform", "without top"))


def test_the_rederived_twins_are_gone():
    """explain.py decodes through the model's own hook; no copy of Seq2Seq.step or greedy remains."""
    for name in ("step_with_weights", "greedy_with_weights"):
        assert not hasattr(fa, name) and name not in fa.__all__
        for path in (ROOT / "attention").rglob("*.py"):
            assert f"def {name}" not in path.read_text(encoding="utf-8"), path
