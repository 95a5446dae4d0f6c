"""Explorers: move a control, watch the attention figure change.

One explorer, two paths (``CONTRIBUTING.md``, "Adding an explorer": thin widgets around a figure function):

* **live** -- in Jupyter or Colab: controls plus an ``Image``; every change
  recomputes the figure in the kernel. Uses only widgets that exist in both
  ipywidgets 7.7 (Colab's front end) and 8.
* **static** -- on the website, which has no kernel: every combination of the
  controls is drawn once at build time, and the frames sit in nested ``Stack``
  widgets whose ``selected_index`` is ``jslink``-ed to the controls, so the browser
  switches frames by itself (needs ipywidgets 8, which builds the site).

``mode="auto"`` picks static when the book build sets ``ATTENTION_BOOK_STATIC=1``
(``book/_ext``), live otherwise. ipywidgets is imported only when an explorer is made.

The chapters' explorers live in the book (``attention/book/chapters/chNN.py``); each registers
itself in :data:`EXPLORERS` with :func:`register_explorer` when its module is imported, and
``import attention.book.chapters`` imports them all.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Sequence

from .viz import figure_to_png

__all__ = ["Explorer", "explorer", "EXPLORERS", "register_explorer"]


class Explorer:
    """What :func:`explorer` returns: the widget tree plus handles for tests.

    Attributes:
        widget: the top-level ipywidgets box (displayed by the notebook).
        controls: name -> control widget.
        mode: ``"live"`` or ``"static"``.
        image: the live ``Image`` widget (live mode only).
        frames: number of precomputed frames (static mode only).
    """

    def __init__(self, widget, controls: dict, mode: str, image=None, frames: int = 0, links: list | None = None):
        self.widget, self.controls, self.mode, self.image, self.frames = (widget, controls, mode, image, frames)
        self.links = links or []  # static mode: the jslinks (control.index -> Stack.selected_index)

    def _ipython_display_(self):  # ipywidgets 7 and 8 both honour this
        from IPython.display import display

        display(self.widget)


_LABEL = {"description_width": "initial"}  # show the whole control name (ipywidgets 7 and 8)


def _make_control(widgets, name: str, options: Sequence[Any], default: Any):
    labelled = [(str(o), o) for o in options]
    if all(isinstance(o, (int, float)) for o in options):
        return widgets.SelectionSlider(
            options=labelled, value=default, description=name, continuous_update=True, style=_LABEL
        )
    return widgets.Dropdown(options=labelled, value=default, description=name, style=_LABEL)


def explorer(
    draw: Callable[..., Any],
    controls: dict[str, Sequence[Any]],
    defaults: dict[str, Any] | None = None,
    mode: str = "auto",
    dpi: int = 72,
) -> Explorer:
    """Build an explorer around ``draw(**values) -> matplotlib Figure``.

    Args:
        draw: the viz function; called with one value per control.
        controls: name -> the values a reader may pick (numbers become a slider,
            anything else a dropdown).
        defaults: starting values; by default ``draw``'s own defaults (else each
            control's first value), so the starting frame is ``draw()``, the figure
            the book shows.
        mode: ``"live"``, ``"static"`` or ``"auto"`` (see module docstring).
    """
    import ipywidgets as widgets

    signature = inspect.signature(draw).parameters
    start = {
        name: signature[name].default if name in signature and signature[name].default in opts else opts[0]
        for name, opts in controls.items()
    }
    defaults = start | dict(defaults or {})
    unknown = set(defaults) - set(controls)
    if unknown:
        raise ValueError(f"defaults name unknown controls {sorted(unknown)}; controls: {list(controls)}")
    for name, value in defaults.items():
        if value not in controls[name]:
            raise ValueError(f"default {name}={value!r} is not among its options {list(controls[name])}")
    if mode == "auto":
        mode = "static" if os.environ.get("ATTENTION_BOOK_STATIC") == "1" else "live"
    if mode not in ("live", "static"):
        raise ValueError(f"mode must be 'live', 'static' or 'auto', got {mode!r}")
    ctrl = {name: _make_control(widgets, name, opts, defaults[name]) for name, opts in controls.items()}
    box = widgets.HBox if len(ctrl) < 3 else widgets.VBox
    if mode == "live":
        return _live(widgets, draw, ctrl, box, dpi)
    return _static(widgets, draw, controls, ctrl, box, dpi)


def _live(widgets, draw, ctrl, box, dpi) -> Explorer:
    def render() -> bytes:
        return figure_to_png(draw(**{name: c.value for name, c in ctrl.items()}), dpi=dpi)

    image = widgets.Image(value=render(), format="png")

    def redraw(change=None):
        image.value = render()

    for c in ctrl.values():
        c.observe(redraw, names="value")
    return Explorer(widgets.VBox([box(list(ctrl.values())), image]), ctrl, "live", image=image)


def _static(widgets, draw, controls, ctrl, box, dpi) -> Explorer:
    if not hasattr(widgets, "Stack"):
        raise RuntimeError("the static explorer needs ipywidgets >= 8 (Stack); use mode='live' in a running kernel")
    names = list(controls)
    n_frames = 0
    links = []

    def level(depth: int, chosen: dict):
        """A Stack over the options of control ``depth``, each child one level deeper."""
        nonlocal n_frames
        if depth == len(names):
            n_frames += 1
            return widgets.Image(value=figure_to_png(draw(**chosen), dpi=dpi), format="png")
        name = names[depth]
        children = [level(depth + 1, chosen | {name: v}) for v in controls[name]]
        stack = widgets.Stack(children, selected_index=ctrl[name].index)
        links.append(widgets.jslink((ctrl[name], "index"), (stack, "selected_index")))
        return stack

    frames = level(0, {})
    return Explorer(widgets.VBox([box(list(ctrl.values())), frames]), ctrl, "static", frames=n_frames, links=links)


#: Every chapter's explorer by name, filled by :func:`register_explorer` as the chapter modules are
#: imported (``import attention.book.chapters``); the Colab (ipywidgets 7.7) test drives each one.
EXPLORERS: dict[str, Callable[..., Explorer]] = {}


def register_explorer(name: str) -> Callable[[Callable[..., Explorer]], Callable[..., Explorer]]:
    """Decorator: list the explorer ``make(mode=...) -> Explorer`` in :data:`EXPLORERS` as ``name``.

    Every explorer must be callable with ``mode`` alone (an untrained demo model when it needs one).
    A name taken by another function is an error; the same function again (a reloaded module)
    replaces itself."""

    def add(make: Callable[..., Explorer]) -> Callable[..., Explorer]:
        known = EXPLORERS.get(name)
        if known is not None and (known.__module__, known.__qualname__) != (make.__module__, make.__qualname__):
            raise ValueError(f"explorer {name!r} is already {known.__module__}.{known.__qualname__}")
        EXPLORERS[name] = make
        return make

    return add
