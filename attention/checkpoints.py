"""Checkpoints that say what they hold: any registered model, rebuilt by one function.

    save_checkpoint("m.pt", model, vocab=data.tgt_vocab, history=history)
    model, extra = load_checkpoint("m.pt")            # the right class, config and weights
    model, extra = load_checkpoint("m.pt", expect="luong", map_location="cuda")

A checkpoint is a dict: a format tag, the model's registry name
(:func:`attention.models.registry.model_name`), its config's fields, the weights, and the
extras. Files are read with ``torch.load(weights_only=True)``, which unpickles only tensors
and plain data, so extras are stored as plain data: numbers, strings, tensors, lists, tuples
and dicts of them, plus two kinds of this package's own objects, rebuilt on loading --
dataclasses (e.g. a training :class:`~attention.train.History`) and classes with
``to_dict()`` / ``from_dict()`` (e.g. :class:`~attention.data.vocab.Vocab`). Anything else is
refused when saving, so nothing saved is lost on loading.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .models.registry import MODELS, build, config_from_dict, model_name

__all__ = ["FORMAT", "save_checkpoint", "load_checkpoint", "CheckpointError"]

FORMAT = "attention-nlp checkpoint"
VERSION = 1
_OBJECT = "__attention_object__"  # marks an encoded object in the extras
#: what every checkpoint holds besides its format tag and version, and of which kind
REQUIRED = {"model": str, "config": dict, "state_dict": dict, "extra": dict}


class CheckpointError(ValueError):
    """A file that is not a checkpoint of this package, or not the one expected."""


def _encode(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_encode(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise TypeError(f"extra {where} has a key of type {type(k).__name__}; use str or int keys")
        return {k: _encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    cls = type(value)
    path = f"{cls.__module__}:{cls.__qualname__}"
    if cls.__module__.split(".")[0] == "attention":
        if dataclasses.is_dataclass(value):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
            return {_OBJECT: path, "kind": "dataclass", "data": _encode(fields, where)}
        if hasattr(value, "to_dict") and hasattr(cls, "from_dict"):
            return {_OBJECT: path, "kind": "to_dict", "data": _encode(value.to_dict(), where)}
    raise TypeError(
        f"extra {where} is a {cls.__name__} ({path}), which a checkpoint cannot keep: "
        "store plain data (numbers, strings, tensors, lists, dicts), a dataclass of this "
        "package, or an object with to_dict()/from_dict()"
    )


def _decode(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_decode(v) for v in value)
    if not isinstance(value, dict):
        return value
    if _OBJECT not in value:
        return {k: _decode(v) for k, v in value.items()}
    module, _, qualname = value[_OBJECT].partition(":")
    if module.split(".")[0] != "attention":
        raise CheckpointError(f"refusing to rebuild {value[_OBJECT]}: only this package's classes are allowed")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    data = _decode(value["data"])
    return cls(**data) if value["kind"] == "dataclass" else cls.from_dict(data)


def save_checkpoint(path: str | Path, model: nn.Module, **extra) -> None:
    """Save a registered model (name, config, weights) and ``extra`` keyword data."""
    blob = {
        "format": FORMAT,
        "version": VERSION,
        "model": model_name(model),
        "config": dataclasses.asdict(model.cfg),
        "state_dict": model.state_dict(),
        "extra": {k: _encode(v, k) for k, v in extra.items()},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(blob, tmp)
    tmp.replace(path)  # a crash mid-write never leaves half a checkpoint under the real name


def _read(path: Path, map_location) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        blob = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # a foreign file can fail the unpickler in any way (KeyError, EOFError ...)
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            f"{path} is not a checkpoint of this package: torch.load cannot read it "
            f"({first}). Expected a file written by attention.checkpoints.save_checkpoint"
        ) from None
    if not isinstance(blob, dict):
        raise CheckpointError(
            f"{path} holds a {type(blob).__name__}, not a checkpoint "
            "(expected a dict written by attention.checkpoints.save_checkpoint)"
        )
    if blob.get("format") != FORMAT:
        if blob and all(isinstance(v, torch.Tensor) for v in blob.values()):
            example = next(iter(blob))
            raise CheckpointError(
                f"{path} is a bare state_dict ({len(blob)} tensors, e.g. {example!r}), not a checkpoint: it "
                "does not say which model it belongs to. Build the model yourself and call "
                "model.load_state_dict(torch.load(path)), or save with attention.checkpoints.save_checkpoint"
            )
        raise CheckpointError(
            f"{path} is a dict with keys {sorted(map(str, blob))[:8]}, not a checkpoint "
            f"(no format tag {FORMAT!r}: written by something other than save_checkpoint, "
            "or by an older version of this package)"
        )
    if blob.get("version") != VERSION:
        raise CheckpointError(
            f"{path} is checkpoint format version {blob.get('version')}; this package reads version {VERSION}"
        )
    missing = [key for key in REQUIRED if key not in blob]
    if missing:
        raise CheckpointError(
            f"{path} is an incomplete checkpoint: it lacks {', '.join(map(repr, missing))} "
            f"(a checkpoint holds {', '.join(map(repr, REQUIRED))}; it has "
            f"{sorted(map(str, blob))}). Save it again with save_checkpoint"
        )
    wrong = [
        f"{key!r} is a {type(blob[key]).__name__}, not a {kind.__name__}"
        for key, kind in REQUIRED.items()
        if not isinstance(blob[key], kind)
    ]
    if wrong:
        raise CheckpointError(f"{path} is a damaged checkpoint: {'; '.join(wrong)}. Save it again with save_checkpoint")
    return blob


def load_checkpoint(path: str | Path, expect: str | type | None = None, map_location=None) -> tuple[nn.Module, dict]:
    """Rebuild the model saved by :func:`save_checkpoint`; returns ``(model, extra)``.

    Args:
        expect: a registry name or model class; a checkpoint of another model is refused.
        map_location: where the tensors go (``"cpu"``, ``"cuda"``, a device).
    """
    path = Path(path)
    blob = _read(path, map_location)
    name = blob["model"]
    if name not in MODELS:
        raise CheckpointError(
            f"{path} holds a model registered as {name!r}, which this package does not "
            f"have (registered: {sorted(MODELS)})"
        )
    if expect is not None:
        wanted = expect if isinstance(expect, str) else getattr(expect, "registry_name", expect.__name__)
        if wanted != name:
            raise CheckpointError(f"{path} holds a {name!r} model ({MODELS[name].__name__}), expected {wanted!r}")
    try:
        config = config_from_dict(name, blob["config"])
    except ValueError as err:
        raise CheckpointError(f"{path}: its config does not fit {MODELS[name].__name__}: {err}") from None
    model = build(name, config)
    try:
        model.load_state_dict(blob["state_dict"])
    except RuntimeError as err:
        raise CheckpointError(
            f"{path}: its weights do not fit a {MODELS[name].__name__} built from its "
            f"config: {' '.join(str(err).split())[:400]}"
        ) from None
    if map_location is not None:
        model.to(map_location)
    return model, _decode(blob["extra"])
