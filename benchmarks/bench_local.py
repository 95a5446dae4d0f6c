"""Global vs local attention: time and memory kept for backward as the source grows.

    python benchmarks/bench_local.py            # S = 64 ... 4096, L = S, D = 10
    python benchmarks/bench_local.py --quick    # S = 64 ... 1024

Loose checks (not unit tests; these are measurements): at fixed D, local attention's
saved memory grows linearly in S (within 2x of proportional), global's quadratically.
Time is printed, never asserted.
"""

import argparse

import torch

from attention.cost import attention_cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--D", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [64, 256, 1024] if args.quick else [64, 256, 1024, 4096]
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        rows = {kind: [attention_cost(kind, S, D=args.D, device=device) for S in sizes] for kind in ("global", "local")}
        print(f"\n{device}: L = S, E = 64, D = {args.D}")
        print(
            f"{'S':>6} {'global MB':>10} {'local MB':>10} {'mem ratio':>10} {'global ms':>10} {'local ms':>9} {'time ratio':>10}"
        )
        for i, S in enumerate(sizes):
            g, l = rows["global"][i], rows["local"][i]
            print(
                f"{S:>6} {g['saved_bytes'] / 2**20:10.2f} {l['saved_bytes'] / 2**20:10.2f} "
                f"{l['saved_bytes'] / g['saved_bytes']:10.3f} {g['seconds'] * 1e3:10.2f} "
                f"{l['seconds'] * 1e3:9.2f} {l['seconds'] / g['seconds']:10.3f}"
            )
        growth = sizes[-1] / sizes[0]
        local = rows["local"][-1]["saved_bytes"] / rows["local"][0]["saved_bytes"]
        glob = rows["global"][-1]["saved_bytes"] / rows["global"][0]["saved_bytes"]
        print(f"S grew {growth:.0f}x: local memory grew {local:.1f}x, global {glob:.1f}x")
        assert growth / 2 <= local <= growth * 2, f"local memory is not linear in S: {local:.1f}x"
        assert glob >= growth**2 / 4, f"global memory did not grow quadratically: {glob:.1f}x"


if __name__ == "__main__":
    main()
