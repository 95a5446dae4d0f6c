"""Chapters 2-3 models, training and metrics, on each available device."""

import pytest
import torch

from attention.checkpoints import load_checkpoint, save_checkpoint
from attention.experiments import attention_links, join_pairs
from attention.metrics import bleu_by_length, corpus_bleu, detokenize
from attention.models import LuongConfig, LuongSeq2Seq, Seq2Seq, Seq2SeqConfig, reverse_padded
from attention.tasks import sequence_loss
from attention.train import TrainConfig, train

PAD, BOS, EOS = 0, 2, 3


class Batch:
    def __init__(self, src, src_lengths, tgt_in, tgt_out):
        self.src, self.src_lengths, self.tgt_in, self.tgt_out = src, src_lengths, tgt_in, tgt_out


def tiny_batch(device, B=4, S=6, T=5, V=12):
    g = torch.Generator().manual_seed(0)
    lengths = torch.tensor([6, 4, 2, 5][:B])
    src = torch.randint(4, V, (B, S), generator=g)
    src[torch.arange(S)[None, :] >= lengths[:, None]] = PAD
    y = torch.randint(4, V, (B, T - 1), generator=g)
    tgt_in = torch.cat([torch.full((B, 1), BOS), y], 1)
    tgt_out = torch.cat([y, torch.full((B, 1), EOS)], 1)
    return Batch(src.to(device), lengths.to(device), tgt_in.to(device), tgt_out.to(device))


def model_for(device, attention="additive", **kw):
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(src_vocab=12, tgt_vocab=12, embed_dim=16, hidden_dim=16, attention=attention, dropout=0.0, **kw)
    return Seq2Seq(cfg).to(device)


def luong_for(device, attention="general", local=None, **kw):
    torch.manual_seed(0)
    cfg = LuongConfig(
        src_vocab=12,
        tgt_vocab=12,
        embed_dim=16,
        hidden_dim=16,
        attention=attention,
        local=local,
        window=2,
        dropout=0.0,
        **kw,
    )
    return LuongSeq2Seq(cfg).to(device)


#: every decoder family the decoding module must serve: (name, builder)
DECODERS = {
    "seq2seq-none": lambda d: model_for(d, None),
    "seq2seq-additive": lambda d: model_for(d, "additive"),
    "seq2seq-lstm-dot": lambda d: model_for(d, "dot", cell="lstm"),
    "luong-global-general": lambda d: luong_for(d, "general"),
    "luong-local-m-dot": lambda d: luong_for(d, "dot", local="m"),
    "luong-local-p-concat-nofeed": lambda d: luong_for(d, "concat", local="p", input_feeding=False),
    "luong-none": lambda d: luong_for(d, None),
}


def token_loss(model, batch):
    return sequence_loss(model, batch), int((batch.tgt_out != PAD).sum())


ATTENTIONS = [None, "additive", "dot", "general", "concat", "location", "scaled_dot", "cosine"]


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_padded_source_positions_get_exactly_zero_attention(device, attention):
    batch = tiny_batch(device)
    out = model_for(device, attention)(batch.src, batch.src_lengths, batch.tgt_in, return_attention=True)
    assert out.logits.shape == (4, 5, 12)
    if attention is None:
        assert out.attention is None
        return
    pad = batch.src == PAD  # (B, S)
    assert (out.attention.masked_select(pad[:, None, :].expand_as(out.attention)) == 0).all()
    torch.testing.assert_close(out.attention.sum(-1), torch.ones(4, 5, device=device))


@pytest.mark.parametrize("attention, cell", [(None, "gru"), ("additive", "gru"), (None, "lstm"), ("general", "lstm")])
def test_overfits_a_tiny_batch(device, attention, cell):
    batch = tiny_batch(device)
    model = model_for(device, attention, cell=cell, bidirectional=cell == "gru", reverse_source=cell == "lstm")
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        loss = sequence_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    model.eval()
    greedy = model.greedy(batch.src, batch.src_lengths, max_len=10).tokens
    assert torch.equal(greedy[:, :5], batch.tgt_out)  # it learned to say exactly the targets, then EOS


@pytest.mark.parametrize("kind", DECODERS)
def test_beam_size_one_equals_greedy(device, kind):
    batch = tiny_batch(device)
    model = DECODERS[kind](device).eval()
    attention = model.score is not None
    greedy = model.greedy(batch.src, batch.src_lengths, max_len=8)
    beam = model.beam_search(batch.src, batch.src_lengths, beam_size=1, max_len=8)
    for b in range(4):
        g = greedy.tokens[b].tolist()
        g = g[: g.index(EOS) + 1] if EOS in g else g
        assert beam.tokens[b, : len(g)].tolist() == g
        assert (beam.tokens[b, len(g) :] == PAD).all()
    if attention:
        n = beam.attention.shape[1]
        torch.testing.assert_close(beam.attention[0, :n], greedy.attention[0, :n])


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("beam_size", [2, 4])
def test_batched_beam_search_equals_one_sentence_at_a_time(device, kind, beam_size):
    batch = tiny_batch(device)
    model = DECODERS[kind](device).eval()
    with torch.no_grad():  # sharper, less uniform outputs so that beams really differ
        model.output.weight.mul_(8.0)
    together = model.beam_search(batch.src, batch.src_lengths, beam_size=beam_size, max_len=7)
    for b in range(4):
        n = int(batch.src_lengths[b])
        alone = model.beam_search(
            batch.src[b : b + 1, :n], batch.src_lengths[b : b + 1], beam_size=beam_size, max_len=7
        )
        T = alone.tokens.shape[1]
        assert together.tokens[b, :T].tolist() == alone.tokens[0].tolist(), (kind, b)
        assert (together.tokens[b, T:] == PAD).all()
        torch.testing.assert_close(together.scores[b], alone.scores[0])
        if alone.attention is not None:
            torch.testing.assert_close(together.attention[b, :T, :n], alone.attention[0])
            assert (together.attention[b, :, n:] == 0).all()  # nothing on the padding


@pytest.mark.parametrize("kind", DECODERS)
def test_beam_search_finds_a_better_or_equal_sequence_than_greedy(device, kind):
    batch = tiny_batch(device)
    model = DECODERS[kind](device).eval()
    with torch.no_grad():
        model.output.weight.mul_(8.0)

    def logprob(tokens):  # total log-probability of each row's output up to its EOS
        tgt_in = torch.cat([torch.full((4, 1), BOS, device=device), tokens[:, :-1]], 1)
        logp = torch.log_softmax(model(batch.src, batch.src_lengths, tgt_in).logits, -1)
        picked = logp.gather(2, tokens[:, :, None])[..., 0]
        eos = (tokens == EOS).int()
        after_eos = (eos.cumsum(1) - eos) > 0  # what follows a row's first EOS is padding
        return picked.masked_fill(after_eos, 0.0).sum(1)

    greedy = model.greedy(batch.src, batch.src_lengths, max_len=6).tokens
    beam = model.beam_search(batch.src, batch.src_lengths, beam_size=4, max_len=6)
    with torch.no_grad():
        torch.testing.assert_close(logprob(beam.tokens), beam.scores)
        assert (logprob(beam.tokens) >= logprob(greedy) - 1e-5).all()


def force(model, token):
    with torch.no_grad():
        model.output.weight.zero_()
        model.output.bias.fill_(-50.0)
        model.output.bias[token] = 50.0


@pytest.mark.parametrize("kind", DECODERS)
def test_decoding_stops_at_eos_and_at_max_len(device, kind):
    batch = tiny_batch(device)
    model = DECODERS[kind](device).eval()
    force(model, EOS)
    assert model.greedy(batch.src, batch.src_lengths, max_len=9).tokens.tolist() == [[EOS]] * 4
    assert model.beam_search(batch.src, batch.src_lengths, beam_size=3, max_len=9).tokens.tolist() == [[EOS]] * 4
    force(model, 7)
    assert model.greedy(batch.src, batch.src_lengths, max_len=9).tokens.shape == (4, 9)
    beam = model.beam_search(batch.src, batch.src_lengths, beam_size=3, max_len=9)
    assert beam.tokens.shape == (4, 9) and (beam.tokens == 7).all()


@pytest.mark.parametrize("kind", DECODERS)
def test_checkpoint_round_trip_gives_identical_outputs(device, tmp_path, kind):
    batch = tiny_batch(device)
    model = DECODERS[kind](device).eval()
    save_checkpoint(tmp_path / "m.pt", model, note={"itos": ["<pad>", "a"]})
    loaded, extra = load_checkpoint(tmp_path / "m.pt", map_location=device)
    loaded.eval()
    assert type(loaded) is type(model) and loaded.cfg == model.cfg
    assert extra == {"note": {"itos": ["<pad>", "a"]}}
    a = model(batch.src, batch.src_lengths, batch.tgt_in, return_attention=True)
    b = loaded(batch.src, batch.src_lengths, batch.tgt_in, return_attention=True)
    assert torch.equal(a.logits, b.logits)
    assert (a.attention is None and b.attention is None) or torch.equal(a.attention, b.attention)


def test_train_keeps_the_best_epoch_and_stops_early(device, tmp_path):
    batch = tiny_batch(device)
    model = model_for(device)
    history = train(
        model,
        lambda epoch: [batch],
        lambda: [batch],
        token_loss,
        TrainConfig(max_epochs=4, lr=1e-2, patience=2, progress=False, checkpoint=str(tmp_path / "best.pt")),
    )
    assert len(history.epochs) == 4 and history.stopped.startswith("max_epochs")
    losses = [e["valid_loss"] for e in history.epochs]
    assert history.best_epoch == 1 + losses.index(min(losses))
    best, _ = load_checkpoint(tmp_path / "best.pt", expect=Seq2Seq, map_location=device)
    for (k, v), w in zip(model.state_dict().items(), best.state_dict().values()):
        assert torch.equal(v, w), k
    # a model that cannot improve stops after `patience` epochs
    frozen = model_for(device)
    history = train(
        frozen, lambda epoch: [], lambda: [batch], token_loss, TrainConfig(max_epochs=10, patience=2, progress=False)
    )
    assert len(history.epochs) == 3 and history.stopped.startswith("early stopping")


def test_bad_input_raises(device):
    model = model_for(device)
    with pytest.raises(ValueError, match=r"src \(4,\), src_lengths \(4,\)"):
        model.encode(torch.zeros(4, dtype=torch.long, device=device), torch.ones(4, dtype=torch.long, device=device))
    batch = tiny_batch(device)
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        model.beam_search(batch.src, batch.src_lengths, beam_size=0)
    with pytest.raises(ValueError, match="cell must be"):
        Seq2Seq(Seq2SeqConfig(5, 5, cell="rnn"))


def test_reverse_padded():
    x = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])
    assert reverse_padded(x, torch.tensor([3, 2, 4])).tolist() == [[3, 2, 1, 0], [5, 4, 0, 0], [9, 8, 7, 6]]


def test_detokenize_and_bleu():
    assert detokenize(["it", "'s", "fine", ",", "isn't", "it", "?"]) == "it's fine, isn't it?"
    assert detokenize(["機", "器"], lang="zh") == "機器"
    perfect = corpus_bleu(["the cat sat on the mat."], ["the cat sat on the mat."])
    assert perfect.score == pytest.approx(100.0) and "tok:13a" in perfect.signature
    assert "tok:zh" in corpus_bleu(["我很好"], ["我很好"], lang="zh").signature
    rows = bleu_by_length(["a b c d", "x y z w"], ["a b c d", "a b c d"], [3, 12], edges=[1, 10, 20])
    assert [(r["bucket"], r["n"]) for r in rows] == [("1-9", 1), ("10-19", 1)]
    assert rows[0]["bleu"] == pytest.approx(100.0) and rows[1]["bleu"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="1 hypotheses but 2 references"):
        corpus_bleu(["a"], ["a", "b"])


def test_join_pairs_and_links():
    from attention.data.translation import Pair

    pairs = [Pair(("a", str(i)), ("x", str(i)), {"tgt_text": f"x {i}"}) for i in range(7)]
    joined = join_pairs(pairs, 3)
    assert len(joined) == 2 and all(len(p.src) == 6 and p.meta["joined"] == 3 for p in joined)
    att = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]])
    assert attention_links(att) == {(1, 0), (0, 1), (0, 2)}


@pytest.mark.parametrize("kind", ["seq2seq-additive", "luong-local-m-dot"])
def test_source_lengths_outside_the_source_are_named(kind):
    model = DECODERS[kind]("cpu")
    src = torch.randint(4, 12, (2, 5))
    for lengths in ([7, 3], [0, 3]):
        with pytest.raises(
            ValueError,
            match=r"src_lengths must be integers in 1..S = 1..5 \(src \(2, 5\)\); got "
            + str(lengths).replace("[", r"\[").replace("]", r"\]"),
        ):
            model.greedy(src, torch.tensor(lengths))


def test_translate_takes_plain_tuples_like_collate():
    from attention.experiments import dates_data, translate

    data = dates_data(n=60)
    model = Seq2Seq(Seq2SeqConfig(len(data.src_vocab), len(data.tgt_vocab), embed_dim=8, hidden_dim=8))
    pairs = data.test[:3]
    plain = [(tuple(p.src), tuple(p.tgt)) for p in pairs]
    a, b = translate(model, pairs, data), translate(model, plain, data)
    assert [t.hypothesis for t in a] == [t.hypothesis for t in b]
    assert [t.source for t in a] == [t.source for t in b] and [t.reference for t in a] == [t.reference for t in b]
    assert translate(model, [(tuple(pairs[0].src), ())], data)[0].reference == ""
    with pytest.raises(ValueError, match="max_len must be >= 1"):
        translate(model, pairs, data, max_len=0)


def test_selection_follows_the_validation_metric_not_the_loss():
    """Validation loss rises every epoch while validation BLEU improves: training keeps going and
    keeps the epoch with the best BLEU; on the loss alone it would stop early at epoch 1."""
    model = torch.nn.Linear(2, 1)
    epoch = {"n": 0}

    def loss(m, batch):
        if m.training:  # a real training loss that moves the weights
            return (m.weight**2).sum() + (m.bias**2).sum(), 1
        return torch.tensor(1.0 + epoch["n"]), 1  # validation loss rises: 2, 3, 4, ...

    def bleu(m):
        epoch["n"] += 1
        return [3.0, 5.0, 4.0, 6.0, 5.5, 5.0, 4.0, 3.0][epoch["n"] - 1]  # best at epoch 4

    cfg = TrainConfig(max_epochs=8, patience=3, progress=False, metric="bleu")
    history = train(model, lambda e: [None], lambda: [None], loss, cfg, valid_metric=bleu)
    assert history.selected_by == "valid_bleu" and history.best_epoch == 4
    assert len(history.epochs) == 7 and history.stopped == "early stopping: no better validation bleu for 3 epochs"
    assert [e["valid_bleu"] for e in history.epochs][:4] == [3.0, 5.0, 4.0, 6.0]
    assert all(a["valid_loss"] < b["valid_loss"] for a, b in zip(history.epochs, history.epochs[1:]))
    # judged on the loss alone, the same run stops after `patience` epochs and keeps epoch 1
    epoch["n"] = 0

    def rising_loss(m, batch):
        if m.training:
            return (m.weight**2).sum(), 1
        epoch["n"] += 1
        return torch.tensor(float(epoch["n"])), 1

    by_loss = train(
        torch.nn.Linear(2, 1),
        lambda e: [None],
        lambda: [None],
        rising_loss,
        TrainConfig(max_epochs=8, patience=3, progress=False),
    )
    assert by_loss.best_epoch == 1 and len(by_loss.epochs) == 4 and by_loss.selected_by == "valid_loss"


def test_fit_selects_on_the_tasks_metric_and_records_it():
    from attention.experiments import dates_data, fit

    data = dates_data(n=200)
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(len(data.src_vocab), len(data.tgt_vocab), embed_dim=8, hidden_dim=8))
    history = fit(model, data, epochs=2, progress=False)
    assert history.selected_by == "valid_bleu" and all("valid_bleu" in e for e in history.epochs)
    best = max(history.epochs, key=lambda e: e["valid_bleu"])
    assert history.best_epoch == best["epoch"]
    assert data.validation_metric(model) == pytest.approx(best["valid_bleu"])  # it holds that epoch's weights
    with pytest.raises(ValueError, match="select must be 'metric' or 'loss'"):
        fit(model, data, epochs=1, select="bleu")


def test_warmup_factor_rises_linearly_then_decays_as_inverse_sqrt():
    from attention.train import warmup_factor

    f = warmup_factor(4)
    assert [round(f(s), 6) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]  # updates 1..4
    assert f(15) == pytest.approx(0.5)  # update 16: sqrt(4 / 16)
    with pytest.raises(ValueError, match="warmup must be >= 1"):
        warmup_factor(0)


def test_train_with_warmup_steps_the_learning_rate_each_update():
    from attention.train import TrainConfig, train

    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.constant_(model.weight, 0.0)
    batches = [torch.ones(1, 1)] * 2  # loss = w: gradient 1, so each Adam update moves w by its lr
    history = train(
        model,
        lambda epoch: batches,
        lambda: batches[:1],
        lambda m, b: (m(b).sum(), 1),
        TrainConfig(max_epochs=1, lr=1.0, warmup=4, progress=False),
    )
    assert len(history.epochs) == 1
    assert model.weight.item() == pytest.approx(-(0.25 + 0.5), abs=1e-4)  # lr x 1/4, then x 2/4


def test_train_counts_process_time_when_asked_and_rejects_other_clocks():
    import time

    from attention.train import TrainConfig, train

    model = torch.nn.Linear(1, 1)
    batches = [torch.ones(1, 1)]

    def slow_loss(m, b):  # sleeping takes wall-clock time but no CPU time
        time.sleep(0.05)
        return m(b).sum(), 1

    wall = train(model, lambda e: batches, lambda: batches, slow_loss, TrainConfig(max_epochs=1, progress=False))
    cpu = train(
        model, lambda e: batches, lambda: batches, slow_loss, TrainConfig(max_epochs=1, progress=False, clock="process")
    )
    assert wall.seconds >= 0.1 and cpu.seconds < 0.05
    with pytest.raises(ValueError, match="clock must be 'wall' or 'process'"):
        train(model, lambda e: batches, lambda: batches, slow_loss, TrainConfig(clock="gpu"))
