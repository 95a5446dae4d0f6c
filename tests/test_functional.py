"""The functional core: masked softmax, attend, scaled dot-product attention."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention.functional import attend, masked_softmax, scaled_dot_product_attention
from attention.masks import causal_mask, lengths_to_mask


def test_masked_softmax_without_mask_is_softmax(device):
    x = torch.randn(2, 3, 5, device=device)
    torch.testing.assert_close(masked_softmax(x), torch.softmax(x, -1))


def test_masked_positions_get_exactly_zero(device):
    x = torch.randn(2, 3, 5, device=device)
    keep = lengths_to_mask(torch.tensor([2, 4], device=device), 5)[:, None, :]  # (B, 1, S)
    w = masked_softmax(x, keep)
    assert (w.masked_select(~keep.expand_as(w)) == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, device=device))


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_rows_zero_output_zero_weights_finite_grads(device, kind):
    scores = torch.randn(2, 3, 4, device=device, requires_grad=True)
    value = torch.randn(2, 4, 5, device=device, requires_grad=True)
    keep = torch.ones(2, 3, 4, dtype=torch.bool, device=device)
    keep[0, 1] = False  # query 1 of batch 0 sees nothing
    keep[1] = False  # batch 1 sees nothing at all
    mask = keep if kind == "bool" else torch.zeros(keep.shape, device=device).masked_fill(~keep, float("-inf"))
    out, w = attend(scores, value, mask)
    assert torch.equal(w[0, 1], torch.zeros(4, device=device)) and torch.equal(w[1], torch.zeros(3, 4, device=device))
    assert torch.equal(out[0, 1], torch.zeros(5, device=device)) and torch.equal(
        out[1], torch.zeros(3, 5, device=device)
    )
    (out.square().sum() + w.square().sum()).backward()
    assert torch.isfinite(scores.grad).all() and torch.isfinite(value.grad).all()
    assert (scores.grad[1] == 0).all()
    torch.testing.assert_close(w[0, 0].sum(), torch.tensor(1.0, device=device))


def test_mask_must_broadcast_to_scores():
    scores = torch.randn(2, 3, 4)
    with pytest.raises(
        ValueError, match=r"mask of shape \(2, 3, 5\) does not broadcast to scores of shape \(2, 3, 4\)"
    ):
        masked_softmax(scores, torch.ones(2, 3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\(7, 2, 3, 4\)"):  # would silently enlarge the scores
        masked_softmax(scores, torch.ones(7, 2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool or float"):
        masked_softmax(scores, torch.ones(2, 3, 4, dtype=torch.long))


def test_attend_rejects_mismatched_value():
    with pytest.raises(ValueError, match=r"scores \(2, 3, 4\), value \(2, 5, 6\)"):
        attend(torch.randn(2, 3, 4), torch.randn(2, 5, 6))


def test_sdpa_rejects_mismatched_dims():
    with pytest.raises(ValueError, match=r"query \(1, 2, 4\), key \(1, 3, 5\)"):
        scaled_dot_product_attention(torch.randn(1, 2, 4), torch.randn(1, 3, 5), torch.randn(1, 3, 5))


def random_case(seed, device, B, H, L, S, D, causal):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, n, D, generator=g).to(device) for n in (L, S, S))
    lengths = torch.randint(1, S + 1, (B,), generator=g).to(device)
    keep = lengths_to_mask(lengths, S)[:, None, None, :]  # (B, 1, 1, S); key 0 always kept
    if causal:
        keep = keep & torch.ones(L, S, dtype=torch.bool, device=device).tril()
    return q, k, v, keep


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(1, 3),
    H=st.integers(1, 3),
    L=st.integers(1, 6),
    S=st.integers(1, 7),
    D=st.sampled_from([1, 4, 8]),
    causal=st.booleans(),
)
def test_explicit_matches_pytorch_sdpa(seed, B, H, L, S, D, causal):
    """Parity with F.scaled_dot_product_attention under random padding + causal masks."""
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        q, k, v, keep = random_case(seed, device, B, H, L, S, D, causal)
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        out, w = scaled_dot_product_attention(q, k, v, attn_mask=keep)
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
        fused, none = scaled_dot_product_attention(q, k, v, attn_mask=keep, fused=True)
        assert none is None
        torch.testing.assert_close(fused, out, atol=1e-5, rtol=1e-4)


def test_is_causal_flag_matches_pytorch(device):
    q, k, v, _ = random_case(3, device, 2, 2, 5, 5, 8, False)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out, w = scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
    assert (w.triu(1) == 0).all()


class _SpySDPA:
    """Records the keyword arguments every call to F.scaled_dot_product_attention gets."""

    def __init__(self):
        self.calls, self.real = [], F.scaled_dot_product_attention

    def __call__(self, *args, **kwargs):
        self.calls.append(kwargs)
        return self.real(*args, **kwargs)


@pytest.mark.parametrize("L,S", [(5, 5), (3, 6), (6, 3)])
def test_is_causal_reaches_the_fused_kernel_as_a_flag_and_equals_the_explicit_mask(device, monkeypatch, L, S):
    q, k, v, _ = random_case(4, device, 2, 3, L, S, 8, False)
    spy = _SpySDPA()
    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    fused, none = scaled_dot_product_attention(q, k, v, is_causal=True, fused=True)
    assert none is None
    assert spy.calls[-1].get("is_causal") is True and spy.calls[-1].get("attn_mask") is None
    explicit, w = scaled_dot_product_attention(q, k, v, is_causal=True)  # builds causal_mask(L, S)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-4)
    assert (w.triu(1) == 0).all()
    masked, _ = scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(L, S, device=device), fused=True)
    torch.testing.assert_close(fused, masked, atol=1e-5, rtol=1e-4)
    # with another mask as well, the causal part is built into one mask
    keep = lengths_to_mask(torch.tensor([S, max(1, S - 2)], device=device), S)[:, None, None, :]
    both, _ = scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=True, fused=True)
    assert spy.calls[-1].get("is_causal", False) is False and spy.calls[-1]["attn_mask"] is not None
    explicit_both, _ = scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=True)
    torch.testing.assert_close(both, explicit_both, atol=1e-5, rtol=1e-4)


def test_fused_path_zeroes_fully_masked_rows(device):
    q, k, v, keep = random_case(5, device, 2, 2, 3, 4, 8, False)
    keep = keep.expand(2, 2, 3, 4).clone()
    keep[0, 1, 2] = False
    keep[1] = False
    explicit, _ = scaled_dot_product_attention(q, k, v, attn_mask=keep)
    fused, _ = scaled_dot_product_attention(q, k, v, attn_mask=keep, fused=True)
    assert torch.isfinite(fused).all()
    assert (fused[1] == 0).all() and (fused[0, 1, 2] == 0).all()
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-4)


def test_layer_cost_counts_self_attention_and_gru_multiply_adds():
    from attention.cost import layer_cost

    d = 16
    for n in (8, 16, 32):
        attn, rnn = layer_cost("self-attention", n, d, repeat=1), layer_cost("rnn", n, d, repeat=1)
        assert attn["flops"] == 4 * n * d * d + 2 * n * n * d  # projections + scores + weighted sum
        assert rnn["flops"] == 6 * n * d * d  # a GRU: three gates, two d x d products each
        assert attn["seconds"] > 0 and attn["saved_bytes"] > 0 and rnn["saved_bytes"] > 0
    with pytest.raises(ValueError, match="kind must be"):
        layer_cost("lstm", 8, d)
