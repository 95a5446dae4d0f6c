"""The command line: the book's recorded runs (studies) and its tools.

    python -m attention <command> [--workers N | --scheduler ADDRESS] [--only PATTERN] [--status]

Every study (:data:`attention.studies.registry.STUDIES`) is a command, or an option of one
(``ablation --budget small``, ``transformer --heads``); ``python -m attention --help`` lists them.
A study runs only the pieces its record and partial file lack (resumable), here or on a Dask
cluster (``--workers N``: a local cluster of N one-thread processes; ``--scheduler ADDRESS``: a
running one), and writes ``attention/results/<name>.json`` through
:func:`attention.results.record_result` once every piece is done (``--results-dir`` writes
elsewhere). The tools:

    python -m attention results                  # list the records and check them against the schema
    python -m attention bench [--quick]          # speed and memory against PyTorch's kernels, as ratios
    python -m attention gpu-check [--quick]      # every family and variant on the GPU (CPU parts without one)
    python -m attention export-web --out DIR     # the playground's models as ONNX, with a parity check

The chapters read the records with :func:`attention.results.load_result`.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from ..results import RESULTS_DIR, list_results, load_result
from ..studies.base import run_study, study_status
from ..studies.registry import commands, selectors
from .bench import run_benchmark
from .gpu_check import run_gpu_check
from .webexport import PLAYGROUND, export_web

__all__ = ["main"]


def _study_parser(sub, command: str, studies) -> None:
    """One subcommand for the studies of ``command``; their selecting options become its options."""
    helps = "; ".join(dict.fromkeys(s.help for s in studies))
    p = sub.add_parser(command, help=helps, description=helps)
    options: dict[str, list[str]] = {}
    for study in studies:
        tokens = selectors(study)
        for i, token in enumerate(tokens):
            if token.startswith("--"):
                value = tokens[i + 1] if i + 1 < len(tokens) and not tokens[i + 1].startswith("--") else None
                options.setdefault(token, [])
                if value is not None and value not in options[token]:
                    options[token].append(value)
    for option, values in options.items():
        if values:
            p.add_argument(option, choices=values, default=values[0], help=f"default: {values[0]}")
        else:
            p.add_argument(option, action="store_true")
    p.add_argument("--status", action="store_true", help="list the pieces done and missing, run nothing")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="run the pieces on a local Dask cluster of this many one-thread processes (default 1: here)",
    )
    p.add_argument("--scheduler", default=None, help="run the pieces on the Dask cluster at this address")
    p.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="PATTERN",
        help="run only the pieces whose keys match this glob pattern (repeatable), e.g. 'hsk/*'",
    )
    p.add_argument("--results-dir", default=None, help=f"default: {RESULTS_DIR}")
    p.set_defaults(studies=studies, options=list(options))


def _chosen(args) -> list:
    """The studies of the subcommand whose selecting options are the ones given."""
    wanted = []  # the options given, as a study's command spells them
    for option in args.options:
        value = getattr(args, option[2:].replace("-", "_"))
        if value is True:
            wanted.append(option)
        elif value not in (False, None):
            wanted += [option, value]
    return [study for study in args.studies if selectors(study) == tuple(wanted)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attention", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command, studies in commands().items():
        _study_parser(sub, command, studies)
    res = sub.add_parser("results", help="list the recorded results, checked against the schema")
    bench = sub.add_parser("bench", help="speed and memory against PyTorch's kernels (record 'benchmark')")
    bench.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    bench.add_argument("--device", action="append", default=None, help="cpu or cuda (repeatable; default: all here)")
    bench.add_argument("--no-record", action="store_true", help="print only; leave the record as it is")
    gpu = sub.add_parser("gpu-check", help="every model family and variant on CUDA, tests, benchmark, notebooks")
    gpu.add_argument("--quick", action="store_true", help="the benchmark's quick sizes")
    gpu.add_argument("--no-notebooks", action="store_true", help="skip executing the chapters' notebooks")
    gpu.add_argument("--jobs", type=int, default=6, help="notebooks executed at once (default 6)")
    gpu.add_argument("--report", default="gpu-check-report.json", help="where the JSON report goes")
    web = sub.add_parser("export-web", help="the playground's models as ONNX graphs for the website")
    web.add_argument("--out", required=True, help="folder to write (e.g. _build/html/playground-models)")
    web.add_argument(
        "--model", action="append", default=None, choices=sorted(PLAYGROUND), help="export only this model (repeatable)"
    )
    web.add_argument("--no-check", action="store_true", help="skip the onnxruntime-vs-torch parity check")
    for p in (res, bench):
        p.add_argument("--results-dir", default=None, help=f"default: {RESULTS_DIR}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if hasattr(args, "studies"):
        for study in _chosen(args):
            if args.status:
                status = study_status(study, args.results_dir)
                print(f"{study.name}: {len(status['done'])} runs done, {len(status['missing'])} missing")
                for key in status["missing"]:
                    print("  missing", key)
                continue
            record = run_study(
                study, args.results_dir, workers=args.workers, scheduler=args.scheduler, only=args.only, progress=True
            )
            if record is None:
                print(f"{study.name}: pieces still missing: run again to resume")
            else:
                print(f"recorded {study.name} in {args.results_dir or RESULTS_DIR}")
    elif args.command == "bench":
        run_benchmark(args.device, quick=args.quick, record=not args.no_record, directory=args.results_dir)
    elif args.command == "gpu-check":
        report = run_gpu_check(quick=args.quick, notebooks=not args.no_notebooks, jobs=args.jobs, report=args.report)
        return 0 if report["passed"] else 1
    elif args.command == "export-web":
        export_web(args.out, args.model, check=not args.no_check)
    elif args.command == "results":
        for name in list_results(args.results_dir):
            r = load_result(name, args.results_dir)  # raises on a record that breaks the schema
            wall = "?" if r["wall_seconds"] is None else f"{r['wall_seconds'] / 60:.0f} min"
            print(f"{name:<24} seeds {r['seeds']}  {wall:>7}  {r['created'] or '?':<10}  {r['command']}")
    return 0
