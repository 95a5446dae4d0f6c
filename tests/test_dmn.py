"""Dynamic memory networks (chapter 7): gates over facts, padding, one pass by hand, errors, fitting."""

import pytest
import torch
import torch.nn.functional as F

from attention.models.dmn import DMN, DMNConfig
from attention.models.registry import build, model_name

V, A = 30, 6


def story_batch(device, B=3, M=5, J=4, seed=0):
    """Stories of 5, 3 and 1 sentences (empty slots after them), sentences of 1-3 words, a question each."""
    g = torch.Generator().manual_seed(seed)
    story = torch.randint(1, V, (B, M, J), generator=g)
    story[:, :, -1] = 0  # the last word position is padding in every sentence
    story[:, 1, 2:] = 0  # sentence 1 has one word
    for b, n in enumerate([5, 3, 1][:B]):
        story[b, n:] = 0
    question = torch.randint(1, V, (B, J), generator=g)
    question[0, 2:] = 0
    return story.to(device), question.to(device)


def small(**overrides):
    return DMNConfig(**(dict(vocab=V, answers=A, embed_dim=8, hidden_dim=12, gate_dim=10, passes=3) | overrides))


@pytest.mark.parametrize("update", ["relu", "gru"])
def test_gates_sum_to_one_over_real_facts_and_are_exactly_zero_on_empty_slots(device, update):
    model = DMN(small(update=update)).to(device)
    story, question = story_batch(device)
    out = model(story, question)
    gates = out.attention["hops"]  # (B, P, M)
    assert out.logits.shape == (3, A) and gates.shape == (3, 3, 5)
    empty = ~(story != 0).any(-1)  # (B, M)
    assert torch.all(gates.transpose(1, 2)[empty] == 0)
    assert torch.all(gates.transpose(1, 2)[~empty] > 0)
    torch.testing.assert_close(gates.sum(-1), torch.ones(3, 3, device=device))


def test_a_story_with_no_sentence_gives_zero_gates_and_finite_gradients(device):
    model = DMN(small()).to(device)
    story, question = story_batch(device)
    story[2] = 0  # no sentence at all
    out = model(story, question)
    assert torch.all(out.attention["hops"][2] == 0)
    out.logits.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("update", ["relu", "gru"])
def test_extra_empty_slots_and_padding_words_change_nothing(device, update):
    model = DMN(small(update=update)).to(device).eval()
    story, question = story_batch(device)
    B, M, J = story.shape
    padded = torch.zeros(B, M + 3, J + 2, dtype=torch.long, device=device)  # 3 more slots, 2 more words
    padded[:, :M, :J] = story
    padded_question = torch.zeros(B, J + 2, dtype=torch.long, device=device)
    padded_question[:, :J] = question
    out, out_padded = model(story, question), model(padded, padded_question)
    torch.testing.assert_close(out_padded.logits, out.logits)
    torch.testing.assert_close(out_padded.attention["hops"][..., :M], out.attention["hops"])
    assert torch.all(out_padded.attention["hops"][..., M:] == 0)


def test_facts_are_the_fact_gru_over_the_sentence_gru_of_each_real_sentence(device):
    """The input module by hand: each sentence read alone (no padding) by GRU_w, then c = s + GRU_f(s)."""
    model = DMN(small()).to(device)
    story, question = story_batch(device)
    keep = (story != 0).any(-1)
    c = model.facts(story, keep)  # (B, M, H)
    for b in range(story.shape[0]):
        sentences = []
        for i in range(int(keep[b].sum())):
            words = story[b, i][story[b, i] != 0]  # (J_i,)
            _, h = model.sentence_rnn(model.embedding(words)[None])  # h (1, 1, H)
            sentences.append(h[0, 0])
        states, _ = model.fact_rnn(torch.stack(sentences)[None])  # (1, n, H)
        torch.testing.assert_close(c[b, : len(sentences)], torch.stack(sentences) + states[0])  # c = s + GRU_f(s)
        assert torch.all(c[b, len(sentences) :] == 0)
    words = question[0][question[0] != 0]
    _, h = model.sentence_rnn(model.embedding(words)[None])
    torch.testing.assert_close(model.question(question)[0], h[0, 0])


def test_two_passes_by_hand_from_facts_question_and_memory(device):
    """g = softmax(w2ᵀ tanh(W1 [c∘q; c∘m; |c−q|; |c−m|] + b1)), e = Σ g c,
    m¹ = ReLU(W_0 [q; e; q] + b_0), logits = W_a [m²; q]."""
    model = DMN(small(passes=2)).to(device)
    story, question = story_batch(device)
    keep = (story != 0).any(-1)  # (B, M)
    c, q = model.facts(story, keep), model.question(question)  # (B, M, H), (B, H)
    W1, b1 = model.gate_hidden.weight, model.gate_hidden.bias  # (G, 4H), (G,)
    w2 = model.gate_out.weight[0]  # (G,)

    def gate(m):
        rows = []
        for b in range(c.shape[0]):
            scores = []
            for t in range(c.shape[1]):
                z = torch.cat([c[b, t] * q[b], c[b, t] * m[b], (c[b, t] - q[b]).abs(), (c[b, t] - m[b]).abs()])
                blocked = torch.tensor(float("-inf"), device=device)
                scores.append(w2 @ torch.tanh(W1 @ z + b1) if keep[b, t] else blocked)
            rows.append(torch.softmax(torch.stack(scores), 0))
        return torch.stack(rows)  # (B, M)

    g1 = gate(q)  # m⁰ = q
    e1 = torch.einsum("bm,bmh->bh", g1, c)
    m1 = torch.relu(torch.cat([q, e1, q], -1) @ model.updates[0].weight.T + model.updates[0].bias)
    g2 = gate(m1)
    e2 = torch.einsum("bm,bmh->bh", g2, c)
    m2 = torch.relu(torch.cat([m1, e2, q], -1) @ model.updates[1].weight.T + model.updates[1].bias)
    out = model(story, question)
    torch.testing.assert_close(out.attention["hops"][:, 0], g1)
    torch.testing.assert_close(out.attention["hops"][:, 1], g2)
    torch.testing.assert_close(out.logits, torch.cat([m2, q], -1) @ model.answer.weight.T + model.answer.bias)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(passes=0), "positive integers"),
        (dict(hidden_dim=2.5), "positive integers"),
        (dict(update="lstm"), "update"),
        (dict(dropout=1.0), "dropout"),
        (dict(pad_id=V), "pad_id"),
    ],
)
def test_bad_configs_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        small(**overrides)


def test_bad_inputs_are_refused(device):
    model = DMN(small()).to(device)
    story, question = story_batch(device)
    with pytest.raises(ValueError, match=r"story \(B, M, J\)"):
        model(story[:, 0], question)  # (B, J) story
    with pytest.raises(ValueError, match=r"story \(3, 5, 4\), question \(2, 4\)"):
        model(story, question[:2])
    with pytest.raises(ValueError, match="torch.long"):
        model(story.float(), question)
    big = story.clone()
    big[0, 0, 0] = V
    with pytest.raises(ValueError, match="vocabulary has 30"):
        model(big, question)
    gap = story.clone()
    gap[0, 1] = 0  # sentence 2 follows an empty slot
    with pytest.raises(ValueError, match="follows an empty slot"):
        model(gap, question)
    no_words = question.clone()
    no_words[1] = 0
    with pytest.raises(ValueError, match="question has no words"):
        model(story, no_words)


def test_overfits_a_tiny_set(device):
    g = torch.Generator().manual_seed(1)
    story = torch.randint(1, V, (12, 4, 3), generator=g)
    story[:6, 3:] = 0  # half the stories have 3 sentences
    question = torch.randint(1, V, (12, 3), generator=g)
    answers = torch.randint(0, A, (12,), generator=g)
    story, question, answers = story.to(device), question.to(device), answers.to(device)
    model = DMN(small(passes=2)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        F.cross_entropy(model(story, question).logits, answers).backward()
        opt.step()
    accuracy = (model(story, question).logits.argmax(-1) == answers).float().mean().item()
    assert accuracy == 1.0


def test_registered_as_dmn():
    model = build("dmn", {"vocab": V, "answers": A, "passes": 2, "hidden_dim": 16})
    assert isinstance(model, DMN) and model_name(model) == "dmn"
    assert model.cfg == DMNConfig(vocab=V, answers=A, passes=2, hidden_dim=16)
    assert len(model.updates) == 2
