"""A sentence read by a BiLSTM, pooled without attention: the baselines of chapter 6's self-attention.

Shape legend: B batch, T sentence length (words), E embedding dim, U hidden size per direction,
C classes.

Before a sentence could attend to itself, a classifier turned the BiLSTM states
``h_t = [→h_t; ←h_t]`` into one vector with a fixed rule:

* ``"last"`` -- the two final states, ``[→h_n; ←h_1]`` (each direction's summary of the sentence);
* ``"mean"`` -- the average of the real words' states, ``(1/n) Σ_t h_t``;
* ``"max"``  -- the largest value of each feature over the real words, ``max_t h_t``.

Lin et al. (2017) replace the rule by learned weights over the words
(:mod:`attention.models.selfattentive`); these three are what that replaces, so chapter 6 compares
them on the same encoder, :class:`BiLSTMEncoder`, which both files share.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..masks import lengths_to_mask
from .checks import check_ids, check_special_id
from .interface import ClassifierOutput
from .registry import register_model

__all__ = [
    "BiLSTMEncoder",
    "PoolingClassifierConfig",
    "BiLSTMPooling",
    "POOLS",
    "mlp",
    "check_sentences",
    "check_sizes",
    "check_dropout",
]

#: the pooling rules of :class:`BiLSTMPooling`
POOLS = ("last", "mean", "max")


def check_sizes(name: str, **sizes) -> None:
    """Refuse a config whose sizes are not positive integers, naming them."""
    bad = {k: v for k, v in sizes.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1}
    if bad:
        raise ValueError(f"{name} sizes must be positive integers; got {bad}")


def check_dropout(name: str, dropout: float) -> None:
    """Refuse a dropout outside [0, 1)."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{name}.dropout must be in [0, 1); got {dropout}")


def check_sentences(tokens: Tensor, lengths: Tensor) -> None:
    """``tokens (B, T)`` and ``lengths (B,)`` with ``0 <= lengths <= T``, or a ValueError naming them."""
    if tokens.dim() != 2 or lengths.shape != tokens.shape[:1]:
        raise ValueError(
            f"expected tokens (B, T) and lengths (B,); got tokens {tuple(tokens.shape)}, lengths {tuple(lengths.shape)}"
        )
    if tokens.shape[1] == 0:
        raise ValueError(f"tokens {tuple(tokens.shape)} has no positions (T = 0)")
    if lengths.dtype.is_floating_point or bool(((lengths < 0) | (lengths > tokens.shape[1])).any()):
        raise ValueError(f"lengths must be integers in 0..T = {tokens.shape[1]}; got {lengths.tolist()}")


class BiLSTMEncoder(nn.Module):
    """Embeddings and a bidirectional LSTM over each sentence: ``h_t = [→h_t; ←h_t]``."""

    def __init__(self, vocab: int, embed_dim: int, hidden_dim: int, dropout: float = 0.0, pad_id: int = 0):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim, padding_idx=pad_id)
        self.rnn = nn.LSTM(embed_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """tokens (B, T), lengths (B,) -> states (B, T, 2U) (zero at padding), final (B, 2U) = [→h_n; ←h_1].

        An empty sentence (length 0) gets zero states and a zero final state.
        """
        check_sentences(tokens, lengths)
        check_ids(tokens, self.embed.num_embeddings, "tokens", "word")
        x = self.dropout(self.embed(tokens))  # (B, T, E)
        # Packing starts the backward direction at each sentence's real end. It needs the lengths
        # on the CPU (the one sync of the forward pass) and at least one step per sentence: an
        # empty sentence is read as one padding word, and its states are zeroed below.
        packed = pack_padded_sequence(x, lengths.cpu().clamp_min(1), batch_first=True, enforce_sorted=False)
        states, (h, _) = self.rnn(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=tokens.shape[1])  # (B, T, 2U)
        final = h.transpose(0, 1).reshape(len(tokens), -1)  # (2, B, U) -> (B, 2U)
        empty = (lengths == 0)[:, None]  # (B, 1)
        states = states.masked_fill(empty[:, :, None], 0.0)  # (B, T, 2U)
        return states, final.masked_fill(empty, 0.0)


@dataclass
class PoolingClassifierConfig:
    vocab: int  # vocabulary size (id pad_id = <pad>)
    classes: int  # C
    embed_dim: int = 64  # E, word embeddings
    hidden_dim: int = 64  # U, LSTM state per direction (the states are 2U wide)
    mlp_dim: int = 64  # hidden layer of the classifier on the pooled vector
    pool: str = "mean"  # "last", "mean" or "max" (see the module docstring)
    dropout: float = 0.0  # on the embeddings and before each layer of the classifier
    pad_id: int = 0

    def __post_init__(self):
        check_sizes(
            "PoolingClassifierConfig",
            vocab=self.vocab,
            classes=self.classes,
            embed_dim=self.embed_dim,
            hidden_dim=self.hidden_dim,
            mlp_dim=self.mlp_dim,
        )
        check_dropout("PoolingClassifierConfig", self.dropout)
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}; got {self.pool!r}")
        check_special_id("PoolingClassifierConfig", "pad_id", self.pad_id, vocab=self.vocab)


def mlp(in_dim: int, hidden_dim: int, classes: int, dropout: float) -> nn.Sequential:
    """The classifier on a sentence vector: dropout, Linear, ReLU, dropout, Linear -> (B, C)."""
    return nn.Sequential(
        nn.Dropout(dropout),
        nn.Linear(in_dim, hidden_dim),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden_dim, classes),
    )


@register_model("bilstm-pooling")
class BiLSTMPooling(nn.Module):
    """BiLSTM states pooled by a fixed rule (last, mean or max), then an MLP: no attention.

    ``forward(tokens (B, T), lengths (B,))`` returns ``ClassifierOutput(logits (B, C), {})``.
    """

    config_class = PoolingClassifierConfig

    def __init__(self, cfg: PoolingClassifierConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = BiLSTMEncoder(cfg.vocab, cfg.embed_dim, cfg.hidden_dim, cfg.dropout, cfg.pad_id)
        self.classify = mlp(2 * cfg.hidden_dim, cfg.mlp_dim, cfg.classes, cfg.dropout)

    def pool(self, states: Tensor, final: Tensor, lengths: Tensor) -> Tensor:
        """states (B, T, 2U), final (B, 2U), lengths (B,) -> the sentence vector (B, 2U)."""
        if self.cfg.pool == "last":
            return final
        real = lengths_to_mask(lengths, states.shape[1])[:, :, None]  # (B, T, 1), True = a real word
        if self.cfg.pool == "mean":
            return states.sum(1) / lengths.clamp_min(1)[:, None].to(states.dtype)  # padding states are 0
        pooled = states.masked_fill(~real, float("-inf")).amax(1)  # (B, 2U)
        return pooled.masked_fill((lengths == 0)[:, None], 0.0)  # an empty sentence: zeros, not -inf

    def forward(self, tokens: Tensor, lengths: Tensor) -> ClassifierOutput:
        states, final = self.encoder(tokens, lengths)  # (B, T, 2U), (B, 2U)
        return ClassifierOutput(self.classify(self.pool(states, final, lengths)))  # (B, C)
