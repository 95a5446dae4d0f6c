"""Chapter 8's recorded run (attention/studies/captioning.py), on a seconds-long stand-in."""
import pytest
import torch

from attention import results

from attention.studies import captioning
from attention.tasks.captions import digit_captions

TINY = {"seeds": [0], "n_train": 40, "n_valid": 16, "n_test": 16, "max_epochs": 1, "spread_samples": 3,
        "spread_batch": 4}


def test_run_captions_resumes_and_records_once_every_run_is_done(tmp_path, monkeypatch):
    monkeypatch.setattr(captioning, "CAPTIONS", captioning.CAPTIONS | TINY)
    assert captioning.captions_status(tmp_path)["missing"] == ["soft/seed0", "hard/seed0", "gumbel/seed0"]
    record = captioning.run_captions(tmp_path)
    summary = record["metrics"]["summary"]
    assert set(summary) == {"soft", "hard", "gumbel"}
    for arm in summary.values():
        for m in ("exact_match", "digit_accuracy", "alignment"):
            assert 0 <= arm[m]["mean"] <= 1
    spread = record["metrics"]["gradient_spread"]
    assert set(spread) == {"hard, baseline", "hard, no baseline", "soft, one batch", "soft, across batches"}
    assert spread["soft, one batch"]["mean_variance"]["mean"] < 1e-10  # deterministic on one batch
    assert spread["hard, no baseline"]["mean_variance"]["mean"] > 0
    assert record["metrics"]["paper"] == captioning.PAPER
    assert results.load_result("soft-hard-captions", tmp_path)["command"] == "python -m attention captions"
    assert captioning.captions_status(tmp_path)["missing"] == []
    from attention.checkpoints import load_checkpoint
    hard, _ = load_checkpoint(captioning.captioner_path("hard", tmp_path), expect="show-attend-tell")
    assert hard.cfg.attention == "hard"
    assert captioning.run_captions(tmp_path)["metrics"]["runs"] == record["metrics"]["runs"]  # nothing retrained


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
    assert (model.cfg.pad_id, model.cfg.bos_id, model.cfg.eos_id) == (data.vocab.pad_id, data.vocab.bos_id,
                                                                      data.vocab.eos_id)
    assert model.cfg.attention == "hard" and model.grid == (16 >> captioning.CAPTIONS["pools"], 40 >> captioning.CAPTIONS["pools"])
    with pytest.raises(ValueError, match="attention must be one of"):
        captioning.build_captioner(data, "sharp")


def test_the_figures_of_chapter_8_draw_and_refuse_bad_shapes():
    from attention.viz import canvases_figure, glimpse_figure
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
