"""One recorded run of the book, declared once: a :class:`Study`.

A study names its record (``attention/results/<name>.json``), the command that reproduces it, its
recipe, its pieces (by default every variant × seed of the recipe), how to run one piece and how
to summarise the finished pieces into the record's metrics. Everything else is written here, once:

* **resuming** — a piece already in the registry is never run again: the rows of the record (when
  its recipe is the study's) and of ``results/partial/<name>.jsonl`` (pieces of a record not yet
  written) count as done; each piece is appended there the moment it finishes;
* **running the pieces** — in this process (``workers=1``) or on a Dask cluster
  (:func:`run_study` with ``workers=N``: a ``LocalCluster`` of N one-thread worker processes, or
  ``scheduler=ADDRESS`` for a running cluster). Only this process writes the registry; a worker that
  dies loses only the piece it was running, which the scheduler hands to another worker;
* **keeping seed 0's model** of the variants in ``keep`` beside the record
  (:func:`attention.results.model_path`);
* **status** (:func:`study_status`) and the record itself (:func:`attention.results.record_result`,
  stamped with the code that produced it).

The helpers below (:func:`count_parameters` lives in :mod:`attention.models`; :func:`size_to_budget`,
:func:`training_row`, :func:`summarise_variants`) are what the studies share.
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import json
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from torch import nn

from ..checkpoints import save_checkpoint
from ..device import setup
from ..experiments import fit
from ..models import count_parameters
from ..results import PartialRuns, load_result, mean_sd, model_path, record_result

__all__ = [
    "Piece",
    "Study",
    "variant_seed_pieces",
    "study_status",
    "run_study",
    "run_piece",
    "fit_piece",
    "size_to_budget",
    "training_row",
    "summarise_variants",
    "recorded_rows",
]

COMMAND = "python -m attention "


@dataclasses.dataclass(frozen=True)
class Piece:
    """One run of a study: ``key`` (e.g. ``"coupled-2/seed1"``) names it in the registry; ``fields``
    are what the record's row of it starts with (e.g. ``{"variant": "coupled-2", "seed": 1}``);
    ``group`` is a slice with its own data and its own recipe stamp (a language pair), ``""`` when
    the study has one."""

    key: str
    variant: str
    seed: int
    fields: dict
    group: str = ""


def variant_seed_pieces(recipe: dict) -> list[Piece]:
    """Every ``"<variant>/seed<s>"`` of ``recipe["variants"]`` × ``recipe["seeds"]`` (seeds outer)."""
    return [Piece(f"{v}/seed{s}", v, s, {"variant": v, "seed": s}) for s in recipe["seeds"] for v in recipe["variants"]]


def without_seeds(recipe: dict) -> dict:
    """``recipe`` less its ``"seeds"``: a piece's row depends on its own seed, not on which other
    seeds the recipe lists, so a record given more seeds keeps the rows it has."""
    return {k: v for k, v in recipe.items() if k != "seeds"}


def _whole_recipe(recipe: dict, group: str) -> dict:
    return without_seeds(recipe)


def same_recipe_but_seeds(recorded: dict, current: dict) -> bool:
    """Whether a record made under ``recorded`` holds rows of ``current`` (the seeds may differ)."""
    return without_seeds(recorded) == json.loads(json.dumps(without_seeds(current)))


def _train_seconds(runs: list[dict]) -> float:
    return sum(r["train_seconds"] for r in runs)


def recorded_rows(study: "Study", record: dict) -> dict[str, dict]:
    """The finished pieces a record holds (its ``metrics["runs"]``), by piece key."""
    rows = {}
    runs = record["metrics"].get("runs") or []
    for piece in study.pieces(study.recipe):
        for run in runs:
            if all(run.get(k) == v for k, v in piece.fields.items()):
                rows[piece.key] = {k: v for k, v in run.items() if k not in piece.fields}
                break
    return rows


@dataclasses.dataclass(frozen=True)
class Study:
    """A recorded run, declared.

    ``run(study, piece, data, device)`` trains and evaluates one piece and returns its row (a dict
    of JSON numbers), or ``(row, model)`` when the model is to be kept, or ``(row, model, extra)``
    to store ``extra`` (e.g. the vocabularies) in the kept checkpoint; ``summarise(study, runs,
    data)`` turns the rows (each ``{**piece.fields, **row}``, in piece order) into the record's
    metrics; ``data(recipe, group)`` builds what the pieces of a group share (built once per
    process). ``data`` passed to ``summarise`` is a function of the group.
    """

    name: str
    command: str  #: what follows ``python -m attention``, e.g. ``"coupled"`` or ``"ablation --budget small"``
    help: str
    recipe: dict
    run: Callable[..., Any]
    summarise: Callable[..., dict]
    data: Callable[[dict, str], Any] | None = None
    pieces: Callable[[dict], list[Piece]] = variant_seed_pieces
    #: the part of the recipe a group's pieces depend on: a piece is done only under the same stamp
    stamp: Callable[[dict, str], dict] = _whole_recipe
    #: ``reuse(recipe, group, old_stamp, row)``: a piece recorded under another stamp that would be
    #: the same under this one (e.g. it stopped early, before a lower epoch cap); both without seeds
    reuse: Callable[[dict, str, dict, dict], bool] | None = None
    keep: tuple[str, ...] = ()  #: variants whose seed-0 model is kept beside the record
    kept_as: str | None = None  #: the kept models' file prefix (default: the record's name)
    wall: Callable[[list[dict]], float] = _train_seconds
    notes: str | None = "wall_seconds adds up the training time of every run"
    recorded: Callable[["Study", dict], dict[str, dict]] = recorded_rows
    #: ``holds(recorded_recipe, recipe)``: whether the record's rows are rows of this recipe's pieces
    holds: Callable[[dict, dict], bool] = same_recipe_but_seeds

    @property
    def full_command(self) -> str:
        return COMMAND + self.command

    def with_recipe(self, **changes) -> "Study":
        """The same study under another recipe (a smaller one for a test)."""
        return dataclasses.replace(self, recipe={**self.recipe, **changes})

    def store(self, group: str, directory: str | Path | None = None) -> PartialRuns:
        """The partial store of ``group``: ``partial/<name>[-<group>].jsonl``."""
        reuse = None
        if self.reuse is not None:

            def reuse(old: dict, row: dict) -> bool:  # the seeds aside, as in the stamp
                return self.reuse(without_seeds(self.recipe), group, without_seeds(old), row)

        return PartialRuns(
            f"{self.name}-{group}" if group else self.name, self.stamp(self.recipe, group), directory, reuse
        )

    def model_path(self, variant: str, directory: str | Path | None = None) -> Path:
        return model_path(self.kept_as or self.name, variant, directory)


# --- the registry, read and written by this process only -------------------------------------------


class _Done:
    """The finished pieces of a study: its record's rows (under the same recipe, seeds aside) and its
    partial files."""

    def __init__(self, study: Study, directory: str | Path | None):
        self.study, self.directory = study, directory
        self.stores = {g: study.store(g, directory) for g in dict.fromkeys(p.group for p in study.pieces(study.recipe))}
        self.from_record: dict[str, dict] = {}
        try:
            record = load_result(study.name, directory)
        except FileNotFoundError:
            record = None
        if record is not None and study.holds(record["recipe"], study.recipe):
            self.from_record = study.recorded(study, record)

    def get(self, piece: Piece) -> dict | None:
        if piece.key in self.from_record:
            return self.from_record[piece.key]
        store = self.stores[piece.group]
        return store.get(piece.key) if piece.key in store else None

    def add(self, piece: Piece, row: dict) -> None:
        self.stores[piece.group].add(piece.key, row)


def study_status(study: Study, directory: str | Path | None = None) -> dict[str, list[str]]:
    """``{"done", "missing"}``: the pieces' keys (``python -m attention <command> --status``)."""
    done = _Done(study, directory)
    pieces = study.pieces(study.recipe)
    return {
        "done": [p.key for p in pieces if done.get(p) is not None],
        "missing": [p.key for p in pieces if done.get(p) is None],
    }


_DATA: dict[tuple, Any] = {}


def _data(study: Study, group: str):
    """What the pieces of ``group`` share, built once per process."""
    if study.data is None:
        return None
    key = (study.name, json.dumps(study.recipe, sort_keys=True, default=str), group)
    if key not in _DATA:
        _DATA.clear()  # one study's data at a time
        _DATA[key] = study.data(study.recipe, group)
    return _DATA[key]


def run_piece(study: Study, piece: Piece) -> tuple[dict, bytes | None]:
    """Run one piece here (seeded with its seed, one CPU thread): ``(row, checkpoint)``, the
    checkpoint (:func:`attention.checkpoints.save_checkpoint`, as bytes, so that it travels from a
    worker) of a model to keep, else None. This is what a worker executes."""
    device = setup(piece.seed)
    data = _data(study, piece.group)
    setup(piece.seed)  # building the data may have drawn random numbers
    out = study.run(study, piece, data, device)
    row, model, extra = (*out, {})[:3] if isinstance(out, tuple) else (out, None, {})
    row = json.loads(json.dumps(row))
    if model is None or piece.seed != 0 or piece.variant not in study.keep:
        return row, None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.pt"
        save_checkpoint(path, copy.deepcopy(model).cpu(), recipe=study.recipe, **extra)
        return row, path.read_bytes()


def _selected(pieces: list[Piece], only: Sequence[str] | None) -> list[Piece]:
    if not only:
        return pieces
    chosen = [p for p in pieces if any(fnmatch.fnmatchcase(p.key, pattern) for pattern in only)]
    if not chosen:
        raise ValueError(
            f"--only {list(only)} matches no piece of the study; its pieces are e.g. {[p.key for p in pieces[:4]]}"
        )
    return chosen


def _print_row(key: str, row: dict) -> None:
    print(
        key,
        {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if not isinstance(v, (dict, list))},
        flush=True,
    )


def run_study(
    study: Study,
    directory: str | Path | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    only: Sequence[str] | None = None,
    progress: bool = False,
    write: bool = True,
) -> dict | None:
    """Run the pieces of ``study`` the registry lacks (``only``: those whose keys match one of these
    glob patterns), keeping each as it lands; once every piece is done, build the record (written
    to ``directory``, default the package's results folder, unless ``write=False``) and return it;
    else return None.

    ``workers=1`` and no ``scheduler``: the pieces run here, one after another. Otherwise they run on
    Dask's ``distributed``: ``scheduler`` is the address of a running cluster, else a ``LocalCluster``
    of ``workers`` processes with one thread each is started for the run and closed after it.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    done = _Done(study, directory)
    pieces = study.pieces(study.recipe)
    missing = [p for p in _selected(pieces, only) if done.get(p) is None]

    def land(piece: Piece, row: dict, checkpoint: bytes | None) -> None:
        if checkpoint is not None:  # the model first: a landed row always has its kept model
            path = study.model_path(piece.variant, directory)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(checkpoint)
            tmp.replace(path)
        done.add(piece, row)
        if progress:
            _print_row(piece.key, row)

    if missing and workers == 1 and scheduler is None:
        for piece in missing:
            land(piece, *run_piece(study, piece))
    elif missing:
        _run_distributed(study, missing, land, workers, scheduler)
    if any(done.get(p) is None for p in pieces):
        return None
    runs = [{**p.fields, **done.get(p)} for p in pieces]
    device = setup(0)
    metrics = study.summarise(study, runs, lambda group="": _data(study, group))
    return record_result(
        study.name,
        command=study.full_command,
        recipe=study.recipe,
        seeds=_seeds(study, pieces),
        metrics=metrics,
        wall_seconds=study.wall(runs),
        device=device,
        notes=study.notes,
        directory=directory,
        write=write,
    )


def _seeds(study: Study, pieces: list[Piece]) -> list[int]:
    """The record's seeds: the recipe's, else those of the pieces (a one-seed grid)."""
    return list(study.recipe["seeds"]) if "seeds" in study.recipe else list(dict.fromkeys(p.seed for p in pieces))


def _run_distributed(study: Study, pieces: list[Piece], land, workers: int, scheduler: str | None) -> None:
    """The pieces on a Dask cluster, landed (in this process) in the order they finish."""
    from distributed import Client, LocalCluster, as_completed  # the book's runner only: not a library need

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        with Client(scheduler or cluster) as client:
            futures = {
                client.submit(run_piece, study, piece, key=f"{study.name}:{piece.key}", pure=False): piece
                for piece in pieces
            }
            failed = []
            for future in as_completed(futures):
                piece = futures[future]
                try:
                    row, model = future.result()
                except Exception as error:  # one failed piece does not lose the others
                    failed.append(f"{piece.key}: {type(error).__name__}: {error}")
                    continue
                land(piece, row, model)
            if failed:
                raise RuntimeError(
                    f"{len(failed)} of {len(pieces)} pieces failed (the others are kept):\n  " + "\n  ".join(failed)
                )
    finally:
        if cluster is not None:
            cluster.close()


# --- what the studies share ---------------------------------------------------------------------


def size_to_budget(
    build: Callable[[int], nn.Module],
    target: int,
    candidates: Sequence[int],
    tolerance: float | None = None,
    what: str = "model",
) -> int:
    """The size among ``candidates`` whose model, ``build(size)``, has the parameter count closest to
    ``target`` (the first such size on a tie). ``tolerance``: raise ``ValueError`` when the best is
    further than that share of ``target``."""
    candidates = list(candidates)
    if not candidates:
        raise ValueError(f"{what}: no candidate sizes")
    best = min(candidates, key=lambda size: abs(count_parameters(build(size)) - target))
    if tolerance is not None:
        got = count_parameters(build(best))
        if abs(got - target) > tolerance * target:
            raise ValueError(
                f"{what}: no hidden size within {tolerance:.0%} of {target} parameters (best {best}: {got})"
            )
    return best


def fit_piece(model: nn.Module, data, recipe: dict, seed: int, device, **options):
    """:func:`attention.experiments.fit` as a study trains a piece: the recipe's ``max_epochs``,
    ``batch_size``, ``lr`` and ``patience`` (early stopping on the task's validation metric), the
    piece's seed, no progress bar; ``options`` are fit's others (a ``loss``, ...)."""
    return fit(
        model,
        data,
        epochs=recipe["max_epochs"],
        batch_size=recipe["batch_size"],
        lr=recipe["lr"],
        seed=seed,
        device=device,
        progress=False,
        patience=recipe["patience"],
        **options,
    )


def training_row(history, model: nn.Module | None = None, valid: str | None = None) -> dict:
    """What every run row records of its training: the validation metric ``valid`` at the best epoch
    (as ``valid_<name>`` unless it starts with ``valid``), the best epoch, the epochs run, why it
    stopped, the training seconds and (given the model) its parameter count."""
    row = {}
    if valid is not None:
        row[valid if valid.startswith("valid") else f"valid_{valid}"] = history.epochs[history.best_epoch - 1][
            valid if valid.startswith("valid") else f"valid_{valid}"
        ]
    row |= {
        "best_epoch": history.best_epoch,
        "epochs_run": len(history.epochs),
        "stopped": history.stopped,
        "train_seconds": round(history.seconds, 1),
    }
    if model is not None:
        row["parameters"] = count_parameters(model)
    return row


def summarise_variants(
    runs: list[dict], metrics: Sequence[str], by: str = "variant", values: Sequence[str] | None = None
) -> dict[str, dict]:
    """For each value of ``by`` (in the order of ``values``, default of the runs): ``mean_sd`` of every
    metric of its rows, their parameter count and whether every run converged (best epoch before
    the last)."""
    values = list(dict.fromkeys(r[by] for r in runs)) if values is None else values
    out = {}
    for value in values:
        rows = [r for r in runs if r[by] == value]
        cell = {m: mean_sd([r[m] for r in rows]) for m in metrics if rows[0].get(m) is not None}
        if "parameters" in rows[0]:
            cell["parameters"] = rows[0]["parameters"]
        cell["converged"] = all(r["best_epoch"] < r["epochs_run"] for r in rows)
        out[value] = cell
    return out
