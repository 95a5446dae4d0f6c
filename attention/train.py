"""A small training loop for the translation chapters.

Teacher forcing with cross-entropy, Adam, gradient clipping, validation each
epoch, early stopping on the validation loss, a wall-clock budget, and
checkpoints saved with ``torch.save`` / loaded with ``weights_only=True``.
Uses whatever device the model and batches are on (the GPU on Colab).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TrainConfig", "History", "train", "evaluate_loss", "save_checkpoint", "load_checkpoint"]


@dataclass
class TrainConfig:
    max_epochs: int = 30  # upper bound on passes over the training data
    max_seconds: float | None = None  # wall-clock budget; no epoch starts that would end past it
    lr: float = 3e-3  # Adam learning rate
    clip: float = 1.0  # max gradient norm (Pascanu et al. 2013)
    patience: int = 3  # epochs without a better validation loss before stopping
    label_smoothing: float = 0.0  # on the cross-entropy
    checkpoint: str | None = None  # where to save the best model (None: keep it in memory only)
    progress: bool = True  # tqdm progress bar per epoch


@dataclass
class History:
    epochs: list[dict] = field(default_factory=list)  # one dict per epoch: losses, seconds
    best_epoch: int = 0  # 1-based epoch whose weights the model holds at the end
    seconds: float = 0.0  # total training time
    stopped: str = ""  # why training ended


def sequence_loss(model: nn.Module, batch, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over the real (non-padding) target tokens."""
    out = model(batch.src, batch.src_lengths, batch.tgt_in)
    logits = out.logits  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1),
                           ignore_index=model.cfg.pad_id, label_smoothing=label_smoothing)


@torch.no_grad()
def evaluate_loss(model: nn.Module, batches: Iterable) -> float:
    """Token-averaged validation cross-entropy."""
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        n = int((batch.tgt_out != model.cfg.pad_id).sum())
        total += sequence_loss(model, batch).item() * n
        count += n
    return total / max(count, 1)


def train(model: nn.Module, train_batches: Callable[[int], Iterable],
          valid_batches: Callable[[], Iterable], cfg: TrainConfig = TrainConfig()) -> History:
    """Train ``model`` and leave it holding the weights of its best validation epoch.

    Args:
        train_batches: ``epoch -> iterable of batches`` (reshuffled per epoch).
        valid_batches: ``() -> iterable of batches``.
    """
    from tqdm.auto import tqdm

    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    history = History()
    best_loss, best_state, bad_epochs = float("inf"), None, 0
    start = time.perf_counter()
    for epoch in range(1, cfg.max_epochs + 1):
        model.train()
        total, steps = 0.0, 0
        for batch in tqdm(train_batches(epoch), desc=f"epoch {epoch}", leave=False,
                          disable=not cfg.progress):
            loss = sequence_loss(model, batch, cfg.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            optimizer.step()
            total, steps = total + loss.item(), steps + 1
        valid = evaluate_loss(model, valid_batches())
        elapsed = time.perf_counter() - start
        history.epochs.append({"epoch": epoch, "train_loss": total / max(steps, 1),
                               "valid_loss": valid, "seconds": elapsed})
        if valid < best_loss:
            best_loss, bad_epochs, history.best_epoch = valid, 0, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if cfg.checkpoint:
                save_checkpoint(cfg.checkpoint, model)
        else:
            bad_epochs += 1
        if bad_epochs >= cfg.patience:
            history.stopped = f"early stopping: no better validation loss for {cfg.patience} epochs"
            break
        epoch_seconds = elapsed / epoch
        if cfg.max_seconds is not None and elapsed + epoch_seconds > cfg.max_seconds:
            # stop before an epoch that would end past the budget
            history.stopped = f"time budget of {cfg.max_seconds:g} s: another epoch would not fit"
            break
    else:
        history.stopped = f"max_epochs={cfg.max_epochs} reached"
    history.seconds = time.perf_counter() - start
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


def save_checkpoint(path: str | Path, model: nn.Module, **extra) -> None:
    """Save the config (a dataclass), the weights and any plain-data extras (e.g. vocabularies)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": asdict(model.cfg), "state_dict": model.state_dict(), "extra": extra}, path)


def load_checkpoint(path: str | Path, model_cls, config_cls, map_location=None):
    """Rebuild a model from :func:`save_checkpoint`; returns ``(model, extra)``.

    Loads with ``weights_only=True``: only tensors and plain data are unpickled.
    """
    blob = torch.load(path, map_location=map_location, weights_only=True)
    model = model_cls(config_cls(**blob["config"]))
    model.load_state_dict(blob["state_dict"])
    return model, blob["extra"]
