"""Chapter 7's recorded run (attention/memory.py) and its task (attention/tasks/qa.py), on a seconds-long stand-in."""
import pytest
import torch

from attention import memory, results
from attention.data.babi import QA
from attention.models import MemN2N, MemN2NConfig
from attention.tasks.qa import babi_data


def test_babi_data_batches_stories_questions_and_answers():
    data = babi_data(2, n_train=50, n_test=20)
    assert (len(data.train), len(data.valid), len(data.test)) == (45, 5, 20)
    batch = data.collate(data.train[:4])
    B, M, J = batch.story.shape
    assert B == 4 and M == max(len(e.story) for e in data.train[:4])
    for b, e in enumerate(data.train[:4]):
        assert data.vocab.decode(batch.story[b, len(e.story) - 1].tolist())[:len(e.story[-1])] == list(e.story[-1])
        assert torch.all(batch.story[b, len(e.story):] == 0)  # empty slots after the story
        assert data.answers[batch.answers[b]] == e.answer
    with pytest.raises(ValueError, match="not in the answer vocabulary"):
        data.collate([QA((("mary", "went", "to", "the", "moon"),), ("where", "is", "mary"), "moon", (0,))])


def test_memory_keeps_the_most_recent_sentences_and_moves_the_supports():
    data = babi_data(1, n_train=20, n_test=10, memory_size=3)
    qa = QA(tuple((f"s{i}",) for i in range(5)), ("where",), "kitchen", (1, 4))
    kept, supports = data.memory(qa)
    assert kept == (("s2",), ("s3",), ("s4",)) and supports == (2,)  # fact 1 fell out of memory


def test_support_hits_count_the_top_sentence_of_each_hop():
    data = babi_data(1, n_train=20, n_test=10)
    model = MemN2N(MemN2NConfig(len(data.vocab), len(data.answers), embed_dim=8, hops=2))
    report = data.evaluate(model, data.test)
    expected = [0, 0]
    for e, w in zip(data.test, report["hops"]):
        for k in range(2):
            expected[k] += int(w[k].argmax()) in e.supports
    assert report["support_hits"] == [x / len(data.test) for x in expected]


TINY = {"MEMORY": {"tasks": [1], "hops": [1, 2], "seeds": [0, 1], "n_train": 60, "n_test": 20, "max_epochs": 1},
        "DMN_RUNS": {"passes": [1, 2], "seeds": [0], "n_train": 60, "n_test": 20, "hidden_dim": 8, "gate_dim": 8,
                     "embed_dim": 8, "max_epochs": 1},
        "NTM_RUNS": {"seeds": [0], "train_lengths": [1, 3], "n_train": 16, "n_valid": 8, "n_test": 8,
                     "test_lengths": [6], "n_by_length": 4, "memory_slots": 8, "memory_width": 4,
                     "controller_size": 8, "lstm_hidden": 8, "max_epochs": 1}}


def _tiny(monkeypatch):
    for name, changes in TINY.items():
        monkeypatch.setattr(memory, name, getattr(memory, name) | changes)


def test_run_memory_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    _tiny(monkeypatch)
    assert len(memory.memory_status(tmp_path)["missing"]) == 4 + 2 * 2 + 2
    hops, dmn, copy = memory.run_memory(tmp_path)
    cell = hops["metrics"]["summary"]["task1/hops2"]
    assert 0 <= cell["accuracy"]["mean"] <= 1 and len(cell["support_hits"]) == 2
    passes = dmn["metrics"]["summary"]["supervised/passes2"]
    assert 0 <= passes["accuracy"]["mean"] <= 1 and len(passes["support_hits"]) == 2
    ntm = copy["metrics"]["summary"]["ntm"]
    assert set(ntm["by_length"]) == {"test", "6"} and 0 <= ntm["by_length"]["6"]["bit_accuracy"]["mean"] <= 1
    assert copy["metrics"]["summary"]["copy-lstm"]["parameters"] > 0
    for name in ("memory-hops", "dmn-passes", "ntm-copy"):
        assert results.load_result(name, tmp_path)["command"] == "python -m attention memory"
    assert memory.memory_status(tmp_path)["missing"] == []
    again = memory.run_memory(tmp_path)
    assert [r["metrics"]["runs"] for r in again] == [r["metrics"]["runs"] for r in (hops, dmn, copy)]  # nothing retrained


def test_a_second_process_takes_the_runs_from_the_end(tmp_path, monkeypatch):
    _tiny(monkeypatch)
    store = results.PartialRuns("ntm-copy", memory.NTM_RUNS, tmp_path)
    calls = []
    monkeypatch.setattr(memory, "_run_copy", lambda data, kind, seed, device: calls.append(kind) or {"x": 1})
    monkeypatch.setattr(memory, "_run_dmn", lambda *a: pytest.fail("ran a DMN before the copy runs"))
    with pytest.raises(pytest.fail.Exception):
        memory.run_memory(tmp_path, reverse=True)
    assert calls == ["copy-lstm", "ntm"] and "copy-lstm/seed0" in store and "ntm/seed0" in store


@pytest.mark.parametrize("command", ["intra", "han", "nested", "memory"])
def test_every_resumable_command_reports_its_status(command, tmp_path, capsys):
    from attention import cli
    assert cli.main([command, "--status", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("0 runs done, ") and "missing" in out


def test_a_higher_epoch_cap_reuses_only_the_runs_that_stopped_early(tmp_path, monkeypatch):
    small = memory.MEMORY | {"tasks": [1], "hops": [1, 2], "seeds": [0], "n_train": 60, "n_test": 20}
    store = results.PartialRuns("memory-hops", small | {"max_epochs": 1}, tmp_path)
    store.add("task1/hops1/seed0", {"stopped": "early stopping: no better validation accuracy for 3 epochs"})
    store.add("task1/hops2/seed0", {"stopped": "max_epochs=1 reached"})
    monkeypatch.setattr(memory, "MEMORY", small | {"max_epochs": 2})
    status = memory.memory_status(tmp_path)
    assert "memory-hops: task1/hops1/seed0" in status["done"]
    assert "memory-hops: task1/hops2/seed0" in status["missing"]
