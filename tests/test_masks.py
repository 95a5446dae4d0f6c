"""Mask helpers and the one converter between the two mask conventions."""

import pytest
import torch
import torch.nn.functional as F

from attention.masks import causal_mask, lengths_to_mask, to_keep_mask, window_mask


def test_lengths_to_mask(device):
    mask = lengths_to_mask(torch.tensor([3, 1, 0], device=device), max_len=4)
    expected = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool, device=device)
    assert torch.equal(mask, expected)
    assert lengths_to_mask(torch.tensor([2, 5])).shape == (2, 5)


@pytest.mark.parametrize(
    "lengths, match",
    [
        (torch.tensor([[1, 2]]), r"1-D.*\(1, 2\)"),
        (torch.tensor([1.0, 2.0]), "integers"),
        (torch.tensor([-1, 2]), ">= 0"),
    ],
)
def test_lengths_to_mask_rejects(lengths, match):
    with pytest.raises(ValueError, match=match):
        lengths_to_mask(lengths)
    with pytest.raises(ValueError, match="exceeds max_len=2"):
        lengths_to_mask(torch.tensor([3]), max_len=2)


def test_causal_mask_matches_pytorch_is_causal(device):
    q = torch.randn(1, 4, 8, device=device)
    k = torch.randn(1, 6, 8, device=device)
    v = torch.randn(1, 6, 3, device=device)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(4, 6, device=device))
    torch.testing.assert_close(got, expected)


def test_window_mask():
    mask = window_mask(4, 6, before=1, after=1)
    assert mask.sum(-1).tolist() == [2, 3, 3, 3]
    centers = torch.tensor([[5, 0, 2, 2]])
    m = window_mask(4, 6, centers, before=2, after=0)
    assert m[0, 0].nonzero().flatten().tolist() == [3, 4, 5]
    with pytest.raises(ValueError, match="window sizes"):
        window_mask(2, 2, before=-1)


def test_to_keep_mask_combines_padding_causal_and_blocked():
    B, H, L, S = 2, 3, 4, 4
    kpm = torch.tensor([[False, False, False, True], [False, False, True, True]])
    blocked = torch.zeros(L, S, dtype=torch.bool)
    blocked[2, 0] = True
    keep = to_keep_mask(kpm, blocked, True, batch_size=B, num_heads=H, L=L, S=S)
    assert keep.shape == (B, 1, L, S) and keep.dtype == torch.bool
    expected = (~kpm)[:, None, None, :] & ~blocked & torch.ones(L, S, dtype=torch.bool).tril()
    assert torch.equal(keep, expected.expand(B, 1, L, S))
    assert to_keep_mask(None, None, False, batch_size=B, L=L, S=S) is None


def test_to_keep_mask_float_masks_stay_additive():
    B, L, S = 1, 2, 3
    additive = torch.tensor([[0.0, -1.0, 0.5], [0.0, 0.0, 0.0]])
    kpm = torch.tensor([[False, True, False]])
    keep = to_keep_mask(kpm, additive, False, batch_size=B, L=L, S=S)
    assert keep.dtype.is_floating_point
    assert keep[0, 0, 0].tolist() == [0.0, float("-inf"), 0.5]


def test_to_keep_mask_per_head_masks():
    B, H, L, S = 2, 2, 3, 3
    per_head = torch.rand(B * H, L, S) > 0.5
    keep = to_keep_mask(None, per_head, False, batch_size=B, num_heads=H, L=L, S=S)
    assert torch.equal(keep, ~per_head.view(B, H, L, S))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(key_padding_mask=torch.zeros(3, 4, dtype=torch.bool)), r"\(B, S\) = \(2, 4\), got \(3, 4\)"),
        (dict(attn_mask=torch.zeros(5, 4, dtype=torch.bool)), r"got \(5, 4\)"),
        (dict(key_padding_mask=torch.zeros(2, 4, dtype=torch.long)), "bool or float"),
    ],
)
def test_to_keep_mask_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        to_keep_mask(**kwargs, batch_size=2, num_heads=1, L=3, S=4)
