"""The MTRL service's documented contract, read by both modes: models, job categories, hyperparameters.

Live code reads these tables to plan and check a job before it spends anything; the offline hub
serves the same tables to `MultiTurnRLTrainer`/`MultiTurnRLEvaluator`, and the local service
validates CreateJob against them. Stating them once here keeps the two modes from drifting.

The specs come from the AWS documentation's tables (reference/aws-docs.md sections 1.2, 1.3 and
1.8), not from the live hub, whose per-model values may differ (the learning-rate default
already does, see below).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtrl_course.errors import ServiceError, coral_errors, validation_error

# Job categories (CreateJob's JobCategory).
TRAINING = "AgentRFT"
EVALUATION = "AgentRFTEvaluation"
JOB_CATEGORIES = (TRAINING, EVALUATION)

HUB_NAME = "SageMakerPublicHub"
HUB_CONTENT_TYPE = "Model"
HUB_CONTENT_VERSION = "1.0.0"
# Public-hub ARNs name the owner "aws" instead of an account id.
HUB_OWNER = "aws"
GPT_OSS_20B = "openai-reasoning-gpt-oss-20b"
NOVA_LITE_2 = "nova-textgeneration-lite-v2"
# Model id -> (display name, Regions it is offered in), from aws-docs.md §1.2.
MODELS: dict[str, tuple[str, tuple[str, ...]]] = {
    GPT_OSS_20B: ("GPT-OSS-20B", ("us-east-1", "us-west-2")),
    NOVA_LITE_2: ("Nova Lite 2.0", ("us-east-1", "us-west-2")),
}
UNPUBLISHED_MODELS = ("Gemma-4-31B-it", "Qwen 3.6 27B")

# Training hyperparameters: aws-docs.md §1.3 (dg/model-customize-mtrl-hyperparams.html, the
# "recipe defaults" table). The spec format is the one FineTuningOptions reads:
# {name: {type, default, min, max, enum}}; bounds are inclusive except where `min_exclusive`
# says otherwise (FineTuningOptions ignores that key; the local service enforces it).
# Left out on purpose:
# - `model_name_or_path` ("required"): the service derives it from BaseModelArn;
# - the validation copy of `sampling_max_tokens` (val_sampling_params): the table gives it the
#   same flat name as the rollout one, and its distinct flat name is not documented.
# The learning-rate default is the table's 4e-5; a third-party Wordle sample calls 1e-5 the
# documented default for both models (aws-docs.md §1.3 CONFLICT). Check get_info() live.
ADVANTAGE_METHODS = (
    "monte_carlo",
    "group_based",
    "group_based_per_turn",
    "rloo",
    "reinforce_pp",
    "reinforce_pp_baseline",
    "opo",
    "grpo_passk",
    "gpg",
)
LOSS_FUNCTIONS = ("importance_sampling", "ppo", "cispo")
PASS_K_VALUES = [1, 2, 4, 8, 16, 32]
TRAINING_SPEC: dict[str, dict[str, Any]] = {
    "global_batch_size": {"type": "integer", "default": 128, "enum": [32, 64, 128]},
    "group_size": {"type": "integer", "default": 8, "min": 2, "max": 32},
    "advantage_method": {"type": "string", "default": "group_based", "enum": list(ADVANTAGE_METHODS)},
    "loss_fn": {"type": "string", "default": "ppo", "enum": list(LOSS_FUNCTIONS)},
    "clip_low_threshold": {"type": "float", "default": 0.8, "min": 0.0, "max": 1.0},
    "clip_high_threshold": {"type": "float", "default": 1.2, "min": 1.0, "max": 10.0},
    "temperature": {"type": "float", "default": 1.0, "min": 0.0, "max": 2.0},
    "sampling_top_p": {"type": "float", "default": 1.0, "min": 0.0, "max": 1.0},
    "sampling_max_tokens": {"type": "integer", "default": 4096, "min": 512, "max": 8192},
    "pass_k_values": {"type": "list", "default": PASS_K_VALUES},
    "success_threshold": {"type": "float", "default": 1.0},
    "max_epochs": {"type": "integer", "default": 1, "min": 1, "max": 30},
    "max_steps": {"type": "integer", "default": 50, "min": 1, "max": 1000},
    "val_every": {"type": "integer", "default": 10, "min": 0, "max": 100},
    "lora_rank": {"type": "integer", "default": 32, "min": 16, "max": 64},
    "lora_alpha": {"type": "integer", "default": 64, "min": 16, "max": 128},
    "learning_rate": {"type": "float", "default": 4e-05, "min": 0.0, "max": 0.01, "min_exclusive": True},
    "adam_beta1": {"type": "float", "default": 0.9, "min": 0.0, "max": 0.999999},
    "adam_beta2": {"type": "float", "default": 0.95, "min": 0.0, "max": 0.999999},
    "adam_eps": {"type": "float", "default": 1e-08, "min": 1e-16, "max": 0.01},
    "adam_weight_decay": {"type": "float", "default": 0.0, "min": 0.0, "max": 1.0},
    "adam_grad_clip_norm": {"type": "float", "default": 1.0, "min": 0.0, "max": 100.0},
    "rollout_max_concurrency": {"type": "integer", "default": 96, "min": 32, "max": 96},
    "rollout_timeout": {"type": "integer", "default": 600, "min": 300, "max": 86400},
    "rollout_max_retries": {"type": "integer", "default": 3, "min": 1, "max": 10},
    "max_steps_off_policy": {"type": "integer", "default": 3, "min": 0, "max": 10},
}
# The course's two runs, as overrides of the table above (every other value is its default).
# The walkthrough's only changes to gpt-oss-20b's defaults: 8192 is the service's maximum (at the
# default 4096 the model often ran out of tokens while reasoning, before its first tool call),
# and 640 rows at the default batch of 128 make 5 steps an epoch, so 100 steps need 20 epochs.
WALKTHROUGH_OVERRIDES: dict[str, Any] = {"sampling_max_tokens": 8192, "max_epochs": 20, "max_steps": 100}
# Offline only, on top of the walkthrough's: the stand-in policy's run, sized for a notebook.
# 32 prompts x 8 rollouts a step, 10 steps (half an epoch of the 640 training words), validation
# on the 128 held-out words at steps 0, 2, 4, ..., 10. The learning rate is 1e-5, which a public
# Wordle sample's README calls the documented default (the docs' table says 4e-5, aws-docs.md
# §1.3). The AWS walkthrough recommends no rate: of the defaults it changes only the three above.
# `mtrl_course.training` plans jobs with it and `local.failure_experiments` runs it in memory: both read
# it here.
OFFLINE_OVERRIDES: dict[str, Any] = {
    "global_batch_size": 32,
    "group_size": 8,
    "max_steps": 10,
    "max_epochs": 1,
    "val_every": 2,
    "learning_rate": 1e-5,
}

# Evaluation hyperparameters: aws-docs.md §1.8 (dg/model-customize-mtrl-evaluation.html). The
# docs nest them (batch / eval_metrics_config / eval_sampling_params / rollout); the flat names
# are the ones a third-party sample reports the live API accepts. The docs give defaults only:
# the sampling and rollout ranges are borrowed from the training table, and eval_group_size gets
# the training group_size's upper bound. Note that the SDK's evaluator forwards only
# eval_group_size, sampling_temperature, top_p, max_tokens, pass_k_values and
# success_threshold (sdk.md §4.4), so with these names it silently drops the sampling settings.
EVALUATION_SPEC: dict[str, dict[str, Any]] = {
    "eval_group_size": {**TRAINING_SPEC["group_size"], "default": 1, "min": 1},
    "temperature": {**TRAINING_SPEC["temperature"], "default": 0.0},
    **{
        name: dict(TRAINING_SPEC[name])
        for name in (
            "sampling_top_p",
            "sampling_max_tokens",
            "pass_k_values",
            "success_threshold",
            "rollout_timeout",
            "rollout_max_concurrency",
            "rollout_max_retries",
        )
    },
}
# The names MultiTurnRLEvaluator emits for three of them. The public Wordle sample reports that
# the live schema rejects them, so the local service rejects them too (a guess until a live run
# confirms it: docs/LIVE_CHECKLIST.md); the course never sends them (evaluation.py checks).
EVALUATION_ALIASES = {
    "sampling_temperature": "temperature",
    "top_p": "sampling_top_p",
    "max_tokens": "sampling_max_tokens",
}


def hub_arn(region: str) -> str:
    return f"arn:aws:sagemaker:{region}:{HUB_OWNER}:hub/{HUB_NAME}"


def hub_content_arn(region: str, model: str, version: str = HUB_CONTENT_VERSION) -> str:
    return f"arn:aws:sagemaker:{region}:{HUB_OWNER}:hub-content/{HUB_NAME}/{HUB_CONTENT_TYPE}/{model}/{version}"


def model_from_arn(arn: str) -> str | None:
    """The model id inside a hub-content ARN (`.../Model/<id>[/<version>]`), or None."""
    marker = f":hub-content/{HUB_NAME}/{HUB_CONTENT_TYPE}/"
    if marker not in arn:
        return None
    return arn.split(marker, 1)[1].split("/", 1)[0] or None


def training_spec(model: str) -> dict[str, dict[str, Any]]:
    """The training hyperparameter spec for a served model (a copy; the docs give one table)."""
    require_model(model)
    return copy.deepcopy(TRAINING_SPEC)


def evaluation_spec(model: str) -> dict[str, dict[str, Any]]:
    require_model(model)
    return copy.deepcopy(EVALUATION_SPEC)


def require_model(model: str) -> None:
    if model not in MODELS:
        raise ServiceError(
            "ResourceNotFound",
            f"Hub content {model!r} of type {HUB_CONTENT_TYPE} does not exist in hub {HUB_NAME}. "
            f"The offline hub serves {', '.join(MODELS)}; the hub ids of "
            f"{' and '.join(UNPUBLISHED_MODELS)} are not public.",
        )


def _parse_value(text: str, kind: str) -> Any:
    if kind == "integer":
        return int(text)
    if kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise ValueError("not finite")
        return value
    if kind == "list":
        value = json.loads(text.replace("'", '"'))
        if not isinstance(value, list):
            raise ValueError("not a list")
        return value
    return text


_KIND_WORDS = {"integer": "an integer", "float": "a number", "list": "a list such as [1, 2, 4]", "string": "a string"}


def resolve_hyperparameters(
    given: Mapping[str, Any] | None,
    spec: Mapping[str, Mapping[str, Any]],
    where: str,
    aliases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Typed hyperparameters: the spec's defaults overlaid with `given` (strings, as sent).

    Raises a ValidationException listing every unknown name, unparsable value and value out of
    range or outside its enum, in AWS's 'N validation errors detected' style. `where` is the
    document path quoted in the messages, `aliases` maps extra accepted names to spec names.
    """
    values = {name: copy.deepcopy(entry.get("default")) for name, entry in spec.items()}
    errors: list[str] = []
    for raw_name, raw in (given or {}).items():
        name = (aliases or {}).get(raw_name, raw_name)
        path = f"{where}.{raw_name}"
        if name not in spec:
            errors.append(
                f"Value at '{path}' failed to satisfy constraint: Member must be one of the supported hyperparameters ({', '.join(sorted(spec))})"
            )
            continue
        entry = spec[name]
        kind = entry.get("type", "string")
        text = raw if isinstance(raw, str) else json.dumps(raw)
        try:
            value = _parse_value(text, kind)
        except (ValueError, TypeError):
            errors.append(
                f"Value '{text}' at '{path}' failed to satisfy constraint: Member must be {_KIND_WORDS.get(kind, kind)}"
            )
            continue
        if "enum" in entry and value not in entry["enum"]:
            errors.append(
                f"Value '{text}' at '{path}' failed to satisfy constraint: Member must satisfy enum value set: {entry['enum']}"
            )
            continue
        low, high = entry.get("min"), entry.get("max")
        if low is not None and (value < low or (entry.get("min_exclusive") and value == low)):
            relation = "greater than" if entry.get("min_exclusive") else "greater than or equal to"
            errors.append(f"Value '{text}' at '{path}' failed to satisfy constraint: Member must be {relation} {low}")
            continue
        if high is not None and value > high:
            errors.append(
                f"Value '{text}' at '{path}' failed to satisfy constraint: Member must be less than or equal to {high}"
            )
            continue
        values[name] = value
    if errors:
        raise validation_error(coral_errors(errors))
    return values


def flatten_nested(hyperparameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Accept the docs' nested evaluation form ({"batch": {"eval_group_size": 1}}) as flat names.

    Guess: the live schema's shape is disputed (aws-docs.md §1.8), so both forms are accepted.
    """
    flat: dict[str, Any] = {}
    for key, value in (hyperparameters or {}).items():
        if isinstance(value, Mapping):
            for inner, inner_value in value.items():
                flat[f"rollout_{inner}" if key == "rollout" else inner] = inner_value
        else:
            flat[key] = value
    return flat


def training_defaults(names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The documented training defaults (all, or just `names`), as the service applies them."""
    return {
        name: copy.deepcopy(entry.get("default"))
        for name, entry in TRAINING_SPEC.items()
        if names is None or name in names
    }


# --- one training job's hyperparameters, typed -------------------------------------------------
@dataclass(frozen=True)
class TrainingHyperparameters:
    """One training job's hyperparameters: every name of `TRAINING_SPEC`, typed, nothing else.

    Built only through `resolve` (or `from_resolved`, for values `resolve_hyperparameters` already
    checked): the defaults are `TRAINING_SPEC`'s, stated once there; a name the table does not
    document is refused in the service's words (a ValidationException: "Member must be one of the
    supported hyperparameters"), as are values out of range. The local service builds one per
    training job and hands it down to the runner, the stand-in's GRPO and the learner's GRPO.
    """

    global_batch_size: int
    group_size: int
    advantage_method: str
    loss_fn: str
    clip_low_threshold: float
    clip_high_threshold: float
    temperature: float
    sampling_top_p: float
    sampling_max_tokens: int
    pass_k_values: tuple[int, ...]
    success_threshold: float
    max_epochs: int
    max_steps: int
    val_every: int
    lora_rank: int
    lora_alpha: int
    learning_rate: float
    adam_beta1: float
    adam_beta2: float
    adam_eps: float
    adam_weight_decay: float
    adam_grad_clip_norm: float
    rollout_max_concurrency: int
    rollout_timeout: int
    rollout_max_retries: int
    max_steps_off_policy: int

    @classmethod
    def resolve(
        cls, given: Mapping[str, Any] | None = None, where: str = "TrainingConfig.HyperParameters"
    ) -> TrainingHyperparameters:
        """`TRAINING_SPEC`'s defaults overlaid with `given` (as sent: strings or values), checked."""
        return cls.from_resolved(resolve_hyperparameters(given, TRAINING_SPEC, where))

    @classmethod
    def unbounded(cls, given: Mapping[str, Any] | None = None) -> TrainingHyperparameters:
        """Like `resolve`, names and types checked the same way, but no range or enum.

        For in-memory experiment runs (`local.failure_experiments`, the experiments), which go below the service's
        minimums on purpose (a batch of 4 prompts keeps a test fast); no job of the service does.
        """
        relaxed = {
            name: {k: v for k, v in entry.items() if k not in ("min", "max", "min_exclusive", "enum")}
            for name, entry in TRAINING_SPEC.items()
        }
        return cls.from_resolved(resolve_hyperparameters(given, relaxed, "HyperParameters"))

    @classmethod
    def from_resolved(cls, values: Mapping[str, Any]) -> TrainingHyperparameters:
        """From values `resolve_hyperparameters` returned for `TRAINING_SPEC` (every name, typed)."""
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise validation_error(
                coral_errors(
                    [
                        f"Value at 'HyperParameters.{name}' failed to satisfy constraint: Member must be one of "
                        f"the supported hyperparameters ({', '.join(sorted(TRAINING_SPEC))})"
                        for name in sorted(unknown)
                    ]
                )
            )
        return cls(**{**values, "pass_k_values": tuple(values["pass_k_values"])})

    def replace(self, **changes: Any) -> TrainingHyperparameters:
        """A copy with `changes` (names and values checked as the service checks them)."""
        return self.resolve({**self.as_dict(), **changes}, where="HyperParameters")

    def as_dict(self) -> dict[str, Any]:
        """Name -> value, as DescribeJob and MLflow show them (lists as lists)."""
        values = dataclasses.asdict(self)
        values["pass_k_values"] = list(self.pass_k_values)
        return values
