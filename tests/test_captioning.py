"""Chapter 8's recorded run (attention/studies/captioning.py), on a seconds-long stand-in."""

import pytest
import torch

from attention import results
from attention.studies import captioning
from attention.tasks.captions import digit_captions

TINY = {
    "seeds": [0],
    "n_train": 40,
    "n_valid": 16,
    "n_test": 16,
    "max_epochs": 1,
    "spread_samples": 3,
    "spread_batch": 4,
    "arm_changes": {"hard-pure": {"expectation_prob": 0.0, "max_epochs": 1}},
}


def test_the_study_resumes_and_records_once_every_run_is_done(tmp_path):
    import dataclasses

    from attention.studies.base import run_study, study_status

    study = captioning.STUDY.with_recipe(**TINY)
    keys = ["soft/seed0", "hard/seed0", "gumbel/seed0", "hard-pure/seed0"]
    assert study_status(study, tmp_path)["missing"] == keys
    assert run_study(study, tmp_path, only=["hard/*"]) is None  # a piece at a time, kept as it lands
    assert study_status(study, tmp_path) == {"done": ["hard/seed0"], "missing": [k for k in keys if k != "hard/seed0"]}
    record = run_study(study, tmp_path)
    summary = record["metrics"]["summary"]
    assert list(summary) == ["soft", "hard", "gumbel", "hard-pure"]
    for arm in summary.values():
        for m in ("exact_match", "digit_accuracy", "alignment"):
            assert 0 <= arm[m]["mean"] <= 1
        assert arm["parameters"] > 0 and isinstance(arm["converged"], bool)
    spread = record["metrics"]["gradient_spread"]
    assert set(spread) == {"hard, baseline", "hard, no baseline", "soft, one batch", "soft, across batches"}
    assert spread["soft, one batch"]["mean_variance"]["mean"] < 1e-10  # deterministic on one batch
    assert spread["hard, no baseline"]["mean_variance"]["mean"] > 0
    assert record["metrics"]["paper"] == captioning.PAPER
    assert [r["key"] for r in record["metrics"]["runs"]] == keys
    assert ["gradient_spread" in r for r in record["metrics"]["runs"]] == [False, True, False, False]
    assert results.load_result("soft-hard-captions", tmp_path)["command"] == "python -m attention captions"
    assert study_status(study, tmp_path)["missing"] == []
    from attention.checkpoints import load_checkpoint

    for arm in ("soft", "hard", "gumbel"):
        model, _ = load_checkpoint(captioning.captioner_path(arm, tmp_path), expect="show-attend-tell")
        assert model.cfg.attention == arm
    assert not captioning.captioner_path("hard-pure", tmp_path).exists()  # only the three kinds are kept

    def untouchable(*args):
        raise AssertionError("retrained a finished piece")

    again = run_study(dataclasses.replace(study, run=untouchable), tmp_path)
    assert again["metrics"] == record["metrics"]  # nothing retrained


def test_the_record_regenerates_from_the_record_alone(tmp_path):
    """The committed record, copied without its partial file: every piece is done, and summarising
    its rows gives its metrics, wall time and notes again (nothing is trained)."""
    import json
    import shutil

    from attention.studies.base import run_study, study_status

    study = captioning.STUDY
    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", tmp_path)
    record = results.load_result(study.name, tmp_path)
    assert study_status(study, tmp_path) == {
        "done": [f"{a}/seed{s}" for s in study.recipe["seeds"] for a in study.recipe["arms"]],
        "missing": [],
    }
    again = run_study(study, tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["wall_seconds"], again.get("notes"), again["recipe"], again["command"]) == (
        record["wall_seconds"],
        record.get("notes"),
        record["recipe"],
        record["command"],
    )
    # ... and a record whose summary does not follow from its rows does not regenerate
    record["metrics"]["runs"][1]["gradient_spread"]["hard, baseline"]["mean_variance"] *= 2
    (tmp_path / f"{study.name}.json").write_text(json.dumps(record))
    assert run_study(study, tmp_path, write=False)["metrics"]["gradient_spread"] != record["metrics"]["gradient_spread"]


def test_chance_alignment_counts_the_cells_that_overlap_each_digit():
    data = digit_captions(n_train=4, n_valid=2, n_test=5)
    # one cell covering the whole canvas overlaps every digit
    assert captioning.chance_alignment(data, (1, 1)) == 1.0
    # a 4 x 10 grid of 4 x 4-pixel cells: an 8 x 8 digit overlaps 2-3 rows and 2-3 columns of cells
    share = captioning.chance_alignment(data, (4, 10))
    assert 4 / 40 <= share <= 9 / 40


def test_build_captioner_uses_the_tasks_vocabulary():
    data = digit_captions(n_train=4, n_valid=2, n_test=2)
    model = captioning.build_captioner(data, "hard")
    assert (model.cfg.pad_id, model.cfg.bos_id, model.cfg.eos_id) == (
        data.vocab.pad_id,
        data.vocab.bos_id,
        data.vocab.eos_id,
    )
    assert model.cfg.attention == "hard" and model.grid == (
        16 >> captioning.CAPTIONS["pools"],
        40 >> captioning.CAPTIONS["pools"],
    )
    with pytest.raises(ValueError, match="attention must be one of"):
        captioning.build_captioner(data, "sharp")


def test_the_figures_of_chapter_8_draw_and_refuse_bad_shapes():
    from attention.book.chapters.ch08 import canvases_figure, glimpse_figure

    data = digit_captions(n_train=4, n_valid=2, n_test=3)
    images = torch.stack([e.image for e in data.test])
    fig = canvases_figure(images, [["one", "two", "three"]] * 3, [e.boxes for e in data.test], grid=(2, 5))
    assert len(fig.axes) == 3 and len(fig.axes[0].patches) == 3
    with pytest.raises(ValueError, match="n captions"):
        canvases_figure(images, [["one"]])
    weights = torch.zeros(2, 5)
    weights[1, 3] = 1.0
    fig = glimpse_figure(images[0], weights, ["one", "two", "<eos>"], step=2, sample=8)
    assert len(fig.axes[0].patches) == 1 and "[two]" in fig.axes[0].get_xlabel()
    with pytest.raises(ValueError, match="step must be in 1..3"):
        glimpse_figure(images[0], weights, ["one", "two", "<eos>"], step=4)


def test_hard_pure_is_hard_attention_trained_by_reinforce_alone():
    from attention.studies.base import Piece

    study = captioning.STUDY.with_recipe(**TINY)
    data = digit_captions(n_train=8, n_valid=4, n_test=4)
    assert captioning.CAPTIONS["arm_changes"]["hard-pure"]["expectation_prob"] == 0.0
    for arm, expectation_prob in (("hard-pure", 0.0), ("hard", captioning.CAPTIONS["expectation_prob"])):
        torch.manual_seed(0)
        row, model = captioning._run(study, Piece(f"{arm}/seed0", arm, 0, {"key": f"{arm}/seed0"}), data, "cpu")
        assert model.cfg.attention == "hard" and model.cfg.expectation_prob == expectation_prob
        assert ("gradient_spread" in row) == (arm == "hard")
    with pytest.raises(ValueError, match="unknown arm 'sharp'"):
        captioning._run(study, Piece("sharp/seed0", "sharp", 0, {}), data, "cpu")


def test_a_record_of_fewer_arms_holds_its_rows_under_more():
    recipe = captioning.CAPTIONS
    three = {**recipe, "arms": ["soft", "hard", "gumbel"], "seeds": [0, 1, 2]}
    assert captioning.STUDY.holds(three, recipe)
    assert not captioning.STUDY.holds({**three, "arms": ["soft", "sharp"]}, recipe)
    assert not captioning.STUDY.holds({**three, "lr": 1.0}, recipe)
    # a record that lists hard-pure holds its rows only under the same changes for it
    assert captioning.STUDY.holds(recipe, recipe)
    other = {**recipe, "arm_changes": {"hard-pure": {"expectation_prob": 0.0, "max_epochs": 40}}}
    assert not captioning.STUDY.holds(other, recipe)
