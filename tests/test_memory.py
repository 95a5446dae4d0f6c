"""Chapter 7's recorded run (attention/studies/memory.py) and its task (attention/tasks/qa.py), on a seconds-long stand-in."""

import pytest
import torch

from attention import results
from attention.data.babi import QA
from attention.models import MemN2N, MemN2NConfig
from attention.studies import memory
from attention.tasks.qa import babi_data


def test_babi_data_batches_stories_questions_and_answers():
    data = babi_data(2, n_train=50, n_test=20)
    assert (len(data.train), len(data.valid), len(data.test)) == (45, 5, 20)
    batch = data.collate(data.train[:4])
    B, M, J = batch.story.shape
    assert B == 4 and M == max(len(e.story) for e in data.train[:4])
    for b, e in enumerate(data.train[:4]):
        assert data.vocab.decode(batch.story[b, len(e.story) - 1].tolist())[: len(e.story[-1])] == list(e.story[-1])
        assert torch.all(batch.story[b, len(e.story) :] == 0)  # empty slots after the story
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


TINY = {
    "memory-hops": {"tasks": [1], "hops": [1, 2], "seeds": [0, 1], "n_train": 60, "n_test": 20, "max_epochs": 1},
    "dmn-passes": {
        "passes": [1, 2],
        "seeds": [0],
        "n_train": 60,
        "n_test": 20,
        "hidden_dim": 8,
        "gate_dim": 8,
        "embed_dim": 8,
        "max_epochs": 1,
    },
    "ntm-copy": {
        "seeds": [0],
        "train_lengths": [1, 3],
        "n_train": 16,
        "n_valid": 8,
        "n_test": 8,
        "test_lengths": [6],
        "n_by_length": 4,
        "memory_slots": 8,
        "memory_width": 4,
        "controller_size": 8,
        "lstm_hidden": 8,
        "max_epochs": 1,
    },
}


def _tiny() -> list:
    return [study.with_recipe(**TINY[study.name]) for study in memory.STUDIES]


def test_the_three_studies_are_one_command_with_three_records():
    assert [s.name for s in memory.STUDIES] == ["memory-hops", "dmn-passes", "ntm-copy"]
    assert {s.full_command for s in memory.STUDIES} == {"python -m attention memory"}
    assert [s.recipe for s in memory.STUDIES] == [memory.MEMORY, memory.DMN_RUNS, memory.NTM_RUNS]
    keys = [p.key for s in memory.STUDIES for p in s.pieces(s.recipe)]
    assert len(keys) == len(set(keys)) == 4 * 3 * 5 + 2 * 3 * 5 + 2 * 5
    assert keys[:2] == ["task1/hops1/seed0", "task1/hops2/seed0"] and "supervised/passes3/seed4" in keys


def test_the_memory_studies_resume_and_record_once_every_run_is_done(tmp_path):
    import dataclasses

    from attention.checkpoints import load_checkpoint
    from attention.studies.base import run_study, study_status

    studies = _tiny()
    assert [len(study_status(s, tmp_path)["missing"]) for s in studies] == [4, 2 * 2, 2]
    # a run that stops before its study is done leaves its pieces for the next one
    assert run_study(studies[0], tmp_path, only=["task1/hops1/*"]) is None
    assert study_status(studies[0], tmp_path)["missing"] == ["task1/hops2/seed0", "task1/hops2/seed1"]
    hops, dmn, copy = (run_study(s, tmp_path) for s in studies)
    cell = hops["metrics"]["summary"]["task1/hops2"]
    assert 0 <= cell["accuracy"]["mean"] <= 1 and len(cell["support_hits"]) == 2 and cell["accuracy"]["n"] == 2
    assert [r["key"] for r in hops["metrics"]["runs"]] == [p.key for p in studies[0].pieces(studies[0].recipe)]
    assert set(hops["metrics"]["data"]) == {"1"} and hops["metrics"]["paper"] == memory.PAPER
    passes = dmn["metrics"]["summary"]["supervised/passes2"]
    assert 0 <= passes["accuracy"]["mean"] <= 1 and len(passes["support_hits"]) == 2
    assert (
        "valid" in dmn["metrics"]["runs"][0] and dmn["notes"] == "wall_seconds adds up the training time of every run"
    )
    ntm = copy["metrics"]["summary"]["ntm"]
    assert set(ntm["by_length"]) == {"test", "6"} and 0 <= ntm["by_length"]["6"]["bit_accuracy"]["mean"] <= 1
    assert copy["metrics"]["summary"]["copy-lstm"]["parameters"] > 0
    ntm_seed0, _ = load_checkpoint(memory.copy_model_path("ntm", tmp_path), expect="ntm")
    assert ntm_seed0.cfg.memory_slots == TINY["ntm-copy"]["memory_slots"]
    lstm_seed0, _ = load_checkpoint(memory.copy_model_path("copy-lstm", tmp_path), expect="copy-lstm")
    assert lstm_seed0.cfg.hidden == TINY["ntm-copy"]["lstm_hidden"]
    assert not memory.model_path("memory-hops", "task1/hops1", tmp_path).exists()  # only the copy models are kept
    for name in ("memory-hops", "dmn-passes", "ntm-copy"):
        assert results.load_result(name, tmp_path)["command"] == "python -m attention memory"
    assert all(study_status(s, tmp_path)["missing"] == [] for s in studies)

    def untouchable(*args):
        raise AssertionError("retrained a finished piece")

    again = [run_study(dataclasses.replace(s, run=untouchable), tmp_path) for s in studies]
    assert [r["metrics"] for r in again] == [r["metrics"] for r in (hops, dmn, copy)]  # nothing retrained


def test_a_higher_epoch_cap_reuses_only_the_runs_that_stopped_early(tmp_path):
    from attention.studies.base import study_status, without_seeds

    small = {"tasks": [1], "hops": [1, 2], "seeds": [0], "n_train": 60, "n_test": 20}
    store = results.PartialRuns("memory-hops", without_seeds(memory.MEMORY | small | {"max_epochs": 1}), tmp_path)
    store.add("task1/hops1/seed0", {"stopped": "early stopping: no better validation accuracy for 3 epochs"})
    store.add("task1/hops2/seed0", {"stopped": "max_epochs=1 reached"})
    status = study_status(memory.HOPS_STUDY.with_recipe(**small, max_epochs=2), tmp_path)
    assert status == {"done": ["task1/hops1/seed0"], "missing": ["task1/hops2/seed0"]}
    # a lower cap than the one recorded reuses nothing; another recipe change neither
    assert study_status(memory.HOPS_STUDY.with_recipe(**small, max_epochs=0), tmp_path)["done"] == []
    assert study_status(memory.HOPS_STUDY.with_recipe(**small, max_epochs=2, lr=1e-3), tmp_path)["done"] == []


def test_copy_runs_from_before_the_ntm_cap_are_reused_when_they_ran_the_same_updates(tmp_path):
    from attention.studies.base import study_status, without_seeds

    small = {"seeds": [0, 1], "bits": 4, "lstm_hidden": 8, "ntm_max_epochs": 5}
    study = memory.COPY_STUDY.with_recipe(**small)
    before = {k: v for k, v in study.recipe.items() if k != "ntm_max_epochs"}  # no NTM cap of its own
    store = results.PartialRuns("ntm-copy", without_seeds(before), tmp_path)
    lstm = memory._lstm_parameters(4, 8)
    store.add("copy-lstm/seed0", {"parameters": lstm, "stopped": "max_epochs=300 reached", "epochs_run": 300})
    store.add("ntm/seed0", {"parameters": lstm + 1, "stopped": "early stopping: no better", "epochs_run": 5})
    store.add("ntm/seed1", {"parameters": lstm + 1, "stopped": "early stopping: no better", "epochs_run": 6})
    store.add("copy-lstm/seed1", {"parameters": lstm + 1, "stopped": "max_epochs=300 reached", "epochs_run": 300})
    assert study_status(study, tmp_path)["done"] == ["ntm/seed0", "copy-lstm/seed0"]
    other = results.PartialRuns("ntm-copy", without_seeds(before | {"lr": 1.0}), tmp_path / "other")
    other.add("copy-lstm/seed0", {"parameters": lstm})
    assert study_status(study, tmp_path / "other")["done"] == []


@pytest.mark.parametrize("study", memory.STUDIES, ids=lambda s: s.name)
def test_each_record_regenerates_from_the_record_alone(study, tmp_path):
    """The committed record, copied without its partial file: every piece is done, and summarising
    its rows gives its metrics, wall time and notes again (nothing is trained)."""
    import json
    import shutil

    from attention.studies.base import run_study, study_status

    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", tmp_path)
    record = results.load_result(study.name, tmp_path)
    assert study_status(study, tmp_path) == {"done": [p.key for p in study.pieces(study.recipe)], "missing": []}
    again = run_study(study, tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["wall_seconds"], again.get("notes"), again["recipe"], again["command"]) == (
        record["wall_seconds"],
        record.get("notes"),
        record["recipe"],
        record["command"],
    )
    # ... and a record whose summary does not follow from its rows does not regenerate
    record["metrics"]["runs"][0]["best_epoch"] += 1
    (tmp_path / f"{study.name}.json").write_text(json.dumps(record))
    assert run_study(study, tmp_path, write=False)["metrics"]["summary"] != record["metrics"]["summary"]


def test_every_resumable_command_reports_its_status(tmp_path, capsys):
    """``python -m attention <command> --status`` for every study command: one line per chosen study,
    ``<record>: 0 runs done, <n> missing``, in an empty results folder."""
    import re

    from attention.book import cli
    from attention.studies.registry import commands

    for command, studies in commands().items():
        assert cli.main([command, "--status", "--results-dir", str(tmp_path)]) == 0
        lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("  missing ")]
        assert lines, command
        by_name = {s.name: s for s in studies}
        for line in lines:
            found = re.fullmatch(r"(\S+): 0 runs done, (\d+) missing", line)
            assert found and found[1] in by_name, (command, line)
            study = by_name[found[1]]
            assert int(found[2]) == len(study.pieces(study.recipe)) > 0, (command, line)
    assert cli.main(["memory", "--status", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines() if not line.startswith(" ")] == [
        "memory-hops",
        "dmn-passes",
        "ntm-copy",
    ]
    assert out.startswith("memory-hops: 0 runs done, 60 missing\n")


def test_batches_carry_the_supporting_slots_in_the_files_order():
    data = babi_data(3, n_train=30, n_test=10)
    batch = data.collate(data.train[:5])
    assert batch.supports.shape[0] == 5
    for b, e in enumerate(data.train[:5]):
        kept = list(data.memory(e)[1])
        assert batch.supports[b, : len(kept)].tolist() == kept and bool((batch.supports[b, len(kept) :] == -1).all())


def test_gate_supervision_adds_the_cross_entropy_of_each_pass_on_its_support():
    from attention.models.interface import ClassifierOutput
    from attention.tasks.qa import QABatch, gate_supervision_loss

    gates = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]], [[0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]])  # (B=2, P=2, M=3)
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])

    class Fixed(torch.nn.Module):
        def forward(self, story, question):
            return ClassifierOutput(logits, {"hops": gates})

    batch = QABatch(
        torch.ones(2, 3, 1, dtype=torch.long),
        torch.ones(2, 1, dtype=torch.long),
        torch.tensor([0, 1]),
        torch.tensor([[0, 1, 2], [2, -1, -1]]),
    )
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
    fit(
        model,
        data,
        epochs=15,
        batch_size=20,
        lr=1e-2,
        device=device,
        progress=False,
        patience=15,
        loss=gate_supervision_loss(1.0),
    )
    after = data.evaluate(model, data.train)["support_hits"][0]
    assert after > 0.9 and after > before + 0.3, (before, after)
