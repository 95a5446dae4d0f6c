"""The performance appendix (``book/13-performance.md``, ``notebooks/13-performance.ipynb``): the
recorded benchmark, one group at a time (its figures are :mod:`attention.book.benchviz`'s)."""

from __future__ import annotations

from ...results import load_result
from ...widgets import Explorer, explorer, register_explorer
from ..benchviz import GROUPS, benchmark_figure

__all__ = ["benchmark_explorer"]


@register_explorer("benchmark")
def benchmark_explorer(record: dict | None = None, device: str = "cpu", mode: str = "auto") -> Explorer:
    """The performance appendix: one group of the recorded benchmark at a time (kernels against
    PyTorch's, scores against the dot score, local against global attention, every model family's
    training step), from the record ``benchmark`` (``python -m attention bench``).

    Args:
        record: a ``benchmark`` record (default: the package's registry).
        device: which section of the record (``"cpu"``; ``"cuda"`` once a GPU run recorded it).
    """
    record = load_result("benchmark") if record is None else record
    section = record["metrics"][device]

    def draw(group: str = "kernels"):
        return benchmark_figure(section["rows"], group, title=section["label"])

    return explorer(draw, {"group": list(GROUPS)}, mode=mode)
