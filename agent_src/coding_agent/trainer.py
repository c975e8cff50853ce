"""Train the stand-in coder with the group-relative update, and the reward variants of the lesson.

One step: draw `tasks_per_step` tasks, play each `group_size` times (a GRPO group), score every
rollout with the composite reward, turn each group's rewards into advantages with the same
`group_advantages` the Wordle stand-in uses (r - mean) / (std + eps), and take one Adam step
(`rl.optim.AdamW`, the course's one optimizer) up E[A * mean over turns of d log pi / dW]. A group whose rewards all tie has advantage
zero and contributes nothing: that is how a dead component, or a collapsed policy, stops
learning while the curves can still look calm.

`downweight_saturated` is the fix the post suggests but did not try: once a shaping term has
saturated (its mean stayed near its largest value for a few steps), cut its weight so what is
left of its spread cannot drown the sparse outcome term.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from coding_agent import instrumentation, tasks as task_set
from coding_agent.env import CodingEnv, EnvConfig, Rollout
from coding_agent.policy import CoderPolicy, log_prob_gradient
from coding_agent.reward import MAX_MAGNITUDE, TAUGHT, RewardSpec
from mtrl_course.local.grpo import GRPOConfig, optimizer as standin_optimizer
from mtrl_course.local.stand_in_policy import ADAPTER_SCALE
from mtrl_course.numerics import norm
from mtrl_course.rl.advantages import group_advantages
from mtrl_course.rl.optim import AdamW

# --- every hyperparameter, at the top -----------------------------------------------------------
STEPS = 30
TASKS_PER_STEP = 16
GROUP_SIZE = 8  # K rollouts per task (the Nova 2 User Guide's example BYOO recipe sets number_generation 16)
STEP_SIZE = 0.08  # Adam's step per weight (about); the stand-in has 20 weights
SATURATION_STEPS = 3  # steps in a row at SATURATION_LEVEL before a term counts as saturated
SATURATION_LEVEL = 0.9  # share of the component's largest possible value
DOWNWEIGHT_FACTOR = 0.25


@dataclass(frozen=True)
class TrainConfig:
    steps: int = STEPS
    tasks_per_step: int = TASKS_PER_STEP
    group_size: int = GROUP_SIZE
    step_size: float = STEP_SIZE
    seed: int = 0
    reward: RewardSpec = TAUGHT
    env: EnvConfig = EnvConfig()
    downweight_saturated: tuple[str, ...] = ()
    downweight_factor: float = DOWNWEIGHT_FACTOR

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError(f"group_size must be at least 2 (an advantage needs a group), got {self.group_size}")
        if self.steps < 1 or self.tasks_per_step < 1:
            raise ValueError("steps and tasks_per_step must be positive")
        if not self.step_size > 0:
            raise ValueError(f"step_size must be positive, got {self.step_size}")


@dataclass
class TrainResult:
    config: TrainConfig
    history: list[dict[str, float]] = field(default_factory=list)
    last_batch: list[Rollout] = field(default_factory=list, repr=False)
    weights: np.ndarray | None = None
    downweighted_at: dict[str, int] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return self.config.reward.names

    def dead(self) -> list[str]:
        return instrumentation.dead_components(self.history, self.names)

    def first(self, key: str) -> float:
        return self.history[0][key]

    def last(self, key: str, steps: int = 5) -> float:
        """The mean of `key` over the last `steps` steps (one step is noisy)."""
        return float(np.mean([row[key] for row in self.history[-steps:]]))


def play(
    task: task_set.Task,
    policy: CoderPolicy,
    env_config: EnvConfig,
    spec: RewardSpec,
    rng: random.Random,
    sample_id: str = "",
) -> Rollout:
    """One conversation of the stand-in with the rule-based user."""
    env = CodingEnv(task, env_config, spec, rng=rng, sample_id=sample_id)
    while not env.done:
        action, trace = policy.act(env.observation(), rng)
        env.rollout.traces.append(trace)
        env.step(action)
    return env.rollout


def _adam(step_size: float) -> AdamW:
    # The stand-in's Adam scales its step by lr x alpha / rank x ADAPTER_SCALE (the Wordle
    # adapter's units); this learning rate makes the step `step_size` here.
    base = GRPOConfig()
    return standin_optimizer(GRPOConfig(learning_rate=step_size * base.lora_rank / (base.lora_alpha * ADAPTER_SCALE)))


def train(
    config: TrainConfig = TrainConfig(), task_pool: Sequence[task_set.Task] | None = None, progress: Any = None
) -> TrainResult:
    """Train a fresh stand-in for `config.steps` steps; `progress` wraps the step range (a tqdm)."""
    pool = list(task_pool or task_set.all_tasks())
    rng = random.Random(config.seed)
    policy = CoderPolicy()
    optimizer = _adam(config.step_size)
    spec = config.reward
    result = TrainResult(config)
    steps = range(config.steps)
    for step in progress(steps) if progress else steps:
        batch = rng.sample(pool, min(config.tasks_per_step, len(pool)))
        groups = [
            [play(task, policy, config.env, spec, rng, f"{task.id}-s{step}-k{k}") for k in range(config.group_size)]
            for task in batch
        ]
        gradient = np.zeros_like(policy.weights)
        for group in groups:
            advantages = group_advantages([r.total for r in group])
            for rollout, advantage in zip(group, advantages):
                if advantage == 0:
                    continue
                turns = np.mean([log_prob_gradient(t) for t in rollout.traces], axis=0)
                gradient += advantage * turns
        gradient /= sum(len(g) for g in groups)
        row = instrumentation.step_stats(groups, spec)
        row["step"] = step + 1
        row["grad_norm"] = norm(gradient)
        result.history.append(row)
        if gradient.any():
            # Adam descends: the ascent direction goes in negated.
            stepped, _ = optimizer.step({"weights": policy.weights.ravel()}, {"weights": -gradient.ravel()})
            policy.weights = stepped["weights"].reshape(policy.weights.shape)
        spec = _downweight(spec, config, result, step)
        result.last_batch = [r for g in groups for r in g]
    result.weights = policy.weights
    return result


def _downweight(spec: RewardSpec, config: TrainConfig, result: TrainResult, step: int) -> RewardSpec:
    for name in config.downweight_saturated:
        if name in result.downweighted_at or spec.weight(name) == 0:
            continue
        recent = result.history[-SATURATION_STEPS:]
        ceiling = SATURATION_LEVEL * MAX_MAGNITUDE[name]
        if len(recent) == SATURATION_STEPS and all(abs(r[f"{name}/mean"]) >= ceiling for r in recent):
            spec = spec.with_weight(name, spec.weight(name) * config.downweight_factor)
            result.downweighted_at[name] = step + 1
    return spec


# --- the lesson's reward designs -------------------------------------------------------------------
DEAD_ENTRY_POINT = "solution"  # what a generic harness calls; the tasks name their functions
HARD_TASK_SKILL = 0.15  # hard tasks: knowing the spec rarely suffices (the post: correctness near zero)


def variants() -> dict[str, TrainConfig]:
    """Named configurations the script and the notebook train (seed set by the caller)."""
    hard = EnvConfig(skill=HARD_TASK_SKILL)
    from coding_agent.reward import COMPONENTS, GATED_WITH_EFFICIENCY

    found = {
        "taught": TrainConfig(),
        "dead_correctness": TrainConfig(env=EnvConfig(harness_entry_point=DEAD_ENTRY_POINT)),
        "gated_efficiency_hard": TrainConfig(reward=GATED_WITH_EFFICIENCY, env=hard),
        "taught_hard": TrainConfig(env=hard),
        "taught_downweight_asking": TrainConfig(downweight_saturated=("asked_before_coding",)),
    }
    for name in COMPONENTS:
        found[f"without_{name}"] = TrainConfig(reward=TAUGHT.without(name))
    return found


def with_seed(config: TrainConfig, seed: int) -> TrainConfig:
    return replace(config, seed=seed)
