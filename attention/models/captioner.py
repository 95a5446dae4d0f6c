"""Xu et al. (2015), "Show, Attend and Tell": chapter 8, attention over an image's annotation grid,
soft (deterministic), hard (stochastic, REINFORCE) and, beyond the survey, straight-through Gumbel.

Shape legend: B batch, C image channels, H×W image size, D annotation dim, G = gh·gw annotation
locations, T caption length (with <bos>), E embedding dim, N LSTM hidden dim, V vocabulary.

Encoder (§3.1.1). A small CNN (3×3 convolutions with ReLU, ``pools`` 2×2 max-pools) turns the image
``(B, C, H, W)`` into a grid ``(B, D, gh, gw)``, read as annotations ``a = {a_1 … a_G}``, ``(B, G, D)``.

Decoder (§3.1.2), an LSTM, one word per step, with ``h_0, c_0 = tanh(f_init(mean_i a_i))``:

    e_ti = f_att(a_i, h_{t−1})          the package's additive score (Bahdanau)           (eq. 4)
    α_t  = softmax_i(e_ti)                                                                 (eq. 5)
    β_t  = σ(f_β(h_{t−1}))              the gating scalar                                  (§4.2.1)
    z_t  = β_t Σ_i α_ti a_i             soft: the expected context                        (eq. 13)
         = β_t a_{s_t},  s_t ~ Cat(α_t) hard: one sampled location (argmax at evaluation)  (eq. 8-9)
         = β_t Σ_i y_ti a_i,            gumbel: y_t = gumbel_softmax_st(e_t, τ) (argmax at evaluation)
    h_t, c_t = LSTM([E y_{t−1}; z_t], (h_{t−1}, c_{t−1}))                                 (eq. 1-3)
    p(y_t) = softmax(L_o(E y_{t−1} + L_h h_t + L_z z_t))   the deep output                (eq. 7)

Objectives, each summed over a caption's real target tokens and divided by their number in the batch:

* soft: ``−log p(y|a) + λ Σ_i (1 − Σ_t α_ti)²`` (the doubly stochastic penalty, eq. 14). With
  fewer steps than locations (T' < G) the penalty cannot reach 0: its minimum, at uniform
  attention, is ``G (1 − T'/G)²``, a floor under the soft loss (8.1 per token for G = 40 and
  captions of 3 words + <eos>); compare soft losses net of it, or use a small λ;
* hard: ``−[log p(y|s,a) + λ_r (log p(y|s,a) − b) log p(s|a) + λ_e H[α]]`` (eq. 12, one sample
  per caption, :mod:`attention.hard`); ``b`` is a moving average of ``log p(y|s,a)`` (a buffer,
  updated only in training mode);
* gumbel: ``−log p(y|a)`` through the straight-through one-hot.

How this differs from the paper: a tiny CNN instead of VGG's conv5_4 features; a learned position
vector p_i added to each annotation (``positions``; reading digits in order needs to know where a
cell is, which a convolution does not say); no dropout on the
LSTM input; hard attention draws one sample per caption (N = 1) and replaces it by the
expectation α (§4.1 does so with probability 0.5) only if ``expectation_prob`` > 0 (default 0: pure
REINFORCE); at evaluation hard and gumbel attention read the argmax location, so
:meth:`ShowAttendTell.generate` is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import masked_softmax
from ..hard import (
    LearnedBaseline,
    MovingAverageBaseline,
    attention_entropy,
    gumbel_softmax_st,
    reinforce_surrogate,
    sample_location,
)
from ..scores import make_score
from .checks import check_ids, check_special_id
from .decoding import check_max_len, in_eval_mode
from .pooling import check_dropout, check_sizes
from .registry import register_model

__all__ = [
    "ATTENTIONS",
    "BASELINES",
    "CaptionerConfig",
    "CaptionerOutput",
    "ShowAttendTell",
    "doubly_stochastic_penalty",
]

ATTENTIONS = ("soft", "hard", "gumbel")
#: hard attention's baseline b in eq. 12: Xu et al.'s moving average, a learned b(a) per image, or none
BASELINES = ("moving", "learned", "none")


@dataclass
class CaptionerConfig:
    vocab: int  # V, caption words (pad_id, bos_id, eos_id included)
    attention: str = "soft"  # "soft" (eq. 13), "hard" (REINFORCE, eq. 12) or "gumbel" (straight-through)
    embed_dim: int = 32  # E, word embeddings (and the deep output layer's input)
    hidden_dim: int = 128  # N, LSTM state
    annotation_dim: int = 64  # D, channels of the CNN's last layer = size of each annotation a_i
    attention_dim: int = 64  # A, hidden layer of the additive score f_att
    doubly_stochastic: float = 1.0  # λ of the penalty Σ_i (1 − Σ_t α_ti)² (soft only, eq. 14)
    entropy_weight: float = 0.01  # λ_e, entropy bonus (hard only, eq. 12)
    reward_weight: float = 1.0  # λ_r, weight of the REINFORCE term (hard only, eq. 12)
    tau: float = 1.0  # τ, Gumbel-softmax temperature (gumbel only)
    expectation_prob: float = 0.0  # hard, training: chance a caption reads the expectation α instead (§4.1 uses 0.5)
    baseline: str = "moving"  # hard: b of eq. 12, one of BASELINES ("learned": b(a) = w·mean_i a_i + c, least squares)
    dropout: float = 0.0  # on h_t before the deep output
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    channels: int = 1  # C, image channels
    image_height: int = 16  # H
    image_width: int = 40  # W
    cnn_channels: int = 32  # channels of the CNN's hidden conv layers
    conv_layers: int = 3  # 3×3 convolutions (the last outputs D channels)
    pools: int = 2  # 2×2 max-pools (after the first `pools` convolutions): grid = (H, W) / 2^pools
    positions: bool = True  # add a learned vector per grid cell to its annotation (beyond the paper, below)

    def __post_init__(self):
        check_sizes(
            "CaptionerConfig",
            vocab=self.vocab,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            annotation_dim=self.annotation_dim,
            attention_dim=self.attention_dim,
            channels=self.channels,
            image_height=self.image_height,
            image_width=self.image_width,
            cnn_channels=self.cnn_channels,
            conv_layers=self.conv_layers,
        )
        if self.attention not in ATTENTIONS:
            raise ValueError(f"CaptionerConfig.attention must be one of {ATTENTIONS}; got {self.attention!r}")
        check_dropout("CaptionerConfig", self.dropout)
        for name in ("doubly_stochastic", "entropy_weight", "reward_weight"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"CaptionerConfig.{name} must be >= 0; got {getattr(self, name)!r}")
        if not 0.0 <= self.expectation_prob <= 1.0:
            raise ValueError(f"CaptionerConfig.expectation_prob must be in [0, 1]; got {self.expectation_prob!r}")
        if not self.tau > 0:
            raise ValueError(f"CaptionerConfig.tau must be > 0; got {self.tau!r}")
        if self.baseline not in BASELINES:
            raise ValueError(f"CaptionerConfig.baseline must be one of {BASELINES}; got {self.baseline!r}")
        ids = {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        for name, i in ids.items():
            check_special_id("CaptionerConfig", name, i, vocab=self.vocab)
        if len(set(ids.values())) != 3:
            raise ValueError(f"CaptionerConfig pad_id, bos_id, eos_id must differ; got {ids}")
        if not isinstance(self.pools, int) or not 0 <= self.pools <= self.conv_layers:
            raise ValueError(
                f"CaptionerConfig.pools must be in [0, conv_layers={self.conv_layers}]; got {self.pools!r}"
            )
        f = 2**self.pools
        if self.image_height % f or self.image_width % f:
            raise ValueError(
                f"CaptionerConfig image size {self.image_height}x{self.image_width} must be divisible by 2^pools = {f}"
            )


@dataclass
class CaptionerOutput:
    """Teacher forcing's results; rows at padding targets are 0 (locations −1)."""

    logits: Tensor  # (B, T−1, V)
    weights: Tensor  # (B, T−1, G)  α_t
    betas: Tensor  # (B, T−1)  β_t
    locations: Tensor | None = None  # (B, T−1) long, s_t (hard, gumbel)
    selections: Tensor | None = None  # (B, T−1, G) one-hot s_t (hard; drawn even where α is read), y_t (gumbel)
    choice_log_probs: Tensor | None = None  # (B, T−1) log α_{t, s_t} (hard)
    pooled: Tensor | None = None  # (B, D) mean_i a_i, detached (the learned baseline's input)


def doubly_stochastic_penalty(weights: Tensor, mask: Tensor | None = None) -> Tensor:
    """Σ_i (1 − Σ_t α_ti)² per caption (Xu et al. 2015, eq. 14; chapter 8): ``(B, T, G) -> (B,)``.

    ``mask (B, T)`` (True = a real step) leaves padding steps out of the sum over t.
    """
    if mask is not None:
        weights = weights * mask[..., None].to(weights.dtype)  # (B, T, G)
    return (1 - weights.sum(1)).pow(2).sum(-1)  # (B, G) -> (B,)


@register_model("show-attend-tell")
class ShowAttendTell(nn.Module):
    """Show, Attend and Tell with soft, hard or Gumbel attention; see the module docstring.

    * ``forward(images (B, C, H, W), captions (B, T))`` -> :class:`CaptionerOutput` (teacher forcing);
    * ``loss(images, captions) -> (mean loss per target token, n target tokens)``;
    * ``generate(images, max_len) -> (tokens (B, T') long, attention (B, T', G))``, greedy.

    Captions are ``[<bos>, w_1 … w_n, <eos>, <pad> …]``.
    """

    config_class = CaptionerConfig

    def __init__(self, cfg: CaptionerConfig):
        super().__init__()
        self.cfg = cfg
        V, E, N, D = cfg.vocab, cfg.embed_dim, cfg.hidden_dim, cfg.annotation_dim
        layers, c_in = [], cfg.channels
        for k in range(cfg.conv_layers):
            c_out = D if k == cfg.conv_layers - 1 else cfg.cnn_channels
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU()]
            if k < cfg.pools:
                layers.append(nn.MaxPool2d(2))
            c_in = c_out
        self.cnn = nn.Sequential(*layers)
        gh, gw = cfg.image_height >> cfg.pools, cfg.image_width >> cfg.pools
        # p_i (G, D): where cell i is. Convolutions see only content, so without it two equal digits
        # have equal annotations and "the next digit to the right" cannot be scored.
        self.position = nn.Parameter(0.1 * torch.randn(gh * gw, D)) if cfg.positions else None
        self.init_h = nn.Linear(D, N)  # f_init,h
        self.init_c = nn.Linear(D, N)  # f_init,c
        self.score = make_score("additive", query_dim=N, key_dim=D, hidden_dim=cfg.attention_dim)  # f_att
        self.f_beta = nn.Linear(N, 1)  # the gating scalar's layer
        self.embedding = nn.Embedding(V, E, padding_idx=cfg.pad_id)  # E
        self.cell = nn.LSTMCell(E + D, N)
        self.L_h = nn.Linear(N, E)
        self.L_z = nn.Linear(D, E)
        self.L_o = nn.Linear(E, V)
        self.drop = nn.Dropout(cfg.dropout)
        self.baseline = MovingAverageBaseline(0.9)  # b, used by hard attention only
        # b(a), an input-dependent baseline (Mnih et al. 2014) read from mean_i a_i; fit by its own
        # least-squares steps (buffers), so the optimiser and the gradient clipping never see it
        self.learned_baseline = LearnedBaseline(D) if cfg.baseline == "learned" else None

    @property
    def grid(self) -> tuple[int, int]:
        """``(gh, gw)``, the annotation grid; G = gh · gw."""
        f = 2**self.cfg.pools
        return self.cfg.image_height // f, self.cfg.image_width // f

    # --- checks --------------------------------------------------------------------------------------
    def check_images(self, images: Tensor) -> None:
        c = self.cfg
        want = (c.channels, c.image_height, c.image_width)
        if images.dim() != 4 or tuple(images.shape[1:]) != want or not images.dtype.is_floating_point:
            raise ValueError(
                f"expected float images (B, {c.channels}, {c.image_height}, {c.image_width}); "
                f"got {tuple(images.shape)} {images.dtype}"
            )

    def check_captions(self, images: Tensor, captions: Tensor) -> None:
        self.check_images(images)
        if captions.dim() != 2 or captions.shape[0] != images.shape[0] or captions.shape[1] < 2:
            raise ValueError(
                f"expected captions (B, T) with T >= 2 for images {tuple(images.shape)}; got {tuple(captions.shape)}"
            )
        # int64 only: the loss gathers the targets' log-probabilities with them
        check_ids(captions, self.cfg.vocab, "captions", "caption", dtypes=(torch.long,))
        if bool((captions[:, 0] != self.cfg.bos_id).any()):
            raise ValueError(f"every caption must start with <bos> = {self.cfg.bos_id}")

    # --- the pieces ----------------------------------------------------------------------------------
    def encode(self, images: Tensor) -> Tensor:
        """The CNN: ``(B, C, H, W) -> a (B, G, D)``, row-major over the grid, plus each cell's position
        vector when ``cfg.positions``."""
        self.check_images(images)
        grid = self.cnn(images)  # (B, D, gh, gw)
        a = grid.flatten(2).transpose(1, 2)  # (B, D, G) -> (B, G, D)
        return a if self.position is None else a + self.position  # a_i + p_i

    def init_state(self, a: Tensor) -> tuple[Tensor, Tensor]:
        """``h_0, c_0 = tanh(f_init(mean_i a_i))``: ``(B, G, D) -> 2 × (B, N)``."""
        mean = a.mean(1)  # (B, D)
        return torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))

    def step(
        self,
        y_prev: Tensor,
        state: tuple[Tensor, Tensor],
        a: Tensor,
        keys: Tensor,
        sample: bool,
        expect: Tensor | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor, Tensor, Tensor | None, Tensor | None]:
        """One word: ``y_prev (B,)``, ``state`` (h, c) ``(B, N)``, annotations ``a (B, G, D)`` and their
        projected keys ``(B, G, A)``. With ``sample`` hard/gumbel attention draws; otherwise argmax.
        ``expect (B,)`` bool: hard-attention rows that read the expectation α this time (§4.1).

        Returns ``logits (B, V)``, the new state, ``α (B, G)``, ``β (B,)``, the selection ``(B, G)``
        (None for soft) and ``log α_{s_t} (B,)`` (hard only, when sampling).
        """
        h, c = state
        e = self.score.score_projected(h[:, None, :], keys)[:, 0]  # (B, 1, G) -> (B, G)  e_ti
        alpha = masked_softmax(e)  # (B, G)
        beta = torch.sigmoid(self.f_beta(h))  # (B, 1)
        kind, selection, log_choice = self.cfg.attention, None, None
        if kind == "soft":
            weights = alpha
        elif sample and kind == "hard":
            index, selection = sample_location(alpha)  # (B,), (B, G)
            log_choice = torch.log_softmax(e, -1).gather(1, index[:, None])[:, 0]  # (B,)  log α_{t, s_t}
            weights = selection
            if expect is not None:  # these rows read Σ_i α_i a_i: no choice, no REINFORCE term
                weights = torch.where(expect[:, None], alpha, selection)  # (B, G)
                log_choice = log_choice.masked_fill(expect, 0.0)
        elif sample:  # gumbel
            selection = weights = gumbel_softmax_st(e, self.cfg.tau)  # (B, G) one-hot, ST gradients
        else:  # hard or gumbel at evaluation: the most likely location
            selection = weights = F.one_hot(alpha.argmax(-1), alpha.shape[1]).to(alpha.dtype)  # (B, G)
        z = beta * (weights[:, :, None] * a).sum(1)  # (B, G, D) -> (B, D)
        emb = self.embedding(y_prev)  # (B, E)
        h, c = self.cell(torch.cat([emb, z], -1), (h, c))  # (B, N)
        logits = self.L_o(emb + self.L_h(self.drop(h)) + self.L_z(z))  # (B, V)  the deep output, eq. 7
        return logits, (h, c), alpha, beta[:, 0], selection, log_choice

    # --- teacher forcing, objectives, decoding --------------------------------------------------------
    def forward(self, images: Tensor, captions: Tensor) -> CaptionerOutput:
        self.check_captions(images, captions)
        a = self.encode(images)  # (B, G, D)
        keys = self.score.project_keys(a)  # (B, G, A), once per image
        state = self.init_state(a)
        sample, expect = self.training, None
        if sample and self.cfg.attention == "hard" and self.cfg.expectation_prob > 0:
            expect = torch.rand(a.shape[0], device=a.device) < self.cfg.expectation_prob  # (B,)
        steps = []
        for t in range(captions.shape[1] - 1):
            logits, state, alpha, beta, sel, logc = self.step(captions[:, t], state, a, keys, sample, expect)
            steps.append((logits, alpha, beta, sel, logc))
        real = captions[:, 1:] != self.cfg.pad_id  # (B, T−1)
        keep = real.to(a.dtype)
        logits = torch.stack([s[0] for s in steps], 1)  # (B, T−1, V)
        out = CaptionerOutput(
            logits,
            torch.stack([s[1] for s in steps], 1) * keep[..., None],  # (B, T−1, G)
            torch.stack([s[2] for s in steps], 1) * keep,
        )  # (B, T−1)
        if self.cfg.attention != "soft":
            out.selections = torch.stack([s[3] for s in steps], 1) * keep[..., None]  # (B, T−1, G)
            out.locations = out.selections.detach().argmax(-1).masked_fill(~real, -1)  # (B, T−1)
        if steps[0][4] is not None:
            out.choice_log_probs = torch.stack([s[4] for s in steps], 1) * keep  # (B, T−1)
            out.pooled = a.mean(1).detach()  # (B, D)
        return out

    def _token_log_probs(self, out: CaptionerOutput, captions: Tensor) -> tuple[Tensor, Tensor]:
        """``log p(y_t | …)`` of each target ``(B, T−1)`` (0 at padding) and the real-target mask."""
        target = captions[:, 1:]  # (B, T−1)
        real = target != self.cfg.pad_id
        lp = torch.log_softmax(out.logits, -1).gather(-1, target[..., None])[..., 0]  # (B, T−1)
        return lp * real.to(lp.dtype), real

    def log_likelihood(self, images: Tensor, captions: Tensor) -> Tensor:
        """``log p(y | s, a)`` per caption ``(B,)`` (with sampled s in training mode for hard attention)."""
        out = self(images, captions)
        return self._token_log_probs(out, captions)[0].sum(1)

    def loss(self, images: Tensor, captions: Tensor, baseline: float | Tensor | None = None) -> tuple[Tensor, int]:
        """The objective of ``cfg.attention`` (module docstring), per target token; returns ``(loss, n)``.

        ``baseline`` overrides b for hard attention (None: ``cfg.baseline``'s -- the moving average
        or the learned ``b(a)``, each then updated with this batch's rewards, or 0; a number or a
        ``(B,)`` tensor: that b, with nothing updated).
        """
        cfg = self.cfg
        out = self(images, captions)
        lp, real = self._token_log_probs(out, captions)  # (B, T−1)
        n = int(real.sum())
        if n == 0:
            raise ValueError("captions have no target tokens (every position after <bos> is padding)")
        ll = lp.sum(1)  # (B,)  log p(y | s, a)
        if cfg.attention == "soft":
            total = -ll.sum() + cfg.doubly_stochastic * doubly_stochastic_penalty(out.weights, real).sum()
        elif cfg.attention == "hard" and out.choice_log_probs is not None:  # training: sampled locations
            if baseline is not None:
                b = baseline
            elif cfg.baseline == "moving":
                b = self.baseline.value
            elif cfg.baseline == "learned":
                b = self.learned_baseline(out.pooled)  # (B,)  before this batch's fit: not on this draw
            else:
                b = 0.0
            surrogate = reinforce_surrogate(ll, out.choice_log_probs.sum(1), b, cfg.reward_weight)  # (B,)
            entropy = (attention_entropy(out.weights) * real.to(ll.dtype)).sum(1)  # (B,)  Σ_t H[α_t]
            total = -(surrogate + cfg.entropy_weight * entropy).sum()
            if baseline is None and cfg.baseline == "moving":
                self.baseline.update(ll)
            elif baseline is None and cfg.baseline == "learned":
                self.learned_baseline.update(out.pooled, ll)
        else:  # gumbel, or hard at evaluation (argmax locations): the likelihood alone
            total = -ll.sum()
        return total / n, n

    @torch.no_grad()
    @in_eval_mode
    def generate(self, images: Tensor, max_len: int) -> tuple[Tensor, Tensor]:
        """Greedy decoding: ``tokens (B, T')`` (no <bos>; each row stops at <eos>, then pad_id) and the
        attention ``α (B, T', G)`` (rows after <eos> all 0). Hard and gumbel attention read the argmax
        location here (no sampling), and it runs in eval mode (dropout off; the model's mode is
        restored after), so the result is deterministic; T' <= max_len.
        """
        check_max_len(max_len)
        a = self.encode(images)  # (B, G, D)
        keys = self.score.project_keys(a)  # (B, G, A)
        state = self.init_state(a)
        B, G = a.shape[:2]
        y = torch.full((B,), self.cfg.bos_id, dtype=torch.long, device=a.device)
        done = torch.zeros(B, dtype=torch.bool, device=a.device)
        tokens, maps = [], []
        for _ in range(max_len):
            logits, state, alpha, _, _, _ = self.step(y, state, a, keys, sample=False)
            y = logits.argmax(-1).masked_fill(done, self.cfg.pad_id)  # (B,)
            tokens.append(y)
            maps.append(alpha.masked_fill(done[:, None], 0.0))  # (B, G)
            done = done | (y == self.cfg.eos_id)
            if bool(done.all()):
                break
        return torch.stack(tokens, 1), torch.stack(maps, 1)  # (B, T'), (B, T', G)
