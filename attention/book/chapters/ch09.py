"""Chapter 9, global and local attention (``notebooks/09-global-local.ipynb``): the local window's
explorer and the cost of global against local attention."""

from __future__ import annotations

from typing import Sequence

import torch

from ...functional import masked_softmax
from ...local import window_positions
from ...widgets import Explorer, explorer, register_explorer

__all__ = ["LOCAL_EXPLORER_CONTROLS", "local_window_figure", "local_explorer", "cost_figure"]


LOCAL_EXPLORER_CONTROLS = {"D": [1, 2, 3, 5], "sigma_over_D": [0.25, 0.5, 1.0], "p_t": [2.0, 5.5, 8.0, 11.5, 14.0]}


def local_window_figure(D: int = 3, sigma_over_D: float = 0.5, p_t: float = 8.0, S: int = 16, seed: int = 0):
    """Chapter 9's explorer frame: the window ``[p_t − D, p_t + D]``, the Gaussian
    ``exp(−(s − p_t)²/2σ²)`` (Luong: ``σ = D/2``), the raw alignment (softmax inside the
    window) and the final weights (their product), over S source positions.

    The raw scores are fixed random numbers (from ``seed``), as if from a ``dot`` score.
    """
    from matplotlib.figure import Figure

    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(S, generator=g)  # one query's raw scores e_s
    s = torch.arange(S, dtype=torch.float)
    window = window_positions(torch.tensor([[p_t]]), D)[0, 0]  # (2D+1,)
    keep = (s[:, None] == window[None, :].float()).any(-1)  # (S,)
    raw = masked_softmax(scores, keep)
    sigma = sigma_over_D * D
    gauss = torch.exp(-((s - p_t) ** 2) / (2 * sigma**2))
    final = raw * gauss
    fig = Figure(figsize=(6.4, 3.0), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(s - 0.2, raw, width=0.4, color="tab:gray", label="raw alignment (softmax in window)")
    ax.bar(s + 0.2, final, width=0.4, color="tab:blue", label="final weight = raw × Gaussian")
    fine = torch.linspace(0, S - 1, 200)
    ax.plot(
        fine, torch.exp(-((fine - p_t) ** 2) / (2 * sigma**2)), color="tab:orange", label=f"Gaussian, σ = {sigma:g}"
    )
    lo, hi = int(window[0]), int(window[-1])
    ax.axvspan(lo - 0.5, hi + 0.5, color="tab:orange", alpha=0.08)
    ax.axvline(p_t, color="tab:orange", ls="--", lw=1)
    ax.set(
        xlim=(-0.7, S - 0.3),
        ylim=(0, 1.05),
        xlabel="source position s",
        title=f"window [{lo}, {hi}] around p_t = {p_t:g} (D = {D}); weights sum to {final.sum():.2f}",
    )
    ax.legend(fontsize=7, loc="upper right")
    return fig


@register_explorer("local")
def local_explorer(mode: str = "auto", **defaults) -> Explorer:
    """Chapter 9: window half-width D, σ (as a fraction of D) and p_t -> the Gaussian
    window, the raw alignment and the final weights (:func:`local_window_figure`)."""
    return explorer(local_window_figure, LOCAL_EXPLORER_CONTROLS, defaults, mode=mode)


def cost_figure(sizes: Sequence[int], costs: dict[str, Sequence[dict]]):
    """Chapter 9: time and memory saved for backward vs source length, global vs local."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 3.0), layout="constrained")
    ax_t, ax_m = fig.subplots(1, 2)
    for kind, rows in costs.items():
        ax_t.plot(sizes, [r["seconds"] * 1e3 for r in rows], marker="o", label=kind)
        ax_m.plot(sizes, [r["saved_bytes"] / 2**20 for r in rows], marker="o", label=kind)
    ax_t.set(
        xscale="log",
        yscale="log",
        xlabel="source length S (= target length)",
        ylabel="ms (forward + backward)",
        title="time",
    )
    ax_m.set(
        xscale="log",
        yscale="log",
        xlabel="source length S (= target length)",
        ylabel="MiB saved for backward",
        title="memory",
    )
    ax_t.legend()
    return fig
