"""The learner as a training job's policy: what the runner does differently when it trains it.

The runner (`mtrl_course.local.runner`) keeps its loop (rollouts through the real agent, groups,
advantages, validation, MLflow, model packages); with the `policy="learner"` option it hands the
learner-specific parts to `LearnerTrainee`: which policy serves the rollouts
(`learner_policy.LearnerPolicy`), the update (token-level GRPO on the LoRA adapter,
`mtrl_course.learner.grpo`), the offline-only `learner/*` metrics, and the adapter file saved as
the output model package (safetensors, next to a package index like the stand-in's).

The adapter's rank and alpha are the job's `lora_rank` and `lora_alpha`; the clip thresholds,
learning rate and Adam settings are the job's too (see `learner.grpo` for what the service does
not document and what was chosen).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mtrl_course.learner import grpo as lgrpo
from mtrl_course.learner import weights
from mtrl_course.learner.lora import Adapter
from mtrl_course.local.learner_policy import LABEL, LearnerPolicy, load_base
from mtrl_course.rl.advantages import GRPO, Estimator
from mtrl_course.service_spec import TrainingHyperparameters

# Next to the stand-in's index in the runner's adapter directory, so neither reads the other's.
PACKAGE_INDEX = "learner-packages.json"
# Rollout threads of the fast lane with the learner: the model's batches grow with the number of
# conversations waiting at once, so more threads mean larger, cheaper batches (bounded by the
# job's rollout_max_concurrency).
LEARNER_WORKERS = 64
# The MLflow tag every run this trainee trains or evaluates carries (`local.trainee.POLICY_TAG`).
TAG_VALUE = (
    f"{LABEL}: a character-level transformer of under a million parameters with a LoRA adapter, "
    "playing instead of the job's base model offline; its numbers are its own"
)


def adapter_path(directory: Path, name: str) -> Path:
    return Path(directory) / f"{name}.safetensors"


def register(directory: Path, package_arn: str, path: Path) -> None:
    index_file = Path(directory) / PACKAGE_INDEX
    index = json.loads(index_file.read_text()) if index_file.is_file() else {}
    index[package_arn] = str(path)
    index_file.parent.mkdir(parents=True, exist_ok=True)
    index_file.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


def adapter_for_package(package_arn: str, directory: Path) -> Path | None:
    index_file = Path(directory) / PACKAGE_INDEX
    if not index_file.is_file():
        return None
    found = json.loads(index_file.read_text()).get(package_arn)
    return Path(found) if found else None


def starting_adapter(hp: TrainingHyperparameters, package_arn: str | None, seed: int, directory: Path) -> Adapter | str:
    """A fresh adapter (rank and alpha from the job), or the input model package's; a FailureReason if missing."""
    _, model_config, base_id = load_base()
    if not package_arn:
        return Adapter.new(model_config, hp.lora_rank, float(hp.lora_alpha), np.random.default_rng([seed, 19]))
    path = adapter_for_package(package_arn, directory)
    if path is None or not path.is_file():
        return (
            f"The input model package {package_arn} holds no learner adapter trained on this machine "
            f"(looked in {Path(directory) / PACKAGE_INDEX}); train one offline first."
        )
    return weights.load_adapter(path, base_id)


class LearnerTrainee:
    """The learner's side of one training job: its adapter, optimizer, policy and metrics."""

    label = LABEL
    tag = TAG_VALUE

    def __init__(self, hp: TrainingHyperparameters, adapter: Adapter, seed: int, estimator: Estimator = GRPO) -> None:
        self.params, self.model_config, self.base_id = load_base()
        self.hp, self.adapter, self.seed, self.estimator = hp, adapter, seed, estimator
        self.optimizer = lgrpo.optimizer(hp)
        self.last: lgrpo.StepStats | None = None

    def policy(self) -> LearnerPolicy:
        return LearnerPolicy(self.adapter, seed=self.seed)

    def update(self, traces_by_game: Sequence[Sequence[Any]], advantages: Sequence[float], step: int) -> float:
        """One GRPO step from each game's policy traces and advantage; returns its seconds."""
        started = time.monotonic()
        batch = [
            lgrpo.Sample(
                float(a),
                [lgrpo.Turn.from_trace(t) for t in traces if isinstance(t, Mapping) and t.get("kind") == "lm"],
            )
            for traces, a in zip(traces_by_game, advantages)
        ]
        from mtrl_course.learner.threads import one_blas_thread

        with one_blas_thread():
            self.adapter, self.last = lgrpo.update(
                self.params,
                self.model_config,
                self.adapter,
                batch,
                self.optimizer,
                step,
                hyperparameters=self.hp,
                estimator=self.estimator,
            )
        return time.monotonic() - started

    def metrics(self, records: Sequence[Sequence[Any]], traces_by_game: Sequence[Sequence[Any]]) -> dict[str, float]:
        """Offline-only `learner/*` metrics: the update's statistics and how the model wrote."""
        turns = [t for traces in traces_by_game for t in traces if isinstance(t, Mapping) and t.get("kind") == "lm"]
        out: dict[str, float] = {
            "learner/adapter/b_norm": float(
                np.sqrt(sum(float((v.astype(np.float64) ** 2).sum()) for v in self.adapter.b.values()))
            ),
        }
        if turns:
            out["learner/format/tool_call_rate"] = float(np.mean([bool(t.get("tool_call")) for t in turns]))
            out["learner/tokens/sampled_per_turn"] = float(np.mean([len(t["tokens"]) for t in turns]))
        if self.last is not None:
            s = self.last
            out.update(
                {
                    "learner/update/games_used": float(s.games_used),
                    "learner/update/sampled_tokens": float(s.sampled_tokens),
                    "learner/update/clipped_share": s.clipped_tokens / max(s.sampled_tokens, 1),
                    "learner/update/grad_norm": s.grad_norm,
                    "learner/update/loss": s.loss,
                    "learner/update/kl": s.kl,
                    "learner/update/forward_tokens": float(s.forward_tokens),
                }
            )
        return out

    def save(self, directory: Path, name: str) -> Path:
        return weights.save_adapter(adapter_path(directory, name), self.adapter, self.base_id, {"seed": self.seed})

    def publish(self, job: Any, directory: Path) -> None:
        """Save the trained adapter and register it as the job's output model package."""
        publish(job, directory, self)


# --- what the runner calls (kept here so the runner stays one training loop) ----------------------


def training_adapter(job: Any, directory: Path, seed: int) -> Adapter | str:
    """A training job's starting adapter: fresh, or its input model package's; a FailureReason if missing."""
    package = getattr(job.config, "input_model_package_arn", None)
    return starting_adapter(job.training_hyperparameters, package, seed, directory)


def evaluation_adapter(job: Any, directory: Path) -> Adapter | str | None:
    """An evaluation job's adapter: its input model package's, None for the base, or a FailureReason."""
    package = getattr(job.config, "input_model_package_arn", None)
    if not package:
        return None
    path = adapter_for_package(package, directory)
    if path is None or not path.is_file():
        return f"The input model package {package} holds no learner adapter trained on this machine; train one first."
    return weights.load_adapter(path, load_base()[2])


def publish(job: Any, directory: Path, trainee: LearnerTrainee) -> None:
    """Save the trained adapter and register it as the job's output model package."""
    path = trainee.save(directory, job.name)
    job.log(f"{trainee.label} adapter saved to {path}")
    if getattr(job.config, "output_model_package_group_arn", None):
        arn = job.register_output_model_package(
            f"Offline {trainee.label} LoRA adapter (step {trainee.adapter.step}) from job {job.name}; file {path.name}"
        )
        register(directory, arn, path)
