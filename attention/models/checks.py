"""The checks every embedding-fed model shares: token ids, and the special ids of a config.

Shape legend: ``...`` any shape of ids; V the vocabulary size.

An id outside its vocabulary reaches ``nn.Embedding`` as ``IndexError: index out of range in self``
on the CPU and as a device-side assert on CUDA (which names neither the tensor nor the id, and
leaves the CUDA context unusable). :func:`check_ids` says instead which tensor, which vocabulary,
which id and where, before any kernel runs; a model calls it at the entry of ``forward``,
``encode`` and ``step``. :func:`check_special_id` does the same for a config's ``pad_id``,
``bos_id`` ... when the config is made, not when the model first meets them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["ID_DTYPES", "check_ids", "check_special_id"]

#: the dtypes ``nn.Embedding`` takes as indices
ID_DTYPES = (torch.long, torch.int32)
_DTYPE_NAMES = {torch.long: "torch.long", torch.int32: "torch.int32"}


def check_ids(
    ids: Tensor,
    vocab_size: int,
    what: str = "source",
    vocab: str | None = None,
    dtypes: tuple[torch.dtype, ...] = ID_DTYPES,
) -> None:
    """Refuse token ids that an embedding of ``vocab_size`` rows cannot look up, with a ValueError.

    Args:
        ids: ``(...)`` token ids, on any device.
        vocab_size: V; the valid ids are ``0 .. V - 1``.
        what: the tensor's name in the message (``"src"``, ``"tgt_in"``, ``"tokens"`` ...).
        vocab: the vocabulary's name in the message (``"source"``, ``"target"`` ...); default ``what``.
        dtypes: the integer dtypes accepted (default: those ``nn.Embedding`` takes).

    The check is a comparison and an ``.any()`` on the ids' own device (one scalar read back);
    only when it fails are the offending ids brought to the CPU, to write the message. A traced
    graph (``torch.jit.trace``, ONNX export) cannot raise, so the check is skipped while tracing.
    """
    if not isinstance(ids, Tensor):
        raise ValueError(f"{what} must be a tensor of token ids; got {type(ids).__name__}")
    if ids.dtype not in dtypes:
        names = " or ".join(_DTYPE_NAMES.get(d, str(d)) for d in dtypes)
        raise ValueError(f"{what} must hold token ids ({names}); got {ids.dtype}, shape {tuple(ids.shape)}")
    if torch.jit.is_tracing():
        return
    bad = (ids < 0) | (ids >= vocab_size)  # (...)
    if not bool(bad.any()):
        return
    where = bad.nonzero()  # (n, ids.dim()), row-major order: the first offending id first
    first = tuple(where[0].tolist())
    position = str(first[0]) if len(first) == 1 else str(first)
    wrong = ids[bad]  # (n,)
    n = len(wrong)
    more = f"; {n} ids are out of range, from {int(wrong.min())} to {int(wrong.max())}" if n > 1 else ""
    raise ValueError(
        f"{what} {tuple(ids.shape)} has token id {int(ids[first])} at position {position}, but the "
        f"{vocab or what} vocabulary has {vocab_size} ids (0..{vocab_size - 1}){more}"
    )


def check_special_id(config: str, name: str, value, **vocabs: int) -> None:
    """Refuse a config's special id (``pad_id``, ``bos_id`` ...) that is not an id of every vocabulary
    in ``vocabs`` (field name -> size), e.g. ``check_special_id("TransformerConfig", "bos_id", 2,
    tgt_vocab=80)``. Without ``vocabs`` only the type is checked."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not vocabs:
        if not is_int:
            raise ValueError(f"{config}.{name} must be an int; got {value!r}")
        return
    size = min(vocabs.values())
    if not is_int or not 0 <= value < size:
        sizes = " and ".join(f"{k}={v}" for k, v in vocabs.items())
        raise ValueError(f"{config}.{name} must be an int in [0, {size}) (an id of {sizes}); got {value!r}")
