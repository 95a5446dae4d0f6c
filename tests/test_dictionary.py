"""Chapter 3's dictionary record: HSK with CC-CEDICT's entries, held-out compounds, 機器學習."""

import pytest
import torch
from conftest import load_or_skip, regenerated

from attention import results
from attention.data import Pair
from attention.data.translation import gloss_core
from attention.experiments import translate
from attention.studies import dictionary
from attention.studies.base import run_study


def _pair(chars: str, gloss: str) -> Pair:
    return Pair(tuple(chars), tuple(gloss.split()), {"src_text": chars, "tgt_text": gloss})


def test_a_gloss_is_read_as_its_first_sense_without_notes():
    assert gloss_core("robot; android") == "robot"
    assert gloss_core("deep learning (artificial intelligence)") == "deep learning"
    assert gloss_core("(bound form) machine; mechanism") == "machine"
    assert gloss_core("  to  learn ") == "to learn"
    assert gloss_core("(idiom)") == ""


ENTRIES = [
    _pair("世界", "world"),
    _pair("銀行", "bank"),
    _pair("世界銀行", "world bank"),
    _pair("機器", "machine"),
    _pair("翻譯", "to translate"),
    _pair("機器翻譯", "machine translation"),  # not its parts' glosses in order: not a compound
    _pair("中央", "central"),
    _pair("中央銀行", "central bank"),
    _pair("地圖", "map"),
    _pair("世界地圖", "world map"),
    _pair("水", "water"),
    _pair("果", "fruit"),
    _pair("水果", "fruit"),
]


def test_compounds_are_entries_whose_parts_glosses_make_their_gloss():
    found = {p.meta["src_text"]: (p.meta["split"], p.meta["split_words"]) for p in dictionary.compounds(ENTRIES)}
    assert found == {"世界銀行": (2, 1), "中央銀行": (2, 1), "世界地圖": (2, 1)}


def test_held_out_compounds_keep_their_parts_in_training_and_the_splits_are_disjoint():
    recipe = {**dictionary.DICTIONARY, "compound_test": 0.67, "held_out": 0.2}
    splits = dictionary._split(recipe, ENTRIES)
    names = {k: {p.meta["src_text"] for p in v} for k, v in splits.items()}
    assert len(names["compounds"]) == 2
    for c in splits["compounds"]:
        i = c.meta["split"]
        assert {"".join(c.src[:i]), "".join(c.src[i:])} <= names["train"]
    assert not names["compounds"] & names["train"]
    assert not names["valid"] & names["train"] and not names["test"] & names["train"]
    assert not names["valid"] & names["test"]
    assert set().union(*names.values()) == {p.meta["src_text"] for p in ENTRIES}
    with pytest.raises(ValueError, match="no compound is held out"):
        dictionary._split({**recipe, "compound_test": 0.0}, ENTRIES)


def test_own_part_accuracy_counts_each_word_on_its_own_characters():
    pairs = dictionary.compounds(ENTRIES)[:1]  # 世界銀行: world | bank, split after two characters
    right = torch.tensor([[0.5, 0.4, 0.05, 0.05], [0.0, 0.1, 0.2, 0.7]])
    wrong = torch.tensor([[0.1, 0.1, 0.7, 0.1], [0.0, 0.1, 0.2, 0.7]])
    assert dictionary.own_part_accuracy(pairs, [right]) == {"accuracy": 1.0, "chance": 0.5, "words": 2}
    assert dictionary.own_part_accuracy(pairs, [wrong])["accuracy"] == 0.5
    with pytest.raises(ValueError, match=r"attention \(2, 3\), expected \(2, 4\)"):
        dictionary.own_part_accuracy(pairs, [right[:, :3]])


def test_the_study_runs_records_and_keeps_a_model_that_needs_no_dictionary(tmp_path):
    study = dictionary.STUDY.with_recipe(limit=3000, max_epochs=1, seeds=[0], probes=["機器學習"])
    data = load_or_skip(dictionary.dictionary_data, study.recipe)
    splits = data["dictionary"]
    hsk_chars = {c for p in data["HSK"].train for c in p.src}
    assert all(set(p.src) <= hsk_chars and 1 <= len(p.tgt) <= 4 for p in splits["train"])
    assert data["HSK+CEDICT"].valid == data["HSK"].valid and data["HSK+CEDICT"].test == data["HSK"].test
    assert len(data["HSK+CEDICT"].train) == 2 * len(data["HSK"].train) + len(splits["train"])
    record = run_study(study, tmp_path)
    summary = record["metrics"]["summary"]
    assert set(summary) == {"HSK", "HSK+CEDICT"}
    for cell in summary.values():
        assert 0 <= cell["compound_alignment"]["mean"] <= 1 and cell["bleu"]["n"] == 1
        assert set(cell["probes"]) == {"機器學習"}
    base = record["metrics"]["baselines"]
    assert base["compounds"]["n"] == len(splits["compounds"]) and 0 < base["test"]["vocabulary_ceiling"] <= 1
    model, kept_data = dictionary.dictionary_model(directory=tmp_path)
    assert kept_data.train == [] and kept_data.test == data["HSK"].test
    assert kept_data.tgt_vocab.itos == data["HSK+CEDICT"].tgt_vocab.itos
    probe = [Pair(tuple("機器學習"), (), {"tgt_text": ""})]
    assert translate(model, probe, kept_data)[0].text == summary["HSK+CEDICT"]["probes"]["機器學習"][0]


def test_the_record_regenerates_from_itself(tmp_path):
    record, again = regenerated(dictionary.STUDY, tmp_path)
    assert again["metrics"] == record["metrics"]
    summary = record["metrics"]["summary"]
    assert record["seeds"] == [0, 1, 2, 3, 4] and all(c["bleu"]["n"] == 5 for c in summary.values())
    assert all(c["converged"] for c in summary.values()), "a run's best epoch was its last"


def test_the_kept_model_writes_what_the_record_says():
    """The chapter and the playground read seed 0's kept model: by inference, it writes what the
    record holds for every probe (greedy decoding, so the same on every processor)."""
    record = results.load_result("dictionary")
    model, data = dictionary.dictionary_model()
    probes = record["recipe"]["probes"]
    pairs = [Pair(tuple(c for c in t if not c.isspace()), (), {"tgt_text": ""}) for t in probes]
    outputs = [o.text for o in translate(model, pairs, data)]
    seed0 = next(r for r in record["metrics"]["runs"] if r["variant"] == "HSK+CEDICT" and r["seed"] == 0)
    assert outputs == [seed0["probes"][t]["output"] for t in probes]


def test_the_notebooks_compounds_are_held_out_with_their_parts_in_training():
    """Chapter 3's notebook draws 專家系統 and 微分方程 as compounds the model never saw."""
    data = load_or_skip(dictionary.dictionary_data, dictionary.DICTIONARY)
    splits = data["dictionary"]
    held = {p.meta["src_text"]: p for p in splits["compounds"]}
    train = {p.meta["src_text"] for p in splits["train"]}
    for text in ("專家系統", "微分方程"):
        pair = held[text]
        assert text not in train and {text[: pair.meta["split"]], text[pair.meta["split"] :]} <= train
