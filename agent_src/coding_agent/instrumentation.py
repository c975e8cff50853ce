"""Per-component instrumentation: the panel that catches a dead or saturated reward channel.

A reward term changes the policy only through the spread it creates **within a group** (the
rollouts of one task): a term with the same value on every rollout of every group adds a
constant to each reward, the group-relative advantage subtracts it again, and the gradient never
sees it. The aggregate reward curve cannot show this, because the other terms keep it moving.
So, per step and per component, this module records:

- `mean`: the component's average value;
- `within_std`: its standard deviation inside each group, averaged over the groups. Zero means
  the component is not teaching anything this step, whatever its mean;
- `adv_share`: its share of the advantage: the advantage of rollout i is
  (sum_c w_c (x_ci - mean_g x_c)) / std_g, so |w_c (x_ci - mean_g x_c)| summed over rollouts,
  divided by the same sum over all components, says which component is driving the update.

`dead_components` flags a component with a non-zero weight whose within-group spread stayed at
zero for a whole window of steps: the automatic flag the post asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from coding_agent.env import Rollout, summary
from coding_agent.reward import RewardSpec

DEAD_TOLERANCE = 1e-9
DEAD_WINDOW = 5  # steps in a row with no within-group spread before a component is flagged


def step_stats(groups: Sequence[Sequence[Rollout]], spec: RewardSpec) -> dict[str, float]:
    """One training step's row: behaviour rates, reward spread, and each component's numbers."""
    rollouts = [r for g in groups for r in g]
    row: dict[str, Any] = dict(summary(rollouts))
    totals = [np.array([r.total for r in g]) for g in groups]
    row["reward_within_std"] = float(np.mean([t.std() for t in totals])) if totals else 0.0
    row["zero_adv_groups"] = float(np.mean([t.max() - t.min() <= DEAD_TOLERANCE for t in totals])) if totals else 0.0
    deviations: dict[str, float] = {}
    for name in spec.names:
        values = [np.array([r.values.get(name, 0.0) for r in g]) for g in groups]
        row[f"{name}/mean"] = float(np.mean(np.concatenate(values))) if values else 0.0
        row[f"{name}/within_std"] = float(np.mean([v.std() for v in values])) if values else 0.0
        row[f"{name}/weight"] = spec.weight(name)
        # Only groups whose total reward varies produce an advantage at all.
        deviations[name] = float(
            sum(
                np.abs(spec.weight(name) * (v - v.mean())).sum()
                for v, t in zip(values, totals)
                if t.max() - t.min() > DEAD_TOLERANCE
            )
        )
    whole = sum(deviations.values())
    for name, value in deviations.items():
        row[f"{name}/adv_share"] = value / whole if whole > 0 else 0.0
    return row


def dead_flags(
    history: Sequence[Mapping[str, float]], names: Sequence[str], window: int = DEAD_WINDOW
) -> dict[str, list[bool]]:
    """Per component, per step: True once its within-group std has been ~0 for `window` steps in a row."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    flags: dict[str, list[bool]] = {}
    for name in names:
        run, marks = 0, []
        for row in history:
            live = row.get(f"{name}/weight", 0.0) != 0.0
            run = run + 1 if live and row.get(f"{name}/within_std", 0.0) <= DEAD_TOLERANCE else 0
            marks.append(run >= window)
        flags[name] = marks
    return flags


def dead_components(
    history: Sequence[Mapping[str, float]], names: Sequence[str], window: int = DEAD_WINDOW
) -> list[str]:
    """Components flagged dead at the last step."""
    return [name for name, marks in dead_flags(history, names, window).items() if marks and marks[-1]]


def sort_transcripts(rollouts: Sequence[Rollout], component: str, descending: bool = True) -> list[Rollout]:
    """Rollouts ordered by one component's value (not by total reward), to read the suspects first."""
    known = {name for r in rollouts for name in r.values}
    if rollouts and component not in known:
        raise KeyError(f"no component {component!r} in these rollouts; they have {sorted(known)}")
    return sorted(rollouts, key=lambda r: r.values.get(component, 0.0), reverse=descending)


def panel(history: Sequence[Mapping[str, float]], names: Sequence[str], title: str, window: int = DEAD_WINDOW) -> Any:
    """The per-component panel: mean (top) and within-group std (bottom), dead steps marked."""
    import matplotlib.pyplot as plt

    steps = np.arange(1, len(history) + 1)
    flags = dead_flags(history, names, window)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 5.0), sharex=True)
    for name in names:
        means = [row.get(f"{name}/mean", 0.0) for row in history]
        stds = [row.get(f"{name}/within_std", 0.0) for row in history]
        (line,) = top.plot(steps, means, label=name)
        bottom.plot(steps, stds, color=line.get_color())
        dead = [s for s, f in zip(steps, flags[name]) if f]
        if dead:
            bottom.scatter(dead, [0.0] * len(dead), marker="x", color=line.get_color(), zorder=3)
    top.set_ylabel("component mean")
    bottom.set_ylabel("within-group std")
    bottom.set_xlabel("training step")
    top.legend(fontsize=8, loc="best")
    top.set_title(title)
    bottom.annotate(
        f"x = flagged dead (no within-group spread for {window} steps)",
        xy=(0.01, 0.92),
        xycoords="axes fraction",
        fontsize=8,
    )
    fig.tight_layout()
    return fig
