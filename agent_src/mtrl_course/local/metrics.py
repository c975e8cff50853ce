"""The metrics the local MTRL service logs to MLflow, under the service's own names.

Names follow the AWS documentation's metric reference (aws-docs.md section 1.4): `rollout/*`,
`analysis/*`, `training/*`, `timing_s/*` each training step; `val/*` at step 0, every `val_every`
steps and the last step; `eval/*` for evaluation jobs. The documentation lists the names but not
every definition; where it is silent, the reading used here is stated next to the function, so a
notebook can say what it plots. Metrics under `standin/` exist only offline and describe the
stand-in policy, never a real model.

Units: "turns" are model calls (sampling requests) per trajectory; token statistics are per model
call (one datum: its prompt and its response), which is how `rollout/tokens/response_max` can be
compared with the per-turn cap `sampling_max_tokens`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mtrl_course.local.stand_in_policy import NO_CALL, RAW_TEXT

# A rollout succeeds when its reward reaches the threshold (the hyperparameter table's rule).
DEFAULT_SUCCESS_THRESHOLD = 1.0


@dataclass(frozen=True)
class RolloutRecord:
    """What the service knows about one finished rollout (one trajectory)."""

    prompt_index: int
    rollout_index: int
    reward: float | None  # None: no reward arrived
    prompt_tokens: tuple[int, ...]  # per model call
    completion_tokens: tuple[int, ...]
    formats: tuple[int, ...] = ()  # stand-in only: the format head's choice per guessing turn

    @property
    def turns(self) -> int:
        return len(self.prompt_tokens)

    @property
    def tokens(self) -> int:
        return sum(self.prompt_tokens) + sum(self.completion_tokens)


Group = Sequence[RolloutRecord]


def _stats(
    prefix: str, values: Sequence[float], names: Iterable[str] = ("mean", "std", "min", "max")
) -> dict[str, float]:
    if not values:
        return {}
    array = np.asarray(values, dtype=float)
    table = {
        "mean": float(array.mean()),
        "std": float(array.std()),
        "min": float(array.min()),
        "max": float(array.max()),
    }
    return {f"{prefix}/{name}": table[name] for name in names}


def _rewards(group: Group) -> list[float]:
    return [r.reward for r in group if r.reward is not None]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k rollouts drawn from n (c successful) succeeds.

    The unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al., 2021); k must be <= n.
    """
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n; got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def token_metrics(prefix: str, records: Iterable[RolloutRecord]) -> dict[str, float]:
    """`<prefix>/tokens/{prompt_mean, response_mean, response_std, response_min, response_max}`."""
    records = list(records)
    prompts = [t for r in records for t in r.prompt_tokens]
    if not prompts:
        return {}
    responses = np.asarray([t for r in records for t in r.completion_tokens], dtype=float)
    return {
        f"{prefix}/tokens/prompt_mean": float(np.mean(prompts)),
        f"{prefix}/tokens/response_mean": float(responses.mean()),
        f"{prefix}/tokens/response_std": float(responses.std()),
        f"{prefix}/tokens/response_min": float(responses.min()),
        f"{prefix}/tokens/response_max": float(responses.max()),
    }


def turn_metrics(prefix: str, records: Iterable[RolloutRecord]) -> dict[str, float]:
    """`<prefix>/turns/{mean, min, max}`: model calls per trajectory."""
    return _stats(f"{prefix}/turns", [r.turns for r in records], ("mean", "min", "max"))


def rollout_metrics(
    groups: Sequence[Group], advantages: Sequence[Sequence[float] | np.ndarray], dispatched: int
) -> dict[str, float]:
    """One training step's `rollout/*` and `analysis/*` metrics.

    Readings where the docs are silent: `rollout/reward/zero_frac` is the share of rewards equal
    to 0; a group has zero advantage when all its advantages are 0 (its rewards tied);
    `zero_adv_zero_reward` counts those whose shared reward is 0 and `zero_adv_nonzero_reward`
    the rest; `batch_valid_ratio` is the share of groups with a non-zero advantage;
    `mean_group_reward_spread` averages max - min within each group.
    """
    records = [r for g in groups for r in g]
    rewards = [r.reward for r in records if r.reward is not None]
    out = _stats("rollout/reward", rewards)
    if rewards:
        out["rollout/reward/zero_frac"] = float(np.mean([x == 0 for x in rewards]))
    valid, zero_groups, zero_zero, means, spreads = [], 0, 0, [], []
    for group, adv in zip(groups, advantages):
        group_rewards = _rewards(group)
        if not group_rewards:
            continue
        means.append(float(np.mean(group_rewards)))
        spreads.append(float(np.max(group_rewards) - np.min(group_rewards)))
        if all(a == 0 for a in adv):
            zero_groups += 1
            zero_zero += group_rewards[0] == 0
        else:
            valid += group_rewards
    if valid:
        out["rollout/reward/valid_mean"] = float(np.mean(valid))
    out.update(turn_metrics("rollout", records))
    out.update(token_metrics("rollout", records))
    flat_adv = [float(a) for adv in advantages for a in adv]
    out.update(_stats("rollout/advantage", flat_adv))
    out["rollout/advantage/n_positive"] = float(sum(a > 0 for a in flat_adv))
    out["rollout/advantage/n_negative"] = float(sum(a < 0 for a in flat_adv))
    out["analysis/zero_adv_groups"] = float(zero_groups)
    out["analysis/zero_adv_zero_reward"] = float(zero_zero)
    out["analysis/zero_adv_nonzero_reward"] = float(zero_groups - zero_zero)
    out["analysis/batch_completion_ratio"] = float(len(rewards) / dispatched) if dispatched else 0.0
    out["analysis/batch_valid_ratio"] = float((len(means) - zero_groups) / len(means)) if means else 0.0
    if means:
        out["analysis/reward_variance_across_groups"] = float(np.var(means))
        out["analysis/mean_group_reward_spread"] = float(np.mean(spreads))
    return out


def training_metrics(step: int, epoch: int, groups: Sequence[Group], train_tokens: int) -> dict[str, float]:
    """`training/*` for one step. `total_tokens` is the step's train tokens (see runner.py).

    Each model call of a trajectory is one datum (its prompt is the observation, its response the
    action), which is how multi-turn trajectories are fed to the trainer.
    """
    records = [r for g in groups for r in g if r.reward is not None]
    datums = sum(r.turns for r in records)
    action = [t for r in records for t in r.completion_tokens]
    observation = [t for r in records for t in r.prompt_tokens]
    out = {
        "training/global_step": float(step),
        "training/epoch": float(epoch),
        "training/num_groups": float(len(groups)),
        "training/num_trajectories": float(len(records)),
        "training/total_tokens": float(train_tokens),
        "training/num_datums": float(datums),
    }
    if records:
        out["training/datums_per_trajectory"] = datums / len(records)
    if action:
        out["training/action_tokens_mean"] = float(np.mean(action))
        out["training/obs_tokens_mean"] = float(np.mean(observation))
        total = sum(action) + sum(observation)
        out["training/trainable_token_ratio"] = sum(action) / total if total else 0.0
    return out


def success_metrics(
    prefix: str,
    groups: Sequence[Group],
    success_threshold: float = DEFAULT_SUCCESS_THRESHOLD,
    pass_k_values: Sequence[int] = (1,),
) -> dict[str, float]:
    """`val/*` or `eval/*`: reward, success and pass@k over prompts, plus turns and tokens.

    A rollout without a reward counts as failed. Readings where the docs are silent:
    `*_within_groups` average each group's min / mean / max / std over the prompts;
    `pass_power_k` is the mean over prompts of (successes / rollouts)^k, the chance that k
    rollouts drawn with replacement all succeed. pass@k is only reported for k <= rollouts per
    prompt.
    """
    records = [r for g in groups for r in g]
    rewards = [r.reward for r in records if r.reward is not None]
    out = _stats(f"{prefix}/reward", rewards)
    if rewards:
        out[f"{prefix}/reward/zero_frac"] = float(np.mean([x == 0 for x in rewards]))
    per_group = [np.asarray(_rewards(g), dtype=float) for g in groups]
    per_group = [g for g in per_group if g.size]
    if per_group:
        out[f"{prefix}/reward/min_within_groups"] = float(np.mean([g.min() for g in per_group]))
        out[f"{prefix}/reward/mean_within_groups"] = float(np.mean([g.mean() for g in per_group]))
        out[f"{prefix}/reward/max_within_groups"] = float(np.mean([g.max() for g in per_group]))
        out[f"{prefix}/reward/std_within_groups"] = float(np.mean([g.std() for g in per_group]))
    sizes = {len(g) for g in groups}
    n = min(sizes) if sizes else 0
    succeeded = sum(1 for r in records if r.reward is not None and r.reward >= success_threshold)
    out[f"{prefix}/reward/rollouts_per_prompt"] = float(n)
    out[f"{prefix}/reward/num_prompts"] = float(len(groups))
    out[f"{prefix}/reward/succeeded_rollouts"] = float(succeeded)
    out[f"{prefix}/reward/failed_rollouts"] = float(len(records) - succeeded)
    out[f"{prefix}/reward/success_threshold"] = float(success_threshold)
    for k in sorted({int(k) for k in pass_k_values}):
        if not 0 < k <= n:
            continue
        passes, powers = [], []
        for group in groups:
            c = sum(1 for r in group if r.reward is not None and r.reward >= success_threshold)
            passes.append(pass_at_k(len(group), c, k))
            powers.append((c / len(group)) ** k)
        out[f"{prefix}/reward/pass_at_{k}"] = float(np.mean(passes))
        out[f"{prefix}/reward/pass_power_{k}"] = float(np.mean(powers))
    out.update(turn_metrics(prefix, records))
    out.update(token_metrics(prefix, records))
    return out


def standin_metrics(
    groups: Sequence[Group], format_probabilities: Mapping[str, float], adapter_norm: float
) -> dict[str, float]:
    """Offline-only `standin/*` metrics: how the stand-in policy writes its answers."""
    formats = [f for g in groups for r in g for f in r.formats]
    out = {
        "standin/adapter/norm": float(adapter_norm),
        "standin/format/tool_call_prob": float(format_probabilities.get("tool_call", 0.0)),
    }
    if formats:
        out["standin/format/raw_text_rate"] = float(np.mean([f == RAW_TEXT for f in formats]))
        out["standin/format/no_call_rate"] = float(np.mean([f == NO_CALL for f in formats]))
    return out
