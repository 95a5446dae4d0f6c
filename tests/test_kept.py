"""Kept models (experiments.fit_kept): what the chapters decode with, the same on every processor."""

import json

import nbformat
import pytest
import torch
from test_notebook_outputs import NOTEBOOKS

import attention
from attention import experiments as ex
from attention.device import session_seed

RECIPE = dict(epochs=1, progress=False)


def _model(data):
    return ex.build_model(data, attention="dot", model="luong", embed_dim=8, hidden_dim=8)


@pytest.fixture
def dates():
    return ex.dates_data(n=120)


def test_a_missing_kept_model_is_an_error_that_says_how_to_keep_it(dates, tmp_path, monkeypatch):
    monkeypatch.delenv("ATTENTION_KEEP", raising=False)
    with pytest.raises(FileNotFoundError, match="ATTENTION_KEEP=1"):
        ex.fit_kept("toy", _model(dates), dates, directory=tmp_path, **RECIPE)
    assert not list(tmp_path.iterdir())


def test_kept_once_then_loaded_with_its_history(dates, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_KEEP", "1")
    attention.setup(seed=0)
    trained, history = ex.fit_kept("toy", _model(dates), dates, directory=tmp_path, **RECIPE)
    assert ex.kept_path("toy", tmp_path).exists() and len(history.epochs) == 1
    monkeypatch.delenv("ATTENTION_KEEP")
    fresh = _model(dates)  # other initial weights: the kept ones must come back
    loaded, kept_history = ex.fit_kept("toy", fresh, dates, directory=tmp_path, **RECIPE)
    assert loaded is not fresh and kept_history.epochs == history.epochs
    for (name, a), b in zip(trained.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), name
    model, extra = ex.load_kept("toy", directory=tmp_path)
    assert not model.training and extra["identity"]["recipe"] == {"epochs": 1, "seed": 0}
    assert {"versions", "machine", "cpu_capability"} <= set(extra["trained_on"])
    # retrain=True trains here and leaves the kept file alone
    before = ex.kept_path("toy", tmp_path).read_bytes()
    again, h = ex.fit_kept("toy", fresh, dates, directory=tmp_path, retrain=True, **RECIPE)
    assert again is fresh and len(h.epochs) == 1 and ex.kept_path("toy", tmp_path).read_bytes() == before


def test_a_kept_model_asked_with_another_recipe_or_model_is_refused(dates, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_KEEP", "1")
    attention.setup(seed=0)
    ex.fit_kept("toy", _model(dates), dates, directory=tmp_path, **RECIPE)
    with pytest.raises(ValueError, match="recipe: kept .*'epochs': 1.*asked .*'epochs': 2"):
        ex.fit_kept("toy", _model(dates), dates, directory=tmp_path, epochs=2, progress=False)
    bigger = ex.build_model(dates, attention="dot", model="luong", embed_dim=8, hidden_dim=16)
    with pytest.raises(ValueError, match="config"):
        ex.fit_kept("toy", bigger, dates, directory=tmp_path, **RECIPE)
    with pytest.raises(ValueError, match="task"):
        other = ex.dates_data(n=140)
        ex.fit_kept("toy", _model(other), other, directory=tmp_path, **RECIPE)


def test_another_session_seed_trains_instead_of_loading(dates, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_KEEP", "1")
    attention.setup(seed=0)
    ex.fit_kept("toy", _model(dates), dates, directory=tmp_path, **RECIPE)
    monkeypatch.setenv("ATTENTION_SEED", "3")
    attention.setup(seed=0)
    assert session_seed() == 3
    model = _model(dates)
    trained, history = ex.fit_kept("toy", model, dates, directory=tmp_path, **RECIPE)
    assert trained is model and history is not None
    monkeypatch.delenv("ATTENTION_SEED")
    attention.setup(seed=0)
    assert session_seed() == 0


def test_the_session_seed_is_the_default_seed_of_the_builders_and_of_fit(dates, monkeypatch):
    attention.setup(seed=0)
    a = _model(dates)
    attention.setup(seed=5)
    b, c = _model(dates), ex.build_model(dates, attention="dot", model="luong", embed_dim=8, hidden_dim=8, seed=5)
    assert (
        not torch.equal(a.state_dict()["tgt_embed.weight"], b.state_dict()["tgt_embed.weight"])
        if "tgt_embed.weight" in a.state_dict()
        else True
    )
    assert all(torch.equal(x, y) for x, y in zip(b.state_dict().values(), c.state_dict().values()))
    assert any(not torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    attention.setup(seed=0)


def test_a_bad_seed_override_is_refused(monkeypatch):
    monkeypatch.setenv("ATTENTION_SEED", "one")
    with pytest.raises(ValueError, match="ATTENTION_SEED must be an integer"):
        attention.setup(seed=0)
    monkeypatch.delenv("ATTENTION_SEED")
    with pytest.raises(ValueError, match="non-negative integer"):
        attention.setup(seed=-1)
    attention.setup(seed=0)


def test_a_kept_name_is_a_plain_file_stem():
    for bad in ("", "../x", "a b", ".hidden"):
        with pytest.raises(ValueError, match="plain file stem"):
            ex.kept_path(bad)


def _kept_names_in_notebooks():
    import re

    names = set()
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                names |= set(re.findall(r'(?:fit_kept|load_kept)\(\s*"([^"]+)"', cell.source))
    return sorted(names)


@pytest.mark.parametrize("name", _kept_names_in_notebooks())
def test_every_kept_model_a_notebook_names_is_in_the_package_and_loads(name):
    model, extra = ex.load_kept(name)
    assert extra["history"].epochs and extra["history"].best_epoch >= 1
    assert extra["identity"]["recipe"]["seed"] == 0
    assert json.dumps(extra["identity"])  # plain data
    assert sum(p.numel() for p in model.parameters()) > 0


def test_the_notebooks_keep_four_models_and_let_the_reader_retrain_them():
    assert set(_kept_names_in_notebooks()) == {
        "hsk-encoder-decoder",
        "hsk-rnnsearch",
        "dates-rnnsearch",
        "digits-reverser",
    }
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "fit_kept(" in cell.source and "retrain=RETRAIN" in cell.source:
                assert "RETRAIN = False" in cell.source, f"{path.name}: the switch is in the cell that trains"
