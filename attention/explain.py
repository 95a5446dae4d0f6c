"""Do attention weights explain the output? Tests of faithfulness for a classifier that pools with
attention (chapter 10; Jain & Wallace 2019, Wiegreffe & Pinter 2019).

Shape legend: B batch, T sentence length, F attention columns (1 for scalar attention, 2U for
multi-dimensional), D = 2U the state size, C classes.

A model whose output is ``classify(Σ_i p_i h_i)`` (:class:`~attention.models.featurewise.AttentionPooling`)
can be run with *other* weights in place of its own (:func:`logits_with_weights`), which turns
"does the prediction depend on where the attention points?" into measurements:

* **perturb** the weights -- permute them over the real words (:func:`permuted`), spread them
  evenly (:func:`uniform`), or remove the largest and renormalise (:func:`without_top`) -- and
  measure how far the output distribution moves (total variation distance, :func:`tvd`) and how
  often the decision flips;
* **adversarial weights** (:func:`adversarial`) -- search for weights as *different* as possible
  from the model's (Jensen-Shannon divergence, :func:`jsd`) whose output stays within ``eps`` of
  the original: if very different weights give the same prediction, the weights did not single out
  the reason for it;
* **a translation model** (:func:`decoder_report`): RNNsearch decoded greedily with each step's
  weights permuted, made uniform or stripped of their largest entry (the model's own hook,
  ``greedy(..., weights_hook=...)`` of :mod:`attention.models.decoding`), against its own decoding;
* **compare with a gradient attribution** (:func:`input_x_gradient`): how much each word's
  embedding, times the gradient of the predicted class's logit, contributes; the rank correlation
  with the attention weights (:func:`attribution_agreement`).

The weights passed in are checked: a distribution over the real words of each sentence, zero on
padding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .data import collate
from .masks import lengths_to_mask
from .metrics import spearman
from .models import decoding

__all__ = [
    "logits_with_weights",
    "permuted",
    "uniform",
    "without_top",
    "tvd",
    "jsd",
    "adversarial",
    "input_x_gradient",
    "attribution_agreement",
    "perturbation_report",
]


def _states(model: nn.Module, tokens: Tensor, lengths: Tensor) -> Tensor:
    states, _ = model.encoder(tokens, lengths)  # (B, T, D)
    return states


def logits_with_weights(model: nn.Module, tokens: Tensor, lengths: Tensor, weights: Tensor) -> Tensor:
    """The pooling classifier's logits ``(B, C)`` with ``weights (B, T, F)`` in place of its attention."""
    real = lengths_to_mask(lengths, tokens.shape[1])  # (B, T)
    if weights.dim() != 3 or weights.shape[:2] != tokens.shape:
        raise ValueError(
            f"weights must be (B, T, F) with the tokens' B and T; got weights {tuple(weights.shape)}, "
            f"tokens {tuple(tokens.shape)}"
        )
    if bool((weights.masked_select(~real[:, :, None].expand_as(weights)) != 0).any()):
        raise ValueError("weights must be zero on padding")
    sums = weights.sum(1)  # (B, F)
    ok = (lengths == 0)[:, None] | torch.isclose(sums, torch.ones_like(sums), atol=1e-4)
    if not bool(ok.all()):
        raise ValueError(f"weights must sum to 1 over the real words of each sentence; got sums {sums.tolist()[:3]}")
    return model.classify((weights * _states(model, tokens, lengths)).sum(1))  # (B, C)


def permuted(weights: Tensor, lengths: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """The weights of each sentence shuffled over its real words (the same shuffle for every column)."""
    out = torch.zeros_like(weights)
    for b, n in enumerate(lengths.tolist()):
        order = torch.randperm(n, generator=generator).to(weights.device)
        out[b, :n] = weights[b, :n][order]
    return out


def uniform(weights: Tensor, lengths: Tensor) -> Tensor:
    """``1/n`` on each of a sentence's ``n`` real words: attention replaced by mean pooling."""
    real = lengths_to_mask(lengths, weights.shape[1])[:, :, None].to(weights.dtype)  # (B, T, 1)
    return (real / lengths.clamp_min(1)[:, None, None].to(weights.dtype)).expand_as(weights).clone()


def without_top(weights: Tensor, lengths: Tensor) -> Tensor:
    """The largest weight of each column set to 0 and the rest renormalised (a one-word sentence
    keeps its weights: there is nothing else to read)."""
    top = weights.argmax(1, keepdim=True)  # (B, 1, F)
    out = weights.scatter(1, top, 0.0)
    total = out.sum(1, keepdim=True)  # (B, 1, F)
    return torch.where(total > 0, out / total.clamp_min(1e-12), weights)


def tvd(p: Tensor, q: Tensor) -> Tensor:
    """Total variation distance ``½ Σ |p - q|`` between distributions over the last dim."""
    return 0.5 * (p - q).abs().sum(-1)


def jsd(p: Tensor, q: Tensor, dim: int = -1) -> Tensor:
    """Jensen-Shannon divergence (natural log, 0 .. ln 2) between distributions over ``dim``."""
    m = 0.5 * (p + q)

    def kl(a, b):
        return torch.where(a > 0, a * (a.clamp_min(1e-12).log() - b.clamp_min(1e-12).log()), torch.zeros_like(a)).sum(
            dim
        )

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def adversarial(
    model: nn.Module,
    tokens: Tensor,
    lengths: Tensor,
    weights: Tensor,
    eps: float = 0.01,
    steps: int = 150,
    lr: float = 0.5,
    penalty: float = 100.0,
) -> Tensor:
    """Weights as far as possible (JSD, per column, averaged) from ``weights`` whose output stays
    within ``eps`` (total variation distance) of the output with ``weights``: gradient ascent on
    ``JSD - penalty · max(0, TVD - eps)`` over the logits of the new weights, real words only.
    Returns the best admissible weights found per sentence (the original ones if none was)."""
    real = lengths_to_mask(lengths, tokens.shape[1])[:, :, None]  # (B, T, 1)
    with torch.no_grad():
        target = F.softmax(logits_with_weights(model, tokens, lengths, weights), -1)  # (B, C)
        states = _states(model, tokens, lengths)  # (B, T, D): fixed; only the weights move
    logits = (-weights.clamp_min(1e-6).log()).masked_fill(~real, 0.0).detach().requires_grad_(True)  # start far
    optimiser = torch.optim.Adam([logits], lr=lr)
    best, best_jsd = weights.clone(), torch.zeros(len(tokens), device=weights.device)
    for _ in range(steps):
        w = torch.softmax(logits.masked_fill(~real, float("-inf")), 1).masked_fill(~real, 0.0)  # (B, T, F)
        out = F.softmax(model.classify((w * states).sum(1)), -1)
        distance, moved = jsd(w, weights, dim=1).mean(-1), tvd(out, target)  # (B,), (B,)
        with torch.no_grad():
            better = (moved <= eps) & (distance > best_jsd)
            best[better], best_jsd[better] = w[better].detach(), distance[better].detach()
        loss = -(distance - penalty * (moved - eps).clamp_min(0)).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return best


def input_x_gradient(model: nn.Module, tokens: Tensor, lengths: Tensor) -> Tensor:
    """Each word's attribution ``|Σ_e x_{i,e} ∂z/∂x_{i,e}|`` for the predicted class's logit ``z``,
    ``x_i`` the word's embedding: ``(B, T)``, zero on padding."""
    kept = {}

    def keep(module, inputs, output):
        output.retain_grad()
        kept["x"] = output

    handle = model.encoder.embed.register_forward_hook(keep)
    try:
        model.zero_grad()
        logits = model(tokens, lengths).logits  # (B, C)
        logits.gather(1, logits.argmax(1, keepdim=True)).sum().backward()
    finally:
        handle.remove()
    x = kept["x"]
    real = lengths_to_mask(lengths, tokens.shape[1])
    return (x * x.grad).sum(-1).abs().detach() * real  # (B, T)


def attribution_agreement(attention: Tensor, attribution: Tensor, lengths: Tensor) -> list[float | None]:
    """Spearman's rank correlation, per sentence, between the attention a word gets (averaged over
    the columns of ``(B, T, F)``) and its attribution ``(B, T)``; None where undefined."""
    out = []
    for b, n in enumerate(lengths.tolist()):
        out.append(spearman(attention[b, :n].mean(-1).tolist(), attribution[b, :n].tolist()))
    return out


@torch.no_grad()
def _outputs(model, tokens, lengths, weights) -> Tensor:
    return F.softmax(logits_with_weights(model, tokens, lengths, weights), -1)


def perturbation_report(
    model: nn.Module, data, examples, eps: float = 0.01, seed: int = 0, batch_size: int = 64
) -> dict:
    """Over ``examples`` (sentences of a :class:`~attention.tasks.ClassificationData`): for each
    perturbation, the mean total variation distance of the output and the share of flipped
    decisions; for the adversarial weights, the mean JSD reached within ``eps``; and the mean
    rank correlation of attention with input × gradient."""
    model.eval()
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    sums = {k: {"tvd": 0.0, "flips": 0} for k in ("permuted", "uniform", "without top", "adversarial")}
    adv_jsd, agreement, n = 0.0, [], 0
    for i in range(0, len(examples), batch_size):
        batch = data.collate(list(examples[i : i + batch_size])).to(device)
        tokens, lengths = batch.tokens, batch.lengths
        with torch.no_grad():
            out = model(tokens, lengths)
        weights = next(iter(out.attention.values()))  # (B, T, F)
        original = F.softmax(out.logits, -1)
        variants = {
            "permuted": permuted(weights, lengths, g),
            "uniform": uniform(weights, lengths),
            "without top": without_top(weights, lengths),
        }
        with torch.enable_grad():
            variants["adversarial"] = adversarial(model, tokens, lengths, weights, eps)
            attribution = input_x_gradient(model, tokens, lengths)
        for name, w in variants.items():
            new = _outputs(model, tokens, lengths, w)
            sums[name]["tvd"] += tvd(new, original).sum().item()
            sums[name]["flips"] += int((new.argmax(-1) != original.argmax(-1)).sum())
        adv_jsd += jsd(variants["adversarial"], weights, dim=1).mean(-1).sum().item()
        agreement += [r for r in attribution_agreement(weights, attribution, lengths) if r is not None]
        n += len(lengths)
    report = {name: {"tvd": s["tvd"] / n, "flip_rate": s["flips"] / n} for name, s in sums.items()}
    report["adversarial"]["jsd"] = adv_jsd / n
    report["attention_vs_gradient"] = {"spearman": sum(agreement) / len(agreement), "sentences": len(agreement)}
    report |= {"n": n, "eps": eps}
    return report


# --- a translation model: RNNsearch with its attention replaced at every step -----------------------
__all__ += ["TRANSFORMS", "decoder_report"]

#: how the decoder's weights are replaced at each step: (weights (B, S), lengths (B,), generator) -> (B, S)
TRANSFORMS = {
    "permuted": lambda w, n, g: permuted(w[:, :, None], n, g)[:, :, 0],
    "uniform": lambda w, n, g: uniform(w[:, :, None], n)[:, :, 0],
    "without top": lambda w, n, g: without_top(w[:, :, None], n)[:, :, 0],
}


def decoder_report(model: nn.Module, data, pairs=None, seed: int = 0, max_len: int = 40) -> dict:
    """For a translation model on ``pairs`` (default: the test split): the exact-match accuracy of
    greedy decoding with its own weights and with each of :data:`TRANSFORMS` applied to every
    step's weights (through the model's ``weights_hook``: :func:`attention.models.decoding.greedy`),
    and the share of sentences whose output changes. ``seed`` seeds the permutations, afresh for
    each transform."""
    pairs = list(data.test if pairs is None else pairs)
    device = next(model.parameters()).device
    batch = collate(pairs, data.src_vocab, data.tgt_vocab).to(device)

    def outputs(transform):
        generator = torch.Generator().manual_seed(seed)
        hook = None if transform is None else (lambda w, t: transform(w, batch.src_lengths, generator))
        ids = decoding.greedy(model, batch.src, batch.src_lengths, max_len=max_len, weights_hook=hook).tokens.tolist()
        out = []
        for row in ids:
            row = row[: row.index(model.cfg.eos_id)] if model.cfg.eos_id in row else row
            out.append(data.tgt_vocab.decode(row))
        return out

    own = outputs(None)
    report = {"own": {"exact_match": sum(o == list(p.tgt) for o, p in zip(own, pairs)) / len(pairs), "changed": 0.0}}
    for name, transform in TRANSFORMS.items():
        new = outputs(transform)
        report[name] = {
            "exact_match": sum(o == list(p.tgt) for o, p in zip(new, pairs)) / len(pairs),
            "changed": sum(a != b for a, b in zip(new, own)) / len(pairs),
        }
    report["n"] = len(pairs)
    return report
