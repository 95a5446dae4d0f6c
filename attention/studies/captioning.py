"""Chapter 8's recorded run: soft, hard and Gumbel attention captioning rows of handwritten digits,
and hard attention trained by REINFORCE alone beside the hybrid that Xu et al. train (:data:`ARMS`).

    python -m attention captions              # 4 arms x 5 seeds, resumable
    python -m attention captions --workers 3  # the same on three worker processes
    python -m attention captions --status     # the runs done and missing

Every run trains :class:`~attention.models.captioner.ShowAttendTell` on
:func:`attention.tasks.captions.digit_captions` until the validation exact match (whole caption
right) has not improved for ``patience`` epochs, keeps its best epoch and reports, on the test
canvases (digit images never seen in training), exact match, BLEU, per-digit accuracy and the
alignment score: how often the most attended grid cell, while a digit's word is written, overlaps
that digit.

The price of hard attention is measured at each hard run's trained parameters (:func:`gradient_spread`):
the variance of its gradient estimate over repeated draws of the locations on one batch, with the
moving-average baseline and without it, beside the gradient of soft attention at the same
parameters (deterministic on one batch) and the spread of soft's gradient over different batches,
the ordinary noise of stochastic gradient descent. The run is declared as a
:class:`~attention.studies.base.Study` (``STUDY``); the seed-0 model of each kind is kept beside the
record (:func:`captioner_path`), of the three kinds of attention only.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import torch

from ..hard import flat_gradient, gradient_spread_summary, gradient_variance
from ..models import build
from ..results import mean_sd, model_path
from ..tasks.captions import CaptionData, alignment_hit, digit_captions
from .base import Piece, Study, fit_piece, same_recipe_but_seeds, summarise_variants, training_row

__all__ = [
    "ARMS",
    "CAPTIONS",
    "PAPER",
    "build_captioner",
    "captioner_path",
    "chance_alignment",
    "gradient_spread",
    "STUDY",
    "STUDIES",
]

#: arm -> the kind of attention it trains: "hard" is the hybrid of Xu et al. (§4.1) that reads the
#: expectation at half its training steps (the recipe's expectation_prob); "hard-pure" is the same
#: hard attention trained by REINFORCE alone, every step sampling (the recipe's arm_changes)
ARMS = {"soft": "soft", "hard": "hard", "gumbel": "gumbel", "hard-pure": "hard"}
CAPTIONS = {
    "arms": ["soft", "hard", "gumbel", "hard-pure"],
    #: the recipe fields an arm trains with instead: REINFORCE alone learns late, if at all, so it
    #: gets more epochs to converge in
    "arm_changes": {"hard-pure": {"expectation_prob": 0.0, "max_epochs": 120}},
    "seeds": [0, 1, 2, 3, 4],
    "n_train": 6000,
    "n_valid": 1000,
    "n_test": 1000,
    "height": 16,
    "width": 40,
    "n_digits": 3,
    "pools": 3,
    "doubly_stochastic": 0.01,
    "entropy_weight": 0.01,
    "reward_weight": 1.0,
    "expectation_prob": 0.5,
    "tau": 1.0,
    "max_epochs": 40,
    "patience": 5,
    "batch_size": 32,
    "lr": 3e-3,
    "spread_samples": 64,
    "spread_batch": 32,
}

#: Xu et al. (2015), Table 1: BLEU-4 on Flickr8k (photographs with five English captions each).
PAPER = {"Flickr8k, BLEU-4": {"soft": 19.5, "hard": 21.3}}


def build_captioner(data: CaptionData, attention: str, recipe: dict | None = None, seed: int = 0):
    """The captioner of ``recipe`` (default :data:`CAPTIONS`) with ``attention`` "soft", "hard" or
    "gumbel" for ``data``, initialised from ``seed``."""
    recipe = recipe or CAPTIONS
    torch.manual_seed(seed)
    v = data.vocab
    return build(
        "show-attend-tell",
        dict(
            vocab=len(v),
            attention=attention,
            pad_id=v.pad_id,
            bos_id=v.bos_id,
            eos_id=v.eos_id,
            image_height=recipe["height"],
            image_width=recipe["width"],
            doubly_stochastic=recipe["doubly_stochastic"],
            entropy_weight=recipe["entropy_weight"],
            reward_weight=recipe["reward_weight"],
            tau=recipe["tau"],
            pools=recipe["pools"],
            expectation_prob=recipe["expectation_prob"],
            baseline=recipe.get("baseline", "moving"),
        ),
    )


def chance_alignment(data: CaptionData, grid: tuple[int, int], examples=None) -> float:
    """The alignment score of attention that picks its cell at random: per digit, the share of grid
    cells that overlap its box, averaged over the digits of ``examples`` (default: the test split)."""
    gh, gw = grid
    G, shares = gh * gw, []
    cells = torch.eye(G)  # row g: all weight on cell g
    for e in data.test if examples is None else examples:
        for box in e.boxes:
            hits = sum(alignment_hit(cells[g], box, grid, data.height, data.width) for g in range(G))
            shares.append(hits / G)
    return sum(shares) / max(len(shares), 1)


def _gradients(model, batches) -> torch.Tensor:
    """Soft attention's gradient on each of ``batches``, stacked ``(n, P)``."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.stack([flat_gradient(model.loss(b.images, b.captions, baseline=0.0)[0], params) for b in batches])


def gradient_spread(model, data: CaptionData, samples: int = 64, batch_size: int = 32, seed: int = 0) -> dict:
    """At ``model``'s parameters (a trained hard-attention captioner), each as
    ``{"mean_variance", "mean_sq_grad"}`` over the parameter elements:

    * ``hard, baseline``: the REINFORCE gradient over ``samples`` draws of the locations, one batch,
      with the model's moving-average baseline;
    * ``hard, no baseline``: the same with b = 0;
    * ``soft, one batch``: soft attention at the same parameters, ``samples`` passes over the same
      batch (deterministic: variance 0 up to rounding);
    * ``soft, across batches``: soft attention's gradient over ``samples`` different training batches.
    """
    device = next(model.parameters()).device
    torch.manual_seed(seed)
    batch = data.collate(data.valid[:batch_size]).to(device)
    out = {
        "hard, baseline": gradient_variance(model, batch.images, batch.captions, samples, baseline=True),
        "hard, no baseline": gradient_variance(model, batch.images, batch.captions, samples, baseline=False),
    }
    soft = copy.deepcopy(model)
    soft.cfg = dataclasses.replace(soft.cfg, attention="soft")  # same weights, soft attention
    soft.train()
    out["soft, one batch"] = gradient_variance(soft, batch.images, batch.captions, samples, baseline=False)
    spread = _gradients(soft, [b.to(device) for _, b in zip(range(samples), data.train_batches(batch_size, seed, 1))])
    out["soft, across batches"] = gradient_spread_summary(spread)
    return {k: {m: v[m] for m in ("mean_variance", "mean_sq_grad")} for k, v in out.items()}


def _data(recipe: dict, group: str = "") -> CaptionData:
    return digit_captions(
        n_train=recipe["n_train"],
        n_valid=recipe["n_valid"],
        n_test=recipe["n_test"],
        height=recipe["height"],
        width=recipe["width"],
        n_digits=recipe["n_digits"],
    )


def captioner_path(attention: str, directory: str | Path | None = None) -> Path:
    """Where the run of ``attention`` with seed 0 keeps its trained model (the notebook's explorer reads it)."""
    return model_path("captions", attention, directory)


def _pieces(recipe: dict) -> list[Piece]:
    """``<arm>/seed<s>`` (seeds outer); the record's rows carry the key."""
    return [Piece(f"{a}/seed{s}", a, s, {"key": f"{a}/seed{s}"}) for s in recipe["seeds"] for a in recipe["arms"]]


def _run(study: Study, piece: Piece, data: CaptionData, device):
    if piece.variant not in ARMS:
        raise ValueError(f"unknown arm {piece.variant!r}; the arms are {list(ARMS)}")
    attention, changes = ARMS[piece.variant], study.recipe.get("arm_changes", {}).get(piece.variant, {})
    recipe, seed = {**study.recipe, **changes}, piece.seed  # seeded by the runner (run_piece)
    model = build_captioner(data, attention, recipe, seed).to(device)
    history = fit_piece(model, data, recipe, seed, device)
    kept = copy.deepcopy(model).cpu()  # the trained model, before the gradient measurements below draw on it
    report = data.evaluate(model)
    row = {m: report[m] for m in ("exact_match", "bleu", "digit_accuracy", "alignment")}
    row |= training_row(history, model, valid="exact_match")
    if piece.variant == "hard":
        row["gradient_spread"] = gradient_spread(model, data, recipe["spread_samples"], recipe["spread_batch"], seed)
    return row, kept  # seed 0's model is kept (captioner_path)


def _summarise(study: Study, runs: list[dict], data) -> dict:
    recipe = study.recipe
    rows = [{**r, "arm": r["key"].split("/")[0]} for r in runs]
    summary = summarise_variants(
        rows, ("exact_match", "bleu", "digit_accuracy", "alignment", "best_epoch"), by="arm", values=recipe["arms"]
    )
    hard = [r["gradient_spread"] for r in rows if r["arm"] == "hard"]
    spread = {k: {m: mean_sd([h[k][m] for h in hard]) for m in ("mean_variance", "mean_sq_grad")} for k in hard[0]}
    data = data()
    grid = build_captioner(data, "soft", recipe).grid
    return {
        "data": {
            "train": len(data.train),
            "valid": len(data.valid),
            "test": len(data.test),
            "grid": list(grid),
            "chance_alignment": chance_alignment(data, grid),
        },
        "summary": summary,
        "gradient_spread": spread,
        "paper": PAPER,
        "runs": runs,
    }


def _holds_fewer_arms(recorded: dict, recipe: dict) -> bool:
    """A record made under a recipe that listed fewer arms holds their runs under this one: the same
    recipe, the seeds aside, but for the arms it lists and those arms' own changes."""
    arms = recorded["arms"]

    def changes(r: dict) -> dict:  # the arm_changes of the recorded arms only
        return {a: c for a, c in r.get("arm_changes", {}).items() if a in arms}

    return set(arms) <= set(recipe["arms"]) and same_recipe_but_seeds(
        {**recorded, "arm_changes": changes(recorded)}, {**recipe, "arms": arms, "arm_changes": changes(recipe)}
    )


STUDY = Study(
    "soft-hard-captions",
    "captions",
    "chapter 8: soft, hard and Gumbel attention captioning rows of digits",
    CAPTIONS,
    _run,
    _summarise,
    data=_data,
    pieces=_pieces,
    keep=("soft", "hard", "gumbel"),
    kept_as="captions",
    holds=_holds_fewer_arms,
    notes="wall_seconds adds up the training time of every run; paper = Xu et al. (2015), Table 1, BLEU-4 on "
    "Flickr8k photographs, not on our digit rows (our BLEU counts the end mark as a token)",
)
STUDIES = [STUDY]
