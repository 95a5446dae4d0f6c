"""Local attention (Luong §3.2) and the Luong decoder (chapter 9), on each device."""

import pytest
import torch

from attention.local import PredictivePosition, local_attention, local_attention_reference, window_positions
from attention.models import LuongConfig, LuongSeq2Seq
from attention.scores import make_score

CONTENT_SCORES = ["dot", "scaled_dot", "general", "additive", "concat", "cosine"]


def dense(weights, positions, S):
    """Scatter window weights (B, L, W) back onto source positions (B, L, S)."""
    out = torch.zeros(*weights.shape[:2], S, dtype=weights.dtype, device=weights.device)
    inside = (positions >= 0) & (positions < S)
    return out.scatter_add_(2, positions.clamp(0, S - 1), weights * inside)


@pytest.mark.parametrize("name", CONTENT_SCORES)
@pytest.mark.parametrize("D, gaussian", [(0, True), (2, True), (3, False)])
def test_local_equals_masked_reference_values_and_gradients(device, name, D, gaussian):
    torch.manual_seed(0)
    B, L, S, E = 3, 6, 11, 8
    score = make_score(name, query_dim=E, key_dim=E, hidden_dim=5).double().to(device)
    q, k, v = (torch.randn(B, n, E, dtype=torch.double, device=device, requires_grad=True) for n in (L, S, S))
    centers = torch.rand(B, L, dtype=torch.double, device=device) * (S + 4) - 2  # some windows leave the sentence
    lengths = torch.tensor([11, 5, 1], device=device)
    out, w, pos = local_attention(score, q, k, v, centers, lengths, D, gaussian)
    ref_out, ref_w = local_attention_reference(score, q, k, v, centers, lengths, D, gaussian)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(dense(w, pos, S), ref_w)
    upstream = torch.randn_like(out)
    grads = torch.autograd.grad((out * upstream).sum(), [q, k, v, *score.parameters()])
    ref_grads = torch.autograd.grad((ref_out * upstream).sum(), [q, k, v, *score.parameters()])
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r)
    assert torch.isfinite(torch.cat([g.flatten() for g in grads])).all()


def test_zero_width_window_with_integer_centres_is_finite(device):
    """D = 0 (sigma = 0) at integer p_t (local-m) once gave 0/0 = NaN."""
    score = make_score("dot")
    q, k = torch.randn(1, 3, 4, device=device), torch.randn(1, 5, 4, device=device)
    centers = torch.tensor([[0.0, 1.0, 2.0]], device=device)
    out, w, _ = local_attention(score, q, k, k, centers, torch.tensor([5], device=device), D=0)
    assert torch.isfinite(out).all() and torch.equal(w, torch.ones_like(w))
    ref, _ = local_attention_reference(score, q, k, k, centers, torch.tensor([5], device=device), D=0)
    torch.testing.assert_close(out, ref)


def test_local_weights_respect_window_and_sentence(device):
    score = make_score("dot")
    q, k = torch.randn(2, 4, 6, device=device), torch.randn(2, 9, 6, device=device)
    centers = torch.tensor([[0.0, 3.4, 8.0, 20.0], [0.0, 1.0, 2.0, 3.0]], device=device)
    out, w, pos = local_attention(score, q, k, k, centers, torch.tensor([9, 2], device=device), D=2)
    assert pos.shape == (2, 4, 5) and pos[0, 1].tolist() == [1, 2, 3, 4, 5]
    assert (w[(pos < 0) | (pos >= 9)] == 0).all()  # outside the source
    assert (w[1][pos[1] >= 2] == 0).all()  # beyond sentence 2's length
    assert (w[0, 3] == 0).all() and (out[0, 3] == 0).all()  # a window with no key at all
    # the Gaussian: the window's weights fall off around p_t and never exceed the softmax
    _, plain, _ = local_attention(score, q, k, k, centers, torch.tensor([9, 2], device=device), D=2, gaussian=False)
    assert (w <= plain + 1e-7).all()


def test_local_attention_rejects_bad_input():
    score = make_score("dot")
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    with pytest.raises(ValueError, match=r"centers must be \(B, L\) = \(2, 3\), got \(2, 4\)"):
        local_attention(score, q, k, k, torch.zeros(2, 4), torch.tensor([5, 5]), 1)
    with pytest.raises(ValueError, match=r"src_lengths must be \(B,\)"):
        local_attention(score, q, k, k, torch.zeros(2, 3), torch.tensor([5]), 1)
    with pytest.raises(ValueError, match="D must be >= 0"):
        local_attention(score, q, k, k, torch.zeros(2, 3), torch.tensor([5, 5]), -1)


def test_predictive_position_stays_in_the_sentence(device):
    torch.manual_seed(0)
    pos = PredictivePosition(8, 4).to(device)
    p = pos(torch.randn(3, 5, 8, device=device) * 10, torch.tensor([7, 3, 1], device=device))
    assert p.shape == (3, 5) and (p >= 0).all() and (p <= torch.tensor([7, 3, 1], device=device)[:, None]).all()
    assert window_positions(torch.tensor([[2.6]]), 1).tolist() == [[[2, 3, 4]]]


def batch(device):
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, 20, (3, 9), generator=g)
    lengths = torch.tensor([9, 5, 2])
    src[torch.arange(9)[None] >= lengths[:, None]] = 0
    tgt = torch.randint(4, 15, (3, 7), generator=g)
    return src.to(device), lengths.to(device), tgt.to(device)


VARIANTS = [
    (None, None, True),
    ("dot", None, True),
    ("general", "m", True),
    ("concat", "p", False),
    ("location", None, False),
    ("cosine", "p", True),
    ("additive", "m", False),
]


@pytest.mark.parametrize("attention, local, feed", VARIANTS)
def test_luong_variants_mask_padding_and_decode(device, attention, local, feed):
    torch.manual_seed(0)
    cfg = LuongConfig(
        20, 15, embed_dim=16, hidden_dim=16, attention=attention, local=local, window=2, input_feeding=feed, dropout=0.0
    )
    model = LuongSeq2Seq(cfg).to(device).eval()
    src, lengths, tgt = batch(device)
    out = model(src, lengths, tgt, return_attention=True)
    assert out.logits.shape == (3, 7, 15)
    if attention is None:
        assert out.attention is None
    else:
        assert (out.attention[1, :, 5:] == 0).all() and (out.attention[2, :, 2:] == 0).all()
        assert (out.attention.sum(-1) <= 1 + 1e-5).all()
    greedy = model.greedy(src, lengths, max_len=6)
    beam = model.beam_search(src, lengths, beam_size=1, max_len=6)
    for b in range(3):
        g = greedy.tokens[b].tolist()
        g = g[: g.index(3) + 1] if 3 in g else g
        assert beam.tokens[b, : len(g)].tolist() == g


def test_luong_overfits_a_tiny_batch_with_local_p(device):
    torch.manual_seed(0)
    model = LuongSeq2Seq(
        LuongConfig(20, 15, embed_dim=16, hidden_dim=16, attention="general", local="p", window=3, dropout=0.0)
    ).to(device)
    src, lengths, tgt = batch(device)
    tgt_in = torch.cat([torch.full((3, 1), 2, device=device), tgt], 1)
    tgt_out = torch.cat([tgt, torch.full((3, 1), 3, device=device)], 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        logits = model(src, lengths, tgt_in).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 15), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert model.position.W_p.weight.grad.abs().sum() > 0  # p_t is learned through the Gaussian


def test_luong_rejects_impossible_combinations():
    with pytest.raises(ValueError, match="local attention needs a content-based score"):
        LuongSeq2Seq(LuongConfig(5, 5, attention="location", local="p"))
    with pytest.raises(ValueError, match="local must be None, 'm' or 'p'"):
        LuongSeq2Seq(LuongConfig(5, 5, local="x"))
