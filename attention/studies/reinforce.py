"""Chapter 8's controlled run on the price of hard attention: how noisy REINFORCE's gradient is
while the captioner learns, with no baseline, Xu et al.'s moving average, or a learned baseline.

    python -m attention reinforce            # 3 baselines x 5 seeds, resumable
    python -m attention reinforce --status   # the runs done and missing

Xu et al. (2015, §4.1) subtract a moving average ``b`` of ``log p(y | s, a)`` from the reward of
the score-function estimator (eq. 12) "to reduce the variance". Its effect is on the updates
while the model is still learning, so this record measures it there, not only at the end.

Every run trains :class:`~attention.models.captioner.ShowAttendTell` with hard attention as the
record ``soft-hard-captions`` does (:data:`~attention.studies.captioning.CAPTIONS`: one sampled
location per word, half the captions reading the expectation as in Xu et al. §4.1; with pure
sampling no run learned past chance in a pilot) on chapter 8's digit rows
(:func:`attention.tasks.captions.digit_captions`),
with one of three baselines (``CaptionerConfig.baseline``): "none" (b = 0), "moving" (Xu et al.'s
``b ← 0.9 b + 0.1 log p``) and "learned" (``b(a) = w·mean_i a_i + c`` per image, fit by its own
least-squares steps, :class:`~attention.hard.LearnedBaseline`; Mnih et al. 2014). At the updates of :data:`REINFORCE` ``"checkpoints"`` (0 = before
training) it draws ``samples`` gradients on one fixed validation batch at the same parameters
(:func:`estimator_spread`, every caption sampling): the run's own estimator, and the same
parameters without a baseline,
so their ratio is the variance the baseline removes, measured where it matters. Each run stops when
validation exact match has not improved for ``patience`` epochs and reports test exact match and
per-digit accuracy beside chance (1 in 10 per digit).
"""

from __future__ import annotations

import torch

from ..hard import gradient_variance
from ..models.captioner import BASELINES
from ..results import mean_sd
from .base import Piece, Study, fit_piece, summarise_variants, training_row
from .captioning import CAPTIONS, build_captioner
from .captioning import _data as _caption_data

__all__ = ["REINFORCE", "estimator_spread", "STUDY", "STUDIES"]

REINFORCE = {
    **{
        k: v for k, v in CAPTIONS.items() if k not in ("arms", "arm_changes", "seeds", "spread_samples", "spread_batch")
    },
    # all three start on the plateau of a model that ignores the image, and leave it at different
    # times: a patience of 5 epochs stopped runs there before they left it
    "patience": 10,
    "max_epochs": 60,
    "baselines": list(BASELINES),
    "seeds": [0, 1, 2, 3, 4],
    "checkpoints": [0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400],
    "samples": 32,
    "spread_batch": 32,
}


def estimator_spread(model, batch, samples: int) -> dict:
    """At ``model``'s parameters, over ``samples`` draws of the locations on ``batch``, for the
    model's own baseline (``"own"``) and for b = 0 (``"none"``): ``{"mean_variance",
    "mean_sq_grad"}`` over the captioner's parameter elements, and ``"ratio"`` = own / none variance. Every caption draws its locations here (the
    estimator of eq. 12 alone), even when the model trains with some captions reading the expectation."""
    params = [p for p in model.parameters() if p.requires_grad]
    mixed, model.cfg.expectation_prob = model.cfg.expectation_prob, 0.0  # every caption draws its cells
    try:
        return _spread(model, batch, samples, params)
    finally:
        model.cfg.expectation_prob = mixed


def _spread(model, batch, samples: int, params) -> dict:
    out = {}
    for name, own in (("none", False), ("own", True)):
        if own and model.cfg.baseline == "none":
            out["own"] = out["none"]  # the same estimator
            break
        v = gradient_variance(model, batch.images, batch.captions, samples, params=params, baseline=own)
        out[name] = {m: v[m] for m in ("mean_variance", "mean_sq_grad")}
    out["ratio"] = out["own"]["mean_variance"] / max(out["none"]["mean_variance"], 1e-30)
    return out


def _pieces(recipe: dict) -> list[Piece]:
    return [
        Piece(f"{b}/seed{s}", b, s, {"baseline": b, "seed": s}) for s in recipe["seeds"] for b in recipe["baselines"]
    ]


def _run(study: Study, piece: Piece, data, device) -> dict:
    recipe = {**study.recipe, "baseline": piece.variant}
    model = build_captioner(data, "hard", recipe, piece.seed).to(device)
    batch = data.collate(data.valid[: recipe["spread_batch"]]).to(device)
    when, curve = set(recipe["checkpoints"]), []
    generator_state = torch.get_rng_state()
    curve.append({"update": 0, **estimator_spread(model, batch, recipe["samples"])})
    torch.set_rng_state(generator_state)  # the measurement does not change the run's draws

    def on_step(update: int, loss: float, norm: float) -> None:
        if update in when:
            state = torch.get_rng_state()
            curve.append({"update": update, **estimator_spread(model, batch, recipe["samples"])})
            torch.set_rng_state(state)

    history = fit_piece(model, data, recipe, piece.seed, device, on_step=on_step)
    report = data.evaluate(model)
    row = {m: report[m] for m in ("exact_match", "digit_accuracy", "alignment")}
    row |= training_row(history, model, valid="exact_match")
    row["curve"] = curve
    return row


def _summarise(study: Study, runs: list[dict], data) -> dict:
    recipe = study.recipe
    summary = summarise_variants(
        runs, ("exact_match", "digit_accuracy", "alignment", "best_epoch"), by="baseline", values=recipe["baselines"]
    )
    curves = {}
    for b in recipe["baselines"]:
        points = {}
        for r in runs:
            if r["baseline"] != b:
                continue
            for p in r["curve"]:
                points.setdefault(p["update"], []).append(p)
        curves[b] = [
            {
                "update": u,
                "n": len(ps),
                "own_variance": mean_sd([p["own"]["mean_variance"] for p in ps]),
                "none_variance": mean_sd([p["none"]["mean_variance"] for p in ps]),
                "mean_sq_grad": mean_sd([p["own"]["mean_sq_grad"] for p in ps]),
                "ratio": mean_sd([p["ratio"] for p in ps]),
            }
            for u, ps in sorted(points.items())
        ]
    d = data()
    return {
        "summary": summary,
        "curves": curves,
        "baselines": {"chance_digit": 0.1, "chance_exact": 0.1 ** recipe["n_digits"]},
        "data": {"train": len(d.train), "valid": len(d.valid), "test": len(d.test)},
        "runs": runs,
    }


STUDY = Study(
    "reinforce-variance",
    "reinforce",
    "chapter 8: REINFORCE's gradient variance over training with no, a moving-average or a learned baseline, 5 seeds",
    REINFORCE,
    _run,
    _summarise,
    data=_caption_data,
    pieces=_pieces,
)
STUDIES = [STUDY]
