"""Chapter 7's recorded run (attention/studies/memory.py) and its task (attention/tasks/qa.py), on a seconds-long stand-in."""
import pytest
import torch

from attention import results

from attention.studies import memory
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
    from attention.checkpoints import load_checkpoint
    ntm_seed0, _ = load_checkpoint(memory.copy_model_path("ntm", tmp_path), expect="ntm")
    assert ntm_seed0.cfg.memory_slots == memory.NTM_RUNS["memory_slots"]
    for name in ("memory-hops", "dmn-passes", "ntm-copy"):
        assert results.load_result(name, tmp_path)["command"] == "python -m attention memory"
    assert memory.memory_status(tmp_path)["missing"] == []
    again = memory.run_memory(tmp_path)
    assert [r["metrics"]["runs"] for r in again] == [r["metrics"]["runs"] for r in (hops, dmn, copy)]  # nothing retrained


def test_a_second_process_takes_the_runs_from_the_end(tmp_path, monkeypatch):
    _tiny(monkeypatch)
    store = results.PartialRuns("ntm-copy", memory.NTM_RUNS, tmp_path)
    calls = []
    monkeypatch.setattr(memory, "_run_copy", lambda data, kind, seed, device, directory: calls.append(kind) or {"x": 1})
    monkeypatch.setattr(memory, "_run_dmn", lambda *a: pytest.fail("ran a DMN before the copy runs"))
    with pytest.raises(pytest.fail.Exception):
        memory.run_memory(tmp_path, reverse=True)
    assert calls == ["copy-lstm", "ntm"] and "copy-lstm/seed0" in store and "ntm/seed0" in store


@pytest.mark.parametrize("command", ["intra", "han", "nested", "memory"])
def test_every_resumable_command_reports_its_status(command, tmp_path, capsys):
    from attention.book import cli
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


def test_batches_carry_the_supporting_slots_in_the_files_order():
    data = babi_data(3, n_train=30, n_test=10)
    batch = data.collate(data.train[:5])
    assert batch.supports.shape[0] == 5
    for b, e in enumerate(data.train[:5]):
        kept = list(data.memory(e)[1])
        assert batch.supports[b, :len(kept)].tolist() == kept and bool((batch.supports[b, len(kept):] == -1).all())


def test_gate_supervision_adds_the_cross_entropy_of_each_pass_on_its_support():
    from attention.models.interface import ClassifierOutput
    from attention.tasks.qa import QABatch, gate_supervision_loss

    gates = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]],
                          [[0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]])  # (B=2, P=2, M=3)
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])

    class Fixed(torch.nn.Module):
        def forward(self, story, question):
            return ClassifierOutput(logits, {"hops": gates})

    batch = QABatch(torch.ones(2, 3, 1, dtype=torch.long), torch.ones(2, 1, dtype=torch.long),
                    torch.tensor([0, 1]), torch.tensor([[0, 1, 2], [2, -1, -1]]))
    answer = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1]))
    # pass 1: slots 0 and 2 -> -log .5 - log .6; pass 2: slot 1 of the first story only -> -log .8
    by_hand = answer + 0.5 * (-(torch.tensor(0.5).log() + torch.tensor(0.6).log() + torch.tensor(0.8).log())) / 2
    loss, n = gate_supervision_loss(0.5)(Fixed(), batch)
    assert n == 2
    torch.testing.assert_close(loss, by_hand)
    torch.testing.assert_close(gate_supervision_loss(0.0)(Fixed(), batch)[0], answer)
    with pytest.raises(ValueError, match="weight must be >= 0"):
        gate_supervision_loss(-1.0)


def test_a_supervised_dmn_learns_to_point_at_the_supports(device):
    from attention.experiments import fit
    from attention.tasks.qa import gate_supervision_loss
    data = babi_data(1, n_train=200, n_test=50)
    model = memory.build_dmn(data, 1, memory.DMN_RUNS | {"embed_dim": 16, "hidden_dim": 24, "gate_dim": 24}).to(device)
    before = data.evaluate(model, data.train)["support_hits"][0]
    fit(model, data, epochs=15, batch_size=20, lr=1e-2, device=device, progress=False, patience=15,
        loss=gate_supervision_loss(1.0))
    after = data.evaluate(model, data.train)["support_hits"][0]
    assert after > 0.9 and after > before + 0.3, (before, after)
