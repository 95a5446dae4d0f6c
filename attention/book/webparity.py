"""The playground's models decoded through onnxruntime in Python, as the page decodes them, and
checked against PyTorch: :class:`OnnxTranslator` (greedy, own or steered), :func:`steer` (the torch
model steered through its ``weights_hook``), :func:`parity` and :func:`steer_parity` (what
``python -m attention export-web`` stores in the manifest). The graphs are written by
:mod:`attention.book.webexport`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..experiments import translate
from ..models import decoding

__all__ = ["OnnxTranslator", "steer", "parity", "steer_parity"]


@dataclass
class OnnxTranslator:
    """Greedy decoding with the exported graphs through onnxruntime (Python): what the page does."""

    encoder: object  # onnxruntime.InferenceSession
    step: object
    bos_id: int
    eos_id: int
    kind: str = "rnnsearch"  # or "transformer"
    step_shape: tuple[int, int] = (1, 1)  # (decoder layers, heads): the Transformer's cross-attention

    @classmethod
    def load(cls, folder: str | Path) -> "OnnxTranslator":
        ort = _onnxruntime()
        folder = Path(folder)
        meta = json.loads((folder / "vocab.json").read_text())
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        sessions = [
            ort.InferenceSession(str(folder / f), options, providers=["CPUExecutionProvider"])
            for f in ("encoder.onnx", "step.onnx")
        ]
        kind, shape = meta.get("kind", "rnnsearch"), (meta.get("layers", 1), meta.get("heads", 1))
        return cls(*sessions, meta["bos_id"], meta["eos_id"], kind, shape)

    def greedy(
        self, src_ids: Sequence[int], max_len: int, edits: dict | None = None, hook_at: tuple[int, int] | None = None
    ) -> tuple[list[int], np.ndarray]:
        """Token ids (without ``<eos>``) and the weights of every step: ``(steps, S)`` for RNNsearch,
        ``(steps, layers, H, S)`` for the Transformer; ``edits`` and ``hook_at`` as in :meth:`decode`."""
        decoded = self.decode(src_ids, max_len, edits, hook_at)
        return decoded["ids"], decoded["weights"]

    def decode(
        self, src_ids: Sequence[int], max_len: int, edits: dict | None = None, hook_at: tuple[int, int] | None = None
    ) -> dict:
        """Greedy decoding, steered as the page steers it: ``edits`` maps a step ``t`` (0, 1, ...) to
        the weights ``(S,)`` its attention uses instead of the model's (for the Transformer, those of
        the head ``hook_at = (layer, head)``, or of every head of the layer with ``head=None``);
        every other step decodes with the model's own.
        Returns ``{"ids", "weights", "probs"}``: the ids (without ``<eos>``), every step's weights,
        and every step's next-token distribution ``(steps, V)`` (softmax of the logits, as the page
        shows its top 5)."""
        edits = {int(t): np.asarray(w, dtype=np.float32) for t, w in (edits or {}).items()}
        src = np.array([src_ids], dtype=np.int64)
        if self.kind == "transformer":
            if edits and hook_at is None:
                raise ValueError(
                    "edits on the Transformer need hook_at=(layer, head), the cross-attention they replace"
                )
            return self._decode_transformer(src, max_len, edits, hook_at)
        states, keys, state = self.encoder.run(None, {"src": src})
        y, out, weights, probs = self.bos_id, [], [], []
        own = np.zeros((1, src.shape[1]), dtype=np.float32)
        for t in range(max_len):
            given = edits[t][None] if t in edits else own
            use = np.array([1.0 if t in edits else 0.0], dtype=np.float32)
            logits, state, w = self.step.run(
                None,
                {
                    "y_prev": np.array([y], dtype=np.int64),
                    "s_prev": state,
                    "states": states,
                    "keys": keys,
                    "weights_in": given,
                    "use": use,
                },
            )
            y = int(logits[0].argmax())
            weights.append(w[0])
            probs.append(_softmax(logits[0]))
            if y == self.eos_id:
                break
            out.append(y)
        return {"ids": out, "weights": np.stack(weights), "probs": np.stack(probs)}

    def _decode_transformer(self, src: np.ndarray, max_len: int, edits: dict, hook_at) -> dict:
        (memory,) = self.encoder.run(None, {"src": src})
        N, H = (int(d) for d in self.step_shape)
        S = src.shape[1]
        prefix, weights, probs = [self.bos_id], [], []
        for _ in range(max_len):
            T = len(prefix)
            override = np.zeros((N, H, T, S), dtype=np.float32)
            use = np.zeros((N, H, T), dtype=np.float32)
            for k, w in edits.items():  # an edited position stays edited at every later step
                if k < T:
                    heads = slice(None) if hook_at[1] is None else hook_at[1]  # None: every head
                    override[hook_at[0], heads, k] = w
                    use[hook_at[0], heads, k] = 1.0
            logits, cross = self.step.run(
                None,
                {"prefix": np.array([prefix], dtype=np.int64), "memory": memory, "override": override, "use": use},
            )
            y = int(logits[0].argmax())
            weights.append(cross[0])
            probs.append(_softmax(logits[0]))
            if y == self.eos_id:
                break
            prefix.append(y)
        return {"ids": prefix[1:], "weights": np.stack(weights), "probs": np.stack(probs)}


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()


def steer(model: nn.Module, src_ids: Sequence[int], max_len: int, edits: dict, hook_at=None) -> dict:
    """The torch model's greedy decoding of one source with ``edits`` (step -> weights ``(S,)``) in
    place of its own attention at those steps, through its ``weights_hook``
    (:func:`attention.models.decoding.greedy`; for the Transformer, the head ``hook_at = (layer,
    head)``): what the page's steered decoding must give. Returns ``{"ids", "probs"}``: the ids
    (without ``<eos>``) and the next-token distribution ``(steps, V)`` of every step."""
    model = model.cpu().eval()
    src = torch.tensor([list(src_ids)])
    lengths = torch.tensor([len(src_ids)])
    given = {int(t): torch.as_tensor(np.asarray(w, dtype=np.float32))[None] for t, w in edits.items()}
    probs = []

    def hook(own: Tensor, t: int) -> Tensor:
        return given[t] if t in given else own

    steered = {"weights_hook": hook, "hook_at": hook_at} if given else {}  # no edits: the model's own
    with torch.no_grad():
        out = decoding.greedy(model, src, lengths, max_len, **steered)
        ids = out.tokens[0].tolist()
        ids = ids[: ids.index(model.cfg.eos_id)] if model.cfg.eos_id in ids else ids
        # the distributions: teacher forcing would not take the hook, so step again along the output
        memory, state = model.encode(src, lengths)
        y = torch.tensor([model.cfg.bos_id])
        for t in range(out.tokens.shape[1]):
            options = {"weights_hook": lambda w, t=t: hook(w, t)} if given else {}
            options |= {"hook_at": hook_at} if given and hook_at is not None else {}
            logits, state, _ = model.step(y, state, memory, **options)
            probs.append(torch.softmax(logits[0], -1).numpy())
            y = out.tokens[:, t]
    return {"ids": ids, "probs": np.stack(probs)}


def _onnxruntime():
    try:
        import onnxruntime  # a build dependency of the website (requirements.txt), not of the package
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError("the playground's parity check needs onnxruntime: pip install onnxruntime") from e
    return onnxruntime


def parity(model: nn.Module, data, translator: OnnxTranslator, pairs: Sequence, max_len: int) -> dict:
    """Decode ``pairs`` with onnxruntime and with the torch model (greedy); compare.

    Returns ``{"sentences", "token_agreement", "same_output", "max_weight_diff"}``: the share of
    output positions where both emit the same token (up to the longer output; two empty outputs
    count as one position that agrees), the share of
    identical outputs, and the largest difference of the attention weights over the steps both
    decoded alike.
    """
    torch_out = translate(model, list(pairs), data, max_len=max_len)
    agree = total = same = 0
    worst = 0.0
    for pair, ref in zip(pairs, torch_out):
        ids, weights = translator.greedy(data.src_vocab.encode(pair.src), max_len)
        if weights.ndim == 4:  # (steps, layers, H, S): translate() keeps the last layer's mean over heads
            weights = weights[:, -1].mean(1)
        mine = data.tgt_vocab.decode(ids)
        theirs = ref.hypothesis
        n = max(len(mine), len(theirs))
        agree += sum(a == b for a, b in zip(mine, theirs)) if n else 1  # both empty (<eos> first): they agree
        total += max(n, 1)
        same += mine == theirs
        k = 0
        while k < min(len(mine), len(theirs)) and mine[k] == theirs[k]:
            k += 1
        if ref.attention is not None and k:
            worst = max(worst, float(np.abs(weights[:k] - ref.attention[:k].numpy()).max()))
    return {
        "sentences": len(pairs),
        "token_agreement": agree / total,
        "same_output": same / len(pairs),
        "max_weight_diff": worst,
    }


def steer_parity(
    model: nn.Module, data, translator: OnnxTranslator, pairs: Sequence, max_len: int, hook_at=None
) -> dict:
    """Steered decoding through onnxruntime against the torch model's hook (:func:`steer`): on each
    of ``pairs``, the first step's attention put all on the first source token, all on the last,
    and spread uniformly. Returns ``{"edits", "same_output", "changed"}``: how many edited decodings,
    the share whose outputs are identical, and the share where the edit changed the model's output."""
    same = changed = n = 0
    for pair in pairs:
        ids = data.src_vocab.encode(pair.src)
        S = len(ids)
        own = translator.decode(ids, max_len)["ids"]
        for row in (np.eye(S)[0], np.eye(S)[-1], np.full(S, 1 / S)):
            edits = {0: row.astype(np.float32)}
            mine = translator.decode(ids, max_len, edits, hook_at)["ids"]
            same += mine == steer(model, ids, max_len, edits, hook_at)["ids"]
            changed += mine != own
            n += 1
    return {"edits": n, "same_output": same / max(n, 1), "changed": changed / max(n, 1)}
