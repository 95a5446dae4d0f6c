"""Layers: the generic Attention and MultiHeadAttention against PyTorch."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attention.layers import Attention, MultiHeadAttention
from attention.masks import lengths_to_mask
from attention.scores import SCORES

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("score", sorted(SCORES))
def test_attention_every_score_padded_keys_get_zero(score, device):
    B, L, S, E = 3, 4, 6, 8
    layer = Attention(score, query_dim=E, max_len=S).to(device)
    q, k, v = (
        torch.randn(B, L, E, device=device),
        torch.randn(B, S, E, device=device),
        torch.randn(B, S, 5, device=device),
    )
    pad = ~lengths_to_mask(torch.tensor([6, 3, 1], device=device), S)  # True = padding
    out, w = layer(q, k, v, key_padding_mask=pad)
    assert out.shape == (B, L, 5) and w.shape == (B, L, S)
    assert (w[pad[:, None, :].expand_as(w)] == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(B, L, device=device))
    torch.testing.assert_close(out, w @ v)


def test_attention_fully_masked_rows(device):
    layer = Attention("additive", query_dim=4, key_dim=6, hidden_dim=5).to(device)
    q = torch.randn(2, 3, 4, device=device, requires_grad=True)
    k = torch.randn(2, 5, 6, device=device, requires_grad=True)
    pad = torch.zeros(2, 5, dtype=torch.bool, device=device)
    pad[1] = True
    out, w = layer(q, k, key_padding_mask=pad)
    assert (out[1] == 0).all() and (w[1] == 0).all() and torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(k.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters())


def test_attention_causal_and_bad_shapes(device):
    layer = Attention("scaled_dot").to(device)
    x = torch.randn(2, 4, 8, device=device)
    _, w = layer(x, x, is_causal=True)
    assert (w.triu(1) == 0).all()
    with pytest.raises(ValueError, match=r"key \(2, 4, 8\), value \(2, 3, 8\)"):
        layer(x, x, x[:, :3])
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, S\) = \(2, 4\), got \(2, 3\)"):
        layer(x, x, key_padding_mask=torch.zeros(2, 3, dtype=torch.bool, device=device))


def copied_pair(E, H, kdim=None, vdim=None, bias=True, device="cpu"):
    theirs = nn.MultiheadAttention(E, H, batch_first=True, kdim=kdim, vdim=vdim, bias=bias).to(device)
    ours = MultiHeadAttention(E, H, kdim=kdim, vdim=vdim, bias=bias).to(device).load_torch_weights(theirs)
    return theirs.eval(), ours.eval()


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(1, 3),
    H=st.sampled_from([1, 2, 4]),
    L=st.integers(1, 6),
    S=st.integers(1, 7),
    causal=st.booleans(),
    cross_dims=st.booleans(),
)
def test_matches_nn_multihead_attention(seed, B, H, L, S, causal, cross_dims):
    """Weights copied from nn.MultiheadAttention; random padding (+ causal) masks."""
    E = 8
    kdim, vdim = (6, 5) if cross_dims else (None, None)
    if causal:
        S = max(S, L)  # top-left causal: query t sees keys <= t
    for device in DEVICES:
        torch.manual_seed(seed)
        theirs, ours = copied_pair(E, H, kdim, vdim, device=device)
        g = torch.Generator().manual_seed(seed)
        q = torch.randn(B, L, E, generator=g).to(device)
        k = torch.randn(B, S, kdim or E, generator=g).to(device)
        v = torch.randn(B, S, vdim or E, generator=g).to(device)
        pad = ~lengths_to_mask(torch.randint(1, S + 1, (B,), generator=g), S).to(device)
        blocked = torch.ones(L, S, dtype=torch.bool, device=device).triu(1) if causal else None
        out_t, w_t = theirs(q, k, v, key_padding_mask=pad, attn_mask=blocked, average_attn_weights=False)
        out_o, w_o = ours(q, k, v, key_padding_mask=pad, is_causal=causal, average_attn_weights=False)
        torch.testing.assert_close(out_o, out_t, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(w_o, w_t, atol=1e-5, rtol=1e-4)
        _, avg = ours(q, k, v, key_padding_mask=pad, is_causal=causal)
        torch.testing.assert_close(avg, w_t.mean(1), atol=1e-5, rtol=1e-4)
        ours.fused = True
        fused, none = ours(q, k, v, key_padding_mask=pad, is_causal=causal, need_weights=False)
        assert none is None
        torch.testing.assert_close(fused, out_o, atol=1e-5, rtol=1e-4)


def test_per_head_attn_mask_matches(device):
    torch.manual_seed(0)
    theirs, ours = copied_pair(8, 2, device=device)
    x = torch.randn(3, 4, 8, device=device)
    blocked = torch.rand(3 * 2, 4, 4, device=device) > 0.6
    blocked[..., 0] = False  # every query keeps at least one key (PyTorch gives NaN otherwise)
    out_t, _ = theirs(x, x, x, attn_mask=blocked)
    out_o, _ = ours(x, x, x, attn_mask=blocked)
    torch.testing.assert_close(out_o, out_t, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("fused", [False, True])
def test_mha_fully_masked_rows_zero_and_finite(device, fused):
    mha = MultiHeadAttention(8, 2, bias=False, fused=fused).to(device)
    x = torch.randn(2, 3, 8, device=device, requires_grad=True)
    pad = torch.zeros(2, 3, dtype=torch.bool, device=device)
    pad[0] = True
    out, w = mha(x, x, x, key_padding_mask=pad, need_weights=not fused)
    assert (out[0] == 0).all() and torch.isfinite(out).all()
    if w is not None:
        assert (w[0] == 0).all()
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_mha_rejects_bad_input():
    with pytest.raises(ValueError, match="embed_dim=10 is not divisible by num_heads=3"):
        MultiHeadAttention(10, 3)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"query \(2, 3, 6\)"):
        mha(torch.randn(2, 3, 6), x, x)
    with pytest.raises(ValueError, match=r"share B.*key \(1, 3, 8\)"):
        mha(x, x[:1], x[:1])
    with pytest.raises(ValueError, match=r"attn_mask must have shape .* got \(3, 5\)"):
        mha(x, x, x, attn_mask=torch.zeros(3, 5, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("with_padding, causal", [(True, False), (False, True), (True, True)])
def test_low_precision_float_mask_with_padding_or_causal(device, dtype, with_padding, causal):
    """A float16/bfloat16 attn_mask combined with a key-padding mask or is_causal keeps the dtype."""
    torch.manual_seed(0)
    B_, H_, L_, S_, E_ = 2, 2, 4, 4, 8
    mha = MultiHeadAttention(E_, H_).to(device)
    x = torch.randn(B_, L_, E_, device=device)
    float_mask = torch.zeros(L_, S_, device=device)
    float_mask[0, 1] = -1.5  # a soft penalty, not a block
    padding = torch.tensor([[False] * S_, [False, False, False, True]], device=device) if with_padding else None
    reference, ref_w = mha(x, x, x, key_padding_mask=padding, attn_mask=float_mask, is_causal=causal)
    low = mha.to(dtype)
    out, w = low(
        x.to(dtype),
        x.to(dtype),
        x.to(dtype),
        key_padding_mask=padding,
        attn_mask=float_mask.to(dtype),
        is_causal=causal,
    )
    assert out.dtype == dtype and w.dtype == dtype
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    torch.testing.assert_close(w.float(), ref_w, atol=2e-2, rtol=0)
    torch.testing.assert_close(out.float(), reference, atol=5e-2, rtol=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(add_bias_kv=True), "add_bias_kv=True"),
        (dict(add_zero_attn=True), "add_zero_attn=True"),
        (dict(bias=False), "bias=False, this layer has bias=True"),
        (
            dict(kdim=6, vdim=6),
            r"sizes \(embed_dim, num_heads, kdim, vdim\) = \(8, 2, 6, 6\), this layer has \(8, 2, 8, 8\)",
        ),
    ],
)
def test_load_torch_weights_refuses_what_it_cannot_copy(kwargs, message):
    ours = MultiHeadAttention(8, 2)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, **kwargs)
    with pytest.raises(ValueError, match="cannot copy this nn.MultiheadAttention: " + message):
        ours.load_torch_weights(theirs)
    with pytest.raises(ValueError, match=r"sizes .* = \(8, 4, 8, 8\)"):
        ours.load_torch_weights(torch.nn.MultiheadAttention(8, 4, batch_first=True))


def test_fused_causal_mha_passes_the_flag_and_equals_the_explicit_path(device, monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    theirs = nn.MultiheadAttention(16, 4, batch_first=True).to(device).eval()
    explicit = MultiHeadAttention(16, 4).to(device).eval().load_torch_weights(theirs)
    fused = MultiHeadAttention(16, 4, fused=True).to(device).eval().load_torch_weights(theirs)
    x = torch.randn(3, 7, 16, device=device)
    out, _ = fused(x, x, x, is_causal=True, need_weights=False)
    assert calls and calls[-1].get("is_causal") is True and calls[-1].get("attn_mask") is None
    ref, w = explicit(x, x, x, is_causal=True)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    assert (w.triu(1) == 0).all()
    mask = torch.ones(7, 7, dtype=torch.bool, device=device).triu(1)  # True = blocked
    torch_out, _ = theirs(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)
    torch.testing.assert_close(out, torch_out, atol=1e-5, rtol=1e-4)
    pad = ~lengths_to_mask(torch.tensor([7, 5, 2], device=device), 7)
    padded, _ = fused(x, x, x, key_padding_mask=pad, is_causal=True, need_weights=False)
    assert calls[-1].get("is_causal", False) is False  # padding too: one mask holds both
    ref_padded, _ = explicit(x, x, x, key_padding_mask=pad, is_causal=True)
    torch.testing.assert_close(padded, ref_padded, atol=1e-5, rtol=1e-4)
