"""A BiLSTM sentence encoder pooled by attention: one weight per word, or one per word and feature.

Shape legend: B batch, T sentence length (words), E embedding dim, U hidden size per direction,
Da attention hidden dim, C classes.

Chapter 4 (``book/04-scores.md``, "Multi-dimensional attention") compares three ways of turning
the BiLSTM states ``h_1 … h_n`` (:class:`~attention.models.pooling.BiLSTMEncoder`) into one
sentence vector ``s``:

* mean pooling -- ``s = (1/n) Σ_i h_i`` (:class:`~attention.models.pooling.BiLSTMPooling`,
  ``pool="mean"``);
* scalar attention -- ``s = Σ_i p_i h_i`` with one weight ``p_i`` per word (``pool="scalar"``);
* multi-dimensional attention (Shen et al. 2018) -- ``s_k = Σ_i P_{k,i} h_{i,k}``, a separate
  distribution over the words for every feature ``k`` (``pool="features"``).

Both attentions are :class:`~attention.layers.MultiDimensionalAttention`, the scalar one with
``features=False``; an MLP classifies ``s``.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from ..layers import MultiDimensionalAttention
from ..masks import lengths_to_mask
from .checks import check_special_id
from .interface import ClassifierOutput
from .pooling import BiLSTMEncoder, check_dropout, check_sizes, mlp
from .registry import register_model

__all__ = ["AttentionPoolingConfig", "AttentionPooling", "ATTENTION_POOLS"]

#: how :class:`AttentionPooling` weighs the words: one weight per word and feature, or one per word
ATTENTION_POOLS = ("features", "scalar")


@dataclass
class AttentionPoolingConfig:
    vocab: int  # vocabulary size (id pad_id = <pad>)
    classes: int  # C
    embed_dim: int = 64  # E, word embeddings
    hidden_dim: int = 64  # U, LSTM state per direction (the states are 2U wide)
    attention_dim: int = 64  # Da, the size of elu(W₁ h_i + b₁)
    mlp_dim: int = 64  # hidden layer of the classifier on s
    pool: str = "features"  # "features" (multi-dimensional) or "scalar"
    dropout: float = 0.0  # on the embeddings and before each layer of the classifier
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "AttentionPoolingConfig",
            vocab=self.vocab,
            classes=self.classes,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            attention_dim=self.attention_dim,
            mlp_dim=self.mlp_dim,
        )
        check_dropout("AttentionPoolingConfig", self.dropout)
        if self.pool not in ATTENTION_POOLS:
            raise ValueError(f"pool must be one of {ATTENTION_POOLS}; got {self.pool!r}")
        check_special_id("AttentionPoolingConfig", "pad_id", self.pad_id, vocab=self.vocab)


@register_model("attention-pooling")
class AttentionPooling(nn.Module):
    """BiLSTM states pooled by scalar or multi-dimensional attention, then an MLP.

    ``forward(tokens (B, T), lengths (B,))`` returns
    ``ClassifierOutput(logits (B, C), {"features": P (B, T, F)})``: ``P[:, :, k]`` is feature
    ``k``'s distribution over the words (F = 2U), or the one shared distribution (F = 1); zero on
    padding.
    """

    config_class = AttentionPoolingConfig

    def __init__(self, cfg: AttentionPoolingConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = BiLSTMEncoder(cfg.vocab, cfg.embed_dim, cfg.hidden_dim, cfg.dropout, cfg.pad_id)
        self.attention = MultiDimensionalAttention(
            2 * cfg.hidden_dim, cfg.attention_dim, features=cfg.pool == "features"
        )
        self.classify = mlp(2 * cfg.hidden_dim, cfg.mlp_dim, cfg.classes, cfg.dropout)

    def forward(self, tokens: Tensor, lengths: Tensor) -> ClassifierOutput:
        states, _ = self.encoder(tokens, lengths)  # (B, T, 2U)
        padding = ~lengths_to_mask(lengths, tokens.shape[1])  # (B, T), True = padding
        s, P = self.attention(states, key_padding_mask=padding)  # (B, 2U), (B, T, F)
        return ClassifierOutput(self.classify(s), {"features": P})
