"""Lin et al. (2017), "A Structured Self-attentive Sentence Embedding": chapter 6, self-attention
before the Transformer.

Shape legend: B batch, T sentence length (words), E embedding dim, U hidden size per direction,
Da attention hidden dim (the paper's d_a), R attention rows (the paper's r), C classes.

The sentence attends to itself with no outside query (§2.1 of the paper):

    H = BiLSTM(w_1 … w_n)                       # (B, T, 2U), h_t = [→h_t; ←h_t]
    A = softmax(W_s2 tanh(W_s1 Hᵀ))            # (B, R, T): R distributions over the words
    M = A H                                     # (B, R, 2U): R summaries of the sentence
    logits = MLP(flatten(M))                    # (B, C)

Each row of ``A`` may read a different part of the sentence, but nothing forces it to, and
rows often collapse onto the same words. The penalty (§2.2)

    P = ‖A Aᵀ − I‖²_F

is zero only when the rows are one-hot on different words: small overlaps ``(A Aᵀ)_ij`` between
rows, and peaked rows (``(A Aᵀ)_ii`` near 1). Training minimises ``cross-entropy + coef · P``
(:func:`penalized_loss`), with ``coef`` the config's ``penalty``; ``penalty=0`` is the model
without it. Padded words get exactly zero weight in every row (``masked_softmax``), so they
change neither ``M`` nor ``P``.

The BiLSTM is :class:`~attention.models.pooling.BiLSTMEncoder`, shared with the pooling
baselines (last, mean, max) that this attention replaces.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import masked_softmax
from ..masks import lengths_to_mask
from .checks import check_special_id
from .interface import ClassifierOutput
from .pooling import BiLSTMEncoder, check_dropout, check_sizes, mlp
from .registry import register_model

__all__ = ["SelfAttentiveConfig", "SelfAttentiveClassifier", "penalty", "penalized_loss"]


@dataclass
class SelfAttentiveConfig:
    vocab: int  # vocabulary size (id pad_id = <pad>)
    classes: int  # C
    embed_dim: int = 64  # E, word embeddings
    hidden_dim: int = 64  # U, LSTM state per direction (H is 2U wide)
    attention_dim: int = 32  # Da, rows of W_s1
    rows: int = 4  # R, attention rows (hops) over the sentence
    mlp_dim: int = 64  # hidden layer of the classifier on flatten(M)
    penalty: float = 1.0  # coefficient of P = ‖AAᵀ − I‖²_F in the loss (penalized_loss); 0 = no penalty
    dropout: float = 0.0  # on the embeddings and before each layer of the classifier
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "SelfAttentiveConfig",
            vocab=self.vocab,
            classes=self.classes,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            attention_dim=self.attention_dim,
            rows=self.rows,
            mlp_dim=self.mlp_dim,
        )
        check_dropout("SelfAttentiveConfig", self.dropout)
        if not (isinstance(self.penalty, (int, float)) and 0.0 <= self.penalty < float("inf")):
            raise ValueError(f"SelfAttentiveConfig.penalty must be a finite number >= 0; got {self.penalty!r}")
        check_special_id("SelfAttentiveConfig", "pad_id", self.pad_id, vocab=self.vocab)


@register_model("self-attentive")
class SelfAttentiveClassifier(nn.Module):
    """BiLSTM, R rows of self-attention over its states, an MLP on the R summaries.

    ``forward(tokens (B, T), lengths (B,))`` returns
    ``ClassifierOutput(logits (B, C), {"rows": A (B, R, T)})``: each row of ``A`` sums to 1 over
    the real words and is exactly 0 on padding (an empty sentence: all zero).
    """

    config_class = SelfAttentiveConfig

    def __init__(self, cfg: SelfAttentiveConfig):
        super().__init__()
        self.cfg = cfg
        U2 = 2 * cfg.hidden_dim
        self.encoder = BiLSTMEncoder(cfg.vocab, cfg.embed_dim, cfg.hidden_dim, cfg.dropout, cfg.pad_id)
        self.W_s1 = nn.Linear(U2, cfg.attention_dim, bias=False)  # (Da, 2U), as in the paper
        self.W_s2 = nn.Linear(cfg.attention_dim, cfg.rows, bias=False)  # (R, Da)
        self.classify = mlp(cfg.rows * U2, cfg.mlp_dim, cfg.classes, cfg.dropout)

    def attention(self, states: Tensor, lengths: Tensor) -> Tensor:
        """``A = softmax(W_s2 tanh(W_s1 Hᵀ))`` over the real words: states (B, T, 2U) -> A (B, R, T)."""
        scores = self.W_s2(torch.tanh(self.W_s1(states)))  # (B, T, Da) -> (B, T, R)
        scores = scores.transpose(1, 2)  # (B, R, T)
        keep = lengths_to_mask(lengths, states.shape[1])[:, None, :]  # (B, 1, T), True = a real word
        return masked_softmax(scores, keep)  # (B, R, T), padding exactly 0

    def forward(self, tokens: Tensor, lengths: Tensor) -> ClassifierOutput:
        states, _ = self.encoder(tokens, lengths)  # H (B, T, 2U)
        A = self.attention(states, lengths)  # (B, R, T)
        M = A @ states  # (B, R, 2U)
        logits = self.classify(M.flatten(1))  # (B, R·2U) -> (B, C)
        return ClassifierOutput(logits, {"rows": A})


def penalty(A: Tensor) -> Tensor:
    """Lin et al. (2017), §2.2: ``P = ‖A Aᵀ − I‖²_F``, averaged over the batch.

    Args:
        A: ``(B, R, T)`` attention rows (or ``(R, T)`` for one sentence).

    Returns:
        A scalar: 0 exactly when, in every sentence, the rows are one-hot on R different words.
    """
    if A.dim() == 2:
        A = A[None]  # (1, R, T)
    if A.dim() != 3:
        raise ValueError(f"penalty expects A of shape (B, R, T) or (R, T); got {tuple(A.shape)}")
    R = A.shape[1]
    gram = A @ A.transpose(1, 2)  # (B, R, R): overlaps of every pair of rows
    identity = torch.eye(R, device=A.device, dtype=A.dtype)  # (R, R)
    return (gram - identity).pow(2).sum((1, 2)).mean()


def penalized_loss(model: SelfAttentiveClassifier, batch) -> tuple[Tensor, int]:
    """``cross-entropy + coef · P`` on a classification batch, with ``coef = model.cfg.penalty``.

    A loss for ``attention.experiments.fit(model, task, loss=penalized_loss)`` (``(mean, n)``,
    like ``ClassificationData.loss``): ``batch`` has ``tokens (B, T)``, ``lengths (B,)`` and
    ``labels (B,)``. With ``penalty=0`` it is the task's plain cross-entropy.
    """
    if not isinstance(model, SelfAttentiveClassifier):
        raise TypeError(
            f"penalized_loss needs a SelfAttentiveClassifier, got {type(model).__name__} "
            f"(other classifiers train with the task's own loss)"
        )
    out = model(batch.tokens, batch.lengths)
    loss = F.cross_entropy(out.logits, batch.labels)
    if model.cfg.penalty:
        loss = loss + model.cfg.penalty * penalty(out.attention["rows"])
    return loss, len(batch.labels)
