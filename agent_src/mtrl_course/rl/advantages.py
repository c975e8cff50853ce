"""Group-relative advantages, and the one switch between GRPO's estimator and Dr. GRPO's.

Each prompt is played `group_size` times. Its rewards r_1..r_G become advantages relative to the
group: A_i = (r_i - mean(r)) / (std(r) + eps). The service calls its default `advantage_method`
"group_based" without saying whether it divides by the std; the course's default does (GRPO).
`rloo` (each rollout against the mean of the others) is the service's other documented method.
A group whose rewards all tie gets A = 0 everywhere: it teaches nothing.

The estimator (`Estimator`) decides two normalisations, for every learner alike:
- `scale_by_std`: divide the centred rewards by the group's std (GRPO) or not (Dr. GRPO: a prompt
  whose rewards barely differ is not pushed as hard as one with a clear winner);
- `length_normalised`: weight a game's per-token (or per-turn) terms by 1/|o_i| (GRPO: each game
  weighs the same however long it is) or by one constant for every game (Dr. GRPO: a long losing
  game is not pushed less per token than a short one; Liu et al., 2025, "Understanding R1-Zero-Like
  Training: A Critical Perspective").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mtrl_course.service_spec import training_defaults

ADVANTAGE_METHOD: str = training_defaults()["advantage_method"]  # "group_based" or "rloo"
IMPLEMENTED_METHODS = ("group_based", "rloo")
ADVANTAGE_EPS = 1e-6  # keeps (r - mean) / (std + eps) finite when a group's std is 0
# Two rewards closer than this are equal (a group of them has zero advantage).
REWARD_TIE = 1e-9


@dataclass(frozen=True)
class Estimator:
    """How rewards become per-token weights: the two normalisations GRPO and Dr. GRPO differ in."""

    name: str
    scale_by_std: bool
    length_normalised: bool


GRPO = Estimator("grpo", scale_by_std=True, length_normalised=True)
DR_GRPO = Estimator("dr_grpo", scale_by_std=False, length_normalised=False)
ESTIMATORS = {e.name: e for e in (GRPO, DR_GRPO)}
DEFAULT_ESTIMATOR = GRPO.name


def estimator(name: str) -> Estimator:
    """The estimator called `name` ("grpo" or "dr_grpo")."""
    found = ESTIMATORS.get(name)
    if found is None:
        raise ValueError(f"estimator {name!r} is not one of {tuple(ESTIMATORS)}")
    return found


def group_advantages(
    rewards: Sequence[float] | np.ndarray,
    *,
    method: str = ADVANTAGE_METHOD,
    scale_by_std: bool = GRPO.scale_by_std,
    eps: float = ADVANTAGE_EPS,
) -> np.ndarray:
    """Advantages of one group's rollouts, relative to the group (all zero if the rewards tie)."""
    r = np.asarray(rewards, dtype=float)
    if r.size == 0:
        return r
    if r.size == 1 or float(r.max() - r.min()) <= REWARD_TIE:
        return np.zeros_like(r)
    if method == "rloo":
        # Each rollout against the mean of the others: (G / (G - 1)) (r_i - mean).
        centred = (r - r.mean()) * r.size / (r.size - 1)
    else:
        centred = r - r.mean()
    if scale_by_std:
        centred = centred / (r.std() + eps)
    return centred
