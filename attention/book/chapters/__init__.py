"""The book's chapters: each chapter's figures and explorers, one module per chapter.

``chNN`` is chapter NN (its notebooks ``notebooks/NN-*.ipynb`` and ``NNb-*.ipynb``; ``ch13`` the
performance appendix, ``13-performance``); ``common`` holds what several chapters' explorers share.
Chapters 1 and 2 draw only with the library's figures.
The library keeps what every chapter draws with (:mod:`attention.viz`, :mod:`attention.widgets`).
Importing this package imports every chapter module, and each registers its explorers in
:data:`attention.widgets.EXPLORERS` under the names the tests and the site build use.
"""

from . import ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch13, common  # noqa: F401  (registers them)

__all__ = ["ch03", "ch04", "ch05", "ch06", "ch07", "ch08", "ch09", "ch10", "ch11", "ch13", "common"]
