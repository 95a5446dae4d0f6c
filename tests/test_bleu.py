"""BLEU from first principles (attention/bleu.py) equals sacreBLEU, case by case and on real text."""

import random

import pytest
from conftest import load_or_skip
from sacrebleu.metrics import BLEU

from attention import bleu
from attention.data import load_hsk

CASES = {
    "one sentence": (["the cat sat on the mat ."], [["the cat is on the mat ."]]),
    "empty hypothesis": ([""], [["a reference here ."]]),
    "clipped repeats": (["the the the the"], [["the cat"]]),
    "no match at all": (["completely different words"], [["nothing in common at all"]]),
    "no 4-gram match": (["the cat sat on a mat"], [["the cat sat under a mat"]]),
    "too short for 4-grams": (["a b c"], [["a b c d e"]]),
    "two references": (["the cat sat on the mat ."], [["the cat is on the mat .", "a cat sat on the mat ."]]),
    "Chinese": (["我喜欢猫。"], [["我喜欢狗。"]]),
    "a corpus": (["the cat sat on the mat .", "a b c", "x"], [["the cat is on the mat ."], ["a b c d"], ["y"]]),
}


def sacre(hyps, refs, tokenizer, smooth, sentence=False):
    if sentence:
        return (
            BLEU(tokenize=tokenizer, smooth_method=smooth, effective_order=True).sentence_score(hyps[0], refs[0]).score
        )
    return BLEU(tokenize=tokenizer, smooth_method=smooth).corpus_score(hyps, [list(r) for r in zip(*refs)]).score


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("tokenizer", ["13a", "zh", "char", "none"])
@pytest.mark.parametrize("smooth", sorted(bleu.SMOOTHING))
def test_equal_to_sacrebleu(case, tokenizer, smooth):
    hyps, refs = CASES[case]
    assert bleu.corpus_bleu(hyps, refs, tokenizer, smooth).score == pytest.approx(
        sacre(hyps, refs, tokenizer, smooth), abs=1e-6
    )
    assert bleu.sentence_bleu(hyps[0], refs[0], tokenizer, smooth).score == pytest.approx(
        sacre(hyps, refs, tokenizer, smooth, sentence=True), abs=1e-6
    )


def test_the_pieces_by_hand():
    s = bleu.sentence_statistics("the the the the".split(), ["the cat".split(), "the the dog".split()])
    assert s.correct[0] == 2 and s.total[0] == 4  # clipped at the largest count in one reference
    assert s.ref_len == 3 and bleu.closest_reference_length(4, [3, 5]) == 3  # a tie goes to the shorter
    score = bleu.bleu_from_statistics(bleu.BleuStatistics([3, 1, 0, 0], [4, 3, 2, 1], 4, 5), smooth="exp")
    assert score.brevity_penalty == pytest.approx(2.718281828 ** (1 - 5 / 4))
    assert score.precisions == pytest.approx([75.0, 100 / 3, 100 / (2 * 2), 100 / (4 * 1)])  # exp: 1/(2^k total)
    assert bleu.bleu_from_statistics(bleu.BleuStatistics([3, 1, 0, 0], [4, 3, 2, 1], 4, 5), "none").score == 0.0
    assert bleu.corpus_bleu([""], [["a b"]]).brevity_penalty == 0.0


def test_corpus_bleu_is_not_the_mean_of_sentence_bleu():
    hyps, refs = CASES["a corpus"]
    corpus = bleu.corpus_bleu(hyps, refs).score
    mean = sum(bleu.sentence_bleu(h, r).score for h, r in zip(hyps, refs)) / len(hyps)
    assert abs(corpus - mean) > 1.0


def test_chinese_needs_its_tokenizer():
    hyps, refs = CASES["Chinese"]
    assert bleu.tokenize("我喜欢猫。", "13a") == ["我喜欢猫。"]  # one token: no spaces to split on
    assert bleu.tokenize("我喜欢猫。", "zh") == ["我", "喜", "欢", "猫", "。"]
    assert bleu.corpus_bleu(hyps, refs, "13a").score == 0.0 < bleu.corpus_bleu(hyps, refs, "zh").score


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="2 hypotheses but 1 lists of references"):
        bleu.corpus_bleu(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="a list of strings per hypothesis; got the string 'a'"):
        bleu.corpus_bleu(["a"], ["a"])
    with pytest.raises(ValueError, match="unknown tokenizer 'moses'"):
        bleu.tokenize("a", "moses")
    with pytest.raises(ValueError, match="unknown smoothing 'add-one'"):
        bleu.corpus_bleu(["a"], [["a"]], smooth="add-one")
    with pytest.raises(ValueError, match="at least one reference"):
        bleu.closest_reference_length(3, [])


@pytest.mark.parametrize("side,tokenizer", [("en", "13a"), ("zh", "zh")])
def test_equal_to_sacrebleu_on_real_sentences(side, tokenizer):
    """HSK sentences as references; hypotheses made from them by dropping, repeating and swapping
    tokens and by borrowing other sentences' words, so every n-gram order has hits and misses."""
    pairs = load_or_skip(load_hsk)
    rng = random.Random(0)
    refs = [p.meta["tgt_text"] if side == "en" else p.meta["src_text"] for p in pairs[:300]]
    hyps = []
    for r in refs:
        units = r.split() if side == "en" else list(r)
        donor = rng.choice(refs)
        donor = donor.split() if side == "en" else list(donor)
        for _ in range(rng.randint(0, 3)):
            op = rng.random()
            i = rng.randrange(len(units)) if units else 0
            if op < 0.3 and units:
                del units[i]
            elif op < 0.6:
                units.insert(i, rng.choice(donor))
            elif units:
                units[i] = units[i] if len(units) < 2 else units[-1 - i]
        hyps.append((" " if side == "en" else "").join(units))
    for smooth in ("exp", "none"):
        ours = bleu.corpus_bleu(hyps, [[r] for r in refs], tokenizer, smooth).score
        assert ours == pytest.approx(sacre(hyps, [[r] for r in refs], tokenizer, smooth), abs=1e-6)
        assert 5 < ours < 95
    for h, r in list(zip(hyps, refs))[:50]:
        assert bleu.sentence_bleu(h, [r], tokenizer).score == pytest.approx(
            sacre([h], [[r]], tokenizer, "exp", True), abs=1e-6
        )
