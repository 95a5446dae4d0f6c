"""Chapter 10: the Transformer's cross-attention scored as alignment on the date task."""
import torch

from attention import results

from attention.studies import alignment
from attention.experiments import dates_data
from attention.models import build
from attention.studies.comparison import transformer_config


def test_head_aers_score_every_layer_and_head():
    data = dates_data(n=60, seed=0)
    torch.manual_seed(0)
    model = build("transformer", transformer_config(data, 16, alignment.ALIGNMENT))
    aers = alignment.head_aers(model, data)
    layers, heads = alignment.ALIGNMENT["transformer"]["num_layers"], alignment.ALIGNMENT["transformer"]["num_heads"]
    assert sorted(aers) == sorted(f"layer{l}/head{h}" for l in range(1, layers + 1) for h in range(1, heads + 1))
    assert all(0.0 <= v <= 1.0 for v in aers.values())


def test_run_alignment_resumes_and_records(tmp_path, monkeypatch):
    small = dates_data(n=80, seed=0)
    monkeypatch.setattr(alignment, "dates_data", lambda *a, **k: small)
    monkeypatch.setattr(alignment, "ALIGNMENT", alignment.ALIGNMENT | {"seeds": [0], "max_epochs": 1})
    monkeypatch.setattr(alignment, "match_transformer", lambda data, target, recipe: 16)
    assert alignment.alignment_status(tmp_path)["done"] == []
    record = alignment.run_alignment(tmp_path)
    cell = record["metrics"]["summary"]["transformer"]
    assert 0 <= cell["aer"]["mean"] <= 1 and 0 <= cell["best_head_aer"]["mean"] <= 1
    assert cell["best_heads"][0].startswith("layer") and "/head" in cell["best_heads"][0]
    assert cell["d_model"] == 16 and cell["reference_parameters"] > 0
    assert results.load_result("transformer-alignment", tmp_path)["command"] == "python -m attention alignment"
    assert alignment.alignment_status(tmp_path)["missing"] == []
