"""The stand-in policy as a training job's trainee: its adapter, update, metrics and model packages.

The runner (`mtrl_course.local.runner`) runs one training loop for every learner; what differs
between them is behind the `Trainee` protocol (`local.trainee`). This module is the stand-in's
side, as `learner_lane` is the tiny language model's: which policy serves the rollouts
(`stand_in_policy.StandInPolicy`), the update (`local.grpo`: its closed-form policy gradient,
the RL core's advantages, clip weights and Adam), the offline-only `standin/*` metrics, and the
adapter file saved as the output model package (JSON, registered in a package index so a later
job or evaluation can start from it).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtrl_course import config
from mtrl_course.local import grpo, metrics
from mtrl_course.local.stand_in_policy import LABEL, Adapter, StandInPolicy
from mtrl_course.numerics import norm
from mtrl_course.rl.advantages import Estimator
from mtrl_course.service_spec import TrainingHyperparameters

ADAPTER_DIR = config.STATE_DIR / "standin" / "adapters"
PACKAGE_INDEX = "packages.json"
# The MLflow tag every run this trainee trains or evaluates carries (`local.trainee.POLICY_TAG`).
TAG_VALUE = (
    f"{LABEL}: a small learnable linear policy that plays instead of the job's base model "
    "offline; its numbers are its own"
)

_INDEX_LOCK = threading.Lock()


def _index_path(directory: Path) -> Path:
    return directory / PACKAGE_INDEX


def register_adapter(directory: Path, package_arn: str, adapter_file: Path) -> None:
    """Remember which adapter file a model package ARN holds (for evaluation and notebooks)."""
    with _INDEX_LOCK:
        path = _index_path(directory)
        index = json.loads(path.read_text()) if path.is_file() else {}
        index[package_arn] = str(adapter_file)
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


def adapter_for_package(package_arn: str, directory: Path = ADAPTER_DIR) -> Path | None:
    """The adapter file behind a model package ARN a local job registered, or None."""
    path = _index_path(directory)
    if not path.is_file():
        return None
    found = json.loads(path.read_text()).get(package_arn)
    return Path(found) if found else None


def starting_adapter(job: Any, directory: Path, seed: int) -> Adapter | str:
    """The base stand-in, or the input model package's adapter; a FailureReason string if missing."""
    base_model = str(getattr(job.config, "base_model", ""))
    package = getattr(job.config, "input_model_package_arn", None)
    if not package:
        return Adapter(seed=seed, base_model=base_model)
    path = adapter_for_package(package, directory)
    if path is None or not path.is_file():
        return (
            f"The input model package {package} holds no stand-in adapter trained on this machine "
            f"(looked in {_index_path(directory)}); train one offline first."
        )
    return Adapter.load(path)


def evaluation_metrics(records: Sequence[Sequence[Any]], policy: StandInPolicy, adapter: Adapter) -> dict[str, float]:
    """The offline-only `standin/*` metrics of an evaluation."""
    return metrics.standin_metrics(records, policy.format_probabilities(), norm(adapter.weights))


class StandInTrainee:
    """The stand-in's side of one training job: its adapter, optimizer, policy and metrics."""

    label = LABEL
    tag = TAG_VALUE

    def __init__(self, hp: TrainingHyperparameters, adapter: Adapter, seed: int, estimator: Estimator) -> None:
        self.adapter, self.seed = adapter, seed
        # The gradient's knobs (loss, clip bounds, advantage method, estimator) and the optimizer
        # are each built from the job's typed hyperparameters: Adam reads the learning rate from
        # `hp` itself.
        self.config = grpo.GRPOConfig.from_training(hp, estimator=estimator)
        self.optimizer = grpo.optimizer(hp)
        self.served = StandInPolicy(adapter, seed=seed)

    def policy(self) -> StandInPolicy:
        return self.served

    def update(self, traces_by_game: Sequence[Sequence[Any]], advantages: Sequence[float], step: int) -> float:
        """One GRPO step from each game's policy traces and advantage; returns its seconds."""
        started = time.monotonic()
        batch = [grpo.TrajectorySample(float(a), traces) for traces, a in zip(traces_by_game, advantages)]
        self.adapter = grpo.update(self.adapter, batch, self.optimizer, step, self.config).adapter
        self.served = StandInPolicy(self.adapter, seed=self.seed)
        return time.monotonic() - started

    def metrics(self, records: Sequence[Sequence[Any]], traces_by_game: Sequence[Sequence[Any]]) -> dict[str, float]:
        return evaluation_metrics(records, self.served, self.adapter)

    def save(self, directory: Path, name: str) -> Path:
        return self.adapter.save(Path(directory) / f"{name}.json")

    def publish(self, job: Any, directory: Path) -> None:
        """Save the trained adapter and register it as the job's output model package."""
        path = self.save(directory, job.name)
        job.log(f"{LABEL} adapter saved to {path}")
        if getattr(job.config, "output_model_package_group_arn", None):
            arn = job.register_output_model_package(
                f"Offline {LABEL} adapter (step {self.adapter.step}, seed {self.adapter.seed}) "
                f"from job {job.name}; file {path.name}"
            )
            register_adapter(directory, arn, path)
