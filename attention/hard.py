"""Hard (stochastic) attention and its estimators: chapter 8, Xu et al. (2015), "Show, Attend and
Tell", §4.1, and a straight-through Gumbel-softmax beside it.

Shape legend: B batch (or samples), G attention locations (the annotation grid, gh * gw).

Soft attention reads the expectation ``z = Σ_i α_i a_i``; hard attention draws one location
``s ~ Cat(α)`` and reads ``a_s``. Sampling has no gradient, so Xu et al. maximise a variational
lower bound ``L_s = Σ_s p(s | a) log p(y | s, a)`` whose gradient (eq. 10-12) is estimated with N
Monte-Carlo samples ``s̃ⁿ ~ Cat(α)`` (the score-function, or REINFORCE, estimator, Williams 1992):

    ∂L_s/∂W ≈ 1/N Σ_n [ ∂log p(y | s̃ⁿ, a)/∂W
                        + λ_r (log p(y | s̃ⁿ, a) − b) ∂log p(s̃ⁿ | a)/∂W
                        + λ_e ∂H[s̃ⁿ]/∂W ]                                      (eq. 12)

with a moving-average baseline ``b`` (§4.1: ``b_k = 0.9 b_{k−1} + 0.1 log p(y | s̃_k, a)``), which
lowers the variance without changing the mean, and an entropy bonus ``λ_e H[s]``.

The pieces, each small and usable alone:

* :func:`sample_location` -- one location per row, ``s ~ Cat(α)``, as an index and a one-hot.
* :func:`reinforce_surrogate` -- a scalar-per-row whose gradient *is* eq. 12's estimator.
* :class:`MovingAverageBaseline` -- ``b ← 0.9 b + 0.1 mean log p(y | s, a)``.
* :class:`LearnedBaseline` -- ``b(x) = wᵀx + c`` per example, fit to the rewards by its own
  least-squares steps (Mnih et al. 2014), outside the model's optimiser.
* :func:`attention_entropy` -- ``H[α] = −Σ_i α_i log α_i`` for the entropy bonus.
* :func:`gumbel_softmax_st` -- *beyond the survey*: the straight-through Gumbel-softmax (Jang et
  al. 2017; Maddison et al. 2017), a one-hot forward with a softmax's gradient backward.
* :func:`gradient_variance` -- how noisy a model's loss gradient is over repeated draws (the chapter's
  "with and without the baseline" measurement).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "sample_location",
    "reinforce_surrogate",
    "MovingAverageBaseline",
    "LearnedBaseline",
    "attention_entropy",
    "gumbel_softmax_st",
    "flat_gradient",
    "gradient_spread_summary",
    "gradient_variance",
]


def _check_rows(name: str, x: Tensor) -> None:
    if x.dim() != 2 or x.shape[1] == 0:
        raise ValueError(f"{name} must be (B, G) with G >= 1; got {tuple(x.shape)}")


def _check_per_sample(name: str, value, log_likelihood: Tensor) -> None:
    """A number, a 0-dim tensor or one value per sample ``(B,)``, finite: any other shape broadcasts."""
    t = value if isinstance(value, Tensor) else torch.as_tensor(value)
    B = log_likelihood.shape[0]
    if t.dim() > 1 or (t.dim() == 1 and t.shape[0] != B):
        raise ValueError(
            f"{name} must be a number, a 0-dim tensor or one value per sample (B,) = ({B},); "
            f"got shape {tuple(t.shape)} with log_likelihood {tuple(log_likelihood.shape)} "
            f"(a (B, 1) tensor would make the surrogate (B, B); take .squeeze(-1) or .mean())"
        )
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite; got {t.detach().flatten().tolist()[:8]}")


def sample_location(weights: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Draw one location per row, ``s ~ Cat(α)`` (Xu et al. 2015, eq. 8-9; chapter 8).

    Args:
        weights: ``α (B, G)``, non-negative rows summing to 1.
        generator: an optional ``torch.Generator`` (on the weights' device) for reproducible draws.

    Returns:
        ``index (B,)`` long and ``one_hot (B, G)`` in the weights' dtype (exactly one 1 per row, at a
        location whose weight is > 0). No gradient flows through the draw.
    """
    _check_rows("weights", weights)
    index = torch.multinomial(weights.detach().float(), 1, generator=generator)[:, 0]  # (B,)
    one_hot = F.one_hot(index, weights.shape[1]).to(weights.dtype)  # (B, G)
    return index, one_hot


def reinforce_surrogate(
    log_likelihood: Tensor, log_prob_choices: Tensor, baseline: float | Tensor = 0.0, reward_weight: float = 1.0
) -> Tensor:
    """The surrogate objective whose gradient is the score-function estimator of Xu et al. eq. 12.

    ``surrogate = log p(y|s,a) + λ_r · [log p(y|s,a) − b]_detached · (log p(s|a) − [log p(s|a)]_detached)``, so

        ∂surrogate/∂W = ∂log p(y|s,a)/∂W + λ_r (log p(y|s,a) − b) ∂log p(s|a)/∂W .

    The reward ``log p(y|s,a) − b`` is a constant (detached): only the log-probability of the
    choices carries the REINFORCE gradient. The second term is 0 in value (``x − sg(x)``), so the
    surrogate's *value* is just ``log p(y|s,a)`` and a loss curve reads as a log-likelihood. Maximise
    it (minimise its negative); its gradient's mean over the samples is an unbiased estimate of
    ∂L_s/∂W for any baseline ``b`` that does not depend on s.

    Args:
        log_likelihood: ``log p(y | s, a)`` ``(B,)`` (may carry gradient, or be a fixed reward).
        log_prob_choices: ``log p(s | a)`` ``(B,)``, e.g. ``Σ_t log α_{t, s_t}``.
        baseline: ``b``, a number, a 0-dim tensor or one value per sample ``(B,)`` (no gradient is
            taken). A ``(B, 1)`` tensor, what ``ll.mean(-1, keepdim=True)`` gives, is refused: it would
            broadcast the surrogate to ``(B, B)``.
        reward_weight: ``λ_r``, a number (or, like the baseline, ``(B,)``).

    Returns:
        ``(B,)``, the per-sample surrogate.
    """
    if log_likelihood.shape != log_prob_choices.shape or log_likelihood.dim() != 1:
        raise ValueError(
            f"log_likelihood and log_prob_choices must both be (B,); got "
            f"{tuple(log_likelihood.shape)} and {tuple(log_prob_choices.shape)}"
        )
    _check_per_sample("baseline", baseline, log_likelihood)
    _check_per_sample("reward_weight", reward_weight, log_likelihood)
    baseline = torch.as_tensor(baseline, dtype=log_likelihood.dtype, device=log_likelihood.device)
    reward = (log_likelihood - baseline).detach()  # (B,)  the learning signal, a constant
    score = log_prob_choices - log_prob_choices.detach()  # (B,)  value 0, gradient ∂log p(s|a)/∂W
    return log_likelihood + reward_weight * reward * score


class MovingAverageBaseline(nn.Module):
    """``b ← m b + (1 − m) mean log p(y | s, a)``, m = 0.9 (Xu et al. 2015, §4.1; chapter 8).

    Kept in buffers, so it moves with the model (``.to(device)``) and is saved in its checkpoint.
    The first update sets ``b`` to the first mean instead of averaging it with 0, so that early
    rewards are not all "better than expected".
    """

    def __init__(self, momentum: float = 0.9):
        super().__init__()
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1); got {momentum}")
        self.momentum = momentum
        self.register_buffer("value", torch.zeros(()))
        self.register_buffer("initialized", torch.zeros((), dtype=torch.bool))

    @torch.no_grad()
    def update(self, reward: Tensor) -> Tensor:
        """Fold in ``reward`` (any shape, its mean is used); returns the new ``b``."""
        mean = reward.detach().float().mean()
        mixed = self.momentum * self.value + (1 - self.momentum) * mean
        self.value.copy_(torch.where(self.initialized, mixed, mean))
        self.initialized.fill_(True)
        return self.value

    def forward(self) -> Tensor:
        return self.value


class LearnedBaseline(nn.Module):
    """``b(x) = wᵀx + c``, a baseline that depends on the input ``x`` (not on the draw), fit to the
    rewards by least squares (Mnih et al. 2014's learned baseline; chapter 8).

    ``w`` and ``c`` are buffers, not parameters: the fit is its own normalised least-mean-squares
    step in :meth:`update`, ``[w; c] += μ · mean_i(r_i x̃_i) / mean_i |x̃_i|²`` with the residuals
    ``r = reward − b(x)`` and ``x̃ = [x; 1]``, so the model's optimiser, its gradient clipping and its
    learning rate never see it (a squared error of log-likelihoods in the model's loss would
    dominate a clipped gradient norm). The first update sets ``c`` to the first mean reward and
    leaves ``w`` at 0, as :class:`MovingAverageBaseline` starts.
    """

    def __init__(self, features: int, step: float = 0.5):
        super().__init__()
        if features < 1:
            raise ValueError(f"features must be >= 1; got {features}")
        if not 0.0 < step < 2.0:
            raise ValueError(f"step must be in (0, 2) for the least-mean-squares step to be stable; got {step}")
        self.step = step
        self.register_buffer("weight", torch.zeros(features))
        self.register_buffer("bias", torch.zeros(()))
        self.register_buffer("initialized", torch.zeros((), dtype=torch.bool))

    def _check(self, x: Tensor) -> None:
        if x.dim() != 2 or x.shape[1] != self.weight.shape[0]:
            raise ValueError(f"features must be (B, {self.weight.shape[0]}); got {tuple(x.shape)}")

    def forward(self, x: Tensor) -> Tensor:
        """``(B, F) -> b (B,)``, no gradient."""
        self._check(x)
        return (x.detach().float() @ self.weight + self.bias).to(x.dtype)

    @torch.no_grad()
    def update(self, x: Tensor, reward: Tensor) -> None:
        """One least-squares step towards ``reward (B,)`` at ``x (B, F)``."""
        self._check(x)
        if reward.shape != x.shape[:1]:
            raise ValueError(f"reward must be (B,) = ({x.shape[0]},); got {tuple(reward.shape)}")
        x, reward = x.detach().float(), reward.detach().float()
        if not bool(self.initialized):
            self.bias.fill_(float(reward.mean()))
            self.initialized.fill_(True)
            return
        r = reward - (x @ self.weight + self.bias)  # (B,)
        norm = (x.pow(2).sum(1) + 1).mean()  # mean |x̃|²
        self.weight.add_(self.step * (r[:, None] * x).mean(0) / norm)
        self.bias.add_(self.step * r.mean() / norm)


def attention_entropy(weights: Tensor) -> Tensor:
    """``H[α] = −Σ_i α_i log α_i`` over the last dim, with ``0 log 0 = 0`` (finite gradients).

    ``(..., G) -> (...)``. The entropy bonus ``λ_e H[s]`` of Xu et al. eq. 12 (chapter 8).
    """
    return -torch.xlogy(weights, weights.clamp_min(torch.finfo(weights.dtype).tiny)).sum(-1)


def gumbel_softmax_st(logits: Tensor, tau: float = 1.0, generator: torch.Generator | None = None) -> Tensor:
    """Straight-through Gumbel-softmax: a one-hot sample forward, the relaxed sample's gradient backward.

    *Beyond the survey* (Jang et al. 2017, "Categorical Reparameterization with Gumbel-Softmax";
    Maddison et al. 2017, "The Concrete Distribution"); chapter 8 sets it beside REINFORCE:

        g_i ~ Gumbel(0, 1),   y_soft = softmax((logits + g) / τ),
        y = one_hot(argmax y_soft) − sg(y_soft) + y_soft           (sg = stop-gradient)

    The forward value is exactly one-hot (a draw from ``Cat(softmax(logits))``); the gradient is that
    of ``y_soft``: biased, but low-variance.

    Args:
        logits: ``(B, G)`` unnormalised log-probabilities (e.g. the attention scores e_ti).
        tau: temperature τ > 0.
        generator: with a generator the noise is drawn from it (deterministic under a fixed seed);
            without one, ``torch.nn.functional.gumbel_softmax`` is used.

    Returns:
        ``(B, G)`` one-hot rows carrying straight-through gradients.
    """
    _check_rows("logits", logits)
    if not tau > 0:
        raise ValueError(f"tau must be > 0; got {tau}")
    if generator is None:
        return F.gumbel_softmax(logits, tau=tau, hard=True, dim=-1)
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)  # (B, G)
    tiny = torch.finfo(logits.dtype).tiny
    exponential = -torch.log(u.clamp_min(tiny))  # (B, G)  Exp(1)
    gumbel = -torch.log(exponential.clamp_min(tiny))  # (B, G)  Gumbel(0, 1)
    y_soft = torch.softmax((logits + gumbel) / tau, dim=-1)  # (B, G)
    y_hard = F.one_hot(y_soft.argmax(-1), logits.shape[1]).to(logits.dtype)  # (B, G)
    return y_hard - y_soft.detach() + y_soft


def flat_gradient(loss: Tensor, params: list[nn.Parameter]) -> Tensor:
    """The gradient of ``loss`` with respect to ``params`` as one vector ``(P,)`` (0 for unused ones)."""
    g = torch.autograd.grad(loss, params, allow_unused=True)
    return torch.cat([(gi if gi is not None else torch.zeros_like(p)).reshape(-1) for gi, p in zip(g, params)])


def gradient_spread_summary(grads: Tensor) -> dict:
    """``grads (n, P)``, n gradient vectors -> ``{"mean_variance": mean over the P elements of their
    variance over n, "mean_sq_grad": mean of the squared mean gradient, "n_elements", "n_samples"}``."""
    return {
        "mean_variance": float(grads.var(0, unbiased=True).mean()),
        "mean_sq_grad": float(grads.mean(0).pow(2).mean()),
        "n_elements": grads.shape[1],
        "n_samples": grads.shape[0],
    }


def gradient_variance(
    model: nn.Module,
    images: Tensor,
    captions: Tensor,
    n_samples: int,
    params: list[nn.Parameter] | None = None,
    baseline: bool = True,
) -> dict:
    """The spread of a model's loss gradient over ``n_samples`` backward passes at the same parameters.

    For hard attention each pass draws new locations, so the gradient is random; soft attention is
    deterministic (variance 0, unless dropout is on). The model is put in training mode (hard
    attention samples only then) and restored afterwards; its buffers (the moving-average baseline)
    are restored after every pass, so every sample sees the same parameters and the same ``b``.

    Args:
        model: anything with ``loss(images, captions, baseline=...) -> (loss, n)`` (the captioner).
        params: the parameters to measure (default: all that require grad).
        baseline: True: use the model's own baseline (its moving average, or the learned ``b(a)`` of
            a model whose ``cfg.baseline`` is "learned"; either, if it has never been updated,
            estimated as the mean log-likelihood of one extra sampled pass); False: ``b = 0``.

    Returns:
        ``{"mean_variance": mean over parameter elements of Var_n[g],
        "mean_sq_grad": mean over parameter elements of (E_n[g])², "n_elements", "n_samples"}``.
    """
    if n_samples < 2:
        raise ValueError(f"n_samples must be >= 2 to estimate a variance; got {n_samples}")
    params = [p for p in (params if params is not None else model.parameters()) if p.requires_grad]
    was_training = model.training
    model.train()
    saved = {name: b.detach().clone() for name, b in model.named_buffers()}
    b = 0.0
    if baseline:
        b = None  # the model's own baseline: its moving average, or a learned b(a)
        kind = getattr(getattr(model, "cfg", None), "baseline", "moving")
        tracker = getattr(model, "learned_baseline" if kind == "learned" else "baseline", None)
        if isinstance(tracker, (MovingAverageBaseline, LearnedBaseline)) and not bool(tracker.initialized):
            with torch.no_grad():
                b = float(model.log_likelihood(images, captions).mean())  # (B,) -> scalar
    grads = []
    try:
        for _ in range(n_samples):
            loss, _ = model.loss(images, captions, baseline=b)
            grads.append(flat_gradient(loss, params))  # (P,)
            for name, buf in model.named_buffers():
                buf.copy_(saved[name])
    finally:
        model.train(was_training)
    return gradient_spread_summary(torch.stack(grads))  # (n_samples, P)
