"""GRPO for the stand-in policy, in one short file (CleanRL style: read it top to bottom).

One training step of the local MTRL service:

1. Each prompt was played `group_size` times. Its rewards r_1..r_G become advantages relative to
   the group (`rl.advantages.group_advantages`, shared with every learner): GRPO's
   A_i = (r_i - mean(r)) / (std(r) + eps) by default, Dr. GRPO's mean-only advantage with the
   estimator switch (`GRPOConfig.estimator`, `rl.advantages.Estimator`). A group whose rewards are
   all equal gets A = 0 everywhere: it teaches nothing and is counted.
2. Every turn of every trajectory recorded a `policy_trace` (the candidates' features, the chosen
   candidate and format, the temperature, the log-probability when sampled). The stand-in is a
   softmax-linear policy, so the gradient of log pi needs no autograd:
       d log pi(candidate k) / d weights = (phi_k - E_pi[phi]) / T
   (pi includes the fixed logit offsets of the policy's self-verification, as recorded);
       d log pi(format f) / d format logits = (onehot(f) - pi_format) / T
   plus the drift term's share: the raw-text logit also depends on the adapter weights' norm
   (`policy.format_drift_gradient`).
   A trajectory's gradient is A_i times the mean of its turns' gradients (GRPO's 1/|o_i|; with
   Dr. GRPO's estimator, their sum); the batch gradient is the mean over trajectories.
3. Clipping (`loss_fn`, `rl.objective.ratio_weights`, shared with every learner): the ratio
   pi_new/pi_old of each turn is compared with [clip_low_threshold, clip_high_threshold].
4. Adam (`rl.optim.AdamW`, the one optimizer: the service's beta1, beta2, eps, decoupled weight
   decay and gradient-norm clipping) takes one step down -J on the adapter. Its step is
   learning_rate x lora_alpha / lora_rank x `stand_in_policy.ADAPTER_SCALE` (see the policy's
   docstring for why the scale exists): `optimizer(hp)` reads the job's typed hyperparameters
   as they are.

Everything is numpy in a fixed order, so the same batch gives the same update, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mtrl_course.numerics import matvec, norm
from mtrl_course.rl.advantages import (  # noqa: F401 - the stand-in's trainers read them here
    ADVANTAGE_EPS,
    ADVANTAGE_METHOD,
    GRPO,
    IMPLEMENTED_METHODS,
    Estimator,
    group_advantages,
)
from mtrl_course.rl.objective import ratio_weights
from mtrl_course.rl.optim import AdamW, every_array
from mtrl_course.service_spec import LOSS_FUNCTIONS, TrainingHyperparameters, training_defaults
from mtrl_course.local.stand_in_policy import (
    ADAPTER_SCALE,
    BASE_WEIGHTS,
    FORMATS,
    N_FEATURES,
    NO_CALL,
    RAW_TEXT,
    Adapter,
    format_drift_gradient,
    format_logits_for,
    softmax,
)

_SERVICE = training_defaults()
MAX_LOG_RATIO = 50.0


class OptimizerSettings(Protocol):
    """What Adam reads: a job's `service_spec.TrainingHyperparameters` (the runner hands them over
    as they are) or a `GRPOConfig` (tests, the coding stand-in)."""

    @property
    def learning_rate(self) -> float: ...
    @property
    def lora_rank(self) -> int: ...
    @property
    def lora_alpha(self) -> int: ...
    @property
    def adam_beta1(self) -> float: ...
    @property
    def adam_beta2(self) -> float: ...
    @property
    def adam_eps(self) -> float: ...
    @property
    def adam_weight_decay(self) -> float: ...
    @property
    def adam_grad_clip_norm(self) -> float: ...


def adam_step_size(settings: OptimizerSettings) -> float:
    """How far Adam moves each adapter value per step (about): lr x alpha / rank x scale."""
    return settings.learning_rate * settings.lora_alpha / settings.lora_rank * ADAPTER_SCALE


@dataclass(frozen=True)
class GRPOConfig:
    """The knobs of one GRPO update; `from_training` takes them from a job's typed hyperparameters.

    The service-named knobs default to the service's table (`service_spec.TRAINING_SPEC`); a job
    always sets them all (`from_training`), the defaults serve tests and the coding stand-in.
    """

    advantage_method: str = ADVANTAGE_METHOD
    estimator: Estimator = GRPO
    advantage_eps: float = ADVANTAGE_EPS
    loss_fn: str = _SERVICE["loss_fn"]
    clip_low_threshold: float = _SERVICE["clip_low_threshold"]
    clip_high_threshold: float = _SERVICE["clip_high_threshold"]
    learning_rate: float = _SERVICE["learning_rate"]
    lora_rank: int = _SERVICE["lora_rank"]
    lora_alpha: int = _SERVICE["lora_alpha"]
    adam_beta1: float = _SERVICE["adam_beta1"]
    adam_beta2: float = _SERVICE["adam_beta2"]
    adam_eps: float = _SERVICE["adam_eps"]
    adam_weight_decay: float = _SERVICE["adam_weight_decay"]
    adam_grad_clip_norm: float = _SERVICE["adam_grad_clip_norm"]

    def __post_init__(self) -> None:
        if self.loss_fn not in LOSS_FUNCTIONS:
            raise ValueError(f"loss_fn {self.loss_fn!r} is not one of {LOSS_FUNCTIONS}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.lora_rank <= 0:
            raise ValueError(f"lora_rank must be positive, got {self.lora_rank}")

    @property
    def step_size(self) -> float:
        """How far Adam moves each adapter value per step (about): lr x alpha / rank x scale."""
        return adam_step_size(self)

    @classmethod
    def from_training(cls, hp: TrainingHyperparameters, **overrides: Any) -> GRPOConfig:
        """The update's knobs from one job's hyperparameters (each named: nothing is dropped)."""
        values = {
            "advantage_method": hp.advantage_method,
            "loss_fn": hp.loss_fn,
            "clip_low_threshold": hp.clip_low_threshold,
            "clip_high_threshold": hp.clip_high_threshold,
            "learning_rate": hp.learning_rate,
            "lora_rank": hp.lora_rank,
            "lora_alpha": hp.lora_alpha,
            "adam_beta1": hp.adam_beta1,
            "adam_beta2": hp.adam_beta2,
            "adam_eps": hp.adam_eps,
            "adam_weight_decay": hp.adam_weight_decay,
            "adam_grad_clip_norm": hp.adam_grad_clip_norm,
        }
        return cls(**{**values, **overrides})


# --- 2.-3. the policy gradient ---------------------------------------------------------------------


@dataclass(frozen=True)
class TrajectorySample:
    """One trajectory's advantage and the policy traces of its turns, in turn order."""

    advantage: float
    traces: Sequence[Mapping[str, Any]]


@dataclass
class GradientStats:
    turns: int = 0
    clipped_turns: int = 0
    trajectories_used: int = 0
    grad_norm: float = 0.0


def _turn_gradient(vector: np.ndarray, trace: Mapping[str, Any]) -> tuple[np.ndarray, float]:
    """(d log pi(action) / d adapter vector, log pi(action)) under the adapter `vector`."""
    temperature = float(trace["temperature"])
    features = np.asarray(trace["features"], dtype=float)
    chosen, fmt = int(trace["chosen"]), int(trace["format"])
    grad = np.zeros_like(vector)

    format_probs = softmax(format_logits_for(vector), temperature)
    onehot = np.zeros(len(FORMATS))
    onehot[fmt] = 1.0
    grad[N_FEATURES:] = (onehot - format_probs) / temperature
    drift = format_drift_gradient(vector)
    grad[:N_FEATURES] = (onehot[RAW_TEXT] - format_probs[RAW_TEXT]) * drift / temperature
    logp = math.log(max(float(format_probs[fmt]), 1e-300))

    if fmt != NO_CALL:  # without a call the candidate never reached the game: only the format acted
        # Self-verification's offsets are part of the logits but not of the parameters: they
        # enter the softmax as recorded (which proposals were checked is fixed per turn).
        offsets = trace.get("offsets")
        logits = matvec(features, BASE_WEIGHTS + vector[:N_FEATURES])
        if offsets is not None:
            logits = logits + np.asarray(offsets, dtype=float)
        probs = softmax(logits, temperature)
        grad[:N_FEATURES] += (features[chosen] - matvec(features.T, probs)) / temperature
        logp += math.log(max(float(probs[chosen]), 1e-300))
    return grad, logp


def policy_gradient(
    vector: np.ndarray, batch: Sequence[TrajectorySample], config: GRPOConfig
) -> tuple[np.ndarray, GradientStats]:
    """The batch's policy gradient (ascent direction) for the adapter `vector`."""
    total = np.zeros_like(vector)
    stats = GradientStats()
    for sample in batch:
        if sample.advantage == 0:
            continue
        turns = [t for t in sample.traces if t.get("kind") == "guess" and t.get("logp") is not None]
        if not turns:
            continue
        stats.trajectories_used += 1
        trajectory = np.zeros_like(vector)
        for trace in turns:
            stats.turns += 1
            grad, logp = _turn_gradient(vector, trace)
            # Capped so a very stale trace cannot overflow exp(); clipping drops it anyway.
            ratio = math.exp(min(logp - float(trace["logp"]), MAX_LOG_RATIO))
            weight, clipped = ratio_weights(
                ratio, sample.advantage, config.loss_fn, config.clip_low_threshold, config.clip_high_threshold
            )
            if clipped:
                stats.clipped_turns += 1
                continue
            trajectory += float(weight) * grad
        if config.estimator.length_normalised:
            trajectory /= len(turns)
        total += sample.advantage * trajectory
    if batch:
        total /= len(batch)
    stats.grad_norm = norm(total)
    return total, stats


# --- 4. Adam ----------------------------------------------------------------------------------------


def optimizer(settings: OptimizerSettings) -> AdamW:
    """The stand-in's Adam (`rl.optim.AdamW`) from a job's hyperparameters as they are, or a
    `GRPOConfig`: step size `adam_step_size`, the service's betas, eps, clip norm and weight decay
    (on the whole adapter vector)."""
    return AdamW(
        adam_step_size(settings),
        beta1=settings.adam_beta1,
        beta2=settings.adam_beta2,
        eps=settings.adam_eps,
        weight_decay=settings.adam_weight_decay,
        grad_clip_norm=settings.adam_grad_clip_norm,
        decays=every_array,
    )


@dataclass(frozen=True)
class UpdateResult:
    adapter: Adapter
    stats: GradientStats
    step_norm: float


def update(
    adapter: Adapter, batch: Sequence[TrajectorySample], optimizer: AdamW, step: int, config: GRPOConfig
) -> UpdateResult:
    """One GRPO step: the policy gradient of `batch` (its knobs from `config`), then one Adam step
    down -J on the adapter."""
    vector = adapter.vector()
    grad, stats = policy_gradient(vector, batch, config)
    if stats.trajectories_used:
        new_vector = optimizer.step({"adapter": vector}, {"adapter": -grad})[0]["adapter"]
    else:
        new_vector = vector
    return UpdateResult(adapter.with_vector(new_vector, step=step), stats, norm(new_vector - vector))
