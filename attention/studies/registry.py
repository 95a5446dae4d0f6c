"""Every study of the book by record name (:data:`STUDIES`), and by command (:func:`commands`).

A study module declares ``STUDIES``, a list of :class:`~attention.studies.base.Study`; listing the
module here is all it takes for ``python -m attention <command>`` to run it.
"""

from __future__ import annotations

from . import (
    ablation,
    alignment,
    bands,
    bottleneck,
    captioning,
    comparison,
    convergence,
    coupled,
    decisive,
    dictionary,
    dmn_faithful,
    faithfulness,
    han,
    intra,
    joined,
    memory,
    multidim,
    nested,
    recipe,
    reinforce,
)
from .base import Study

__all__ = ["STUDIES", "MODULES", "commands", "selectors"]

MODULES = (
    convergence,
    bottleneck,
    dictionary,
    ablation,
    comparison,
    recipe,
    intra,
    joined,
    han,
    decisive,
    nested,
    memory,
    dmn_faithful,
    captioning,
    reinforce,
    multidim,
    coupled,
    faithfulness,
    alignment,
    bands,
)
#: record name -> study
STUDIES: dict[str, Study] = {s.name: s for m in MODULES for s in m.STUDIES}


def selectors(study: Study) -> tuple[str, ...]:
    """The options after the command that choose this study (``("--budget", "small")``, ``("--heads",)``)."""
    return tuple(study.command.split()[1:])


def commands() -> dict[str, list[Study]]:
    """command (the first word of each study's) -> its studies, in declaration order."""
    out: dict[str, list[Study]] = {}
    for study in STUDIES.values():
        out.setdefault(study.command.split()[0], []).append(study)
    return out
