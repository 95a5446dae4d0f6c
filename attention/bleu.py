"""BLEU from first principles (Papineni et al. 2002): chapter 10 builds it step by step and shows
it equal to sacreBLEU, which remains the package's metric (:func:`attention.metrics.corpus_bleu`).

BLEU compares a system's output with one or more reference translations through n-gram overlap:

* **modified n-gram precision** -- for each n = 1..4, the hypothesis n-grams that also occur in a
  reference, each counted at most as often as it occurs in the reference that has it most
  (*clipping*: "the the the" cannot earn three matches from one "the"), over all hypothesis n-grams;
* **brevity penalty** -- precision alone rewards short outputs, so a corpus whose hypotheses are
  shorter in total (c words) than their references (r words; per sentence the reference closest
  in length, the shorter on a tie) is multiplied by ``exp(1 - r / c)``;
* **the score** -- ``BP · exp(Σ_n log p_n / 4)``, the geometric mean of the four precisions, 0-100.

**Corpus, not sentence average.** The counts (matches and totals per n, and the lengths) are
summed over the whole corpus first, and the score is computed once from the sums: corpus BLEU is
*not* the mean of the sentence scores.

**Smoothing.** One n with no match makes the geometric mean 0; on a corpus that is rare, on a
sentence common. sacreBLEU's default for corpus scores, ``exp`` (NIST's smoothing, Chen & Cherry
2014's method 3), replaces the k-th zero precision by ``1 / (2^k · total_n)``; ``floor`` uses
``ε / total_n``; ``add-k`` adds k to both counts for n ≥ 2; ``none`` leaves the zero. With
``effective_order`` (meant for single sentences) the mean runs only over the orders the
hypothesis is long enough to have.

**Tokens.** BLEU counts n-grams of *tokens*, so the tokenizer is part of the metric. sacreBLEU's
``13a`` splits punctuation from words (English, German); its ``zh`` tokenizer puts every Chinese
character apart. Chinese is written without spaces: with ``13a``, a whole Chinese sentence is one
token, and a hypothesis earns no n-gram unless it is the reference verbatim. This module takes its
tokenizers from sacreBLEU (:func:`tokenize`), so that the comparison tests the counting, not two
copies of the same regular expressions.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

__all__ = [
    "SMOOTHING",
    "TOKENIZERS",
    "BleuStatistics",
    "BleuScore",
    "tokenize",
    "ngrams",
    "closest_reference_length",
    "sentence_statistics",
    "bleu_from_statistics",
    "corpus_bleu",
    "sentence_bleu",
    "check_text",
]

#: smoothing methods and their default values (sacreBLEU's names and defaults)
SMOOTHING = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
MAX_N = 4


@dataclass
class BleuStatistics:
    """BLEU's sufficient statistics: what a sentence contributes, and what a corpus sums."""

    correct: list[int]  # clipped n-gram matches, n = 1..max_n
    total: list[int]  # hypothesis n-grams, n = 1..max_n
    hyp_len: int  # c: hypothesis tokens
    ref_len: int  # r: tokens of the reference closest in length

    def __add__(self, other: "BleuStatistics") -> "BleuStatistics":
        return BleuStatistics(
            [a + b for a, b in zip(self.correct, other.correct)],
            [a + b for a, b in zip(self.total, other.total)],
            self.hyp_len + other.hyp_len,
            self.ref_len + other.ref_len,
        )


@dataclass
class BleuScore:
    score: float  # 0-100
    precisions: list[float]  # p_n in percent, after smoothing
    brevity_penalty: float
    statistics: BleuStatistics


#: the sacreBLEU tokenizers this module offers: name -> (module, class) inside ``sacrebleu.tokenizers``
TOKENIZERS = {
    "13a": ("tokenizer_13a", "Tokenizer13a"),
    "zh": ("tokenizer_zh", "TokenizerZh"),
    "intl": ("tokenizer_intl", "TokenizerV14International"),
    "char": ("tokenizer_char", "TokenizerChar"),
    "none": ("tokenizer_none", "NoneTokenizer"),
}
_MADE: dict = {}


def tokenize(text: str, tokenizer: str = "13a") -> list[str]:
    """sacreBLEU's tokenizer ``tokenizer`` (see :data:`TOKENIZERS`) applied to ``text`` (trailing
    whitespace stripped first, as sacreBLEU does), split into tokens."""
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {sorted(TOKENIZERS)}")
    if tokenizer not in _MADE:  # import and build each tokenizer once, when first used
        module, name = TOKENIZERS[tokenizer]
        _MADE[tokenizer] = getattr(importlib.import_module(f"sacrebleu.tokenizers.{module}"), name)()
    return _MADE[tokenizer](text.rstrip()).split()


def check_text(value, what: str) -> None:
    """Refuse anything but a string where BLEU scores strings; a list of tokens, the likely slip, is
    told how to become one. (The token-level functions, :func:`sentence_statistics`, take tokens.)"""
    if isinstance(value, str):
        return
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        raise ValueError(
            f"{what} is a list of tokens ({list(value)[:6]}{' ...' if len(value) > 6 else ''}), "
            "but BLEU of strings tokenizes them itself (the tokenizer is part of the metric): "
            "pass ' '.join(tokens) or attention.metrics.detokenize(tokens); to count your own "
            "tokens use attention.bleu.sentence_statistics and bleu_from_statistics"
        )
    raise ValueError(f"{what} must be a string; got a {type(value).__name__}: {str(value)[:80]!r}")


def _check_tokens(hypothesis, references, max_n) -> None:
    """The token-level functions count the items of sequences: refuse strings, which would count
    their characters."""
    _check_max_n(max_n)
    if isinstance(references, str):
        references = [references]
    for what, value in [("the hypothesis", hypothesis)] + [(f"reference {j}", r) for j, r in enumerate(references)]:
        if isinstance(value, str):
            raise ValueError(
                f"{what} must be a list of tokens; got the string {value[:60]!r}: pass "
                f"{value[:20]!r}.split() or attention.bleu.tokenize(text), or score strings "
                "with corpus_bleu / sentence_bleu"
            )


def _check_max_n(max_n) -> None:
    if isinstance(max_n, bool) or not isinstance(max_n, numbers.Integral) or max_n < 1:
        raise ValueError(f"max_n, the longest n-gram, must be an integer >= 1 (BLEU uses 4); got {max_n!r}")


def _check_references(references, what: str) -> None:
    if isinstance(references, str) or not hasattr(references, "__iter__"):
        raise ValueError(
            f"{what} must be a list of strings, one per reference; got "
            f"{'the string ' + repr(references[:60]) if isinstance(references, str) else type(references).__name__}"
            f" (a single reference is [reference])"
        )


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """The n-grams of ``tokens`` (tuples) and how often each occurs."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def closest_reference_length(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length closest to the hypothesis length; on a tie, the shorter."""
    if not ref_lens:
        raise ValueError("BLEU needs at least one reference")
    return min(ref_lens, key=lambda r: (abs(hyp_len - r), r))


def sentence_statistics(
    hypothesis: Sequence[str], references: Sequence[Sequence[str]], max_n: int = MAX_N
) -> BleuStatistics:
    """Clipped matches and totals per n, and the lengths, of one tokenised hypothesis against its
    tokenised references (lists of tokens, not strings: see :func:`tokenize`)."""
    _check_tokens(hypothesis, references, max_n)  # lists of tokens: a string would count its characters
    correct, total = [0] * max_n, [0] * max_n
    for n in range(1, max_n + 1):
        hyp = ngrams(hypothesis, n)
        most = Counter()  # each n-gram's largest count in any one reference: the clip
        for ref in references:
            most |= ngrams(ref, n)  # | keeps the maximum of the two counts
        correct[n - 1] = sum(min(count, most[g]) for g, count in hyp.items())
        total[n - 1] = sum(hyp.values())
    ref_len = closest_reference_length(len(hypothesis), [len(r) for r in references])
    return BleuStatistics(correct, total, len(hypothesis), ref_len)


def bleu_from_statistics(
    stats: BleuStatistics, smooth: str = "exp", smooth_value: float | None = None, effective_order: bool = False
) -> BleuScore:
    """BLEU from summed statistics: the smoothed precisions, the brevity penalty, their product."""
    if smooth not in SMOOTHING:
        raise ValueError(f"unknown smoothing {smooth!r}; choose one of {sorted(SMOOTHING)}")
    value = SMOOTHING[smooth] if smooth_value is None else smooth_value
    correct, total = list(stats.correct), list(stats.total)
    c, r = stats.hyp_len, stats.ref_len
    bp = 1.0 if c >= r else (math.exp(1 - r / c) if c > 0 else 0.0)
    precisions = [0.0] * len(correct)
    if not any(correct):  # nothing matches at all: 0, whatever the smoothing
        return BleuScore(0.0, precisions, bp, stats)
    halvings, order = 1.0, len(correct)
    for n in range(1, len(correct) + 1):
        if smooth == "add-k" and n > 1:
            correct[n - 1] += value
            total[n - 1] += value
        if total[n - 1] == 0:  # the hypotheses are too short to have n-grams
            break
        if effective_order:
            order = n
        if correct[n - 1] == 0:
            if smooth == "exp":
                halvings *= 2
                precisions[n - 1] = 100.0 / (halvings * total[n - 1])
            elif smooth == "floor":
                precisions[n - 1] = 100.0 * value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    # the geometric mean; a zero precision makes the score 0 (log 0 = -inf, floored)
    logs = [math.log(p) if p > 0 else -math.inf for p in precisions[:order]]
    score = bp * math.exp(sum(logs) / order) if all(math.isfinite(x) for x in logs) else 0.0
    return BleuScore(score, precisions, bp, stats)


def corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    tokenizer: str = "13a",
    smooth: str = "exp",
    smooth_value: float | None = None,
    max_n: int = MAX_N,
) -> BleuScore:
    """Corpus BLEU of hypothesis strings, each against its list of reference strings: sum the
    statistics of every sentence, then score once.

    Strings, not lists of tokens: ``tokenizer`` splits them, as sacreBLEU does, so that the score is
    sacreBLEU's. A list of tokens is refused with what to pass instead (``" ".join(tokens)``); to
    score your own tokens, sum :func:`sentence_statistics` and call :func:`bleu_from_statistics`."""
    _check_max_n(max_n)
    if isinstance(hypotheses, str):
        raise ValueError(
            f"hypotheses must be a list of strings, not one string; got {hypotheses[:60]!r} "
            "(one hypothesis is [hypothesis])"
        )
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} lists of references")
    stats = BleuStatistics([0] * max_n, [0] * max_n, 0, 0)
    for i, (hyp, refs) in enumerate(zip(hypotheses, references)):
        check_text(hyp, f"hypothesis {i}")
        if isinstance(refs, str):
            raise ValueError(f"references must be a list of strings per hypothesis; got the string {refs!r}")
        _check_references(refs, f"the references of hypothesis {i}")
        for j, r in enumerate(refs):
            check_text(r, f"reference {j} of hypothesis {i}")
        stats = stats + sentence_statistics(tokenize(hyp, tokenizer), [tokenize(r, tokenizer) for r in refs], max_n)
    return bleu_from_statistics(stats, smooth, smooth_value)


def sentence_bleu(
    hypothesis: str,
    references: Sequence[str],
    tokenizer: str = "13a",
    smooth: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = True,
    max_n: int = MAX_N,
) -> BleuScore:
    """BLEU of one sentence (with ``effective_order``, as sacreBLEU recommends for sentences)."""
    _check_max_n(max_n)
    check_text(hypothesis, "the hypothesis")
    _check_references(references, "references")
    for j, r in enumerate(references):
        check_text(r, f"reference {j}")
    stats = sentence_statistics(tokenize(hypothesis, tokenizer), [tokenize(r, tokenizer) for r in references], max_n)
    return bleu_from_statistics(stats, smooth, smooth_value, effective_order)
