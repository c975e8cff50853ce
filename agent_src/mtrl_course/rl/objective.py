"""The clipped surrogate's weight on each sampled token's (or turn's) gradient of log pi.

The objective each learner ascends (PPO's clipped surrogate, as GRPO uses it):

    J = (1 / |B|) sum_i w_i sum_t min(rho_t A_i, clip(rho_t, low, high) A_i)

with rho_t = pi_theta / pi_old, w_i the length normalisation (`advantages.Estimator`), `low` and
`high` the service's `clip_low_threshold` and `clip_high_threshold`, used as bounds on the ratio
as the service documents them. Its gradient is A_i w_i c_t grad log pi(o_t), with c_t from
`ratio_weights`, one rule for every learner:

- `ppo`: c_t = rho_t, or 0 where the ratio is already past the bound in the advantage's direction
  (the clipped term is constant there);
- `importance_sampling`: c_t = rho_t, never clipped;
- `cispo`: c_t = clip(rho_t, low, high), the clipped ratio as a weight (it never drops a token).

With one update per batch of fresh samples, rho = 1 everywhere and no clip bites; it does when
samples come from an older adapter (the service's `max_steps_off_policy`).
"""

from __future__ import annotations

import numpy as np


def ratio_weights(
    ratio: np.ndarray | float, advantage: float, loss_fn: str, low: float, high: float
) -> tuple[np.ndarray, np.ndarray]:
    """(c_t for each ratio, which ones `ppo` clipped) for one game's advantage."""
    ratio = np.asarray(ratio, dtype=float)
    clipped = ((advantage > 0) & (ratio > high)) | ((advantage < 0) & (ratio < low))
    if loss_fn == "ppo":
        return np.where(clipped, 0.0, ratio), clipped
    if loss_fn == "cispo":
        return np.clip(ratio, low, high), np.zeros_like(clipped)
    if loss_fn == "importance_sampling":
        return ratio, np.zeros_like(clipped)
    raise ValueError(f"loss_fn {loss_fn!r} is not one of ('ppo', 'importance_sampling', 'cispo')")
