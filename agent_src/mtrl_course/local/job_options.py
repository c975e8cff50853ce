"""The settings of one offline job runner (`RunnerOptions`), and what a runner needs of its job.

`RunnerOptions` are the course's side of a runner (the job's hyperparameters come from the job):
the lane, the seed, the workers, an injected fault, the reward design, the estimator, the learner
and where adapters are kept. `ReportingJob` is what the runner reads from and reports to the
service's job (`local.service.LocalJob`; in tests, `failure_experiments.MemoryJob`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mtrl_course import config, rewards
from mtrl_course.local.names import FAULT_AGENT_ERROR, FAULT_MISSING_REWARD, FAULTS, LANE_FAST, LANES
from mtrl_course.local.standin_lane import ADAPTER_DIR
from mtrl_course.local.trainee import POLICIES, POLICY_STANDIN
from mtrl_course.rl.advantages import DEFAULT_ESTIMATOR, estimator
from mtrl_course.service_spec import TrainingHyperparameters
from wordle_agent import rollout

FAST_LANE_ONLY_FAULTS = (FAULT_AGENT_ERROR, FAULT_MISSING_REWARD)
# Offline agents report their reward before their invocation returns; the real service waits up
# to rollout_timeout, the local one only this long after the agent answered.
REWARD_GRACE_S = 2.0

# Which model plays (a runner option, or this environment variable for a whole process): the
# stand-in policy (the default) or the learner, a tiny language model (`mtrl_course.learner`,
# served by `local.learner_policy`, trained by `local.learner_lane`).
POLICY_ENV = "MTRL_OFFLINE_POLICY"


def default_policy() -> str:
    """`MTRL_OFFLINE_POLICY` if set, else the stand-in; a value naming no policy is refused by name."""
    value = os.environ.get(POLICY_ENV, "").strip().lower()
    if value and value not in POLICIES:
        raise ValueError(
            f"{POLICY_ENV}={value!r} names no offline policy; use one of {', '.join(POLICIES)} or unset it"
        )
    return value or POLICY_STANDIN


class ReportingJob(Protocol):
    """What a runner needs from the service's job (`mtrl_course.local.service.LocalJob`)."""

    name: str
    arn: str
    category: str
    config: Any  # JobConfig: base_model, input_model_package_arn, output_model_package_group_arn

    @property
    def hyperparameters(self) -> dict[str, Any]: ...
    @property
    def training_hyperparameters(self) -> TrainingHyperparameters: ...
    @property
    def runtime_arn(self) -> str: ...
    @property
    def mlflow_tracking_uri(self) -> str: ...
    def prompts(self, channel: str) -> list[str]: ...
    def set_secondary(self, status: str, message: str = "") -> None: ...
    def update_progress(self, **info: Any) -> None: ...
    def set_rollout_info(self, total: int, completed: int) -> None: ...
    def add_billable_tokens(self, prefill: int = 0, sample: int = 0, train: int = 0) -> None: ...
    def register_output_model_package(self, description: str = "", checkpoint: bool = False) -> str: ...
    def start_mlflow_run(self) -> tuple[str, str]: ...
    def log(self, message: str) -> None: ...
    def fail(self, reason: str) -> None: ...
    def should_stop(self) -> bool: ...


@dataclass(frozen=True)
class RunnerOptions:
    """Course-side settings of a runner (the job's hyperparameters come from the job)."""

    lane: str = LANE_FAST
    seed: int = config.DEFAULT_SEED
    workers: int | None = None  # default: FAST_LANE_WORKERS or FULL_LANE_WORKERS
    fault: str | None = None
    fault_step: int = 1
    reward_grace_seconds: float = REWARD_GRACE_S
    adapter_dir: Path = ADAPTER_DIR
    reward: str = rewards.TIERED
    # How rewards become per-token weights for either learner (`rl.advantages`): "grpo" (std-scaled
    # advantages, 1/|o_i|) or "dr_grpo" (mean-only, no length normalisation). Offline only: the
    # service documents no such switch.
    estimator: str = DEFAULT_ESTIMATOR
    # Save the adapter every this many steps as `<job>-step<NNN>.json` in adapter_dir (0: never),
    # the analogue of the service's intermediate checkpoints: notebook 10 evaluates them at
    # serving settings to ask whether training longer helps where the model is served.
    checkpoint_every: int = 0
    policy: str = field(default_factory=default_policy)
    # Handed every finished game of the job's rollouts, `observer(task_id, game)` (fast lane only:
    # on the full lane the games live in the served app, behind HTTP).
    observer: rollout.GameObserver | None = None

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy {self.policy!r} is not one of {POLICIES}")
        if self.lane not in LANES:
            raise ValueError(f"lane {self.lane!r} is not one of {LANES}")
        estimator(self.estimator)  # a clear error naming the choices
        if self.reward not in rewards.REWARDS:
            raise ValueError(f"reward {self.reward!r} is not one of {rewards.DESIGNS}")
        if self.reward != rewards.TIERED and self.lane != LANE_FAST:
            raise ValueError(f"reward {self.reward!r} swaps the rollout handler, which only the fast lane can do")
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault {self.fault!r} is not one of {FAULTS}")
        if self.fault in FAST_LANE_ONLY_FAULTS and self.lane != LANE_FAST:
            raise ValueError(f"fault {self.fault!r} swaps the rollout handler, which only the fast lane can do")
        if self.observer is not None and self.lane != LANE_FAST:
            raise ValueError("an observer sees the games of the fast lane only; the full lane plays them behind HTTP")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be 0 (off) or a number of steps, got {self.checkpoint_every}")
