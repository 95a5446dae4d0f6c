"""Evaluation: corpus BLEU (sacreBLEU), BLEU by source length, alignment error rate.

* BLEU (Papineni et al. 2002) through sacreBLEU with its defaults: ``13a``
  tokenization for English/German targets, ``zh`` for Chinese targets, exponential
  smoothing, n ≤ 4. Hypotheses are detokenized first and scored against the raw
  reference strings, and the signature is reported so numbers can be compared.
* AER (Och & Ney 2003): ``1 − (|A∩S| + |A∩P|) / (|A| + |S|)`` for predicted links A,
  sure links S and possible links P ⊇ S.
* Spearman's rank correlation: the Pearson correlation of the ranks, ties given their
  average rank (chapter 5 compares attention weights with human ratings by it).

Chapter 3 prints all three; chapter 10 discusses what they do and do not measure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .bleu import check_text

__all__ = ["BleuResult", "corpus_bleu", "bleu_by_length", "detokenize", "aer", "ranks", "spearman"]


@dataclass
class BleuResult:
    score: float  # corpus BLEU, 0-100
    signature: str  # sacreBLEU's signature: how the score was computed
    n: int  # number of sentences

    def __str__(self) -> str:
        return f"BLEU = {self.score:.2f} ({self.n} sentences; {self.signature})"


def detokenize(tokens: Sequence[str], lang: str = "en") -> str:
    """Undo word tokenization: ``["it", "'s", "fine", "."]`` -> ``"it's fine."``; Chinese: no spaces.

    Straight double quotes alternate: the first of a pair attaches to the word after it, the second to
    the word before it (``he said " hi "`` -> ``he said "hi"``)."""
    if lang == "zh":
        return "".join(tokens)
    text, glue, quote_open = "", True, False  # glue: no space before the next token
    for token in tokens:
        closing = token == '"' and quote_open
        text += token if glue or closing else " " + token
        glue = token == '"' and not quote_open  # an opening quote holds on to the next word
        quote_open = quote_open != (token == '"')
    text = re.sub(r" ([.,!?;:%)\]}])", r"\1", text)  # no space before closing punctuation
    text = re.sub(r"([(\[{$]) ", r"\1", text)  # nor after opening punctuation
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)  # English clitics
    return text


def corpus_bleu(
    hypotheses: Sequence[str], references: Sequence[str], lang: str = "en", lowercase: bool = False
) -> BleuResult:
    """Corpus BLEU of detokenized hypothesis strings against raw reference strings.

    Args:
        lang: the *target* language; selects sacreBLEU's tokenizer (``zh`` or ``13a``).
    """
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    for what, texts in (("hypothesis", hypotheses), ("reference", references)):
        for i, text in enumerate(texts):
            check_text(text, f"{what} {i}")
    bleu = BLEU(tokenize="zh" if lang == "zh" else "13a", lowercase=lowercase)
    result = bleu.corpus_score(list(hypotheses), [list(references)])
    return BleuResult(result.score, str(bleu.get_signature()), len(hypotheses))


def bleu_by_length(
    hypotheses: Sequence[str],
    references: Sequence[str],
    lengths: Sequence[int],
    edges: Sequence[int],
    lang: str = "en",
    lowercase: bool = False,
) -> list[dict]:
    """Corpus BLEU within source-length buckets ``[edges[i], edges[i+1])``.

    Returns one dict per non-empty bucket: ``{"bucket": "lo-hi", "lo", "hi", "n", "bleu"}``.
    """
    if not (len(hypotheses) == len(references) == len(lengths)):
        raise ValueError("hypotheses, references and lengths must have the same length")
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        idx = [i for i, n in enumerate(lengths) if lo <= n < hi]
        if idx:
            result = corpus_bleu([hypotheses[i] for i in idx], [references[i] for i in idx], lang, lowercase)
            rows.append({"bucket": f"{lo}-{hi - 1}", "lo": lo, "hi": hi, "n": len(idx), "bleu": result.score})
    return rows


def _kind(links) -> str:
    """``"sentence"`` (a collection of ``(j, i)`` pairs), ``"corpus"`` (a list/tuple of such
    collections) or ``"empty"`` (no elements: either)."""
    if isinstance(links, (set, frozenset)):
        items, container = list(links), "set"
    elif isinstance(links, (list, tuple)):
        items, container = list(links), "list"
    else:
        raise ValueError(
            f"alignment links must be a set of (source, target) pairs or a list of such "
            f"sets (one per sentence), got {type(links).__name__}"
        )
    if not items:
        return "empty"

    def is_pair(x) -> bool:
        return (
            isinstance(x, (tuple, list))
            and len(x) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in x)
        )

    if all(is_pair(x) for x in items):
        return "sentence"
    if container == "list" and all(
        isinstance(x, (set, frozenset, list, tuple)) and all(is_pair(y) for y in x) for x in items
    ):
        return "corpus"
    bad = next(x for x in items if not is_pair(x))
    raise ValueError(
        f"alignment links must be (source, target) integer pairs, or one collection of pairs "
        f"per sentence; found {bad!r}"
    )


def aer(predicted, sure, possible) -> float:
    """Alignment error rate (Och & Ney 2003, eq. 7): ``1 - (|A∩S| + |A∩P|) / (|A| + |S|)``.

    Args:
        predicted: A, one sentence's links -- a set (or list) of ``(j, i)`` integer pairs -- or,
            for a whole corpus, a list of such collections, one per sentence.
        sure: S, in the same form.
        possible: P ⊇ S, in the same form.

    For a corpus the counts are summed over sentences before dividing. Returns 0.0 when both
    A and S are empty. Mixing the two forms (a corpus of predictions scored against one
    sentence's gold links) is an error.
    """
    kinds = {_kind(x) for x in (predicted, sure, possible)} - {"empty"}
    if len(kinds) > 1:
        raise ValueError(
            "predicted, sure and possible mix one sentence's links (pairs) with a corpus "
            "(one collection of pairs per sentence); give all three in the same form"
        )
    if kinds == {"corpus"}:
        if not len(predicted) == len(sure) == len(possible):
            raise ValueError(
                f"predicted, sure and possible must list the same sentences; got "
                f"{len(predicted)}, {len(sure)} and {len(possible)} sentences"
            )
        triples = list(zip(predicted, sure, possible))
    else:
        triples = [(predicted, sure, possible)]
    hits = total = 0
    for a, s, p in triples:
        a, s, p = set(map(tuple, a)), set(map(tuple, s)), set(map(tuple, p))
        if not s <= p:
            raise ValueError("sure links must be a subset of possible links (S ⊆ P)")
        hits += len(a & s) + len(a & p)
        total += len(a) + len(s)
    return 0.0 if total == 0 else 1.0 - hits / total


def ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n of ``values``, ties sharing their average rank (``[3, 1, 3] -> [2.5, 1, 2.5]``)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation of two equally long sequences, in -1..1.

    None when it is undefined: fewer than two items, or either sequence constant (all ties).
    """
    if len(x) != len(y):
        raise ValueError(f"spearman needs sequences of one length; got {len(x)} and {len(y)}")
    if any(v != v for v in list(x) + list(y)):
        raise ValueError("spearman got a NaN")
    if len(x) < 2:
        return None
    rx, ry = ranks(list(x)), ranks(list(y))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / (sxx * syy) ** 0.5
