"""Speed (and, on CUDA, peak memory) of our attention against PyTorch's own kernels.

    python benchmarks/bench_attention.py            # CPU, plus CUDA when present
    python benchmarks/bench_attention.py --quick    # smaller sizes

Prints ratios ours / PyTorch measured in one run, so machine noise mostly cancels.
Targets (not asserted; these machines are noisy): the fused path within 1.3x of
``F.scaled_dot_product_attention``; the explicit path is the readable one and is
expected to cost more, like PyTorch's own math backend.
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

from attention import MultiHeadAttention, lengths_to_mask, scaled_dot_product_attention


def timeit(fn, device, repeat):
    fn()  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(fn, device):
    if device.type != "cuda":
        return float("nan")
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() / 2**20


def bench(device, B, H, L, E, repeat):
    torch.manual_seed(0)
    D = E // H
    q, k, v = (torch.randn(B, H, L, D, device=device) for _ in range(3))
    keep = lengths_to_mask(torch.randint(L // 2, L + 1, (B,)), L).to(device)[:, None, None, :]
    x = torch.randn(B, L, E, device=device)
    pad = ~keep[:, 0, 0]
    theirs = nn.MultiheadAttention(E, H, batch_first=True).to(device).eval()
    ours = MultiHeadAttention(E, H).to(device).eval().load_torch_weights(theirs)
    ours_fused = MultiHeadAttention(E, H, fused=True).to(device).eval().load_torch_weights(theirs)
    cases = {
        "sdpa explicit vs F.sdpa": (lambda: scaled_dot_product_attention(q, k, v, attn_mask=keep),
                                    lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep)),
        "sdpa fused vs F.sdpa": (lambda: scaled_dot_product_attention(q, k, v, attn_mask=keep, fused=True),
                                 lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep)),
        "MHA explicit vs nn.MHA (weights)": (lambda: ours(x, x, x, key_padding_mask=pad),
                                             lambda: theirs(x, x, x, key_padding_mask=pad)),
        "MHA fused vs nn.MHA (no weights)": (lambda: ours_fused(x, x, x, key_padding_mask=pad, need_weights=False),
                                             lambda: theirs(x, x, x, key_padding_mask=pad, need_weights=False)),
    }
    print(f"\n{device.type}: B={B} H={H} L=S={L} E={E}")
    print(f"{'case':<36} {'ours ms':>9} {'torch ms':>9} {'time x':>7} {'mem x':>7}")
    with torch.no_grad():
        for name, (mine, ref) in cases.items():
            t_m, t_r = timeit(mine, device, repeat), timeit(ref, device, repeat)
            m_m, m_r = peak_memory(mine, device), peak_memory(ref, device)
            mem = f"{m_m / m_r:7.2f}" if device.type == "cuda" else "    n/a"
            print(f"{name:<36} {t_m * 1e3:9.2f} {t_r * 1e3:9.2f} {t_m / t_r:7.2f} {mem}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    for device in devices:
        sizes = [(8, 4, 128, 256)] if args.quick else [(8, 4, 128, 256), (4, 8, 512, 512)]
        if device.type == "cuda" and not args.quick:
            sizes.append((8, 16, 2048, 1024))
        for B, H, L, E in sizes:
            bench(device, B, H, L, E, repeat=3 if args.quick else 10)


if __name__ == "__main__":
    main()
