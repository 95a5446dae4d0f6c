"""NTM addressing (chapter 7, Graves et al. 2014 §3.3): each step against a hand computation."""

import math

import pytest
import torch

from attention.addressing import ADDRESSING_STEPS, address, content_weights, interpolate, sharpen, shift


def test_content_weights_are_a_softmax_of_beta_times_cosine(device):
    memory = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]], device=device)  # (1, 3, 2)
    key = torch.tensor([[3.0, 0.0]], device=device)
    cos = [1.0, 0.0, 1 / math.sqrt(2)]
    for beta in (0.0, 1.0, 5.0):
        e = [math.exp(beta * c) for c in cos]
        expected = torch.tensor([[x / sum(e) for x in e]], device=device)
        torch.testing.assert_close(content_weights(memory, key, beta), expected)
    with pytest.raises(ValueError, match="β must be >= 0"):
        content_weights(memory, key, -1.0)
    with pytest.raises(ValueError, match=r"expected memory \(B, N, W\) and key \(B, W\)"):
        content_weights(memory, key[:, :1], 1.0)


def test_interpolation_gate_keeps_or_replaces_the_last_weighting(device):
    content = torch.tensor([[0.7, 0.2, 0.1]], device=device)
    previous = torch.tensor([[0.0, 0.0, 1.0]], device=device)
    torch.testing.assert_close(interpolate(content, previous, 1.0), content)
    torch.testing.assert_close(interpolate(content, previous, 0.0), previous)
    torch.testing.assert_close(
        interpolate(content, previous, 0.25), torch.tensor([[0.175, 0.05, 0.775]], device=device)
    )
    with pytest.raises(ValueError, match=r"gate g must be in \[0, 1\]"):
        interpolate(content, previous, 1.5)


def test_shift_is_a_circular_convolution(device):
    w = torch.tensor([[1.0, 0.0, 0.0, 0.0, 0.0]], device=device)
    # all the mass on offset +1: the focus moves one slot forward
    torch.testing.assert_close(
        shift(w, torch.tensor([0.0, 0.0, 1.0], device=device)), torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0]], device=device)
    )
    # offset -1 from slot 0 wraps around to the last slot
    torch.testing.assert_close(
        shift(w, torch.tensor([1.0, 0.0, 0.0], device=device)), torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0]], device=device)
    )
    # a spread kernel blurs: w̃(i) = Σ_j w(j) s(i - j), by hand
    w = torch.tensor([[0.5, 0.5, 0.0, 0.0, 0.0]], device=device)
    s = torch.tensor([0.1, 0.8, 0.1], device=device)  # offsets -1, 0, +1
    expected = torch.tensor([[0.5 * 0.8 + 0.5 * 0.1, 0.5 * 0.1 + 0.5 * 0.8, 0.5 * 0.1, 0.0, 0.5 * 0.1]], device=device)
    torch.testing.assert_close(shift(w, s), expected)
    with pytest.raises(ValueError, match="odd-length kernel"):
        shift(w, torch.tensor([0.5, 0.5], device=device))


def test_sharpening_raises_to_gamma_and_renormalises(device):
    w = torch.tensor([[0.5, 0.3, 0.2]], device=device)
    torch.testing.assert_close(sharpen(w, 1.0), w)
    squares = torch.tensor([[0.25, 0.09, 0.04]], device=device)
    torch.testing.assert_close(sharpen(w, 2.0), squares / squares.sum())
    assert sharpen(w, 50.0)[0, 0] > 0.999
    with pytest.raises(ValueError, match="γ must be >= 1"):
        sharpen(w, 0.5)


def test_address_chains_the_four_steps(device):
    torch.manual_seed(0)
    memory = torch.randn(2, 6, 4, device=device)
    key = torch.randn(2, 4, device=device)
    previous = torch.softmax(torch.randn(2, 6, device=device), -1)
    kernel = torch.tensor([[0.2, 0.6, 0.2], [0.0, 0.0, 1.0]], device=device)
    steps = address(memory, key, 3.0, 0.6, previous, kernel, 2.0)
    assert tuple(steps) == ADDRESSING_STEPS
    c = content_weights(memory, key, 3.0)
    g = interpolate(c, previous, 0.6)
    torch.testing.assert_close(steps["shifted"], shift(g, kernel))
    torch.testing.assert_close(steps["sharpened"], sharpen(shift(g, kernel), 2.0))
    for w in steps.values():
        torch.testing.assert_close(w.sum(-1), torch.ones(2, device=device))
