"""Question answering over a story (chapter 7): bAbI-format questions for memory networks.

Shape legend: B batch, M sentences of the story (memory slots), J words per sentence or question.

A batch holds ``story (B, M, J)`` (the sentences before each question, oldest first, padded with
empty sentences after them and with 0 after each sentence's words), ``question (B, J)`` and the
answer's index in the answer vocabulary. Stories longer than ``memory_size`` keep their most
recent ``memory_size`` sentences, as Sukhbaatar et al. do; a supporting fact cut off that way is
counted as outside the memory.

    data = babi_data(2)        # task 2 (two supporting facts), 1,000 training questions
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import Vocab
from ..data.babi import QA, babi_tasks
from .base import Task, epoch_seed, fingerprint_tokens

__all__ = ["QABatch", "QAData", "babi_data", "gate_supervision_loss", "binary_gate_supervision_loss"]


@dataclass
class QABatch:
    story: Tensor  # (B, M, J) word ids
    question: Tensor  # (B, J)
    answers: Tensor  # (B,) answer indices
    supports: Tensor | None = None  # (B, S) memory slots of the supporting facts in the file's order, -1 = none

    def to(self, device) -> "QABatch":
        return QABatch(
            *(None if getattr(self, f.name) is None else getattr(self, f.name).to(device) for f in fields(self))
        )


@dataclass
class QAData(Task):
    """bAbI-format questions as a :class:`Task`: cross-entropy over the answers, accuracy."""

    name: str
    train: list  # QA
    valid: list
    test: list
    vocab: Vocab  # words of stories and questions
    answers: list[str]  # answer index -> answer string
    memory_size: int = 50
    seed: int = 0
    metric = "accuracy"

    def memory(self, qa: QA) -> tuple[tuple[tuple[str, ...], ...], tuple[int, ...]]:
        """The sentences kept in memory (the last ``memory_size``) and the supports' slots in them."""
        cut = max(0, len(qa.story) - self.memory_size)
        return qa.story[cut:], tuple(s - cut for s in qa.supports if s >= cut)

    def collate(self, examples: Sequence[QA]) -> QABatch:
        stories = [self.memory(e)[0] for e in examples]
        if any(len(s) == 0 for s in stories):
            raise ValueError("a question has no story before it")
        M = max(len(s) for s in stories)
        J = max(max(len(x) for s in stories for x in s), max(len(e.question) for e in examples))
        story = torch.zeros(len(examples), M, J, dtype=torch.long)
        question = torch.zeros(len(examples), J, dtype=torch.long)
        for b, (e, s) in enumerate(zip(examples, stories)):
            for i, sentence in enumerate(s):
                story[b, i, : len(sentence)] = torch.tensor(self.vocab.encode(sentence))
            question[b, : len(e.question)] = torch.tensor(self.vocab.encode(e.question))
        unknown = [e.answer for e in examples if e.answer not in self.answers]
        if unknown:
            raise ValueError(f"answers {unknown[:5]} are not in the answer vocabulary {self.answers}")
        answers = torch.tensor([self.answers.index(e.answer) for e in examples])
        kept = [self.memory(e)[1] for e in examples]
        supports = torch.full((len(examples), max(1, max(len(k) for k in kept))), -1, dtype=torch.long)
        for b, k in enumerate(kept):
            supports[b, : len(k)] = torch.tensor(k, dtype=torch.long)
        return QABatch(story, question, answers, supports)

    def _batches(self, examples: Sequence[QA], batch_size: int, order: list[int]):
        for i in range(0, len(order), batch_size):
            yield self.collate([examples[j] for j in order[i : i + batch_size]])

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        order = list(range(len(self.train)))
        random.Random(epoch_seed(seed, epoch)).shuffle(order)
        return self._batches(self.train, batch_size, order)

    def valid_batches(self):
        return self._batches(self.valid, 128, list(range(len(self.valid))))

    def loss(self, model: nn.Module, batch: QABatch) -> tuple[Tensor, int]:
        out = model(batch.story, batch.question)
        return F.cross_entropy(out.logits, batch.answers), len(batch.answers)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, examples: Sequence[QA] | None = None, batch_size: int = 128) -> dict:
        """Accuracy, and per hop how often the most attended sentence is a supporting fact."""
        examples = self.test if examples is None else examples
        model.eval()
        device = next(model.parameters()).device
        correct, hits, hops = 0, None, []
        for i in range(0, len(examples), batch_size):
            chunk = examples[i : i + batch_size]
            batch = self.collate(chunk)
            out = model(**_inputs(batch.to(device)))
            correct += int((out.logits.argmax(-1).cpu() == batch.answers).sum())
            weights = out.attention.get("hops")  # (B, K, M)
            if weights is not None:
                top = weights.argmax(-1).cpu()  # (B, K)
                if hits is None:
                    hits = [0] * top.shape[1]
                for e, row in zip(chunk, top.tolist()):
                    supports = set(self.memory(e)[1])
                    for k, slot in enumerate(row):
                        hits[k] += slot in supports
                hops += [w.cpu() for w in weights]
        n = max(len(examples), 1)
        return {
            "accuracy": correct / n,
            "n": len(examples),
            "support_hits": None if hits is None else [h / n for h in hits],
            "hops": hops,
        }

    def validation_metric(self, model: nn.Module) -> float:
        return self.evaluate(model, self.valid)["accuracy"]

    def fingerprint(self) -> dict:
        return {
            "task": "qa",
            "name": self.name,
            "seed": self.seed,
            "memory_size": self.memory_size,
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens(
                [(e.story, e.question, e.answer) for e in self.train],
                [(e.story, e.question, e.answer) for e in self.valid],
            ),
            "vocab": fingerprint_tokens(self.vocab.itos, self.answers),
        }


def gate_supervision_loss(weight: float = 1.0):
    """The loss of Kumar et al. (2016, §3) for bAbI with supporting facts: cross-entropy of the
    answer plus ``weight`` × the cross-entropy of each pass's attention against the supporting fact
    of that rank (pass 1 -> the first support listed, pass 2 -> the second ...):

        L = CE(logits, answer) + weight · mean_b Σ_p −log g_p[b, s_p(b)]     for p < min(P, S)

    For a :class:`QAData` and a model whose output has ``attention["hops"] (B, P, M)``; pass it as
    ``fit(..., loss=gate_supervision_loss())``. A pass with no support of its rank is not supervised.
    """
    if not weight >= 0:
        raise ValueError(f"weight must be >= 0; got {weight!r}")

    def loss(model: nn.Module, batch: QABatch) -> tuple[Tensor, int]:
        out = model(batch.story, batch.question)
        total = F.cross_entropy(out.logits, batch.answers)
        gates = out.attention.get("hops")  # (B, P, M)
        if gates is None or batch.supports is None:
            raise ValueError(
                "gate supervision needs a model that returns attention['hops'] and batches "
                "with supports (QAData.collate)"
            )
        for p in range(min(gates.shape[1], batch.supports.shape[1])):
            target = batch.supports[:, p]  # (B,)
            has = target >= 0
            if bool(has.any()):
                g = gates[has, p].gather(1, target[has, None])[:, 0]  # (B',)
                total = total + weight * -(g.clamp_min(1e-9).log()).sum() / len(target)
        return total, len(batch.answers)

    return loss


def binary_gate_supervision_loss(weight: float = 1.0):
    """Kumar et al.'s gate supervision (2016, §3) for gates that are independent sigmoids
    (:class:`attention.models.dmn_paper.PaperDMN`): cross-entropy of the answer plus ``weight`` × the
    binary cross-entropy of every gate of pass p against "this fact is the supporting fact of rank
    p" (1 on it, 0 on the story's other facts), summed over the facts and passes:

        L = CE(logits, answer) + weight · mean_b Σ_p Σ_t BCE(g_p[b, t], [t = s_p(b)])   for p < min(P, S)

    Empty slots (sentences of all padding) and a pass with no support of its rank are not supervised.
    For a :class:`QAData` (padding id 0) and a model whose output has ``attention["hops"] (B, P, M)``;
    pass it as ``fit(..., loss=binary_gate_supervision_loss())``.
    """
    if not weight >= 0:
        raise ValueError(f"weight must be >= 0; got {weight!r}")

    def loss(model: nn.Module, batch: QABatch) -> tuple[Tensor, int]:
        out = model(batch.story, batch.question)
        total = F.cross_entropy(out.logits, batch.answers)
        gates = out.attention.get("hops")  # (B, P, M)
        if gates is None or batch.supports is None:
            raise ValueError(
                "gate supervision needs a model that returns attention['hops'] and batches "
                "with supports (QAData.collate)"
            )
        keep = (batch.story != 0).any(-1)  # (B, M)
        slots = torch.arange(gates.shape[2], device=gates.device)  # (M,)
        for p in range(min(gates.shape[1], batch.supports.shape[1])):
            target = batch.supports[:, p]  # (B,)
            mask = keep & (target >= 0)[:, None]  # (B, M)  the supervised gates of pass p
            if bool(mask.any()):
                is_support = (slots[None] == target[:, None]).to(gates.dtype)  # (B, M)
                bce = F.binary_cross_entropy(gates[:, p].clamp(1e-6, 1 - 1e-6), is_support, reduction="none")
                total = total + weight * (bce * mask).sum() / len(target)
        return total, len(batch.answers)

    return loss


def _inputs(batch: QABatch) -> dict:
    return {"story": batch.story, "question": batch.question}


def babi_data(
    task: int, n_train: int = 1000, n_test: int = 1000, valid: float = 0.1, seed: int = 0, memory_size: int = 50
) -> QAData:
    """Generated bAbI-format questions of ``task`` (``attention.data.babi``): ``n_train`` questions,
    of which the last ``valid`` share is held out for validation, and ``n_test`` test questions.

    The generator's vocabulary is small and closed (a few people, places and objects), so the word
    vocabulary lists every word of every split, as the bAbI papers do; the answers likewise."""
    split = babi_tasks((task,), n_train=n_train, n_test=n_test, seed=seed)[task]
    n_valid = int(round(len(split["train"]) * valid))
    train, dev = split["train"][: len(split["train"]) - n_valid], split["train"][len(split["train"]) - n_valid :]
    words = [w for e in train for s in e.story for w in s] + [w for e in train for w in e.question]
    vocab = Vocab.build([words + [w for e in split["test"] + dev for s in e.story for w in s]])
    answers = sorted({e.answer for e in split["train"] + split["test"]})
    return QAData(f"babi-{task}", train, dev, split["test"], vocab, answers, memory_size, seed)
