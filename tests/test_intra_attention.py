"""Attention inside one sentence before the Transformer (chapter 6): Cheng et al.'s LSTMN, Lin et al.'s
structured self-attentive embedding with its penalty, and the BiLSTM pooling baselines."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from attention import experiments as ex
from attention.checkpoints import load_checkpoint, save_checkpoint
from attention.data import Vocab
from attention.models import (
    MODELS,
    BiLSTMPooling,
    LSTMNClassifier,
    LSTMNConfig,
    PoolingClassifierConfig,
    SelfAttentiveClassifier,
    SelfAttentiveConfig,
    build,
    model_name,
    penalized_loss,
    penalty,
)
from attention.tasks import ClassificationBatch, ClassificationData, Example

V, C = 20, 3


def small(name, **changes):
    """A small model of each family (dropout 0, so train and eval agree)."""
    if name == "lstmn":
        return LSTMNClassifier(LSTMNConfig(V, C, embed_dim=8, hidden_dim=8, attention_dim=6, **changes))
    if name == "self-attentive":
        return SelfAttentiveClassifier(
            SelfAttentiveConfig(V, C, embed_dim=8, hidden_dim=6, attention_dim=5, rows=3, mlp_dim=8, **changes)
        )
    return BiLSTMPooling(PoolingClassifierConfig(V, C, embed_dim=8, hidden_dim=6, mlp_dim=8, **changes))


FAMILIES = [("lstmn", {}), ("lstmn", {"readout": "mean"}), ("self-attentive", {})] + [
    ("bilstm-pooling", {"pool": p}) for p in ("last", "mean", "max")
]
IDS = [f"{n}-{next(iter(c.values()), '')}".rstrip("-") for n, c in FAMILIES]


def sentences(device, B=4, T=7):
    tokens = torch.randint(1, V, (B, T), device=device)  # (B, T)
    lengths = torch.tensor([T, 3, 1, 5][:B], device=device)  # (B,)
    tokens = tokens.masked_fill(torch.arange(T, device=device)[None] >= lengths[:, None], 0)
    return tokens, lengths


# --- LSTMN ---------------------------------------------------------------------------------------


def test_lstmn_never_attends_to_itself_or_the_future(device):
    model = small("lstmn").to(device).eval()
    tokens, lengths = sentences(device)
    weights = model(tokens, lengths).attention["intra"]  # (B, T, T)
    assert weights.shape == (4, 7, 7)
    assert torch.all(weights.triu() == 0)  # the diagonal and above: no word sees itself or a later word
    assert torch.all(weights[:, 0] == 0)  # the first word has no history
    real = torch.arange(7, device=device)[None] < lengths[:, None]  # (B, T)
    sums = weights.sum(-1)  # (B, T)
    torch.testing.assert_close(sums[:, 1:][real[:, 1:]], torch.ones_like(sums[:, 1:][real[:, 1:]]))
    # changing word t + 1 changes nothing the model computed at words <= t
    t = 3
    changed = tokens.clone()
    changed[0, t + 1] = 1 + tokens[0, t + 1] % (V - 1)
    a, b = model.read(tokens[:1], lengths[:1]), model.read(changed[:1], lengths[:1])
    torch.testing.assert_close(a.attention[0, : t + 1], b.attention[0, : t + 1], rtol=0, atol=0)
    torch.testing.assert_close(a.hidden[0, : t + 1], b.hidden[0, : t + 1], rtol=0, atol=0)
    assert not torch.equal(a.hidden[0, t + 1], b.hidden[0, t + 1])  # the test can see a change


def test_lstmn_steps_follow_the_formulas(device):
    """Two words: the summary of one earlier word is that word, so the LSTMN is an LSTM. The third
    word's scores are ``vᵀ tanh(W_h h_i + W_x x_3 + W_h̃ h̃_2)``, re-derived with the blocks of W_a."""
    model = small("lstmn").to(device).eval()
    tokens = torch.randint(1, V, (2, 3), device=device)  # (B, T)
    tapes = model.read(tokens, torch.tensor([3, 3], device=device))
    x = model.embed(tokens)  # (B, T, E)
    h1, c1 = model.cell(x[:, 0])  # an LSTM step from the zero state
    h2, c2 = model.cell(x[:, 1], (h1, c1))
    torch.testing.assert_close(tapes.hidden[:, 0], h1)
    torch.testing.assert_close(tapes.hidden[:, 1], h2)
    torch.testing.assert_close(tapes.memory[:, 1], c2)
    E = model.cfg.embed_dim
    W_x, W_ht = model.score.W_a.weight[:, :E], model.score.W_a.weight[:, E:]  # (A, E), (A, Hd)
    W_h, v = model.score.U_a.weight, model.score.v_a.weight[0]  # (A, Hd), (A,)
    h_tilde_2 = h1  # h̃_2 = s_1^2 h_1 with s_1^2 = 1
    hs = torch.stack([h1, h2], 1)  # (B, 2, Hd)
    a = torch.tanh(hs @ W_h.T + (x[:, 2] @ W_x.T + h_tilde_2 @ W_ht.T)[:, None]) @ v  # (B, 2)
    s = torch.softmax(a, -1)  # (B, 2)
    torch.testing.assert_close(tapes.attention[:, 2, :2], s)
    cs = torch.stack([c1, c2], 1)  # (B, 2, Hd)
    h3, _ = model.cell(x[:, 2], ((s[:, :, None] * hs).sum(1), (s[:, :, None] * cs).sum(1)))
    torch.testing.assert_close(tapes.hidden[:, 2], h3)


# --- Lin et al. ----------------------------------------------------------------------------------


def test_lin_rows_sum_to_one_and_padding_gets_exactly_zero(device):
    model = small("self-attentive").to(device).eval()
    tokens, lengths = sentences(device)
    A = model(tokens, lengths).attention["rows"]  # (B, R, T)
    assert A.shape == (4, 3, 7)
    torch.testing.assert_close(A.sum(-1), torch.ones(4, 3, device=device))
    padding = torch.arange(7, device=device)[None, None] >= lengths[:, None, None]  # (B, 1, T)
    assert torch.all(A.masked_select(padding) == 0) and torch.all(A.masked_select(~padding) > 0)


def test_the_penalty_equals_a_hand_computation():
    A = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])  # (R, T)
    # A Aᵀ = [[0.5, 0.25], [0.25, 0.38]]; minus I, squared, summed: 0.25 + 2·0.0625 + 0.62²
    assert penalty(A).item() == pytest.approx(0.25 + 2 * 0.0625 + 0.62**2)
    one_hot = torch.eye(4)[[2, 0, 3]]  # three rows on three different words: orthogonal
    assert penalty(one_hot).item() == 0
    same = torch.eye(4)[[1, 1]]  # two rows on the same word: A Aᵀ − I = [[0, 1], [1, 0]]
    assert penalty(same).item() == 2
    batch = torch.stack([one_hot[:2], same])  # (B, R, T): averaged over the batch
    assert penalty(batch).item() == 1
    with pytest.raises(ValueError, match=r"penalty expects A of shape \(B, R, T\) or \(R, T\); got \(4,\)"):
        penalty(torch.ones(4))


def test_penalized_loss_is_cross_entropy_plus_the_weighted_penalty(device):
    tokens, lengths = sentences(device)
    batch = ClassificationBatch(tokens, lengths, torch.tensor([0, 1, 2, 1], device=device))
    for coef in (0.0, 0.7):
        model = small("self-attentive", penalty=coef).to(device).eval()
        out = model(tokens, lengths)
        loss, n = penalized_loss(model, batch)
        expected = F.cross_entropy(out.logits, batch.labels) + coef * penalty(out.attention["rows"])
        assert n == 4 and torch.isclose(loss, expected)
    assert penalty(out.attention["rows"]) > 0.1  # so the coefficient made a difference above
    with pytest.raises(TypeError, match="penalized_loss needs a SelfAttentiveClassifier, got LSTMNClassifier"):
        penalized_loss(small("lstmn").to(device), batch)


# --- the pooling baselines -----------------------------------------------------------------------


def test_pooling_baselines_pool_what_they_say(device):
    tokens, lengths = sentences(device)
    pooled = {}
    for pool in ("last", "mean", "max"):
        torch.manual_seed(0)
        model = small("bilstm-pooling", pool=pool).to(device).eval()
        states, final = model.encoder(tokens, lengths)  # (B, T, 2U), (B, 2U)
        pooled[pool] = model.pool(states, final, lengths)  # (B, 2U)
    U = 6
    b, n = 1, 3  # the second sentence has 3 words
    real = states[b, :n]  # (n, 2U)
    torch.testing.assert_close(pooled["mean"][b], real.mean(0))
    torch.testing.assert_close(pooled["max"][b], real.amax(0))
    # last: the forward state of the last word and the backward state of the first
    torch.testing.assert_close(pooled["last"][b], torch.cat([real[-1, :U], real[0, U:]]))
    assert torch.all(states[b, n:] == 0)


# --- what every family shares --------------------------------------------------------------------


@pytest.mark.parametrize("name,changes", FAMILIES, ids=IDS)
def test_padding_changes_nothing(device, name, changes):
    """A sentence alone and the same sentence padded in a batch give the same logits and weights."""
    model = small(name, **changes).to(device).eval()
    tokens, lengths = sentences(device)
    out = model(tokens, lengths)
    alone = model(tokens[1:2, :3], lengths[1:2])
    torch.testing.assert_close(out.logits[1:2], alone.logits)
    for key, weights in out.attention.items():
        n = 3  # the second sentence's words
        kept = weights[1:2, :, :n] if key == "rows" else weights[1:2, :n, :n]  # (1, R, n) or (1, n, n)
        torch.testing.assert_close(kept, alone.attention[key])
        assert torch.all(weights[1, :, n:] == 0)  # padded columns
        if key == "intra":
            assert torch.all(weights[1, n:] == 0)  # padded rows


@pytest.mark.parametrize("name,changes", FAMILIES, ids=IDS)
def test_an_empty_sentence_gives_zeros_not_nan(device, name, changes):
    model = small(name, **changes).to(device)
    tokens, lengths = sentences(device)
    lengths = torch.tensor([7, 0, 1, 5], device=device)
    tokens[1] = 0
    out = model(tokens, lengths)
    assert torch.isfinite(out.logits).all()
    for weights in out.attention.values():
        assert torch.all(weights[1] == 0) and torch.isfinite(weights).all()
    loss = out.logits.sum() + sum(w.sum() for w in out.attention.values())
    if name == "self-attentive":
        loss = loss + penalty(out.attention["rows"])
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("name,changes", FAMILIES, ids=IDS)
def test_registry_and_checkpoint_round_trip(device, tmp_path, name, changes):
    model = small(name, **changes).to(device).eval()
    assert MODELS[name] is type(model) and model_name(model) == name
    rebuilt = build(name, {**vars(model.cfg)})
    assert rebuilt.cfg == model.cfg
    tokens, lengths = sentences(device)
    save_checkpoint(tmp_path / "m.pt", model)
    again, _ = load_checkpoint(tmp_path / "m.pt", expect=name, map_location=device)
    a, b = model(tokens, lengths), again.eval()(tokens, lengths)
    torch.testing.assert_close(a.logits, b.logits)
    assert a.attention.keys() == b.attention.keys()


def test_configs_refuse_impossible_values():
    with pytest.raises(ValueError, match=r"LSTMNConfig sizes must be positive integers; got \{'hidden_dim': 0\}"):
        LSTMNConfig(V, C, hidden_dim=0)
    with pytest.raises(ValueError, match=r"readout must be one of \('last', 'mean'\); got 'max'"):
        LSTMNConfig(V, C, readout="max")
    with pytest.raises(ValueError, match=r"SelfAttentiveConfig sizes .* \{'rows': 0\}"):
        SelfAttentiveConfig(V, C, rows=0)
    with pytest.raises(ValueError, match="penalty must be a finite number >= 0; got -1"):
        SelfAttentiveConfig(V, C, penalty=-1)
    with pytest.raises(ValueError, match=r"SelfAttentiveConfig.dropout must be in \[0, 1\); got 1.0"):
        SelfAttentiveConfig(V, C, dropout=1.0)
    with pytest.raises(ValueError, match=r"pool must be one of \('last', 'mean', 'max'\); got 'sum'"):
        PoolingClassifierConfig(V, C, pool="sum")
    model = small("lstmn")
    with pytest.raises(ValueError, match=r"expected tokens \(B, T\) and lengths \(B,\); got tokens \(5,\)"):
        model(torch.ones(5, dtype=torch.long), torch.tensor([5]))
    with pytest.raises(ValueError, match=r"lengths must be integers in 0..T = 3; got \[4\]"):
        small("self-attentive")(torch.ones(1, 3, dtype=torch.long), torch.tensor([4]))


# --- they learn ----------------------------------------------------------------------------------


def tiny_task(n=16, seed=0) -> ClassificationData:
    """16 random sentences, labelled alternately: only memorising them fits the training set."""
    g = torch.Generator().manual_seed(seed)
    words = [f"w{i}" for i in range(12)]
    examples = []
    for i in range(n):
        length = int(torch.randint(2, 7, (1,), generator=g))
        ids = torch.randint(0, len(words), (length,), generator=g)
        examples.append(Example(tuple(words[int(j)] for j in ids), i % 2))
    vocab = Vocab.build([e.tokens for e in examples])
    return ClassificationData("tiny", examples, examples, examples, vocab, ["a", "b"], seed)


@pytest.mark.parametrize(
    "name,changes",
    [("lstmn", {}), ("self-attentive", {}), ("self-attentive", {"penalty": 0.0}), ("bilstm-pooling", {"pool": "max"})],
    ids=["lstmn", "self-attentive", "self-attentive-no-penalty", "bilstm-pooling-max"],
)
def test_every_family_overfits_a_tiny_set(device, name, changes):
    data = tiny_task()
    vocab = len(data.vocab)
    configs = {
        "lstmn": LSTMNConfig(vocab, 2, embed_dim=16, hidden_dim=16, attention_dim=16),
        "self-attentive": SelfAttentiveConfig(
            vocab, 2, embed_dim=16, hidden_dim=16, attention_dim=8, rows=2, mlp_dim=16
        ),
        "bilstm-pooling": PoolingClassifierConfig(vocab, 2, embed_dim=16, hidden_dim=16, mlp_dim=16),
    }
    model = build(name, dataclasses.replace(configs[name], **changes)).to(device)
    before = ex.evaluate(model, data, data.train)["accuracy"]
    loss = penalized_loss if name == "self-attentive" else None
    ex.fit(model, data, epochs=40, batch_size=16, lr=3e-2, patience=40, progress=False, loss=loss)
    after = ex.evaluate(model, data, data.train)["accuracy"]
    assert after == 1.0 and before < 0.9, (before, after)
