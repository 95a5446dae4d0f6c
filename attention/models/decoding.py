"""Greedy and beam search, written once for every model that can ``encode`` and ``step``.

Shape legend: B batch, S source length, V target vocabulary, K beam size, T' output length.

A model qualifies by implementing :class:`attention.models.base.SequenceModel`'s two methods
(``encode(src, src_lengths) -> Encoded``, ``step(y_prev, state, memory) -> Step``) and by
carrying ``cfg.bos_id``, ``cfg.eos_id`` and ``cfg.pad_id``. The RNN encoder–decoders of
chapters 2, 3 and 9 do; so does the Transformer. Beam search runs the whole batch at once:
``B·K`` hypotheses step together, and a sentence whose search is over simply stops changing.

Greedy decoding can also run with other attention weights than the model's: ``weights_hook(weights,
t)`` gets step ``t``'s weights ``(B, S)`` and returns the ones that make the context, for a model whose
``step`` takes ``weights_hook`` (``Seq2Seq``, global ``LuongSeq2Seq``; chapter 10 permutes them; the
``Transformer``, one cross-attention head chosen by ``hook_at=(layer, head)``).

Both decode in eval mode (:func:`in_eval_mode`): dropout off, whatever mode the model was left in,
so that decoding the same sentence twice gives the same output; the model's own mode, module by
module, is back when they return (or raise).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextlib import contextmanager
from numbers import Integral

import torch
from torch import Tensor, nn

from .interface import Translation, select_rows

__all__ = ["greedy", "beam_search", "eval_mode", "in_eval_mode", "check_max_len", "check_hookable"]


@contextmanager
def eval_mode(model):
    """``with eval_mode(model):`` runs in ``model.eval()``, then gives every submodule its own mode back
    (a model that is not an ``nn.Module``, such as a hand-written decoder, is left alone)."""
    if not isinstance(model, nn.Module):
        yield model
        return
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        model.train(modes[0][1])
        for m, training in modes:  # a model may hold submodules in another mode than its own
            m.training = training


def in_eval_mode(decode):
    """Decorator: ``decode(model, ...)`` runs under :func:`eval_mode` (``model`` is its first argument,
    so a method, whose first argument is the model itself, works too)."""

    @functools.wraps(decode)
    def wrapper(model, *args, **kwargs):
        with eval_mode(model):
            return decode(model, *args, **kwargs)

    return wrapper


def check_max_len(max_len) -> None:
    """Refuse a ``max_len`` that would decode nothing (< 1) or is not a whole number."""
    if isinstance(max_len, bool) or not isinstance(max_len, Integral) or max_len < 1:
        raise ValueError(f"max_len must be a positive int (the most tokens to emit); got {max_len!r}")


def check_hookable(model, hook_at=None) -> None:
    """Refuse a model whose ``step`` cannot take a ``weights_hook`` (a captioner, the nested
    decoder ...), or ``hook_at`` where it takes none (RNNsearch: one attention, nothing to choose)."""
    try:
        params = inspect.signature(model.step).parameters
    except (AttributeError, TypeError, ValueError):
        params = {}
    if "weights_hook" not in params:
        raise ValueError(
            f"weights_hook needs a model whose step(y_prev, state, memory, weights_hook) replaces its "
            f"attention weights (Seq2Seq, LuongSeq2Seq with global attention, Transformer); got {type(model).__name__}"
        )
    if hook_at is not None and "hook_at" not in params:
        raise ValueError(
            f"hook_at chooses a Transformer's cross-attention head; {type(model).__name__} has one attention"
        )


@torch.no_grad()
@in_eval_mode
def greedy(
    model,
    src: Tensor,
    src_lengths: Tensor,
    max_len: int = 50,
    weights_hook: Callable[[Tensor, int], Tensor] | None = None,
    hook_at: tuple[int, int] | None = None,
) -> Translation:
    """Emit the most probable token at each step until EOS (or ``max_len`` tokens).

    ``weights_hook(weights (B, S), t) -> (B, S)``, if given, replaces step ``t``'s (0, 1, ...)
    attention weights before they make the context: a distribution over each sentence's real
    source positions, checked (``attention.models.seq2seq.check_weights``); the translation's
    attention is then the weights used. None (the default) decodes with the model's own. For the
    Transformer, ``hook_at=(layer, head)`` names the cross-attention head the hook replaces."""
    check_max_len(max_len)
    if weights_hook is not None:
        check_hookable(model, hook_at)
    memory, state = model.encode(src, src_lengths)
    B = src.shape[0]
    y = torch.full((B,), model.cfg.bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    tokens, maps = [], []
    for t in range(max_len):
        hook = {} if weights_hook is None else {"weights_hook": lambda w, t=t: weights_hook(w, t)}
        if weights_hook is not None and hook_at is not None:
            hook["hook_at"] = hook_at
        logits, state, weights = model.step(y, state, memory, **hook)
        y = logits.argmax(-1).masked_fill(done, model.cfg.pad_id)  # (B,)
        tokens.append(y)
        maps.append(weights)
        done = done | (y == model.cfg.eos_id)
        if done.all():
            break
    attention = None if maps[0] is None else torch.stack(maps, 1)  # (B, T', S)
    return Translation(torch.stack(tokens, 1), attention)


@torch.no_grad()
@in_eval_mode
def beam_search(
    model, src: Tensor, src_lengths: Tensor, beam_size: int = 5, max_len: int = 50, length_penalty: float = 0.0
) -> Translation:
    """Keep the ``beam_size`` best partial translations of every sentence, all sentences at once.

    At each step the ``K`` best continuations of a sentence's alive hypotheses are taken;
    those ending in EOS (or reaching ``max_len``) are finished, the others stay alive. A
    sentence's search ends when ``K`` hypotheses have finished, none is alive, or (without a
    length penalty, when scores only fall) the best finished one beats every alive one.
    Finished hypotheses are ranked by total log-probability divided by
    ``len**length_penalty`` (0 = none). ``beam_size=1`` is greedy decoding.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    check_max_len(max_len)
    B, S = src.shape
    K, device = beam_size, src.device
    memory, state = model.encode(src, src_lengths)
    rows = torch.arange(B, device=device).repeat_interleave(K)  # (B·K,) hypothesis -> sentence
    memory, state = memory.select(rows), select_rows(state, rows)
    scores = torch.full((B, K), float("-inf"), device=device)  # log-probabilities; -inf = empty slot
    scores[:, 0] = 0.0  # one hypothesis to start from: <bos>
    y = torch.full((B * K,), model.cfg.bos_id, dtype=torch.long, device=device)
    tokens = torch.zeros(B, K, 0, dtype=torch.long, device=device)  # (B, K, t) alive hypotheses
    maps: Tensor | None = None  # (B, K, t, S) their attention rows
    finished: list[list[tuple[float, Tensor, Tensor | None]]] = [[] for _ in range(B)]
    done = [False] * B

    def rank(score: float, length: int) -> float:
        return score / (length**length_penalty) if length_penalty else score

    for t in range(max_len):
        logits, state, weights = model.step(y, state, memory)
        V = logits.shape[-1]
        logp = torch.log_softmax(logits, -1).view(B, K, V) + scores[:, :, None]  # (B, K, V)
        top, flat = logp.view(B, K * V).topk(min(K, K * V))  # (B, K) best continuations
        origin, token = flat // V, flat % V
        weights = None if weights is None else weights.view(B, K, -1)  # (B, K, S)
        slot = torch.zeros(B, K, dtype=torch.long, device=device)  # new slot j <- old slot
        new_token = torch.full((B, K), model.cfg.pad_id, dtype=torch.long, device=device)
        new_score = torch.full((B, K), float("-inf"), device=device)
        for b, (top_b, origin_b, token_b) in enumerate(zip(top.tolist(), origin.tolist(), token.tolist())):
            if done[b]:
                continue
            keep = []
            for score, o, tok in zip(top_b, origin_b, token_b):
                if score == float("-inf"):
                    continue  # fewer than K live candidates
                if tok == model.cfg.eos_id or t == max_len - 1:
                    hyp = torch.cat([tokens[b, o], tokens.new_tensor([tok])])
                    att = (
                        None
                        if weights is None
                        else torch.cat(
                            [
                                maps[b, o] if maps is not None else weights.new_zeros(0, weights.shape[-1]),
                                weights[b, o][None],
                            ]
                        )
                    )
                    finished[b].append((rank(score, t + 1), hyp, att))
                else:
                    keep.append((score, o, tok))
            best_finished = max((f[0] for f in finished[b]), default=float("-inf"))
            if not keep or len(finished[b]) >= K or (not length_penalty and best_finished >= max(k[0] for k in keep)):
                done[b] = True
                continue
            for j, (score, o, tok) in enumerate(keep):
                slot[b, j], new_token[b, j], new_score[b, j] = o, tok, score
        if all(done):
            break
        index = (torch.arange(B, device=device)[:, None] * K + slot).view(-1)  # (B·K,)
        state = select_rows(state, index)
        tokens = torch.cat(
            [tokens.gather(1, slot[:, :, None].expand(-1, -1, tokens.shape[2])), new_token[:, :, None]], 2
        )
        if weights is not None:
            picked = weights.gather(1, slot[:, :, None].expand(-1, -1, weights.shape[-1]))  # (B, K, S)
            maps = (
                picked[:, :, None]
                if maps is None
                else torch.cat(
                    [maps.gather(1, slot[:, :, None, None].expand(-1, -1, *maps.shape[2:])), picked[:, :, None]], 2
                )
            )
        scores, y = new_score, new_token.view(-1)

    best = [max(f, key=lambda h: h[0]) for f in finished]
    T = max(len(hyp) for _, hyp, _ in best)
    out = src.new_full((B, T), model.cfg.pad_id)
    attention = None if best[0][2] is None else best[0][2].new_zeros(B, T, S)
    for b, (_, hyp, att) in enumerate(best):
        out[b, : len(hyp)] = hyp
        if attention is not None:
            attention[b, : len(hyp)] = att
    return Translation(out, attention, torch.tensor([s for s, _, _ in best], device=device))
