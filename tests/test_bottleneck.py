"""Chapters 2-3's bottleneck study (attention/studies/bottleneck.py): joined data, and its record."""

import dataclasses
import shutil

from attention import results
from attention.experiments import hsk_data
from attention.studies import bottleneck
from attention.studies.base import run_study, study_status


def test_the_joined_splits_keep_hsks_split_and_vocabularies():
    data = bottleneck.bottleneck_data(bottleneck.BOTTLENECK)
    hsk = hsk_data(seed=0)
    assert data.src_vocab.itos == hsk.src_vocab.itos and data.tgt_vocab.itos == hsk.tgt_vocab.itos
    joins = bottleneck.BOTTLENECK["train_joins"]
    assert len(data.train) == sum(len(hsk.train) // k for k in joins)
    assert len(data.test) == sum(len(hsk.test) // k for k in bottleneck.BOTTLENECK["test_joins"])
    test_chars = {c for p in hsk.test for c in p.src}
    assert all(c in test_chars for p in data.test for c in p.src)  # the test pairs are HSK's test pairs
    assert max(len(p.src) for p in data.test) > max(len(p.src) for p in data.train)  # longer than training
    assert data.decode_len == bottleneck.BOTTLENECK["decode_len"] > max(len(p.tgt) for p in data.test)


def test_the_record_regenerates_from_itself(tmp_path):
    study = bottleneck.STUDY

    def never(study, piece, data, device):
        raise AssertionError(f"ran {piece.key}, which the registry holds")

    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", tmp_path)
    record = results.load_result(study.name, tmp_path)
    assert study_status(study, tmp_path)["missing"] == []
    again = run_study(dataclasses.replace(study, run=never), tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    summary = record["metrics"]["summary"]
    assert [b["bucket"] for b in summary["RNNsearch"]["by_length"]] == [
        b["bucket"] for b in summary["encoder-decoder"]["by_length"]
    ]
    assert summary["RNNsearch"]["bleu"]["n"] == len(bottleneck.BOTTLENECK["seeds"]) == 5
