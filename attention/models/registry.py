"""Every model family by name, so that a checkpoint can say what it holds and be rebuilt.

    @register_model("seq2seq")
    class Seq2Seq(RNNEncoderDecoder):
        config_class = Seq2SeqConfig
        ...

    model = build("seq2seq", Seq2SeqConfig(src_vocab=100, tgt_vocab=80))
    model_name(model)   # "seq2seq"

A registered class has a ``config_class`` (a dataclass) and is built as ``cls(config)``.
Checkpoints (:mod:`attention.checkpoints`) store the name and the config's fields; that is
all :func:`attention.checkpoints.load_checkpoint` needs to rebuild the model.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, TypeVar

from torch import nn

__all__ = ["MODELS", "register_model", "build", "model_name", "config_from_dict", "count_parameters"]

#: registry name -> model class
MODELS: dict[str, type[nn.Module]] = {}

M = TypeVar("M", bound=type)


def register_model(name: str) -> Callable[[M], M]:
    """Class decorator: register a model family under ``name`` (unique)."""

    def add(cls: M) -> M:
        config = getattr(cls, "config_class", None)
        if config is None or not dataclasses.is_dataclass(config):
            raise TypeError(f"{cls.__name__} needs a dataclass `config_class` to be registered")
        if name in MODELS and MODELS[name] is not cls:
            raise ValueError(f"model name {name!r} is taken by {MODELS[name].__name__}")
        MODELS[name] = cls
        cls.registry_name = name
        return cls

    return add


def model_name(model: nn.Module) -> str:
    """The registry name of ``model``'s class; a clear error for an unregistered model."""
    name = getattr(type(model), "registry_name", None)
    if name is None or MODELS.get(name) is not type(model):
        raise TypeError(
            f"{type(model).__name__} is not a registered model; decorate it with "
            f"@register_model(name) (registered: {sorted(MODELS)})"
        )
    return name


def config_from_dict(name: str, fields: dict):
    """The config of model ``name`` from its saved fields; unknown or missing fields are named."""
    if name not in MODELS:
        raise KeyError(f"no model registered as {name!r} (registered: {sorted(MODELS)})")
    config_class = MODELS[name].config_class
    known = {f.name for f in dataclasses.fields(config_class) if f.init}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"{config_class.__name__} has no field(s) {unknown}")
    try:
        return config_class(**fields)
    except TypeError as err:
        raise ValueError(f"cannot build {config_class.__name__} from {sorted(fields)}: {err}") from None


def build(name: str, config) -> nn.Module:
    """A new model of family ``name`` from its config (a dataclass or a dict of its fields)."""
    if name not in MODELS:
        raise KeyError(f"no model registered as {name!r} (registered: {sorted(MODELS)})")
    if isinstance(config, dict):
        config = config_from_dict(name, config)
    expected = MODELS[name].config_class
    if not isinstance(config, expected):
        raise TypeError(f"model {name!r} takes a {expected.__name__}, got {type(config).__name__}")
    return MODELS[name](config)


def count_parameters(model: nn.Module) -> int:
    """How many numbers ``model`` learns (every parameter, trainable or not)."""
    return sum(p.numel() for p in model.parameters())
