"""The decoders' one override of their attention weights (``weights_hook``): between the softmax and
the context, in ``Seq2Seq.step``, ``LuongSeq2Seq.step`` (global attention), ``Transformer.step``
(one cross-attention head, ``hook_at=(layer, head)``) and ``decoding.greedy``; what
``explain.decoder_report`` decodes with (chapter 10) and the playground steers."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attention import explain as fa
from attention.data import Pair, Vocab, collate
from attention.functional import scaled_dot_product_attention
from attention.models import LuongConfig, LuongSeq2Seq, Seq2Seq, Seq2SeqConfig, Transformer, TransformerConfig
from attention.models.decoding import greedy
from attention.models.seq2seq import check_weights, override_attention
from attention.models.transformer import attend_cached

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


def assert_own_weights_change_nothing(model, device, **at):
    """Greedy with a hook that returns the model's own weights gives greedy's tokens and weights;
    step by step on the same inputs, the same logits to 1e-6 (bit for bit on the CPU: the same
    product). ``at``: the Transformer's ``hook_at``."""
    src, lengths = padded_batch(device)
    plain = greedy(model, src, lengths, max_len=7)
    hooked = greedy(model, src, lengths, max_len=7, weights_hook=identity, **at)
    assert torch.equal(hooked.tokens, plain.tokens)
    torch.testing.assert_close(hooked.attention, plain.attention, atol=1e-6, rtol=0)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        hooked_state = state
        y = torch.full((3,), model.cfg.bos_id, device=device)
        for t in range(plain.tokens.shape[1]):
            a = model.step(y, state, memory)
            b = model.step(y, hooked_state, memory, weights_hook=lambda w: w, **at)
            torch.testing.assert_close(b.logits, a.logits, atol=1e-6, rtol=0)
            if device == "cpu":
                assert torch.equal(b.logits, a.logits) and torch.equal(b.weights, a.weights)
            state, hooked_state, y = a.state, b.state, plain.tokens[:, t]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_models_own_weights_through_the_hook_change_nothing(device, name):
    assert_own_weights_change_nothing(MODELS[name](device), device)


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

    class NoHook:  # a decoder whose step takes no weights_hook (the nested model, a captioner)
        def step(self, y_prev, state, memory):  # pragma: no cover - never reached
            raise AssertionError

    with pytest.raises(ValueError, match="weights_hook needs a model whose step.*got NoHook"):
        greedy(NoHook(), src, lengths, max_len=3, weights_hook=identity)
    with pytest.raises(ValueError, match="hook_at chooses a Transformer's .*Seq2Seq has one attention"):
        greedy(rnnsearch(device), src, lengths, max_len=3, weights_hook=identity, hook_at=(0, 0))


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


# --------------------------------------------------------------------------- the Transformer


def transformer(device, layers=2, heads=2):
    torch.manual_seed(0)
    cfg = TransformerConfig(V_SRC, V_TGT, d_model=8, num_heads=heads, num_layers=layers, d_ff=16, dropout=0.1)
    return Transformer(cfg).to(device).eval()


@pytest.mark.parametrize("hook_at", [(0, 0), (1, 1), (-1, 0), (0, None)])
def test_the_transformers_own_head_weights_through_the_hook_change_nothing(device, hook_at):
    assert_own_weights_change_nothing(transformer(device), device, hook_at=hook_at)


def test_one_head_on_one_source_word_reads_that_words_value_and_leaves_the_other_heads(device):
    model = transformer(device, layers=1, heads=2)
    src, lengths = padded_batch(device)
    memory, state = model.encode(src, lengths)
    positions = torch.tensor([4, 2, 0], device=device)
    one_hot = torch.nn.functional.one_hot(positions, src.shape[1]).float()  # (B, S)
    y = torch.full((3,), model.cfg.bos_id, device=device)
    seen = {}

    def spy(w):  # the cross weights of the whole layer, after the replacement: (B, H, 1, S)
        seen["w"] = w
        return w

    with torch.no_grad():
        own = model.step(y, state, memory)
        step = model.step(y, state, memory, weights_hook=lambda w: one_hot, hook_at=(0, 1))
    # the step returns the last layer's mean over heads: head 0 its own, head 1 the one-hot row
    layer = model.decoder_layers[0]
    with torch.no_grad():
        x = model.embed(y[:, None], model.tgt_embed)
        h, _ = layer.self_residual(x, lambda h: (layer.self_attn(h, h, h, need_weights=False)[0], None))
        _, own_w = layer.cross_attn(
            h, memory.states, memory.states, key_padding_mask=~memory.mask, average_attn_weights=False
        )  # (B, H, 1, S)
    torch.testing.assert_close(step.weights, (own_w[:, 0, 0] + one_hot) / 2)
    torch.testing.assert_close(own.weights, own_w[:, :, 0].mean(1))
    assert not torch.equal(step.logits, own.logits)
    with torch.no_grad():  # every head of the layer: their mean is the row
        every = model.step(y, state, memory, weights_hook=lambda w: one_hot, hook_at=(0, None))
    torch.testing.assert_close(every.weights, one_hot)
    # the head's output is that word's value: attend_cached with every head one-hot
    kv = state.cross_attn[0]
    with torch.no_grad():
        _, w = attend_cached(
            layer.cross_attn,
            h,
            kv,
            ~memory.mask,
            need_weights=True,
            weights_hook=lambda w: spy(one_hot[:, None, None].expand_as(w)),
        )
        out, _ = attend_cached(
            layer.cross_attn,
            h,
            kv,
            ~memory.mask,
            need_weights=True,
            weights_hook=lambda w: one_hot[:, None, None].expand_as(w),
        )
        values = kv.values[torch.arange(3), :, positions]  # (B, H, D)
        expected = layer.cross_attn.out_proj(values.reshape(3, 1, -1))  # (B, 1, E)
    torch.testing.assert_close(out, expected)
    assert torch.equal(seen["w"], w)


def test_the_prefix_with_the_edit_at_its_position_is_the_cached_decoding_with_the_hook(device):
    """What the playground's exported step computes (the whole prefix, the edited row at its
    position, at every later step) equals cached greedy decoding with the hook at that step."""
    model = transformer(device)
    src, lengths = padded_batch(device)
    S = src.shape[1]
    t_edit, (layer, head) = 1, (0, 1)
    edit = (torch.arange(S, device=device)[None] < lengths[:, None]).float()
    edit = edit / edit.sum(-1, keepdim=True)  # uniform over each sentence's words

    def hook(w, t):
        return edit if t == t_edit else w

    out = greedy(model, src, lengths, max_len=6, weights_hook=hook, hook_at=(layer, head))
    memory, _ = model.encode(src, lengths)

    def prefix_hook(w, i):  # (B, H, T, S)
        if i != layer or w.shape[2] <= t_edit:
            return w
        w = w.clone()
        w[:, head, t_edit] = edit
        return w

    bos = torch.full((3, 1), model.cfg.bos_id, device=device)
    prefix = torch.cat([bos, out.tokens[:, :-1]], 1)  # (B, T)
    with torch.no_grad():
        hidden, _, cross = model.decoder_stack(
            model.embed(prefix, model.tgt_embed), memory.states, ~memory.mask, True, cross_weights_hook=prefix_hook
        )
        logits = model.output(hidden)  # (B, T, V)
    real = torch.cat([torch.ones_like(out.tokens[:, :1]), out.tokens[:, :-1] != model.cfg.eos_id], 1).cumprod(1)
    argmax = logits.argmax(-1)
    assert torch.equal(argmax[real.bool()], out.tokens[real.bool()])
    torch.testing.assert_close(cross[-1].mean(1)[real.bool()], out.attention[real.bool()], atol=1e-5, rtol=0)


def test_the_transformer_refuses_a_hook_without_a_head_or_with_bad_weights(device):
    model = transformer(device)
    src, lengths = padded_batch(device)
    memory, state = model.encode(src, lengths)
    y = torch.full((3,), model.cfg.bos_id, device=device)
    for hook_at in (None, (2, 0), (0, 2), (-3, 0), [0, 0], (0.0, 1), (None, 0)):
        with pytest.raises(ValueError, match=r"hook_at=\(layer, head\) with -2 <= layer < 2 and 0 <= head < 2"):
            model.step(y, state, memory, weights_hook=lambda w: w, hook_at=hook_at)
    with pytest.raises(ValueError, match=r"weight on padding .*row 1 \(source length 3\)"):
        model.step(y, state, memory, weights_hook=lambda w: torch.full_like(w, 1 / 6), hook_at=(0, 0))
    with pytest.raises(ValueError, match=re.escape("(B, S) = (3, 6); got (3, 5)")):
        model.step(y, state, memory, weights_hook=lambda w: w[:, :5], hook_at=(1, 1))
    x = model.embed(y[:, None], model.tgt_embed)
    with pytest.raises(ValueError, match=r"cross_weights_hook must return weights \(B, H, T, S\)"):
        model.decoder_stack(x, memory.states, ~memory.mask, cross_weights_hook=lambda w, i: w[:, :1])
    with pytest.raises(ValueError, match="cross_weights_hook returned negative weights"):
        model.decoder_stack(x, memory.states, ~memory.mask, cross_weights_hook=lambda w, i: -w)
    with pytest.raises(ValueError, match="fused path never forms"):
        q = torch.randn(1, 2, 3, 4)
        scaled_dot_product_attention(q, q, q, fused=True, weights_hook=lambda w: w)
