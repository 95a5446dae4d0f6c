"""The command line: runs too long for a notebook, recorded in the results registry.

    python -m attention convergence              # chapter 3: both models to early stopping
    python -m attention ablation --budget converged [--pair hsk]  # chapters 4 and 9, 3 seeds, resumable
    python -m attention ablation --budget small  # the one-seed, four-epoch grid of every variant
    python -m attention transformer [--pair hsk] # chapter 6: RNNsearch vs the Transformer, 3 seeds, resumable
    python -m attention transformer --heads      # chapter 6: the heads sweep
    python -m attention intra                    # chapter 6: LSTMN, Lin et al. +/- penalty, pooling; 3 seeds
    python -m attention han                      # chapter 5: HAN vs HN-AVE vs HN-MAX, attention vs ratings; 3 seeds
    python -m attention nested                   # chapter 5: nested word/character attention for spelling; 3 seeds
    python -m attention memory                   # chapter 7: MemN2N hops, DMN passes, NTM vs LSTM copy
    python -m attention captions                 # chapter 8: soft vs hard vs Gumbel attention; 3 seeds
    python -m attention multidim                 # chapter 4: multi-dimensional vs scalar attention vs mean pooling; 3 seeds
    python -m attention coupled                  # chapter 4: coupled vs uncoupled, 1 vs 2 attention layers (CMLA); 3 seeds
    python -m attention faithfulness             # chapter 10: do attention weights explain? perturbations, adversaries; 3 seeds
    python -m attention alignment                # chapter 10: the Transformer's cross-attention as alignment (dates); 3 seeds
    python -m attention bands                    # the checked live-training cells: spread over CPU kernels x seeds
    python -m attention results                  # list the records and check them against the schema
    python -m attention bench [--quick]          # speed and memory against PyTorch's kernels, as ratios
    python -m attention gpu-check [--quick]      # every family and variant on the GPU (CPU parts without one)
    python -m attention export-web --out DIR     # the playground's models as ONNX, with a parity check

Each command writes ``attention/results/<name>.json`` through :func:`attention.results.record_result`
(``--results-dir`` writes elsewhere); the chapters read them with :func:`attention.results.load_result`.
"""
from __future__ import annotations

import argparse
from typing import Sequence

from . import alignment, bands, captioning, comparison, coupled, evaluation, hierarchical, intra, memory, multidim, nested
from .bench import run_benchmark
from .gpu_check import run_gpu_check
from .webexport import PLAYGROUND, export_web
from .ablation import BUDGETS, converged_status, run_ablation, run_converged
from .experiments import convergence
from .results import RESULTS_DIR, list_results, load_result

__all__ = ["main"]

#: resumable recorded runs with no options but --status (and --reverse): command -> (status, run)
RESUMABLE = {
    "intra": (intra.intra_status, intra.run_intra),
    "han": (hierarchical.hierarchical_status, hierarchical.run_hierarchical),
    "nested": (nested.nested_status, nested.run_nested),
    "memory": (memory.memory_status, memory.run_memory),
    "captions": (captioning.captions_status, captioning.run_captions),
    "multidim": (multidim.multidim_status, multidim.run_multidim),
    "coupled": (coupled.coupled_status, coupled.run_coupled),
    "faithfulness": (evaluation.faithfulness_status, evaluation.run_faithfulness),
    "alignment": (alignment.alignment_status, alignment.run_alignment),
    "bands": (bands.band_status, bands.measure_bands),
}


def _resumable(sub, name: str, help_: str, reverse: bool = True) -> argparse.ArgumentParser:
    """The subcommand of a resumable recorded run (one of :data:`RESUMABLE`): ``--status`` and,
    where two processes can share the runs, ``--reverse``."""
    p = sub.add_parser(name, help=help_)
    p.add_argument("--status", action="store_true", help="list the runs done and missing, run nothing")
    if reverse:
        p.add_argument("--reverse", action="store_true", help="take the missing runs from the last (a second process)")
    return p


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attention", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convergence", help="chapter 3: both models trained to early stopping")
    conv.add_argument("--seed", type=int, action="append", default=None,
                      help="run only this seed (repeatable); the record is written once every seed is done")
    abl = sub.add_parser("ablation", help="chapter 9: every score x global/local x input feeding")
    abl.add_argument("--budget", default="small", choices=sorted(BUDGETS),
                     help="'small' (the book's) or 'test' (seconds)")
    abl.add_argument("--seed", type=int, default=0, help="budgets 'small' and 'test'")
    abl.add_argument("--pair", action="append", default=None,
                     help="converged budgets: run only this pair (hsk, ding, dates); repeatable")
    abl.add_argument("--status", action="store_true",
                     help="converged budgets: list the pieces done and missing, run nothing")
    tr = sub.add_parser("transformer", help="chapter 6: RNNsearch vs the Transformer; the heads sweep")
    tr.add_argument("--pair", action="append", default=None, help="run only this pair (hsk, ding); repeatable")
    tr.add_argument("--heads", action="store_true", help="run the heads sweep instead")
    tr.add_argument("--status", action="store_true", help="list the runs done and missing, run nothing")
    resumable = [_resumable(sub, name, help_, reverse=name not in ("nested", "bands")) for name, help_ in (
        ("bands", "the checked cells that train live: their numbers under every CPU kernel setting x 3 seeds"),
        ("intra", "chapter 6: LSTMN, Lin et al.'s self-attention, pooling baselines"),
        ("han", "chapter 5: HAN, HN-AVE, HN-MAX; sentence attention vs human ratings"),
        ("nested", "chapter 5: word-level vs nested word/character attention, spelling"),
        ("memory", "chapter 7: memory networks with 1-3 hops (bAbI-format tasks), DMN passes, NTM copy"),
        ("captions", "chapter 8: soft vs hard vs Gumbel attention captioning digit rows"),
        ("multidim", "chapter 4: multi-dimensional vs scalar attention vs mean pooling"),
        ("coupled", "chapter 4: coupled multi-layer attention for aspect and opinion terms"),
        ("faithfulness", "chapter 10: perturbed and adversarial attention weights, input x gradient"),
        ("alignment", "chapter 10: the Transformer's cross-attention as word alignment on the dates"))]
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
    web.add_argument("--model", action="append", default=None, choices=sorted(PLAYGROUND),
                     help="export only this model (repeatable)")
    web.add_argument("--no-check", action="store_true", help="skip the onnxruntime-vs-torch parity check")
    for p in (conv, abl, tr, *resumable, res, bench):
        p.add_argument("--results-dir", default=None, help=f"default: {RESULTS_DIR}")
    return parser


def _print_status(status: dict[str, list[str]], what: str) -> None:
    """The ``{"done", "missing"}`` of a resumable recorded run."""
    print(f"{len(status['done'])} {what} done, {len(status['missing'])} missing")
    for key in status["missing"]:
        print("  missing", key)


def _print_recorded(record: dict | list[dict] | None, directory) -> None:
    """What a resumable command finished: one record or several (chapter 7 writes three)."""
    if record is None:
        print("runs still missing: run again to resume")
    for r in [record] if isinstance(record, dict) else record or []:
        print(f"recorded {r['name']} in {directory or RESULTS_DIR}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "convergence":
        record = convergence(args.seed, args.results_dir, progress=True)
        if record is None:
            print("seeds still missing: run again to resume")
        else:
            for name, m in record["metrics"]["models"].items():
                print(f"{name}: BLEU {m['bleu']['mean']:.2f} ± {m['bleu']['sd']:.2f} "
                      f"(best epoch {m['best_epoch']['mean']:.1f} of {m['epochs_run']['mean']:.1f})")
            print(f"recorded hsk-convergence in {args.results_dir or RESULTS_DIR}")
    elif args.command == "ablation":
        if args.status and "variants" in BUDGETS[args.budget]:
            _print_status(converged_status(args.budget, args.results_dir), "pieces")
        elif "variants" in BUDGETS[args.budget]:  # resumable: runs what is missing
            record = run_converged(args.budget, pairs=args.pair, directory=args.results_dir, progress=True)
            if record is None:
                print("pieces still missing (other pairs, or another process): run again to resume")
            else:
                print(f"recorded {record['name']} in {args.results_dir or RESULTS_DIR}")
        else:
            record = run_ablation(args.budget, args.seed, directory=args.results_dir, progress=True)
            print(f"{len(record['metrics']['results'])} variants in {record['wall_seconds']} s; "
                  f"recorded {record['name']} in {args.results_dir or RESULTS_DIR}")
    elif args.command == "transformer":
        if args.status:
            _print_status(comparison.comparison_status(args.results_dir), "runs")
        else:
            if args.heads:
                record = comparison.run_heads(args.results_dir, progress=True)
            else:
                record = comparison.run_comparison(args.pair, args.results_dir, progress=True)
            _print_recorded(record, args.results_dir)
    elif args.command in RESUMABLE:
        status, run = RESUMABLE[args.command]
        if args.status:
            _print_status(status(args.results_dir), "runs")
        else:
            options = {"reverse": args.reverse} if hasattr(args, "reverse") else {}
            _print_recorded(run(args.results_dir, progress=True, **options), args.results_dir)
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
