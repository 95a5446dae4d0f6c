"""Score functions: how much should query ``t`` look at key ``i``?

Shape legend: B batch, L query length, S key length, Eq query dim, Ek key dim,
A hidden ("attention") dim of the additive/concat scores.

Every score maps ``query (B, L, Eq)``, ``key (B, S, Ek)`` to ``scores (B, L, S)``
(``CONTRIBUTING.md``, "Package conventions") and is picked by name with :func:`make_score`:

========== ========================================== ==========================
name       formula                                    paper
========== ========================================== ==========================
dot        ``s_tᵀ h_i``                               Luong et al. 2015
scaled_dot ``s_tᵀ h_i / √d``  (d = the vectors' size) Vaswani et al. 2017
general    ``s_tᵀ W_a h_i``                           Luong et al. 2015
additive   ``v_aᵀ tanh(W_a s_{t-1} + U_a h_i)``       Bahdanau et al. 2015
concat     ``v_aᵀ tanh(W_a [s_t; h_i])``              Luong et al. 2015
location   ``softmax(W_a s_t)`` (ignores ``h_i``)     Luong et al. 2015
cosine     ``β · cos(s_t, h_i)``                      Graves et al. 2014 (NTM)
========== ========================================== ==========================

Additive and concat scores build a tensor for every (query, key) pair, ``(B, L, S, A)`` (concat
also ``(B, L, S, Eq + Ek)``). When that would pass :data:`MAX_PAIR_BYTES`, :class:`Score` scores the
queries in chunks, each chunk's pairs within the bound; under autograd each chunk is
checkpointed (recomputed in the backward pass), so the memory kept for backward stays bounded too.

The query is whatever decoder state the model scores with: Luong's decoder uses the current
state ``s_t`` (his ``h_t``), Bahdanau's RNNsearch the previous one, ``s_{t-1}``.

Chapter 4 (``book/04-scores.md``) puts each formula beside its line of code here.
"""

from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

__all__ = [
    "Score",
    "DotScore",
    "ScaledDotScore",
    "GeneralScore",
    "AdditiveScore",
    "ConcatScore",
    "LocationScore",
    "CosineScore",
    "SCORES",
    "make_score",
    "score_options",
    "is_content_based",
    "MAX_PAIR_BYTES",
]

#: The most bytes an additive or concat score may hold in its (query, key) pair tensors at once
#: (64 MiB); a score's own ``max_pair_bytes`` overrides it. Larger inputs are scored in chunks
#: of queries (at least one query per chunk).
MAX_PAIR_BYTES = 64 * 2**20


class Score(nn.Module):
    """Base class: checks shapes once, then calls :meth:`score` (over chunks of queries when the
    pair tensors of an additive or concat score would pass :data:`MAX_PAIR_BYTES`)."""

    same_dim = False  # True when the formula needs Eq == Ek (dot, scaled_dot, cosine)
    content_based = True  # False when the score ignores the keys' content (location)
    query_dim: int | None = None  # Eq the parameters were built for (None: any)
    key_dim: int | None = None  # Ek the parameters were built for (None: any)

    max_pair_bytes: int | None = None  # None: MAX_PAIR_BYTES

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        """Args: query ``(B, L, Eq)``, key ``(B, S, Ek)``. Returns scores ``(B, L, S)``."""
        check_query_key(query, key, same_dim=self.same_dim, name=type(self).__name__)
        self.check_dims(query, key)
        rows = self.query_chunk(query, key)
        L = query.shape[1]
        if rows >= L:
            return self.score(query, key)
        keep_for_backward = torch.is_grad_enabled() and (
            query.requires_grad or key.requires_grad or any(p.requires_grad for p in self.parameters())
        )
        chunks = []
        for start in range(0, L, rows):
            q = query[:, start : start + rows]  # (B, rows, Eq)
            if keep_for_backward:  # keep only the inputs; the backward pass recomputes the pairs
                chunks.append(checkpoint(self.score, q, key, use_reentrant=False))
            else:
                chunks.append(self.score(q, key))
        return torch.cat(chunks, dim=1)  # (B, L, S)

    def pair_width(self) -> int:
        """Numbers per (query, key) pair the score materialises (0: no pair tensor)."""
        return 0

    def query_chunk(self, query: Tensor, key: Tensor) -> int:
        """How many queries to score at once so the pair tensors stay within the bound."""
        width = self.pair_width()
        B, L, S = query.shape[0], query.shape[1], key.shape[1]
        if width == 0 or B * S == 0:
            return max(L, 1)
        bound = MAX_PAIR_BYTES if self.max_pair_bytes is None else self.max_pair_bytes
        per_query = B * S * width * query.element_size()  # bytes of one query's pairs
        return max(1, min(L, bound // per_query))

    def check_dims(self, query: Tensor | None = None, key: Tensor | None = None) -> None:
        """A score with parameters takes only the sizes it was built for."""
        wrong = (query is not None and self.query_dim is not None and query.shape[-1] != self.query_dim) or (
            key is not None and self.key_dim is not None and key.shape[-1] != self.key_dim
        )
        if wrong:
            got = ", ".join(f"{n} {tuple(t.shape)}" for n, t in (("query", query), ("key", key)) if t is not None)
            raise ValueError(
                f"{type(self).__name__} was built for query_dim (Eq) = {self.query_dim}, "
                f"key_dim (Ek) = {self.key_dim}; got {got}"
            )

    def score(self, query: Tensor, key: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class DotScore(Score):
    """Luong et al. (2015), Eq. 8 "dot": ``score(h_t, h̄_s) = h_tᵀ h̄_s``."""

    same_dim = True

    def score(self, query, key):
        return query @ key.transpose(1, 2)  # (B, L, Eq) @ (B, Ek, S) -> (B, L, S)


class ScaledDotScore(Score):
    """Vaswani et al. (2017), Eq. 1: ``q·k / √d``, so the scores' variance stays ~1.

    Args:
        scale: multiply by this instead of ``1/√d`` (e.g. an inverse temperature).
    """

    same_dim = True

    def __init__(self, scale: float | None = None):
        super().__init__()
        self.scale = scale

    def score(self, query, key):
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(query.shape[-1])
        return (query @ key.transpose(1, 2)) * scale  # (B, L, S)


class GeneralScore(Score):
    """Luong et al. (2015), Eq. 8 "general": ``h_tᵀ W_a h̄_s`` (a bilinear form)."""

    def __init__(self, query_dim: int, key_dim: int):
        super().__init__()
        self.query_dim, self.key_dim = query_dim, key_dim
        self.W_a = nn.Linear(key_dim, query_dim, bias=False)  # maps keys into query space

    def score(self, query, key):
        return query @ self.W_a(key).transpose(1, 2)  # (B, L, Eq) @ (B, Eq, S) -> (B, L, S)


class AdditiveScore(Score):
    """Bahdanau et al. (2015), Eq. 6 / App. A.1.2: ``v_aᵀ tanh(W_a s_{t-1} + U_a h_j)``.

    ``U_a h_j`` does not depend on the decoder step, so a decoder may compute it
    once per sentence (:meth:`project_keys`) and pass it to :meth:`score_projected`.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int):
        super().__init__()
        self.query_dim, self.key_dim = query_dim, key_dim
        self.W_a = nn.Linear(query_dim, hidden_dim, bias=False)
        self.U_a = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v_a = nn.Linear(hidden_dim, 1, bias=False)

    def pair_width(self) -> int:
        return self.v_a.in_features  # tanh(q + k): (B, L, S, A)

    def project_keys(self, key: Tensor) -> Tensor:
        self.check_dims(key=key)
        return self.U_a(key)  # (B, S, A)

    def score_projected(self, query: Tensor, projected_key: Tensor) -> Tensor:
        self.check_dims(query=query)
        q = self.W_a(query)[:, :, None, :]  # (B, L, 1, A)
        k = projected_key[:, None, :, :]  # (B, 1, S, A)
        return self.v_a(torch.tanh(q + k)).squeeze(-1)  # (B, L, S, 1) -> (B, L, S)

    def score(self, query, key):
        return self.score_projected(query, self.project_keys(key))


class ConcatScore(Score):
    """Luong et al. (2015), Eq. 8 "concat": ``v_aᵀ tanh(W_a [h_t; h̄_s])``.

    Written literally: every (query, key) pair is concatenated. Splitting
    ``W_a = [W_1 W_2]`` gives ``W_1 h_t + W_2 h̄_s``, i.e. the additive score;
    chapter 4 shows the two agree when the weights are shared.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int, bias: bool = False):
        super().__init__()
        self.query_dim, self.key_dim = query_dim, key_dim
        self.W_a = nn.Linear(query_dim + key_dim, hidden_dim, bias=bias)
        self.v_a = nn.Linear(hidden_dim, 1, bias=False)

    def pair_width(self) -> int:
        return self.W_a.in_features + self.W_a.out_features  # [s_t; h_i] and W_a[s_t; h_i]

    def score(self, query, key):
        B, L, _ = query.shape
        S = key.shape[1]
        q = query[:, :, None, :].expand(B, L, S, query.shape[-1])  # (B, L, S, Eq)
        k = key[:, None, :, :].expand(B, L, S, key.shape[-1])  # (B, L, S, Ek)
        pairs = torch.cat([q, k], dim=-1)  # (B, L, S, Eq + Ek)
        return self.v_a(torch.tanh(self.W_a(pairs))).squeeze(-1)  # (B, L, S)


class LocationScore(Score):
    """Luong et al. (2015), Eq. 9 "location": ``a_t = softmax(W_a h_t)``.

    The score looks only at the query (the decoder state), never at the keys'
    content: ``W_a`` predicts one score per source *position*. Positions beyond
    ``max_len`` cannot be scored, so longer sources are an error.
    """

    content_based = False  # a_t depends on the query only: it cannot look *at* a window of keys

    def __init__(self, query_dim: int, max_len: int):
        super().__init__()
        self.max_len, self.query_dim = max_len, query_dim
        self.W_a = nn.Linear(query_dim, max_len, bias=False)  # a_t = softmax(W_a h_t): no bias in Eq. 9

    def score(self, query, key):
        S = key.shape[1]
        if S > self.max_len:
            raise ValueError(
                f"LocationScore was built for at most max_len={self.max_len} "
                f"source positions, got key of shape {tuple(key.shape)} (S={S})"
            )
        return self.W_a(query)[:, :, :S]  # (B, L, max_len) -> (B, L, S)


class CosineScore(Score):
    """Graves et al. (2014), NTM content addressing, Eq. 5-6: ``β · cos(k, M_i)``.

    The key strength ``β ≥ 0`` sharpens (β > 1) or flattens (β < 1) the focus.

    Args:
        beta: initial key strength.
        learn_beta: make ``β`` a parameter (kept positive through softplus).
        eps: guards the norm of an all-zero vector.
    """

    same_dim = True

    def __init__(self, beta: float = 1.0, learn_beta: bool = False, eps: float = 1e-8):
        super().__init__()
        if not (math.isfinite(beta) and beta >= 0):  # NaN passes `beta < 0`
            raise ValueError(f"key strength beta must be >= 0 and finite, got {beta}")
        self.eps = eps
        if learn_beta:
            # softplus^{-1}(beta), so that softplus(raw) == beta at the start
            raw = math.log(math.expm1(beta)) if beta > 0 else -20.0
            self.raw_beta = nn.Parameter(torch.tensor(raw))
        else:
            self.register_buffer("raw_beta", None)
            self._beta = float(beta)

    @property
    def beta(self) -> Tensor | float:
        return F.softplus(self.raw_beta) if self.raw_beta is not None else self._beta

    def score(self, query, key):
        q = query / query.norm(dim=-1, keepdim=True).clamp_min(self.eps)  # (B, L, E) unit rows
        k = key / key.norm(dim=-1, keepdim=True).clamp_min(self.eps)  # (B, S, E) unit rows
        return self.beta * (q @ k.transpose(1, 2))  # (B, L, S), each in [-β, β]


def check_query_key(query: Tensor, key: Tensor, same_dim: bool = False, name: str = "score") -> None:
    """Reject anything but ``(B, L, Eq)``, ``(B, S, Ek)`` with one B (and Eq == Ek if needed)."""
    if query.dim() != 3 or key.dim() != 3:
        raise ValueError(
            f"{name} expects query (B, L, Eq) and key (B, S, Ek); "
            f"got query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    if query.shape[0] != key.shape[0]:
        raise ValueError(
            f"{name}: query and key have different batch sizes: query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    if same_dim and query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"{name} needs Eq == Ek; got query {tuple(query.shape)}, "
            f"key {tuple(key.shape)} (use 'general', 'additive' or 'concat')"
        )


# name -> (class, the constructor arguments it needs)
SCORES: dict[str, tuple[type[Score], tuple[str, ...]]] = {
    "dot": (DotScore, ()),
    "scaled_dot": (ScaledDotScore, ()),
    "general": (GeneralScore, ("query_dim", "key_dim")),
    "additive": (AdditiveScore, ("query_dim", "key_dim", "hidden_dim")),
    "concat": (ConcatScore, ("query_dim", "key_dim", "hidden_dim")),
    "location": (LocationScore, ("query_dim", "max_len")),
    "cosine": (CosineScore, ()),
}


def make_score(
    name: str | Score,
    *,
    query_dim: int | None = None,
    key_dim: int | None = None,
    hidden_dim: int | None = None,
    max_len: int | None = None,
    **options,
) -> Score:
    """Build a score module by name (or pass a module through unchanged).

    Args:
        name: one of ``SCORES`` (``"dot"``, ``"scaled_dot"``, ``"general"``,
            ``"additive"``, ``"concat"``, ``"location"``, ``"cosine"``).
        query_dim, key_dim, hidden_dim, max_len: sizes; only the ones the score
            needs are used (``hidden_dim`` defaults to ``query_dim``).
        options: extra keyword arguments of the class (``scale=``, ``beta=`` …).
    """
    if isinstance(name, nn.Module):
        if options:
            raise ValueError(
                f"the score is an already built {type(name).__name__}; options "
                f"{', '.join(f'{k}={v!r}' for k, v in options.items())} can only be given with a "
                f"score's name (or set them when building the module)"
            )
        return name
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {sorted(SCORES)}")
    cls, needed = SCORES[name]
    sizes = {
        "query_dim": query_dim,
        "key_dim": key_dim,
        "hidden_dim": hidden_dim if hidden_dim is not None else query_dim,
        "max_len": max_len,
    }
    missing = [arg for arg in needed if sizes[arg] is None]
    if missing:
        raise ValueError(f"score {name!r} needs {', '.join(missing)}")
    allowed = score_options(name)
    unknown = [k for k in options if k not in allowed]
    if unknown:
        owners = [
            f"{k} is an option of {' and '.join(repr(n) for n in SCORES if k in score_options(n))}"
            for k in unknown
            if any(k in score_options(n) for n in SCORES)
        ]
        if allowed:
            notes = [f"its options: {', '.join(allowed)}"] + owners
            raise ValueError(f"score {name!r} has no option {', '.join(map(repr, unknown))} ({'; '.join(notes)})")
        got = ", ".join(f"{k}={options[k]!r}" for k in unknown)
        raise ValueError(f"score {name!r} takes no options; got {got}" + (f" ({'; '.join(owners)})" if owners else ""))
    return cls(**{arg: sizes[arg] for arg in needed}, **options)


def score_options(name: str) -> tuple[str, ...]:
    """The keyword options of score ``name`` beyond its sizes (``"scaled_dot"`` -> ``("scale",)``),
    read from its class's constructor."""
    cls, needed = SCORES[name]
    if cls.__init__ is nn.Module.__init__:  # no constructor of its own: nothing to set
        return ()
    parameters = inspect.signature(cls.__init__).parameters.values()
    return tuple(
        p.name
        for p in parameters
        if p.name != "self" and p.name not in needed and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )


def is_content_based(name: str | Score) -> bool:
    """Whether a score compares the query with each key's content (every score but ``location``).

    Local attention (chapter 9) needs a content-based score: it scores the keys inside a window.
    """
    if isinstance(name, Score):
        return type(name).content_based
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {sorted(SCORES)}")
    return SCORES[name][0].content_based
