"""Experiments in a few calls: any registered model, any task, one training recipe.

    data = hsk_data()                                # a task: HSK zh->en, split, vocabularies
    model = build_model(data, attention="additive")  # RNNsearch; attention=None: encoder–decoder
    history = fit(model, data, epochs=6)             # fixed updates: reruns give the same numbers
    report = evaluate(model, data)                   # the task's metric: here sacreBLEU, by length ...

:func:`fit` and :func:`evaluate` take any model registered in :mod:`attention.models.registry`
and any :class:`~attention.tasks.base.Task` (translation, classification ...). A chapter that
needs a model another chapter trained calls :func:`fit_cached`, which retrains only when no
checkpoint with the same key is in the cache; the key covers the model and its config, the
task's data and vocabularies, the recipe, torch's version and the meaning of the library's code that
decides weights (:mod:`attention.provenance`: docstrings, comments and layout left out)
(training on one CPU thread is deterministic, so a cached model is the model it would train).

The translation helpers the chapters use (``hsk_data``, ``translate``, ``join_pairs`` ...) live
in :mod:`attention.tasks.translation` and are importable from here too, so a chapter needs one
import. The book's long recorded runs (chapter 3's ``python -m attention convergence``, ...) are
declared in :mod:`attention.studies` and read back through :mod:`attention.results`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import nn

from .checkpoints import load_checkpoint, save_checkpoint
from .data.cache import default_cache_dir
from .device import session_seed
from .models import build, model_name
from .provenance import code_fingerprint
from .results import environment
from .tasks import (
    Task,
    Translated,
    TranslationData,
    alignment_error_rate,
    attention_links,
    dates_data,
    decode_steps,
    ding_data,
    forced_attention,
    hsk_data,
    join_pairs,
    translate,
)
from .train import History, LossFn, TrainConfig, train

__all__ = [
    "fit",
    "fit_cached",
    "fit_kept",
    "load_kept",
    "kept_path",
    "KEPT_DIR",
    "evaluate",
    "build_model",
    "cache_key",
    "package_fingerprint",
    "TRANSLATION_RECIPE",
    # translation helpers, from attention.tasks.translation
    "TranslationData",
    "Translated",
    "hsk_data",
    "ding_data",
    "dates_data",
    "translate",
    "join_pairs",
    "attention_links",
    "decode_steps",
    "forced_attention",
    "alignment_error_rate",
]

PACKAGE_ROOT = Path(__file__).resolve().parent

#: The recipe chapters 2 and 3 train with: same data, seed and budget for both models.
TRANSLATION_RECIPE = {"epochs": 7, "lr": 3e-3, "batch_size": 32}


def build_model(
    data: TranslationData, attention: str | None = "additive", seed: int | None = None, model: str = "seq2seq", **config
) -> nn.Module:
    """A translation model (registry name ``model``) sized for ``data``'s vocabularies.

    Chapter defaults: E = H = 128, dropout 0.3; ``config`` overrides any config field.
    ``seed`` (the initial weights) defaults to the session's (:func:`attention.device.session_seed`).
    """
    defaults = dict(embed_dim=128, hidden_dim=128, dropout=0.3)
    torch.manual_seed(session_seed(seed))
    return build(
        model,
        dict(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab), attention=attention, **(defaults | config)),
    )


def fit(
    model: nn.Module,
    task: Task,
    epochs: int = 7,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int | None = None,
    device=None,
    progress: bool = True,
    max_seconds: float | None = None,
    on_epoch: Callable[[dict, nn.Module], None] | None = None,
    select: str = "metric",
    patience: int = 3,
    warmup: int = 0,
    betas: tuple[float, float] = (0.9, 0.999),
    loss: LossFn | None = None,
    clock: str = "wall",
    clip: float = 1.0,
    snapshots: Sequence[float] = (),
    on_step: Callable[[int, float, float], None] | None = None,
) -> History:
    """Train ``model`` on ``task.train`` for at most ``epochs`` with the task's loss (or ``loss``,
    e.g. ``sequence_loss`` with label smoothing).

    After each epoch the model is validated on ``task.valid``; with ``select="metric"`` (the
    default) the best epoch is the one with the best validation metric of the task
    (``task.metric``: BLEU, accuracy), and training stops after ``patience`` epochs without a
    better one; ``select="loss"`` uses the validation loss instead. The model ends holding its
    best epoch's weights. The defaults are the chapters' recipe (:data:`TRANSLATION_RECIPE`);
    ``warmup``, ``betas``, ``clock`` (what ``max_seconds`` counts) and ``clip`` (the largest gradient
    norm) are those of :class:`~attention.train.TrainConfig` (the Transformer's recipe warms the learning rate up);
    ``snapshots`` (shorter budgets kept on the way) and ``on_step`` are :func:`~attention.train.train`'s.
    ``seed`` (dropout and the batch order) defaults to the session's (:func:`attention.device.session_seed`).
    """
    if select not in ("metric", "loss"):
        raise ValueError(f"select must be 'metric' or 'loss', got {select!r}")
    seed = session_seed(seed)
    device = device or next(model.parameters()).device
    model.to(device)
    torch.manual_seed(seed)
    valid = [b.to(device) for b in task.valid_batches()]

    def train_batches(epoch):
        for b in task.train_batches(batch_size, seed, epoch):
            yield b.to(device)

    cfg = TrainConfig(
        max_epochs=epochs,
        max_seconds=max_seconds,
        lr=lr,
        patience=patience,
        progress=progress,
        metric=task.metric,
        warmup=warmup,
        betas=betas,
        clock=clock,
        clip=clip,
        snapshots=tuple(snapshots),
    )
    metric = task.validation_metric if select == "metric" else None
    return train(
        model,
        train_batches,
        lambda: valid,
        loss or task.loss,
        cfg,
        on_epoch=on_epoch,
        valid_metric=metric,
        on_step=on_step,
    )


def evaluate(model: nn.Module, task: Task, examples: Sequence | None = None, **options) -> dict:
    """The task's metric(s) on ``examples`` (default: its test split); see ``task.evaluate``.

    The model is left in the mode (train or eval) it was in.
    """
    was_training = model.training
    try:
        return task.evaluate(model, examples, **options)
    finally:
        model.train(was_training)


def package_fingerprint(root: str | Path = PACKAGE_ROOT) -> str:
    """The fingerprint of the code that decides trained weights (:func:`attention.provenance.code_fingerprint`):
    any change of that code changes it; a docstring, a comment, a reformat, the figures or the book's
    code do not."""
    return code_fingerprint(root)


def cache_key(model: nn.Module, task: Task, **recipe) -> str:
    """Hash of everything that decides the trained weights (see the module docstring)."""
    blob = json.dumps(
        {
            "model": model_name(model),
            "config": dataclasses.asdict(model.cfg),
            "task": task.fingerprint(),
            "recipe": recipe,
            "torch": torch.__version__.split("+")[0],
            "code": package_fingerprint(),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: the environment variable that moves the model cache alone (the corpora stay where they are)
MODEL_CACHE_ENV = "ATTENTION_MODEL_DIR"


def model_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """Where :func:`fit_cached` keeps models: ``cache_dir/models`` when given, else
    ``$ATTENTION_MODEL_DIR``, else ``models/`` in the data cache (:func:`default_cache_dir`).
    The test command points ``$ATTENTION_MODEL_DIR`` at an empty folder, so no model trained
    by another run (or another processor) is what makes a check pass."""
    if cache_dir is None and os.environ.get(MODEL_CACHE_ENV):
        return Path(os.environ[MODEL_CACHE_ENV]).expanduser()
    return default_cache_dir(cache_dir) / "models"


def fit_cached(
    model: nn.Module, task: Task, cache_dir: str | None = None, retrain: bool = False, **fit_args
) -> tuple[nn.Module, History | None]:
    """:func:`fit`, unless the cache holds a model trained with the same key (:func:`cache_key`).

    Returns ``(model, history)``; ``history`` is None when the model came from the cache.
    ``retrain=True`` always trains (a chapter showing its own training) and refreshes the
    cache for the chapters that reuse the model. Pass no ``max_seconds`` here: a time
    budget makes training depend on the machine.
    """
    if fit_args.get("max_seconds") is not None:
        raise ValueError("fit_cached needs a fixed number of epochs, not max_seconds")
    device = fit_args.get("device") or next(model.parameters()).device
    recipe = _recipe(fit_args)  # the default seed is the session's: part of the key
    path = model_cache_dir(cache_dir) / f"{cache_key(model, task, **recipe)}.pt"
    if path.exists() and not retrain:
        cached, _ = load_checkpoint(path, expect=model_name(model), map_location=device)
        return cached, None
    history = fit(model, task, **fit_args)
    save_checkpoint(path, model, history=history)
    return model, history


#: Where the book keeps the models its chapters decode with (shipped with the package).
KEPT_DIR = PACKAGE_ROOT / "results" / "models"
#: Set to 1 to train and write a kept model that is missing (a maintainer's step; see :func:`fit_kept`).
KEEP_ENV = "ATTENTION_KEEP"


def kept_path(name: str, directory: str | Path | None = None) -> Path:
    """``attention/results/models/kept-<name>.pt``: the kept model ``name``."""
    if not name or any(c in name for c in "/\\ ") or name.startswith("."):
        raise ValueError(f"a kept model's name is a plain file stem like 'hsk-rnnsearch', got {name!r}")
    return Path(directory or KEPT_DIR) / f"kept-{name}.pt"


def _recipe(fit_args: dict) -> dict:
    """What of :func:`fit`'s arguments decides the weights, the default seed (the session's) resolved."""
    recipe = {k: v for k, v in fit_args.items() if k not in ("device", "progress", "on_epoch")}
    recipe["seed"] = session_seed(recipe.get("seed"))
    return recipe


def _kept_identity(model: nn.Module, task: Task, fit_args: dict) -> dict:
    recipe = _recipe(fit_args)
    return json.loads(
        json.dumps(
            {
                "model": model_name(model),
                "config": dataclasses.asdict(model.cfg),
                "task": task.fingerprint(),
                "recipe": recipe,
            },
            sort_keys=True,
            default=str,
        )
    )


def load_kept(name: str, device=None, directory: str | Path | None = None) -> tuple[nn.Module, dict]:
    """``(model, extras)`` of the kept model ``name`` in eval mode; extras hold its ``history``,
    ``identity`` (model, config, task fingerprint, recipe) and ``trained_on`` (versions, machine)."""
    path = kept_path(name, directory)
    if not path.exists():
        raise FileNotFoundError(
            f"no kept model {name!r} ({path}); the notebook that trains it keeps it when executed with {KEEP_ENV}=1"
        )
    model, extra = load_checkpoint(path, map_location=device or "cpu")
    return model.eval(), extra


def fit_kept(
    name: str, model: nn.Module, task: Task, retrain: bool = False, directory: str | Path | None = None, **fit_args
) -> tuple[nn.Module, History]:
    """The model the book keeps as ``name``, or ``fit(model, task, **fit_args)`` when ``retrain``.

    A chapter whose figures, explorers or printed numbers come from a trained model decodes with
    a kept one: trained once with this call's recipe, stored in ``attention/results/models/``
    with its training history, and loaded by every reader, so what the chapter prints is the
    same on every processor (live training differs in the last digits between CPU kernels, and
    minutes of training turn that into another model). ``retrain=True`` trains here instead, and
    the numbers then depend on the machine. Returns ``(model, history)`` either way; the kept
    history is the one recorded when the model was kept.

    The kept file records what it was trained from (model, config, the task's fingerprint, the
    recipe): a call that asks for anything else is refused, naming what differs, except a call
    under another seed (``$ATTENTION_SEED``), which trains. A missing file is an error, unless
    ``$ATTENTION_KEEP=1``: then the model is trained and kept (the maintainer's step after changing
    a kept model's recipe; commit the file).
    """
    if fit_args.get("max_seconds") is not None:
        raise ValueError("fit_kept needs a fixed number of epochs, not max_seconds")
    identity = _kept_identity(model, task, fit_args)
    path = kept_path(name, directory)
    if retrain:
        return model, fit(model, task, **fit_args)
    if not path.exists():
        if os.environ.get(KEEP_ENV) != "1":
            raise FileNotFoundError(
                f"no kept model {name!r} ({path}): execute this notebook with {KEEP_ENV}=1 "
                "to train and keep it, or pass retrain=True to train without keeping"
            )
        history = fit(model, task, **fit_args)
        versions, machine = environment(next(model.parameters()).device)
        trained_on = json.loads(
            json.dumps(
                {"versions": versions, "machine": machine, "cpu_capability": torch.backends.cpu.get_cpu_capability()},
                default=str,
            )
        )
        save_checkpoint(path, copy.deepcopy(model).cpu(), history=history, identity=identity, trained_on=trained_on)
        return model, history
    device = fit_args.get("device") or next(model.parameters()).device
    kept, extra = load_checkpoint(path, expect=model_name(model), map_location=device)
    want, have = identity, extra.get("identity", {})
    differs = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
    if differs == ["recipe"] and {k: v for k, v in want["recipe"].items() if k != "seed"} == {
        k: v for k, v in have["recipe"].items() if k != "seed"
    }:
        return model, fit(model, task, **fit_args)  # another seed than the kept one: train it
    if differs:

        def diff(a, b):  # only the fields that differ, for dicts
            if isinstance(a, dict) and isinstance(b, dict):
                keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                return {k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}
            return a, b

        detail = "; ".join("{}: kept {!r}, asked {!r}".format(k, *diff(have.get(k), want.get(k))) for k in differs)
        raise ValueError(
            f"the kept model {name!r} ({path}) was trained from another {' and '.join(differs)} "
            f"({detail[:800]}); "
            f"delete the file and execute the notebook with {KEEP_ENV}=1 to keep the new one"
        )
    return kept, extra["history"]
