"""What several chapters' explorers share: the hand-written demo sentences, the first few short
sentences of a set, one classifier's attention on one sentence, and the untrained multi-dimensional
attention model (chapters 4 and 10)."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from ...data import Vocab
from ...models import AttentionPooling, AttentionPoolingConfig
from ...tasks import ClassificationData, Example

__all__: list[str] = []


#: a few hand-written movie sentences for the untrained demo models of the explorers of chapters 4-6
_DEMO_SENTENCES = (
    "the plot is thin but the acting is wonderful .",
    "a dull , lifeless film that never finds its story .",
    "funny and sad at once , and never boring .",
)


def _demo_sentiment() -> ClassificationData:
    """The demo sentences as a tiny classification set (labels made up): enough to drive a widget."""
    examples = [Example(tuple(s.split()), i % 2) for i, s in enumerate(_DEMO_SENTENCES)]
    vocab = Vocab.build([e.tokens for e in examples])
    return ClassificationData("sentiment-demo", examples, examples, examples, vocab, ["negative", "positive"])


def _short_sentences(examples: Sequence, n: int = 3, shortest: int = 5, longest: int = 12) -> list:
    """The first ``n`` examples with ``shortest`` to ``longest`` words (topped up with the first ones)."""
    chosen = [e for e in examples if shortest <= len(e.tokens) <= longest][:n]
    return chosen + [e for e in examples if e not in chosen][: n - len(chosen)]


@torch.no_grad()
def _sentence_attention(model, data: ClassificationData, example, name: str) -> Tensor:
    """The attention ``name`` of ``model`` on one sentence, on the CPU, real words only."""
    model.eval()
    device = next(model.parameters()).device
    batch = data.collate([example]).to(device)
    T = len(example.tokens)
    weights = model(*data.inputs(batch)).attention[name][0].cpu()
    if name == "rows":  # (R, T)
        return weights[..., :T]
    return weights[:T] if name == "features" else weights[:T, :T]  # (T, F) or (T, T)


def _demo_features():
    """An untrained multi-dimensional attention model on the demo sentences: enough to drive the widget."""
    data = _demo_sentiment()
    torch.manual_seed(0)
    return AttentionPooling(
        AttentionPoolingConfig(
            len(data.vocab), len(data.labels), embed_dim=16, hidden_dim=8, attention_dim=16, mlp_dim=16
        )
    ), data
