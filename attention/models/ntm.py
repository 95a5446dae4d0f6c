"""Graves et al. (2014), "Neural Turing Machines": a controller with one read head and one write
head on an N × W memory (chapter 7). The four addressing steps are :func:`attention.addressing.address`;
this file adds what the heads do with a weighting and the loop over time.

Shape legend: B batch, T time steps, I input width (bits + 1: the data bits and the delimiter
flag), O output bits, N memory slots, W slot width, S shift offsets, C controller size.

At each step t (§3, Eq. 2-4):

    h_t      = controller([x_t, r_{t−1}], h_{t−1})                   (B, C)    an LSTM cell or a layer
    w^w_t    = address(M_{t−1}, k, β, g, w^w_{t−1}, s, γ)              (B, N)    the write head
    M_t      = M_{t−1} ∘ (1 − w^w_t e_tᵀ) + w^w_t a_tᵀ                 (B, N, W) erase, then add (Eq. 3-4)
    w^r_t    = address(M_t, k', β', g', w^r_{t−1}, s', γ')             (B, N)    the read head
    r_t      = Σ_i w^r_t(i) M_t(i)                                     (B, W)    the read (Eq. 2)
    y_t      = Linear([h_t, r_t])                                      (B, O)    logits of the bits

Each head emits its parameters from h_t: key k (W), strength β = softplus ≥ 0, gate
g = sigmoid ∈ [0, 1], shift s = softmax over S offsets, γ = 1 + softplus ≥ 1; the write head
also an erase vector e = sigmoid ∈ [0, 1]^W and an add vector a = tanh. The initial memory is a
fixed bias (small random values drawn once from the config's seed, or learned with
``learn_memory``); both heads start focused on slot 0, and the first read vector is learned.
Nothing ties the model to a sequence length: an NTM trained on copies of length ≤ 10 runs
unchanged on length 40, as long as the memory has a slot per item (N ≥ the sequence length).

The reading of a weighting as attention over memory rows is chapter 7's point; the copy task it
is trained on is :mod:`attention.tasks.copy`. See ``CONTRIBUTING.md``, "Adding a model".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..addressing import address
from .pooling import check_sizes
from .registry import register_model

__all__ = ["NTMConfig", "NTM", "NTMOutput", "CONTROLLERS", "CopyLSTMConfig", "CopyLSTM", "read_memory", "write_memory"]

CONTROLLERS = ("lstm", "feedforward")


@dataclass
class NTMConfig:
    bits: int = 8  # O, data bits per step; the input has bits + 1 channels (the last: delimiter flag)
    memory_slots: int = 128  # N; must be >= the longest sequence to copy
    memory_width: int = 20  # W
    controller: str = "lstm"  # "lstm" (an LSTMCell) or "feedforward" (one tanh layer)
    controller_size: int = 100  # C
    shifts: int = 3  # S, odd: offsets -(S-1)/2 ... (S-1)/2
    learn_memory: bool = False  # False: the initial memory is a fixed bias buffer; True: a parameter
    seed: int = 0  # draws the initial memory bias

    def __post_init__(self):
        check_sizes(
            "NTMConfig",
            bits=self.bits,
            memory_slots=self.memory_slots,
            memory_width=self.memory_width,
            controller_size=self.controller_size,
            shifts=self.shifts,
        )
        if self.controller not in CONTROLLERS:
            raise ValueError(f"NTMConfig.controller must be one of {CONTROLLERS}; got {self.controller!r}")
        if self.shifts % 2 == 0:
            raise ValueError(f"NTMConfig.shifts must be odd (offsets -(S-1)/2 ... (S-1)/2); got {self.shifts}")
        if self.shifts > self.memory_slots:
            raise ValueError(f"NTMConfig.shifts ({self.shifts}) cannot exceed memory_slots ({self.memory_slots})")


@dataclass
class NTMOutput:
    """What :class:`NTM` returns: the logits and the maps chapter 7 draws."""

    logits: Tensor  # (B, T, O), one logit per output bit
    read_weights: Tensor  # (B, T, N), the read head's w_t at each step, rows sum to 1
    write_weights: Tensor  # (B, T, N), the write head's w_t at each step, rows sum to 1
    memory: Tensor  # (B, N, W), the memory after the last step


def read_memory(memory: Tensor, weights: Tensor) -> Tensor:
    """``r = Σ_i w(i) M(i)`` (Eq. 2): memory (B, N, W), weights (B, N) -> (B, W)."""
    if memory.dim() != 3 or weights.shape != memory.shape[:2]:
        raise ValueError(
            f"expected memory (B, N, W) and weights (B, N); got memory {tuple(memory.shape)}, "
            f"weights {tuple(weights.shape)}"
        )
    return (weights[:, None, :] @ memory)[:, 0]  # (B, 1, N) @ (B, N, W) -> (B, W)


def write_memory(memory: Tensor, weights: Tensor, erase: Tensor, add: Tensor) -> Tensor:
    """``M ∘ (1 − w eᵀ) + w aᵀ`` (Eq. 3-4): memory (B, N, W), weights (B, N), erase and add (B, W)
    -> the new memory (B, N, W). Erase first, then add; erase is in [0, 1]."""
    B, N, W = memory.shape if memory.dim() == 3 else (None, None, None)
    if B is None or weights.shape != (B, N) or erase.shape != (B, W) or add.shape != (B, W):
        raise ValueError(
            f"expected memory (B, N, W), weights (B, N), erase and add (B, W); got memory "
            f"{tuple(memory.shape)}, weights {tuple(weights.shape)}, erase {tuple(erase.shape)}, "
            f"add {tuple(add.shape)}"
        )
    w = weights[:, :, None]  # (B, N, 1)
    return memory * (1 - w * erase[:, None, :]) + w * add[:, None, :]  # (B, N, W)


class _Head(nn.Module):
    """One head's parameters from the controller state: k, β, g, s, γ (and e, a when writing)."""

    def __init__(self, controller_size: int, width: int, shifts: int, write: bool):
        super().__init__()
        self.width, self.shifts, self.write = width, shifts, write
        self.sizes = [width, 1, 1, shifts, 1] + ([width, width] if write else [])
        self.proj = nn.Linear(controller_size, sum(self.sizes))

    def forward(self, h: Tensor) -> dict:
        parts = self.proj(h).split(self.sizes, dim=-1)
        out = {
            "key": torch.tanh(parts[0]),  # (B, W)
            "beta": F.softplus(parts[1])[:, 0],  # (B,) ≥ 0
            "gate": torch.sigmoid(parts[2])[:, 0],  # (B,) in [0, 1]
            "kernel": torch.softmax(parts[3], dim=-1),  # (B, S)
            "gamma": 1 + F.softplus(parts[4])[:, 0],
        }  # (B,) ≥ 1
        if self.write:
            out["erase"] = torch.sigmoid(parts[5])  # (B, W)
            out["add"] = torch.tanh(parts[6])  # (B, W)
        return out

    def address(self, memory: Tensor, previous: Tensor, p: dict) -> Tensor:
        return address(memory, p["key"], p["beta"], p["gate"], previous, p["kernel"], p["gamma"])["sharpened"]


@register_model("ntm")
class NTM(nn.Module):
    """A Neural Turing Machine with one read and one write head; see the module docstring.

    ``forward(inputs (B, T, bits + 1))`` returns :class:`NTMOutput`: ``logits (B, T, bits)`` and the
    read and write weightings ``(B, T, N)``, each row a distribution over the N slots.
    """

    config_class = NTMConfig

    def __init__(self, cfg: NTMConfig):
        super().__init__()
        self.cfg = cfg
        I, O, N, W, C = cfg.bits + 1, cfg.bits, cfg.memory_slots, cfg.memory_width, cfg.controller_size
        if cfg.controller == "lstm":
            self.controller = nn.LSTMCell(I + W, C)
        else:
            self.controller = nn.Sequential(nn.Linear(I + W, C), nn.Tanh())
        self.read_head = _Head(C, W, cfg.shifts, write=False)
        self.write_head = _Head(C, W, cfg.shifts, write=True)
        self.output = nn.Linear(C + W, O)
        self.initial_read = nn.Parameter(torch.zeros(W))
        bound = 1 / math.sqrt(N + W)
        bias = (torch.rand(N, W, generator=torch.Generator().manual_seed(cfg.seed)) * 2 - 1) * bound  # (N, W)
        if cfg.learn_memory:
            self.memory_bias = nn.Parameter(bias)
        else:
            self.register_buffer("memory_bias", bias)

    def initial_state(self, inputs: Tensor) -> dict:
        """Memory, head weightings (focused on slot 0), first read vector and controller state."""
        B, N = inputs.shape[0], self.cfg.memory_slots
        focus = inputs.new_zeros(B, N)
        focus[:, 0] = 1.0  # (B, N), both heads start on slot 0
        C = self.cfg.controller_size
        controller = (inputs.new_zeros(B, C), inputs.new_zeros(B, C)) if self.cfg.controller == "lstm" else None
        return {
            "memory": self.memory_bias.to(inputs.dtype).expand(B, -1, -1),  # (B, N, W)
            "read": self.initial_read.to(inputs.dtype).expand(B, -1),  # (B, W)
            "read_weights": focus,
            "write_weights": focus.clone(),
            "controller": controller,
        }

    def step(self, x: Tensor, state: dict) -> tuple[Tensor, dict]:
        """One time step: ``x (B, I)`` -> logits ``(B, O)`` and the next state."""
        inp = torch.cat([x, state["read"]], dim=-1)  # (B, I + W)
        if self.cfg.controller == "lstm":
            h, c = self.controller(inp, state["controller"])  # (B, C) each
            controller = (h, c)
        else:
            h, controller = self.controller(inp), None  # (B, C)
        wp = self.write_head(h)
        write_weights = self.write_head.address(state["memory"], state["write_weights"], wp)  # (B, N)
        memory = write_memory(state["memory"], write_weights, wp["erase"], wp["add"])  # (B, N, W)
        read_weights = self.read_head.address(memory, state["read_weights"], self.read_head(h))  # (B, N)
        read = read_memory(memory, read_weights)  # (B, W)
        logits = self.output(torch.cat([h, read], dim=-1))  # (B, O)
        return logits, {
            "memory": memory,
            "read": read,
            "read_weights": read_weights,
            "write_weights": write_weights,
            "controller": controller,
        }

    def forward(self, inputs: Tensor) -> NTMOutput:
        I = self.cfg.bits + 1
        if inputs.dim() != 3 or inputs.shape[2] != I or inputs.shape[1] < 1:
            raise ValueError(
                f"NTM expects inputs (B, T, bits + 1) = (B, T, {I}) with T >= 1; got {tuple(inputs.shape)}"
            )
        B, T, _ = inputs.shape
        state = self.initial_state(inputs)
        logits, reads, writes = [], [], []
        for t in range(T):
            y, state = self.step(inputs[:, t], state)
            logits.append(y)
            reads.append(state["read_weights"])
            writes.append(state["write_weights"])
        return NTMOutput(
            torch.stack(logits, 1),
            torch.stack(reads, 1),
            torch.stack(writes, 1),  # (B, T, O), (B, T, N) ×2
            state["memory"],
        )


@dataclass
class CopyLSTMConfig:
    bits: int = 8  # O; the input has bits + 1 channels, as for the NTM
    hidden: int = 118  # LSTM size; 118 gives about the parameters of the default NTMConfig (62k)

    def __post_init__(self):
        check_sizes("CopyLSTMConfig", bits=self.bits, hidden=self.hidden)


@register_model("copy-lstm")
class CopyLSTM(nn.Module):
    """The NTM paper's baseline (Graves et al. 2014, §4): an LSTM with no external memory, reading
    the same steps and emitting the same logits as :class:`NTM`, so that the copy task compares
    attention over a memory with a fixed-size state.

    ``forward(inputs (B, T, bits + 1))`` -> ``logits (B, T, bits)``.
    """

    config_class = CopyLSTMConfig

    def __init__(self, cfg: CopyLSTMConfig):
        super().__init__()
        self.cfg = cfg
        self.lstm = nn.LSTM(cfg.bits + 1, cfg.hidden, batch_first=True)
        self.output = nn.Linear(cfg.hidden, cfg.bits)

    def forward(self, inputs: Tensor) -> Tensor:
        I = self.cfg.bits + 1
        if inputs.dim() != 3 or inputs.shape[2] != I or inputs.shape[1] < 1:
            raise ValueError(
                f"CopyLSTM expects inputs (B, T, bits + 1) = (B, T, {I}) with T >= 1; got {tuple(inputs.shape)}"
            )
        states, _ = self.lstm(inputs)  # (B, T, hidden)
        return self.output(states)  # (B, T, O)
