"""End-to-end memory networks (chapter 7): hops over a story's sentences, the encodings, tying, and
the one-hop case that is exactly chapter 1's attention with keys equal to values."""

import pytest
import torch
import torch.nn.functional as F

from attention.functional import attend
from attention.models import MemN2N, MemN2NConfig, build, model_name
from attention.models.memn2n import position_encoding

V, A = 30, 6


def story_batch(device, B=3, M=5, J=4, seed=0):
    """Stories of 5, 3 and 1 sentences (empty slots after them) and a question each."""
    g = torch.Generator().manual_seed(seed)
    story = torch.randint(1, V, (B, M, J), generator=g)
    story[:, :, -1] = 0  # the last word position is padding in every sentence
    for b, n in enumerate([5, 3, 1][:B]):
        story[b, n:] = 0
    question = torch.randint(1, V, (B, J), generator=g)
    return story.to(device), question.to(device)


@pytest.mark.parametrize("tying", ["adjacent", "layerwise"])
@pytest.mark.parametrize("linear", [False, True])
def test_empty_slots_get_exactly_zero_weight_in_every_hop(device, tying, linear):
    model = MemN2N(MemN2NConfig(V, A, embed_dim=8, hops=3, memory_size=6, tying=tying, linear=linear)).to(device)
    story, question = story_batch(device)
    out = model(story, question)
    hops = out.attention["hops"]  # (B, K, M)
    assert out.logits.shape == (3, A) and hops.shape == (3, 3, 5)
    empty = ~(story != 0).any(-1)  # (B, M)
    assert torch.all(hops.transpose(1, 2)[empty] == 0)
    if not linear:
        torch.testing.assert_close(hops.sum(-1), torch.ones(3, 3, device=device))


def test_one_hop_with_keys_equal_to_values_is_the_basic_attention(device):
    """With one hop and A = C, a hop is attend(uᵀ m, m): chapter 1's attention, keys = values."""
    model = MemN2N(MemN2NConfig(V, A, embed_dim=8, hops=1, memory_size=6, encoding="bow")).to(device)
    with torch.no_grad():
        model.embeddings[1].weight.copy_(model.embeddings[0].weight)  # C = A
        model.temporal_embeddings[1].copy_(model.temporal_embeddings[0])
    story, question = story_batch(device)
    keep = (story != 0).any(-1)
    u = model.question(question)  # (B, D)
    memory = model._memory(story, 0, keep.sum(1))  # (B, M, D), keys = values
    expected, weights = attend((u[:, None] @ memory.transpose(1, 2)), memory, keep[:, None])  # (B, 1, D)
    out = model(story, question)
    torch.testing.assert_close(out.attention["hops"][:, 0], weights[:, 0])
    torch.testing.assert_close(out.logits, model.W(u + expected[:, 0]))


def test_hops_chain_the_question_through_the_reads(device):
    """u^{k+1} = u^k + o^k (adjacent): hop 2's weights are softmax((u + o¹)ᵀ m²) by hand."""
    model = MemN2N(MemN2NConfig(V, A, embed_dim=8, hops=2, memory_size=6, temporal=False)).to(device)
    story, question = story_batch(device)
    keep = (story != 0).any(-1)
    u1 = model.question(question)
    m1, c1 = model._memory(story, 0, keep.sum(1)), model._memory(story, 1, keep.sum(1))
    p1 = torch.softmax((m1 @ u1[:, :, None])[..., 0].masked_fill(~keep, float("-inf")), -1)
    u2 = u1 + (p1[:, :, None] * c1).sum(1)
    m2 = model._memory(story, 1, keep.sum(1))  # A² = C¹
    p2 = torch.softmax((m2 @ u2[:, :, None])[..., 0].masked_fill(~keep, float("-inf")), -1)
    hops = model(story, question).attention["hops"]
    torch.testing.assert_close(hops[:, 0], p1)
    torch.testing.assert_close(hops[:, 1], p2)


def test_position_encoding_is_the_papers_formula():
    l = position_encoding(4, 3)  # (J, D)
    J, D = 4, 3
    for j in range(1, J + 1):
        for k in range(1, D + 1):
            assert l[j - 1, k - 1].item() == pytest.approx((1 - j / J) - (k / D) * (1 - 2 * j / J))


def test_position_encoding_makes_word_order_matter_and_bow_does_not():
    story = torch.tensor([[[1, 2, 3], [4, 5, 6]]])
    swapped = torch.tensor([[[3, 2, 1], [4, 5, 6]]])
    question = torch.tensor([[7, 8, 9]])
    for encoding, same in (("bow", True), ("position", False)):
        torch.manual_seed(0)
        model = MemN2N(MemN2NConfig(V, A, embed_dim=8, hops=1, memory_size=4, encoding=encoding))
        a, b = model(story, question).logits, model(swapped, question).logits
        assert torch.allclose(a, b) == same, encoding


def test_temporal_encoding_tells_the_order_of_identical_sentences():
    story = torch.tensor([[[1, 2], [3, 4], [1, 2]]])
    question = torch.tensor([[5, 6]])
    torch.manual_seed(0)
    model = MemN2N(MemN2NConfig(V, A, embed_dim=8, hops=1, memory_size=4, encoding="bow"))
    p = model(story, question).attention["hops"][0, 0]
    assert p[0] != p[2]  # same words, different ages
    model.cfg.temporal = False
    p = model(story, question).attention["hops"][0, 0]
    torch.testing.assert_close(p[0], p[2])


def test_bad_inputs_and_configs_are_named():
    model = MemN2N(MemN2NConfig(V, A, memory_size=2))
    with pytest.raises(ValueError, match=r"expected story \(B, M, J\) and question \(B, J\)"):
        model(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="the story has 3 sentences; memory_size is 2"):
        model(torch.ones(1, 3, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="a real sentence follows an empty slot"):
        model(torch.tensor([[[0, 0], [1, 2]]]), torch.ones(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="MemN2NConfig.encoding must be one of"):
        MemN2NConfig(V, A, encoding="onehot")
    with pytest.raises(ValueError, match="MemN2NConfig.tying must be one of"):
        MemN2NConfig(V, A, tying="none")
    with pytest.raises(ValueError, match="MemN2NConfig sizes must be positive integers"):
        MemN2NConfig(V, A, hops=0)


@pytest.mark.parametrize("tying", ["adjacent", "layerwise"])
def test_overfits_a_tiny_set_and_is_registered(device, tying):
    torch.manual_seed(0)
    story = torch.randint(1, V, (12, 4, 3))
    question = torch.randint(1, V, (12, 3))
    answers = torch.arange(12) % A
    story, question, answers = story.to(device), question.to(device), answers.to(device)
    model = build("memn2n", dict(vocab=V, answers=A, embed_dim=16, hops=2, memory_size=4, tying=tying)).to(device)
    assert model_name(model) == "memn2n"
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    before = (model(story, question).logits.argmax(-1) == answers).float().mean().item()
    for _ in range(300):
        opt.zero_grad()
        F.cross_entropy(model(story, question).logits, answers).backward()
        opt.step()
    after = (model(story, question).logits.argmax(-1) == answers).float().mean().item()
    assert after == 1.0 and before < 0.9, (before, after)


def test_position_encoding_of_a_sentence_does_not_depend_on_the_padding_of_its_batch():
    torch.manual_seed(0)
    model = MemN2N(MemN2NConfig(V, A, embed_dim=8, hops=2, memory_size=4))
    story = torch.tensor([[[1, 2, 3], [4, 5, 0]]])
    question = torch.tensor([[6, 7, 0]])
    padded_story = torch.cat([story, torch.zeros(1, 2, 2, dtype=torch.long)], -1)  # J = 5
    padded_question = torch.cat([question, torch.zeros(1, 2, dtype=torch.long)], -1)
    torch.testing.assert_close(model(story, question).logits, model(padded_story, padded_question).logits)
    by_length = position_encoding(5, 8, lengths=torch.tensor([3]))[0]  # (J, D) for a 3-word sentence
    torch.testing.assert_close(by_length[:3], position_encoding(3, 8))
    assert torch.all(by_length[3:] == 0)
