"""One small training loop for every model of the book.

Adam, gradient clipping, validation each epoch, a wall-clock budget, and the best epoch's
weights kept. "Best" is judged, and training stopped, on a validation *metric* of the task
when one is given (BLEU for translation, accuracy for classification: the number a chapter
reports), else on the validation loss. The two can disagree: a translation model's validation
loss often starts rising while its BLEU still improves. What is minimised is an argument: a
``loss(model, batch) -> (mean loss, n)`` function, where ``n`` counts what the mean is over
(target tokens for translation, examples for classification), so validation averages over
all of them. Each task of :mod:`attention.tasks` brings its own. Uses whatever device the
model and batches are on (the GPU on Colab).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from .checkpoints import save_checkpoint

__all__ = ["TrainConfig", "History", "LossFn", "train", "evaluate_loss", "warmup_factor"]

#: ``loss(model, batch) -> (mean loss over n items, n)``
LossFn = Callable[[nn.Module, object], tuple[Tensor, int]]


@dataclass
class TrainConfig:
    max_epochs: int = 30  # upper bound on passes over the training data
    max_seconds: float | None = None  # time budget; no epoch starts that would end past it
    clock: str = "wall"  # what seconds count: "wall" (wall-clock) or "process" (CPU time of this
    #                      process: on one thread, the wall-clock time it would take on an idle core)
    lr: float = 3e-3  # Adam learning rate
    clip: float = 1.0  # max gradient norm (Pascanu et al. 2013)
    patience: int = 3  # epochs without a better validation score before stopping
    checkpoint: str | None = None  # where to save the best model (None: keep it in memory only)
    progress: bool = True  # tqdm progress bar per epoch
    metric: str = "metric"  # the name of the validation metric in the history (e.g. "bleu")
    warmup: int = 0  # updates of learning-rate warm-up; 0: a constant lr (see warmup_factor)
    betas: tuple[float, float] = (0.9, 0.999)  # Adam's; Vaswani et al. use (0.9, 0.98)
    snapshots: tuple[float, ...] = ()  # shorter budgets (same clock) whose run is kept on the way


@dataclass
class History:
    epochs: list[dict] = field(default_factory=list)  # one dict per epoch: losses, seconds
    best_epoch: int = 0  # 1-based epoch whose weights the model holds at the end
    seconds: float = 0.0  # total training time
    stopped: str = ""  # why training ended
    selected_by: str = "valid_loss"  # the history key the best epoch was chosen on
    #: per budget of ``cfg.snapshots``: what a run stopped under that budget would have ended with,
    #: ``{"best_epoch", "epochs_run", "state"}`` (``state``: that run's best weights)
    snapshots: dict[float, dict] = field(default_factory=dict)


def warmup_factor(warmup: int) -> Callable[[int], float]:
    """The learning-rate multiplier of Vaswani et al. (2017, §5.3, Eq. 3) with its peak scaled to
    1: it rises linearly over the first ``warmup`` updates, then decays as ``1/√update``:
    ``min(u / warmup, √(warmup / u))`` for update ``u = 1, 2, …``; the paper's rate is this times
    ``d_model^-0.5 · warmup^-0.5`` (:func:`attention.models.transformer.noam_schedule`)."""
    if warmup < 1:
        raise ValueError(f"warmup must be >= 1 update, got {warmup}")

    def factor(step: int) -> float:  # LambdaLR calls it with 0 before the first update
        u = step + 1
        return min(u / warmup, math.sqrt(warmup / u))

    return factor


@torch.no_grad()
def evaluate_loss(model: nn.Module, batches: Iterable, loss: LossFn) -> float:
    """The validation loss averaged over every item (token, example) of ``batches``."""
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        value, n = loss(model, batch)
        total += value.item() * n
        count += n
    return total / max(count, 1)


def train(
    model: nn.Module,
    train_batches: Callable[[int], Iterable],
    valid_batches: Callable[[], Iterable],
    loss: LossFn,
    cfg: TrainConfig | None = None,
    on_epoch: Callable[[dict, nn.Module], None] | None = None,
    valid_metric: Callable[[nn.Module], float] | None = None,
    on_step: Callable[[int, float, float], None] | None = None,
) -> History:
    """Train ``model`` and leave it holding the weights of its best validation epoch.

    Args:
        train_batches: ``epoch -> iterable of batches`` (reshuffled per epoch).
        valid_batches: ``() -> iterable of batches``.
        loss: ``(model, batch) -> (mean loss, n)``, e.g. a task's ``loss``.
        cfg: the recipe (default: ``TrainConfig()``).
        on_epoch: called after each epoch with that epoch's record and the model (to plot a
            curve or compute a metric); add keys to the record to keep them in the history.
        valid_metric: ``model -> number``, higher is better (e.g. validation BLEU). When
            given, the best epoch is the one with the highest metric and training stops after
            ``cfg.patience`` epochs without a higher one; otherwise the validation loss decides.
        on_step: called after each update with ``(update, loss, gradient norm)``, the norm
            measured before clipping (what makes post-LN's early training visible, chapter 6).

    ``cfg.snapshots`` keeps, on the way, the runs of shorter budgets: the same updates in the same
    order, so the run under budget ``b`` is this one up to the epoch where a ``max_seconds=b`` run
    would have stopped; ``history.snapshots[b]`` holds its best epoch and weights.
    """
    cfg = TrainConfig() if cfg is None else cfg
    if cfg.clock not in ("wall", "process"):
        raise ValueError(f"clock must be 'wall' or 'process', got {cfg.clock!r}")
    clock = time.perf_counter if cfg.clock == "wall" else time.process_time
    # foreach: the multi-tensor Adam, the same numbers as the per-tensor loop and faster on CPU
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas, foreach=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_factor(cfg.warmup)) if cfg.warmup else None
    history = History(selected_by="valid_loss" if valid_metric is None else f"valid_{cfg.metric}")
    best_score, best_state, bad_epochs = float("-inf"), None, 0
    open_budgets = sorted(float(b) for b in cfg.snapshots)
    if any(b <= 0 for b in open_budgets):
        raise ValueError(f"snapshots are budgets in seconds > 0, got {list(cfg.snapshots)}")
    updates = 0
    start = clock()
    for epoch in range(1, cfg.max_epochs + 1):
        model.train()
        total, steps = 0.0, 0
        for batch in tqdm(train_batches(epoch), desc=f"epoch {epoch}", leave=False, disable=not cfg.progress):
            value, _ = loss(model, batch)
            optimizer.zero_grad(set_to_none=True)
            value.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            total, steps, updates = total + value.item(), steps + 1, updates + 1
            if on_step is not None:
                on_step(updates, value.item(), float(norm))
        valid = evaluate_loss(model, valid_batches(), loss)
        record = {"epoch": epoch, "train_loss": total / max(steps, 1), "valid_loss": valid}
        if valid_metric is not None:
            record[history.selected_by] = float(valid_metric(model))
        record["seconds"] = clock() - start
        if on_epoch is not None:
            on_epoch(record, model)
        history.epochs.append(record)
        score = -valid if valid_metric is None else record[history.selected_by]
        if score > best_score:
            best_score, bad_epochs, history.best_epoch = score, 0, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if cfg.checkpoint:
                save_checkpoint(cfg.checkpoint, model)
        else:
            bad_epochs += 1
        if bad_epochs >= cfg.patience:
            what = "loss" if valid_metric is None else cfg.metric
            history.stopped = f"early stopping: no better validation {what} for {cfg.patience} epochs"
            break
        elapsed = record["seconds"]
        epoch_seconds = elapsed / epoch
        while open_budgets and elapsed + epoch_seconds > open_budgets[0]:  # a shorter run stops here
            history.snapshots[open_budgets.pop(0)] = {
                "best_epoch": history.best_epoch,
                "epochs_run": epoch,
                "state": best_state,
            }
        if cfg.max_seconds is not None and elapsed + epoch_seconds > cfg.max_seconds:
            # stop before an epoch that would end past the budget
            history.stopped = f"time budget of {cfg.max_seconds:g} s: another epoch would not fit"
            break
    else:
        history.stopped = f"max_epochs={cfg.max_epochs} reached"
    history.seconds = clock() - start
    for budget in open_budgets:  # budgets this run ended before: their runs are this one
        history.snapshots[budget] = {
            "best_epoch": history.best_epoch,
            "epochs_run": len(history.epochs),
            "state": best_state,
        }
    if best_state is not None:
        model.load_state_dict(best_state)
    return history
