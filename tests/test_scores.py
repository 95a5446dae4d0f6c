"""Every score function of survey §4 against an independent formula."""

import math

import pytest
import torch

from attention.scores import SCORES, AdditiveScore, ConcatScore, CosineScore, make_score

B, L, S, E = 2, 3, 5, 6


def qk(device, eq=E, ek=E):
    g = torch.Generator().manual_seed(1)
    q = torch.randn(B, L, eq, generator=g, dtype=torch.float64).to(device)
    k = torch.randn(B, S, ek, generator=g, dtype=torch.float64).to(device)
    return q, k


def loop_scores(q, k, f):
    """The score written the slow way: one (query, key) pair at a time."""
    out = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype, device=q.device)
    for b in range(q.shape[0]):
        for t in range(q.shape[1]):
            for i in range(k.shape[1]):
                out[b, t, i] = f(q[b, t], k[b, i])
    return out


def build(name, device, eq=E, ek=E, **kw):
    return make_score(name, query_dim=eq, key_dim=ek, hidden_dim=4, max_len=S, **kw).double().to(device)


def test_registry_names():
    assert set(SCORES) == {"dot", "scaled_dot", "general", "additive", "concat", "location", "cosine"}


def test_dot(device):
    q, k = qk(device)
    expected = loop_scores(q, k, lambda s, h: (s * h).sum())
    torch.testing.assert_close(build("dot", device)(q, k), expected)


def test_scaled_dot(device):
    q, k = qk(device)
    expected = loop_scores(q, k, lambda s, h: (s * h).sum() / math.sqrt(E))
    torch.testing.assert_close(build("scaled_dot", device)(q, k), expected)
    torch.testing.assert_close(
        build("scaled_dot", device, scale=0.5)(q, k), loop_scores(q, k, lambda s, h: 0.5 * (s * h).sum())
    )


def test_general(device):
    q, k = qk(device, eq=6, ek=4)
    score = build("general", device, eq=6, ek=4)
    W = score.W_a.weight  # (Eq, Ek)
    expected = loop_scores(q, k, lambda s, h: s @ W @ h)
    torch.testing.assert_close(score(q, k), expected)


def test_additive(device):
    q, k = qk(device, eq=6, ek=4)
    score = build("additive", device, eq=6, ek=4)
    W, U, v = score.W_a.weight, score.U_a.weight, score.v_a.weight[0]
    expected = loop_scores(q, k, lambda s, h: v @ torch.tanh(W @ s + U @ h))
    torch.testing.assert_close(score(q, k), expected)


def test_concat(device):
    q, k = qk(device, eq=6, ek=4)
    score = build("concat", device, eq=6, ek=4)
    W, v = score.W_a.weight, score.v_a.weight[0]
    expected = loop_scores(q, k, lambda s, h: v @ torch.tanh(W @ torch.cat([s, h])))
    torch.testing.assert_close(score(q, k), expected)


def test_concat_equals_additive_with_split_weights(device):
    """v_aᵀ tanh(W_a [s; h]) == v_aᵀ tanh(W_1 s + W_2 h) with W_a = [W_1 W_2]."""
    q, k = qk(device, eq=6, ek=4)
    concat = ConcatScore(6, 4, 5).double().to(device)
    additive = AdditiveScore(6, 4, 5).double().to(device)
    with torch.no_grad():
        additive.W_a.weight.copy_(concat.W_a.weight[:, :6])
        additive.U_a.weight.copy_(concat.W_a.weight[:, 6:])
        additive.v_a.weight.copy_(concat.v_a.weight)
    torch.testing.assert_close(concat(q, k), additive(q, k))


def test_location(device):
    q, k = qk(device)
    score = build("location", device)
    W = score.W_a.weight
    assert score.W_a.bias is None  # Luong Eq. 9: a_t = softmax(W_a h_t), no bias
    expected = loop_scores(q, k, lambda s, h: 0.0)  # shape only
    for bb in range(B):
        for t in range(L):
            expected[bb, t] = (W @ q[bb, t])[:S]
    torch.testing.assert_close(score(q, k), expected)
    # the location score ignores the keys' content
    torch.testing.assert_close(score(q, torch.randn_like(k)), expected)


def test_location_rejects_long_source(device):
    q, k = qk(device)
    score = make_score("location", query_dim=E, max_len=S - 1).double().to(device)
    with pytest.raises(ValueError, match=r"max_len=4.*\(2, 5, 6\)"):
        score(q, k)


@pytest.mark.parametrize("beta", [0.5, 1.0, 7.0])
def test_cosine(device, beta):
    q, k = qk(device)
    expected = loop_scores(q, k, lambda s, h: beta * (s @ h) / (s.norm() * h.norm()))
    torch.testing.assert_close(build("cosine", device, beta=beta)(q, k), expected)


def test_cosine_learnable_beta_gets_gradient(device):
    q, k = qk(device)
    score = CosineScore(beta=2.0, learn_beta=True).double().to(device)
    assert score.beta.item() == pytest.approx(2.0)
    score(q, k).sum().backward()
    assert score.raw_beta.grad is not None and torch.isfinite(score.raw_beta.grad)


def test_cosine_zero_vector_is_finite(device):
    q, k = qk(device)
    q[0, 0] = 0.0
    assert torch.isfinite(build("cosine", device)(q, k)).all()


@pytest.mark.parametrize("name", ["dot", "scaled_dot", "cosine"])
def test_same_dim_scores_reject_mismatch(name, device):
    q, k = qk(device, eq=6, ek=4)
    with pytest.raises(ValueError, match=r"\(2, 3, 6\).*\(2, 5, 4\)"):
        build(name, device, eq=6, ek=4)(q, k)


@pytest.mark.parametrize("name", sorted(SCORES))
def test_bad_shapes_raise(name, device):
    q, k = qk(device)
    score = build(name, device)
    with pytest.raises(ValueError, match=r"\(2, 3, 6\).*\(5, 6\)"):
        score(q, k[0])
    with pytest.raises(ValueError, match="batch"):
        score(q, k[:1])


@pytest.mark.parametrize("name", sorted(SCORES))
def test_every_score_is_differentiable_and_finite(name, device):
    q, k = qk(device)
    q.requires_grad_(True)
    out = build(name, device)(q, k)
    assert out.shape == (B, L, S)
    out.square().sum().backward()
    assert torch.isfinite(q.grad).all()


@pytest.mark.parametrize("name", sorted(SCORES))
def test_every_score_names_a_wrong_last_dimension(name, device):
    """Scores with parameters refuse sizes they were not built for, with the package's message."""
    score = build(name, device, eq=6, ek=4)  # dot, scaled_dot, cosine need Eq == Ek: built any size
    q, k = qk(device, eq=6, ek=4)
    wrong_q, _ = qk(device, eq=5, ek=4)
    _, wrong_k = qk(device, eq=6, ek=7)
    if score.same_dim:
        with pytest.raises(ValueError, match=r"needs Eq == Ek; got query \(2, 3, 6\), key \(2, 5, 4\)"):
            score(q, k)
        return
    score(q, k)  # the sizes it was built for
    with pytest.raises(ValueError, match=r"was built for query_dim \(Eq\) = 6.*got query \(2, 3, 5\)"):
        score(wrong_q, k)
    if score.key_dim is not None:
        with pytest.raises(ValueError, match=r"key_dim \(Ek\) = 4; got query \(2, 3, 6\), key \(2, 5, 7\)"):
            score(q, wrong_k)
    if hasattr(score, "project_keys"):  # the decoder's fast path checks too
        with pytest.raises(ValueError, match="was built for"):
            score.project_keys(wrong_k)
        with pytest.raises(ValueError, match="was built for"):
            score.score_projected(wrong_q, score.project_keys(k))


def test_make_score_errors():
    with pytest.raises(ValueError, match="unknown score 'bilinear'"):
        make_score("bilinear")
    with pytest.raises(ValueError, match="needs query_dim, key_dim"):
        make_score("general")
    with pytest.raises(ValueError, match="needs max_len"):
        make_score("location", query_dim=4)
    with pytest.raises(ValueError, match="beta must be >= 0"):
        make_score("cosine", beta=-1.0)
    module = CosineScore()
    assert make_score(module) is module


@pytest.mark.parametrize("name", ["additive", "concat"])
def test_pair_scores_chunk_over_queries_within_the_memory_bound(name, device):
    """No (B, rows, S, A) pair tensor passes max_pair_bytes, forward or backward, and the chunked
    scores and gradients equal the unchunked ones."""
    B, L, S, Eq, Ek, A = 2, 9, 5, 3, 4, 6
    score = make_score(name, query_dim=Eq, key_dim=Ek, hidden_dim=A).to(device)
    q = torch.randn(B, L, Eq, device=device, requires_grad=True)
    k = torch.randn(B, S, Ek, device=device, requires_grad=True)
    whole = score(q, k)
    grads = torch.autograd.grad(whole.square().sum(), (q, k, *score.parameters()))
    assert score.query_chunk(q, k) == L  # far below the default bound: one chunk

    per_query = B * S * score.pair_width() * q.element_size()
    score.max_pair_bytes = 2 * per_query + 1  # two queries per chunk: 5 chunks for 9 queries
    assert score.query_chunk(q, k) == 2
    pairs, chunks = [], []
    pairs_hook = score.v_a.register_forward_hook(lambda m, inputs, out: pairs.append(inputs[0].shape))
    score_chunk = score.score
    score.score = lambda query, key: chunks.append(query.shape) or score_chunk(query, key)
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        chunked = score(q, k)
    assert len(chunks) == 5  # 9 queries, two at a time
    chunked_grads = torch.autograd.grad(chunked.square().sum(), (q, k, *score.parameters()))
    pairs_hook.remove()
    del score.score
    assert len(chunks) == 10  # the backward pass recomputed each chunk once
    assert [c[1] for c in chunks[:5]] == [2, 2, 2, 2, 1]
    assert len(pairs) == 5 and all(p[:3] == (B, c[1], S) for p, c in zip(pairs, chunks))
    for shape in pairs:  # the pair tensor that reaches v_a: (B, rows, S, A)
        assert B * shape[1] * S * score.pair_width() * q.element_size() <= score.max_pair_bytes
    # what autograd keeps outside the checkpoints: inputs and (B, L, S)-sized tensors, no pair tensor
    assert max(saved) <= max(q.numel(), k.numel(), B * L * S) * q.element_size()
    torch.testing.assert_close(chunked, whole)
    for got, want in zip(chunked_grads, grads):
        torch.testing.assert_close(got, want)
    with torch.no_grad():
        torch.testing.assert_close(score(q, k), whole.detach())


def test_pair_bound_takes_at_least_one_query_per_chunk():
    score = make_score("additive", query_dim=2, key_dim=2, hidden_dim=3)
    score.max_pair_bytes = 1
    q, k = torch.randn(1, 4, 2), torch.randn(1, 3, 2)
    assert score.query_chunk(q, k) == 1
    with torch.no_grad():
        torch.testing.assert_close(score(q, k), score.score(q, k))
