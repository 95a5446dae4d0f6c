"""A vocabulary: tokens <-> integer ids, with the four special tokens every model here uses.

Ids 0-3 are fixed: ``<pad>`` = 0 (what :mod:`attention.data.batching` pads with and what a
loss ignores with ``ignore_index=0``), ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3. The other
tokens follow by falling frequency, ties broken alphabetically, so the same corpus always
gives the same ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["Vocab", "PAD", "UNK", "BOS", "EOS"]

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)


class Vocab:
    """Token <-> id mapping. ``len(vocab)`` counts the specials."""

    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(self, tokens: Sequence[str]):
        """``tokens``: the id -> token list, starting with the four specials in order."""
        if tuple(tokens[:4]) != SPECIALS:
            raise ValueError(f"a Vocab's first tokens must be {SPECIALS}, got {tuple(tokens[:4])}")
        if len(set(tokens)) != len(tokens):
            raise ValueError("a Vocab's tokens must be distinct")
        self.itos: list[str] = list(tokens)  # id -> token
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}  # token -> id

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """Vocabulary of the tokens seen at least ``min_freq`` times (at most ``max_size``
        besides the specials), most frequent first."""
        counts = Counter(t for tokens in token_lists for t in tokens)
        kept = sorted(
            (t for t, c in counts.items() if c >= min_freq and t not in SPECIALS), key=lambda t: (-counts[t], t)
        )
        return cls(SPECIALS + tuple(kept[:max_size]))

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {self.itos[4:9]}...)"

    def encode(self, tokens: Sequence[str], add_bos_eos: bool = False) -> list[int]:
        """Ids of ``tokens``; unknown tokens map to ``<unk>``."""
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        return [self.bos_id, *ids, self.eos_id] if add_bos_eos else ids

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> list[str]:
        """Tokens of ``ids``. With ``strip_special``, stop at the first ``<eos>`` and drop
        ``<pad>`` and ``<bos>`` (``<unk>`` stays: it says a word was there)."""
        tokens = []
        for i in ids:
            i = int(i)  # accepts a list, or a 1-D tensor
            if strip_special and i == self.eos_id:
                break
            if strip_special and i in (self.pad_id, self.bos_id):
                continue
            tokens.append(self.itos[i])
        return tokens

    def to_dict(self) -> dict:
        """JSON-serialisable form, for checkpoints: ``Vocab.from_dict(v.to_dict())``."""
        return {"itos": list(self.itos)}

    @classmethod
    def from_dict(cls, d: dict) -> "Vocab":
        return cls(d["itos"])
