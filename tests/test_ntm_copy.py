"""The Neural Turing Machine and its copy task (chapter 7, Graves et al. 2014 §3-4.1):
``attention/models/ntm.py`` and ``attention/tasks/copy.py``."""

import pytest
import torch

from attention.checkpoints import load_checkpoint, save_checkpoint
from attention.experiments import fit
from attention.models.ntm import NTM, NTMConfig, NTMOutput, read_memory, write_memory
from attention.models.registry import build, model_name
from attention.tasks.copy import CopyData, copy_batch, copy_data, random_sequences

SMALL = dict(bits=4, memory_slots=16, memory_width=6, controller_size=24)


# --- the task ----------------------------------------------------------------------------------
def test_copy_batch_layout_delimiter_and_targets():
    a = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])  # L = 3
    b = torch.tensor([[0.0, 0.0, 1.0]])  # L = 1
    batch = copy_batch([a, b])
    assert batch.inputs.shape == (2, 7, 4) and batch.targets.shape == (2, 7, 3) and batch.mask.shape == (2, 7)
    assert batch.lengths.tolist() == [3, 1]
    # sequence a: data at steps 0-2 (flag 0), delimiter at step 3, blanks after
    torch.testing.assert_close(batch.inputs[0, :3, :3], a)
    assert batch.inputs[0, :, 3].tolist() == [0, 0, 0, 1, 0, 0, 0]
    assert batch.inputs[0, 3, :3].abs().sum() == 0 and batch.inputs[0, 4:].abs().sum() == 0
    torch.testing.assert_close(batch.targets[0, 4:7], a)
    assert batch.mask[0].tolist() == [False] * 4 + [True] * 3
    # sequence b: delimiter at step 1, output at step 2, padding after
    assert batch.inputs[1, :, 3].tolist() == [0, 1, 0, 0, 0, 0, 0]
    assert batch.mask[1].tolist() == [False, False, True, False, False, False, False]
    torch.testing.assert_close(batch.targets[1, 2], b[0])
    assert batch.targets[1, 3:].abs().sum() == 0 and batch.inputs[1, 2:].abs().sum() == 0


def test_copy_data_is_deterministic_and_has_longer_test_sets():
    one = copy_data(
        bits=5, min_len=2, max_len=4, n_train=40, n_valid=8, n_test=8, test_lengths=(9, 12), n_by_length=3, seed=1
    )
    two = copy_data(
        bits=5, min_len=2, max_len=4, n_train=40, n_valid=8, n_test=8, test_lengths=(9, 12), n_by_length=3, seed=1
    )
    other = copy_data(
        bits=5, min_len=2, max_len=4, n_train=40, n_valid=8, n_test=8, test_lengths=(9, 12), n_by_length=3, seed=2
    )
    assert isinstance(one, CopyData)
    assert one.fingerprint() == two.fingerprint() != other.fingerprint()
    assert all(torch.equal(x, y) for x, y in zip(one.train, two.train))
    assert {s.shape[0] for s in one.train} <= {2, 3, 4} and all(s.shape[1] == 5 for s in one.train)
    assert {s.shape[0] for s in one.train} == {2, 3, 4}
    assert set(torch.cat(one.train).unique().tolist()) == {0.0, 1.0}
    assert sorted(one.by_length) == [9, 12]
    assert all(s.shape == (9, 5) for s in one.by_length[9]) and all(s.shape == (12, 5) for s in one.by_length[12])
    # batches: same (seed, epoch) -> same order; another epoch reshuffles
    first = [b.inputs for b in one.train_batches(8, seed=0, epoch=1)]
    again = [b.inputs for b in one.train_batches(8, seed=0, epoch=1)]
    later = [b.inputs for b in one.train_batches(8, seed=0, epoch=2)]
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    assert not all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(first, later))
    assert sum(b.inputs.shape[0] for b in one.train_batches(8, 0, 1)) == 40
    # the global RNG is not used by the data
    torch.manual_seed(3)
    expected = torch.rand(1)
    torch.manual_seed(3)
    random_sequences(5, 3, 1, 4, seed=0)
    assert torch.equal(torch.rand(1), expected)


def test_loss_and_metrics_on_a_perfect_and_a_wrong_model():
    data = copy_data(bits=3, min_len=1, max_len=3, n_train=4, n_valid=4, n_test=6, test_lengths=(5,), n_by_length=2)

    class Oracle(torch.nn.Module):  # reads the answer from a closure: right on every output bit
        def __init__(self, sign):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(()))
            self.sign = sign

        def forward(self, inputs):
            batch = copy_batch(self.current)  # the same examples, in the same order
            return self.sign * 20 * (2 * batch.targets - 1) + 0 * self.w

    right, wrong = Oracle(1.0), Oracle(-1.0)
    for model in (right, wrong):
        model.current = data.test
    assert data.evaluate(right, batch_size=len(data.test))["bit_accuracy"] == 1.0
    report = data.evaluate(wrong, batch_size=len(data.test))
    assert report["bit_accuracy"] == 0.0 and report["sequence_accuracy"] == 0.0 and report["n"] == 6
    assert data.evaluate(right, batch_size=len(data.test))["sequence_accuracy"] == 1.0
    batch = copy_batch(data.test)
    loss, n = data.loss(right, batch)
    assert n == int(batch.mask.sum()) * 3 and loss.item() < 1e-6


# --- the model ---------------------------------------------------------------------------------
def test_head_weightings_are_distributions_at_every_step(device):
    model = NTM(NTMConfig(**SMALL)).to(device)
    x = torch.randint(0, 2, (3, 11, 5), device=device).float()
    out = model(x)
    assert isinstance(out, NTMOutput)
    assert out.logits.shape == (3, 11, 4) and out.memory.shape == (3, 16, 6)
    for w in (out.read_weights, out.write_weights):
        assert w.shape == (3, 11, 16)
        assert bool((w >= 0).all())
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 11, device=device))
    # longer than anything trained on, and longer than the memory: still runs, still distributions
    long = model(torch.zeros(2, 41, 5, device=device))
    torch.testing.assert_close(long.read_weights.sum(-1), torch.ones(2, 41, device=device))


def test_erase_then_add_matches_a_hand_computation(device):
    memory = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]], device=device)  # (1, N=3, W=2)
    w = torch.tensor([[0.5, 0.5, 0.0]], device=device)
    erase = torch.tensor([[1.0, 0.0]], device=device)
    add = torch.tensor([[2.0, -2.0]], device=device)
    # slot 0: [1·(1 − .5), 2·(1 − 0)] + .5·[2, −2] = [1.5, 1];  slot 1: [3·.5 + 1, 4 − 1] = [2.5, 3];  slot 2 untouched
    expected = torch.tensor([[[1.5, 1.0], [2.5, 3.0], [5.0, 6.0]]], device=device)
    torch.testing.assert_close(write_memory(memory, w, erase, add), expected)
    torch.testing.assert_close(read_memory(expected, w), torch.tensor([[2.0, 2.0]], device=device))
    with pytest.raises(ValueError, match=r"erase and add \(B, W\)"):
        write_memory(memory, w, erase[:, :1], add)
    with pytest.raises(ValueError, match=r"weights \(B, N\)"):
        read_memory(memory, w[:, :2])


def test_one_model_step_writes_then_reads_as_the_equations_say(device):
    model = NTM(NTMConfig(**SMALL, controller="feedforward")).to(device)
    x = torch.rand(2, 5, device=device)
    state = model.initial_state(x[:, None])
    _, new = model.step(x, state)
    h = model.controller(torch.cat([x, state["read"]], -1))
    p = model.write_head(h)
    w = model.write_head.address(state["memory"], state["write_weights"], p)
    torch.testing.assert_close(new["write_weights"], w)
    M = state["memory"]
    by_hand = torch.empty_like(M)
    for b in range(2):
        for i in range(16):
            for j in range(6):
                by_hand[b, i, j] = M[b, i, j] * (1 - w[b, i] * p["erase"][b, j]) + w[b, i] * p["add"][b, j]
    torch.testing.assert_close(new["memory"], by_hand)
    r = sum(new["read_weights"][:, i, None] * by_hand[:, i] for i in range(16))  # Σ_i w(i) M(i)
    torch.testing.assert_close(new["read"], r)


def test_gradients_reach_every_parameter_and_are_finite(device):
    model = NTM(NTMConfig(**SMALL, learn_memory=True)).to(device)
    model(torch.randint(0, 2, (2, 7, 5), device=device).float()).logits.sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_overfits_a_tiny_copy_set_through_fit(device):
    data = copy_data(bits=4, min_len=1, max_len=3, n_train=4, n_valid=4, n_test=4, test_lengths=(), seed=0)
    data.valid = data.test = data.train  # memorise these four sequences
    torch.manual_seed(0)
    model = NTM(NTMConfig(**SMALL)).to(device)
    before = data.evaluate(model, data.train)["loss"]
    history = fit(
        model, data, epochs=200, batch_size=4, lr=1e-2, device=device, progress=False, patience=200, select="loss"
    )  # keep the lowest-loss epoch
    report = data.evaluate(model, data.train)
    assert report["bit_accuracy"] == 1.0 and report["sequence_accuracy"] == 1.0
    assert report["loss"] < 0.1 * before
    assert history.epochs[-1]["train_loss"] < 0.1 * history.epochs[0]["train_loss"]


# --- errors and the registry -----------------------------------------------------------------
@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(shifts=2), "shifts must be odd"),
        (dict(shifts=5, memory_slots=3), r"shifts \(5\) cannot exceed memory_slots \(3\)"),
        (dict(controller="gru"), "controller must be one of"),
        (dict(memory_slots=0), "sizes must be positive integers"),
        (dict(bits=2.5), "sizes must be positive integers"),
    ],
)
def test_bad_configs_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        NTMConfig(**bad)


def test_bad_inputs_are_refused():
    model = NTM(NTMConfig(**SMALL))
    with pytest.raises(ValueError, match=r"\(B, T, 5\) with T >= 1; got \(2, 3, 4\)"):
        model(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match=r"got \(3, 5\)"):
        model(torch.zeros(3, 5))
    with pytest.raises(ValueError, match=r"every sequence must be \(L, 3\)"):
        copy_batch([torch.zeros(2, 3), torch.zeros(2, 4)])
    with pytest.raises(ValueError, match="min_len <= max_len"):
        random_sequences(3, 4, min_len=5, max_len=2, seed=0)
    data = copy_data(bits=3, min_len=1, max_len=2, n_train=2, n_valid=2, n_test=2, test_lengths=())
    too_wide = torch.nn.Linear(4, 5)  # (B, T, 4) -> (B, T, 5): not 3 bits
    with pytest.raises(ValueError, match=r"logits are \(2, \d+, 5\); the copy targets are \(2, \d+, 3\)"):
        data.loss(too_wide, copy_batch(data.train))


def test_registered_as_ntm_and_rebuilt_from_a_checkpoint(tmp_path):
    model = build("ntm", dict(SMALL))
    assert isinstance(model, NTM) and model_name(model) == "ntm"
    assert isinstance(build("ntm", NTMConfig(**SMALL)), NTM)
    save_checkpoint(tmp_path / "ntm.pt", model)
    loaded, _ = load_checkpoint(tmp_path / "ntm.pt", expect="ntm")
    x = torch.rand(1, 4, 5)
    torch.testing.assert_close(loaded(x).logits, model(x).logits)


# --- the LSTM baseline -------------------------------------------------------------------------
def test_copy_lstm_matches_the_ntm_in_size_and_overfits_a_tiny_set(device):
    from attention.models.ntm import CopyLSTM, CopyLSTMConfig

    default = sum(p.numel() for p in CopyLSTM(CopyLSTMConfig()).parameters())
    ntm = sum(p.numel() for p in NTM(NTMConfig()).parameters())
    assert abs(default - ntm) < 0.05 * ntm, (default, ntm)  # "about as many parameters"
    data = copy_data(bits=4, min_len=1, max_len=3, n_train=4, n_valid=4, n_test=4, test_lengths=(), seed=0)
    data.valid = data.test = data.train
    torch.manual_seed(0)
    model = build("copy-lstm", dict(bits=4, hidden=32)).to(device)
    assert model_name(model) == "copy-lstm" and model(torch.zeros(2, 7, 5, device=device)).shape == (2, 7, 4)
    fit(model, data, epochs=100, batch_size=4, lr=2e-2, device=device, progress=False, patience=100, select="loss")
    assert data.evaluate(model, data.train)["sequence_accuracy"] == 1.0
    with pytest.raises(ValueError, match=r"\(B, T, 5\) with T >= 1; got \(2, 3, 4\)"):
        model(torch.zeros(2, 3, 4, device=device))
    with pytest.raises(ValueError, match="sizes must be positive integers"):
        CopyLSTMConfig(hidden=0)


def test_the_heads_figure_draws_four_panels_and_refuses_mismatched_times():
    from attention.book.chapters.ch07 import ntm_heads_figure

    model = NTM(NTMConfig(**SMALL))
    batch = copy_batch(random_sequences(1, 4, 5, 5, seed=1))
    out = model(batch.inputs)
    fig = ntm_heads_figure(
        batch.inputs[0],
        torch.sigmoid(out.logits[0]),
        out.write_weights[0],
        out.read_weights[0],
        slots=8,
        title="length 5",
    )
    assert len(fig.axes) == 4
    assert fig.axes[2].images[0].get_array().shape == (8, 11)  # 8 slots shown, T = 2·5 + 1 steps
    torch.testing.assert_close(
        torch.as_tensor(fig.axes[2].images[0].get_array()[4]),  # slot 0 in the middle
        out.write_weights[0, :, 0].detach(),
    )
    with pytest.raises(ValueError, match="one T"):
        ntm_heads_figure(batch.inputs[0], out.logits[0, :3], out.write_weights[0], out.read_weights[0])
