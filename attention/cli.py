"""The command line: runs too long for a notebook, recorded in the results registry.

    python -m attention convergence              # chapter 3: both models to early stopping
    python -m attention ablation --budget small  # chapters 4 and 9: every score x placement
    python -m attention results                  # list the records and check them against the schema

Each command writes ``attention/results/<name>.json`` through :func:`attention.results.record_result`
(``--results-dir`` writes elsewhere); the chapters read them with :func:`attention.results.load_result`.
"""
from __future__ import annotations

import argparse
from typing import Sequence

from .ablation import BUDGETS, run_ablation
from .experiments import convergence
from .results import RESULTS_DIR, list_results, load_result

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attention", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convergence", help="chapter 3: both models trained to early stopping")
    conv.add_argument("--epochs", type=int, default=40, help="upper bound on epochs")
    conv.add_argument("--seed", type=int, default=0)
    abl = sub.add_parser("ablation", help="chapter 9: every score x global/local x input feeding")
    abl.add_argument("--budget", default="small", choices=sorted(BUDGETS),
                     help="'small' (the book's) or 'test' (seconds)")
    abl.add_argument("--seed", type=int, default=0)
    res = sub.add_parser("results", help="list the recorded results, checked against the schema")
    for p in (conv, abl, res):
        p.add_argument("--results-dir", default=None, help=f"default: {RESULTS_DIR}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "convergence":
        record = convergence(args.epochs, args.seed, args.results_dir, progress=True)
        for name, m in record["metrics"]["models"].items():
            print(f"{name}: BLEU {m['bleu']:.2f} after {m['train_seconds']} s "
                  f"({m['epochs_run']} epochs, best {m['best_epoch']})")
        print(f"recorded hsk-convergence in {args.results_dir or RESULTS_DIR}")
    elif args.command == "ablation":
        record = run_ablation(args.budget, args.seed, directory=args.results_dir, progress=True)
        print(f"{len(record['metrics']['results'])} variants in {record['wall_seconds']} s; "
              f"recorded {record['name']} in {args.results_dir or RESULTS_DIR}")
    elif args.command == "results":
        for name in list_results(args.results_dir):
            r = load_result(name, args.results_dir)  # raises on a record that breaks the schema
            wall = "?" if r["wall_seconds"] is None else f"{r['wall_seconds'] / 60:.0f} min"
            print(f"{name:<24} seeds {r['seeds']}  {wall:>7}  {r['created'] or '?':<10}  {r['command']}")
    return 0
