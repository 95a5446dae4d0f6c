"""Chapter 10: the Transformer's cross-attention scored as alignment on the date task."""

import dataclasses
import shutil

import pytest
import torch

from attention import results
from attention.checkpoints import load_checkpoint
from attention.experiments import dates_data
from attention.models import build
from attention.studies import alignment
from attention.studies.base import run_study, study_status
from attention.studies.comparison import transformer_config


def test_head_aers_score_every_layer_and_head():
    data = dates_data(n=60, seed=0)
    torch.manual_seed(0)
    model = build("transformer", transformer_config(data, 16, alignment.ALIGNMENT))
    aers = alignment.head_aers(model, data)
    layers, heads = alignment.ALIGNMENT["transformer"]["num_layers"], alignment.ALIGNMENT["transformer"]["num_heads"]
    assert sorted(aers) == sorted(f"layer{l}/head{h}" for l in range(1, layers + 1) for h in range(1, heads + 1))
    assert all(0.0 <= v <= 1.0 for v in aers.values())


def test_the_study_resumes_records_and_keeps_seed_0s_model(tmp_path, monkeypatch):
    small = dates_data(n=80, seed=0)
    monkeypatch.setattr(alignment, "dates_data", lambda *a, **k: small)
    monkeypatch.setattr(alignment, "match_transformer", lambda data, target, recipe: 16)
    study = alignment.STUDY.with_recipe(seeds=[0, 1], max_epochs=1)
    assert study_status(study, tmp_path)["done"] == []
    assert run_study(study, tmp_path, only=["*/seed0"]) is None  # seed 1 missing: no record yet
    kept = alignment.alignment_model_path(tmp_path)
    assert kept == tmp_path / "models" / "transformer-alignment-transformer-seed0.pt" and kept.exists()
    model, extra = load_checkpoint(kept)
    assert model.cfg.d_model == 16 and extra["recipe"] == study.recipe
    ran = []

    def counting(study, piece, data, device):
        ran.append(piece.key)
        return alignment._run(study, piece, data, device)

    record = run_study(dataclasses.replace(study, run=counting), tmp_path)
    assert ran == ["transformer/seed1"]
    cell = record["metrics"]["summary"]["transformer"]
    assert 0 <= cell["aer"]["mean"] <= 1 and 0 <= cell["best_head_aer"]["mean"] <= 1 and cell["aer"]["n"] == 2
    assert cell["best_heads"][0].startswith("layer") and "/head" in cell["best_heads"][0]
    reference = results.load_result("ablation-converged")["metrics"]["summary"]["dates"]["bahdanau-additive"]
    assert cell["d_model"] == 16 and cell["reference_parameters"] == reference["parameters"]
    assert results.load_result("transformer-alignment", tmp_path)["command"] == "python -m attention alignment"
    assert study_status(study, tmp_path)["missing"] == []


def _never(study, piece, data, device):
    pytest.fail(f"ran {piece.key}, which the registry holds")


def test_the_record_regenerates_from_itself(tmp_path):
    study = alignment.STUDY
    shutil.copy(results.RESULTS_DIR / f"{study.name}.json", tmp_path)  # the record alone: no partial file
    record = results.load_result(study.name, tmp_path)
    status = study_status(study, tmp_path)
    assert status["missing"] == [] and status["done"] == ["transformer/seed0", "transformer/seed1", "transformer/seed2"]
    again = run_study(dataclasses.replace(study, run=_never), tmp_path, write=False)
    assert again["metrics"] == record["metrics"]
    assert (again["recipe"], again["seeds"], again["command"]) == (record["recipe"], record["seeds"], record["command"])
    assert again["wall_seconds"] == record["wall_seconds"] and again.get("notes") == record.get("notes")
    assert (
        alignment.alignment_model_path()
        == results.RESULTS_DIR / "models" / "transformer-alignment-transformer-seed0.pt"
    )


def test_digits_only_head_aers_drop_the_hyphens_links():
    data = dates_data(n=60, seed=0)
    torch.manual_seed(0)
    model = build("transformer", transformer_config(data, 16, alignment.ALIGNMENT))
    every, digits = alignment.head_aers(model, data), alignment.head_aers(model, data, aligned_only=True)
    assert sorted(every) == sorted(digits)
    # a gold-perfect map scores 0 over the digits only: the hyphens' forced links are what 'every' counts
    from attention.metrics import aer
    from attention.tasks.translation import drop_unaligned

    pairs = list(data.test)
    perfect = [set(p.sure) | {(0, t) for t in range(len(p.tgt)) if t not in {j for _, j in p.sure}} for p in pairs]
    assert aer(drop_unaligned(perfect, pairs), [p.sure for p in pairs], [p.possible for p in pairs]) == 0.0
    assert aer(perfect, [p.sure for p in pairs], [p.possible for p in pairs]) > 0.0


def test_rows_without_the_digits_only_head_are_run_again():
    record = results.load_result("transformer-alignment")
    study = alignment.STUDY
    assert set(alignment._recorded(study, record)) == {"transformer/seed0", "transformer/seed1", "transformer/seed2"}
    old = {**record, "metrics": {**record["metrics"], "runs": [dict(r) for r in record["metrics"]["runs"]]}}
    del old["metrics"]["runs"][1]["best_head_aer_aligned"]
    assert set(alignment._recorded(study, old)) == {"transformer/seed0", "transformer/seed2"}
    cell = record["metrics"]["summary"]["transformer"]
    assert 0 <= cell["best_head_aer_aligned"]["mean"] <= cell["aer_aligned"]["mean"]
    assert len(cell["best_heads_aligned"]) == 3
