"""The results registry: every recorded run of the book, one schema, one way in and out.

Runs too long for a notebook (``python -m attention <command>``) are written here with
:func:`record_result` and read by the chapters with :func:`load_result`, never typed into a
page. A record is one JSON file ``attention/results/<name>.json`` (shipped with the package,
so Colab has it too) with these keys:

============ ==================================================================
schema       1
name         the file's stem, e.g. ``"hsk-convergence"``
command      the command that reproduces it, e.g. ``"python -m attention convergence"``
recipe       everything that decides the numbers besides the code (epochs, lr, budget ...)
seeds        the seeds run, e.g. ``[0, 1, 2]``
versions     package versions (attention, torch, python, ...)
machine      device, threads, processor
code         the code that produced it (:func:`attention.provenance.code_stamp`): fingerprints of
             the library's weight code and of the studies, the git commit (``null`` outside a
             checkout) and whether the package differed from it; records made before stamps
             existed carry the commit that committed them, ``library`` ``null`` and a ``note``
wall_seconds how long the whole run took (``null`` only where it was not measured)
created      ISO date of the run (``null`` where unknown)
metrics      the numbers, as the command lays them out
notes        optional: anything a reader of the record must know
============ ==================================================================
"""

from __future__ import annotations

import datetime
import json
import math
import platform
from pathlib import Path
from typing import Any, Callable

import numpy
import torch

from .. import __version__
from ..bleu import BleuStatistics, bleu_from_statistics, sentence_statistics, tokenize
from ..provenance import code_stamp

__all__ = [
    "RESULTS_DIR",
    "SCHEMA_VERSION",
    "KEYS",
    "record_result",
    "load_result",
    "list_results",
    "validate_result",
    "environment",
    "PartialRuns",
    "mean_sd",
    "beyond_spread",
    "difference",
    "paired_bootstrap",
    "model_path",
    "variant_seed_keys",
    "pieces_status",
    "run_missing",
]

RESULTS_DIR = Path(__file__).parent


def model_path(record: str, variant: str, directory: str | Path | None = None) -> Path:
    """Where a recorded run keeps the trained seed-0 model of ``variant`` beside the record
    ``record`` (``<directory>/models/<record>-<variant>-seed0.pt``), for a notebook's explorer."""
    return Path(directory or RESULTS_DIR) / "models" / f"{record}-{variant}-seed0.pt"


SCHEMA_VERSION = 1
#: key -> (allowed types, required)
KEYS: dict[str, tuple[tuple[type, ...], bool]] = {
    "schema": ((int,), True),
    "name": ((str,), True),
    "command": ((str,), True),
    "recipe": ((dict,), True),
    "seeds": ((list,), True),
    "versions": ((dict,), True),
    "machine": ((dict,), True),
    "code": ((dict,), True),
    "wall_seconds": ((int, float, type(None)), True),
    "created": ((str, type(None)), True),
    "metrics": ((dict,), True),
    "notes": ((str,), False),
}


def _non_finite(value: Any, where: str = "") -> list[str]:
    if isinstance(value, float) and not math.isfinite(value):
        return [where or "value"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _non_finite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _non_finite(v, f"{where}[{i}]")]
    return []


def validate_result(record: Any, name: str | None = None) -> None:
    """Raise ``ValueError`` listing every way ``record`` departs from the schema."""
    if not isinstance(record, dict):
        raise ValueError(f"a result record is a JSON object, got {type(record).__name__}")
    problems = []
    for key, (types, required) in KEYS.items():
        if key not in record:
            if required:
                problems.append(f"missing key {key!r}")
        elif not isinstance(record[key], types) or isinstance(record[key], bool):
            problems.append(
                f"{key!r} is a {type(record[key]).__name__}, expected {' or '.join(t.__name__ for t in types)}"
            )
    problems += [f"unknown key {k!r}" for k in record if k not in KEYS]
    if problems:
        raise ValueError(f"result {name or record.get('name')!r} does not follow the schema: " + "; ".join(problems))
    if record["schema"] != SCHEMA_VERSION:
        problems.append(f"schema is {record['schema']}, expected {SCHEMA_VERSION}")
    if name is not None and record["name"] != name:
        problems.append(f"name is {record['name']!r} but the file is {name}.json")
    if not record["command"].startswith("python -m attention "):
        problems.append(f"command {record['command']!r} is not a 'python -m attention ...' command")
    if not record["seeds"] or not all(isinstance(s, int) and not isinstance(s, bool) for s in record["seeds"]):
        problems.append(f"seeds must be a non-empty list of integers, got {record['seeds']!r}")
    missing = {"attention", "torch", "python"} - set(record["versions"])
    if missing:
        problems.append(f"versions lacks {sorted(missing)}")
    missing = {"device", "threads"} - set(record["machine"])
    if missing:
        problems.append(f"machine lacks {sorted(missing)}")
    missing = {"library", "studies", "commit", "modified"} - set(record["code"])
    if missing:
        problems.append(f"code lacks {sorted(missing)}")
    elif record["code"]["library"] is None and not (record["code"]["commit"] and record["code"].get("note")):
        problems.append("code has no fingerprint and no commit with a note: nothing says what produced it")
    if record["wall_seconds"] is not None and record["wall_seconds"] < 0:
        problems.append(f"wall_seconds is negative: {record['wall_seconds']}")
    if record["created"] is not None:
        try:
            datetime.date.fromisoformat(record["created"])
        except ValueError:
            problems.append(f"created {record['created']!r} is not an ISO date (YYYY-MM-DD)")
    if not record["metrics"]:
        problems.append("metrics is empty")
    problems += [f"{p} is not a finite number" for p in _non_finite(record)]
    if problems:
        raise ValueError(f"result {record['name']!r} does not follow the schema: " + "; ".join(problems))


def environment(device: torch.device | str = "cpu") -> tuple[dict, dict]:
    """``(versions, machine)`` of this process, as a record stores them."""
    versions = {
        "attention": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }
    try:
        import sacrebleu  # optional: only the translation runs need it

        versions["sacrebleu"] = sacrebleu.__version__
    except ImportError:  # pragma: no cover
        pass
    device = torch.device(device)
    machine = {
        "device": device.type,
        "threads": torch.get_num_threads(),
        "processor": platform.processor() or platform.machine(),
    }
    if device.type == "cuda":
        machine["gpu"] = torch.cuda.get_device_name(device)
    return versions, machine


def record_result(
    name: str,
    *,
    command: str,
    recipe: dict,
    seeds: list[int],
    metrics: dict,
    wall_seconds: float | None,
    device: torch.device | str = "cpu",
    notes: str | None = None,
    directory: str | Path | None = None,
    write: bool = True,
) -> dict:
    """Validate and write ``<directory>/<name>.json`` (default: the package's results folder);
    ``write=False`` only builds and validates the record."""
    versions, machine = environment(device)
    record = {
        "schema": SCHEMA_VERSION,
        "name": name,
        "command": command,
        "recipe": recipe,
        "seeds": list(seeds),
        "versions": versions,
        "machine": machine,
        "code": code_stamp(),
        "wall_seconds": None if wall_seconds is None else round(wall_seconds, 1),
        "created": datetime.date.today().isoformat(),
        "metrics": metrics,
    }
    if notes:
        record["notes"] = notes
    record = json.loads(json.dumps(record))  # exactly what a reader will load (tuples -> lists ...)
    validate_result(record, name)
    if not write:
        return record
    path = Path(directory or RESULTS_DIR) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return record


def load_result(name: str, directory: str | Path | None = None) -> dict:
    """The record ``name`` (e.g. ``"hsk-convergence"``), checked against the schema."""
    path = Path(directory or RESULTS_DIR) / f"{name}.json"
    if not path.exists():
        known = ", ".join(list_results(directory)) or "none"
        raise FileNotFoundError(
            f"no recorded result {path} (recorded: {known}); "
            "`python -m attention --help` lists the commands that record them"
        )
    record = json.loads(path.read_text())
    validate_result(record, name)
    return record


def list_results(directory: str | Path | None = None) -> list[str]:
    """Names of the records in ``directory`` (default: the package's results folder)."""
    return sorted(p.stem for p in Path(directory or RESULTS_DIR).glob("*.json"))


def mean_sd(values) -> dict:
    """``{"mean", "sd", "n", "values"}`` of a list of numbers (sample standard deviation, n - 1;
    ``sd`` is None for a single value)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_sd needs at least one value")
    mean = sum(values) / len(values)
    sd = None if len(values) < 2 else math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return {"mean": mean, "sd": sd, "n": len(values), "values": values}


class PartialRuns:
    """The finished pieces of a recorded run not yet written as its record, so that it can stop and
    resume (:mod:`attention.studies.base`).

    One JSON line per finished piece in ``<directory>/partial/<name>.jsonl``, keyed by a string
    (e.g. ``"hsk/global-general+feed/seed1"``) and stamped with the recipe: a piece recorded
    under another recipe is not reused, unless ``reuse(old_recipe, result)`` says the piece would
    be the same under this recipe (e.g. a run that stopped early, before a lower epoch cap, runs
    the same updates under a higher one). One process writes the file (the study's runner, however
    many workers run the pieces); once the record is written its rows are the pieces, and the
    partial file can go.
    """

    def __init__(
        self,
        name: str,
        recipe: dict,
        directory: str | Path | None = None,
        reuse: Callable[[dict, dict], bool] | None = None,
    ):
        self.path = Path(directory or RESULTS_DIR) / "partial" / f"{name}.jsonl"
        self.recipe = json.loads(json.dumps(recipe))
        self._rows: dict[str, dict] = {}
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        for line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a crash: that piece runs again
                continue
            if row.get("recipe") == self.recipe:
                self._rows[row["key"]] = row["result"]
            elif reuse is not None and row["key"] not in self._rows and reuse(row.get("recipe") or {}, row["result"]):
                self._rows[row["key"]] = row["result"]

    def __contains__(self, key: str) -> bool:
        return key in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: str) -> dict:
        return self._rows[key]

    def add(self, key: str, result: dict) -> None:
        """Append one finished piece (flushed at once, so a crash loses at most the running one)."""
        result = json.loads(json.dumps(result))
        problems = _non_finite(result)
        if problems:
            raise ValueError(f"piece {key!r} has non-finite numbers at {problems}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"key": key, "recipe": self.recipe, "result": result}, ensure_ascii=False) + "\n")
        self._rows[key] = result


def beyond_spread(x: dict, y: dict) -> bool:
    """Whether two :func:`mean_sd` summaries differ by more than their standard deviations added
    together: the book's rule for "a difference larger than the seed spread" (chapters 3, 4, 9)."""
    for name, s in (("x", x), ("y", y)):
        if s.get("sd") is None:
            raise ValueError(f"{name} has a single value (n={s.get('n')}): no seed spread to compare with")
    return abs(x["mean"] - y["mean"]) > x["sd"] + y["sd"]


def _seed_statistics(systems, references, tokenizer: str, lowercase: bool, what: str):
    """Per seed, the (sentences, 2·4 + 2) array of BLEU's sentence statistics of ``systems``."""
    np = numpy

    def prepare(text: str) -> list[str]:
        return tokenize(text.lower() if lowercase else text, tokenizer)

    refs = [[prepare(r)] for r in references]
    if isinstance(systems, str) or not systems or isinstance(systems[0], str):
        raise ValueError(
            f"{what}: a list of systems' outputs (one list of strings per seed), got {type(systems).__name__}"
        )
    out = []
    for k, hyps in enumerate(systems):
        if len(hyps) != len(references):
            raise ValueError(f"{what}, seed {k}: {len(hyps)} hypotheses but {len(references)} references")
        rows = []
        for hyp, ref in zip(hyps, refs):
            st = sentence_statistics(prepare(hyp), ref)
            rows.append([*st.correct, *st.total, st.hyp_len, st.ref_len])
        out.append(np.asarray(rows, dtype=np.int64))
    return out


def _bleu_of_sums(sums) -> float:
    sums = [int(v) for v in sums]
    return bleu_from_statistics(BleuStatistics(sums[:4], sums[4:8], sums[8], sums[9])).score


def paired_bootstrap(
    references,
    systems_a,
    systems_b,
    tokenizer: str = "13a",
    lowercase: bool = True,
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Paired bootstrap resampling over test sentences (Koehn 2004; sacreBLEU's
    ``--paired-bs``) for two systems each trained under several seeds.

    ``systems_a``, ``systems_b``: one list of hypothesis strings per seed, aligned with
    ``references``. Each resample draws the test sentences with replacement, the same draw for
    every system and seed (that is the pairing); in it, each system's score is its corpus BLEU
    averaged over its seeds. Returns the observed seed-mean BLEU of both and their difference
    ``a − b``, the 95 % interval of each and of the difference over the resamples, ``p`` (the
    share of resamples in which ``a`` does not beat ``b``: a one-sided p-value of "a > b") and
    whether the difference is beyond the interval (the interval excludes 0). The seed spread is
    the other half of the story: report it beside (:func:`mean_sd`)."""
    np = numpy

    if resamples < 100:
        raise ValueError(f"resamples must be at least 100 for a 95 % interval, got {resamples}")
    references = list(references)
    if not references:
        raise ValueError("paired_bootstrap needs at least one reference sentence")
    a = _seed_statistics(systems_a, references, tokenizer, lowercase, "systems_a")
    b = _seed_statistics(systems_b, references, tokenizer, lowercase, "systems_b")

    def score(stats, index=None) -> float:
        return float(np.mean([_bleu_of_sums(s.sum(0) if index is None else s[index].sum(0)) for s in stats]))

    rng = np.random.default_rng(seed)
    n = len(references)
    draws = np.empty((resamples, 2))
    for i in range(resamples):
        index = rng.integers(0, n, n)
        draws[i] = score(a, index), score(b, index)
    diff = draws[:, 0] - draws[:, 1]

    def interval(values) -> list[float]:
        return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]

    observed_a, observed_b = score(a), score(b)
    ci = interval(diff)
    return {
        "a": {"bleu": observed_a, "interval": interval(draws[:, 0]), "seeds": len(a)},
        "b": {"bleu": observed_b, "interval": interval(draws[:, 1]), "seeds": len(b)},
        "difference": observed_a - observed_b,
        "interval": ci,
        "p": float(np.mean(diff <= 0)),
        "beyond_interval": bool(ci[0] > 0 or ci[1] < 0),
        "resamples": resamples,
        "sentences": n,
    }


def difference(x: dict, y: dict, digits: int = 2) -> str:
    """``x − y`` of two :func:`mean_sd` summaries, and whether it exceeds the seed spread,
    e.g. ``"+1.76 (beyond the seed spread)"``."""
    verdict = "beyond the seed spread" if beyond_spread(x, y) else "within the seed spread"
    return f"{x['mean'] - y['mean']:+.{digits}f} ({verdict})"


def variant_seed_keys(recipe: dict) -> list[str]:
    """``"<variant>/seed<s>"`` for every seed and variant of ``recipe`` (seeds outer): the pieces
    of a recorded comparison."""
    return [f"{v}/seed{s}" for s in recipe["seeds"] for v in recipe["variants"]]


def pieces_status(done: PartialRuns, keys: list[str]) -> dict[str, list[str]]:
    """``{"done", "missing"}``: which of ``keys`` ``done`` holds (a command's ``--status``)."""
    return {"done": [k for k in keys if k in done], "missing": [k for k in keys if k not in done]}


def run_missing(
    done: PartialRuns,
    keys: list[str],
    run_one: Callable[[str, int], dict],
    progress: bool = False,
    reverse: bool = False,
) -> list[dict] | None:
    """Run ``run_one(variant, seed)`` for every ``"<variant>/seed<s>"`` key that ``done`` lacks
    (``reverse``: from the last backwards, for a second process), keeping each result as it lands.
    Returns every run as ``{"variant", "seed", **result}`` once all keys are done, else None."""
    for key in reversed(keys) if reverse else keys:
        if key in done:
            continue
        variant, seed = key.split("/seed")
        row = run_one(variant, int(seed))
        done.add(key, row)
        if progress:
            print(key, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    if any(k not in done for k in keys):
        return None
    return [{"variant": k.split("/seed")[0], "seed": int(k.split("/seed")[1]), **done.get(k)} for k in keys]
