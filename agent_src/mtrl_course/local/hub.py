"""Offline SageMaker Public Hub: the hub documents and hyperparameter specs of the MTRL models.

`MultiTurnRLTrainer` learns a model's hyperparameter names, defaults and ranges only from the
hub: DescribeHubContent returns a HubContentDocument whose RecipeCollection points, per recipe,
at an override-parameters JSON in S3 (`SmtjOverrideParamsS3Uri`), and the SDK builds its
`FineTuningOptions` from that JSON. `MultiTurnRLEvaluator` does the same with the evaluation
recipe (`EvaluationType: MTRLEvaluation`). Offline, this module serves those documents and writes
the two JSON specs into (moto) S3.

The specs are built from the AWS documentation's tables, not from the live hub, whose per-model
values may differ (the learning-rate default already does, see below). Only two models have
public SDK ids; the hub ids of Gemma-4-31B-it and Qwen 3.6 27B are not published (aws-docs.md
§1.2 lists them as not found), so they are not served here and asking for them fails the way an
unknown model does.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from mtrl_course.local.service import ServiceError

HUB_NAME = "SageMakerPublicHub"
HUB_CONTENT_TYPE = "Model"
HUB_CONTENT_VERSION = "1.0.0"
HUB_DOCUMENT_SCHEMA_VERSION = "2.0.0"
# Public-hub ARNs name the owner "aws" instead of an account id.
HUB_OWNER = "aws"
# The real specs live in AWS-owned buckets; offline they go into this moto bucket.
HUB_BUCKET = "mtrl-course-offline-public-hub"
TRAINING_TECHNIQUE = "MTRL"
EVALUATION_TYPE = "MTRLEvaluation"
PEFT = "LORA"
# HubContentSearchKeywords that list_supported_models() matches ("@recipe:<type>_<technique>").
TRAINING_KEYWORD = "@recipe:finetuning_mtrl_lora"
EVALUATION_KEYWORD = "@recipe:evaluation_mtrlevaluation"
# The hub's "creation time" for the offline documents: fixed, so outputs are reproducible.
HUB_CREATION_TIME = dt.datetime(2026, 6, 2, tzinfo=dt.timezone.utc)

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
    "monte_carlo", "group_based", "group_based_per_turn", "rloo", "reinforce_pp",
    "reinforce_pp_baseline", "opo", "grpo_passk", "gpg",
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
    **{name: dict(TRAINING_SPEC[name]) for name in (
        "sampling_top_p", "sampling_max_tokens", "pass_k_values", "success_threshold",
        "rollout_timeout", "rollout_max_concurrency", "rollout_max_retries",
    )},
}
# The names MultiTurnRLEvaluator emits for three of them (accepted by the local service).
EVALUATION_ALIASES = {
    "sampling_temperature": "temperature",
    "top_p": "sampling_top_p",
    "max_tokens": "sampling_max_tokens",
}

TRAINING_SPEC_KEY = "mtrl/{model}/mtrl_lora_override_params.json"
TRAINING_RECIPE_KEY = "mtrl/{model}/mtrl_lora_recipe.yaml"
EVALUATION_SPEC_KEY = "mtrl/{model}/mtrl_evaluation_override_params.json"
EVALUATION_RECIPE_KEY = "mtrl/{model}/mtrl_evaluation_recipe.yaml"
# The recipe templates are never read by the MTRL trainer or evaluator (checked by running them);
# the objects exist so the documents' URIs resolve.
RECIPE_PLACEHOLDER = "# Offline stand-in: the MTRL service runs the recipe; nothing here is read.\n"


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
    _require_model(model)
    return copy.deepcopy(TRAINING_SPEC)


def evaluation_spec(model: str) -> dict[str, dict[str, Any]]:
    _require_model(model)
    return copy.deepcopy(EVALUATION_SPEC)


def _require_model(model: str) -> None:
    if model not in MODELS:
        raise ServiceError(
            "ResourceNotFound",
            f"Hub content {model!r} of type {HUB_CONTENT_TYPE} does not exist in hub {HUB_NAME}. "
            f"The offline hub serves {', '.join(MODELS)}; the hub ids of "
            f"{' and '.join(UNPUBLISHED_MODELS)} are not public.",
        )


def _document(model: str) -> dict[str, Any]:
    uri = f"s3://{HUB_BUCKET}/"
    display, _ = MODELS[model]
    return {
        "Name": display,
        "GatedBucket": False,
        "RecipeCollection": [
            {
                "Name": f"{model}-mtrl-lora",
                "Type": "FineTuning",
                "CustomizationTechnique": TRAINING_TECHNIQUE,
                "Peft": PEFT,
                "SmtjRecipeTemplateS3Uri": uri + TRAINING_RECIPE_KEY.format(model=model),
                "SmtjOverrideParamsS3Uri": uri + TRAINING_SPEC_KEY.format(model=model),
            },
            {
                "Name": f"{model}-mtrl-evaluation",
                "Type": "Evaluation",
                "EvaluationType": EVALUATION_TYPE,
                "SmtjRecipeTemplateS3Uri": uri + EVALUATION_RECIPE_KEY.format(model=model),
                "SmtjOverrideParamsS3Uri": uri + EVALUATION_SPEC_KEY.format(model=model),
            },
        ],
    }


class LocalHub:
    """DescribeHubContent and ListHubContents for the served models, backed by moto S3.

    `s3_client` is a factory for a boto3 S3 client that reaches moto; the specs are written on
    first use and again after every reset (moto forgets its objects then).
    """

    def __init__(self, s3_client: Callable[[], Any]):
        self._s3_client = s3_client
        self._seeded = False

    def reset(self) -> None:
        self._seeded = False

    def seed(self) -> None:
        """Write the specs and placeholder recipes into the hub bucket (idempotent)."""
        if self._seeded:
            return
        s3 = self._s3_client()
        try:
            s3.head_bucket(Bucket=HUB_BUCKET)
        except Exception:  # moto raises ClientError 404 for a missing bucket
            s3.create_bucket(Bucket=HUB_BUCKET)
        for model in MODELS:
            objects = {
                TRAINING_SPEC_KEY: json.dumps(TRAINING_SPEC, indent=1),
                EVALUATION_SPEC_KEY: json.dumps(EVALUATION_SPEC, indent=1),
                TRAINING_RECIPE_KEY: RECIPE_PLACEHOLDER,
                EVALUATION_RECIPE_KEY: RECIPE_PLACEHOLDER,
            }
            for key, body in objects.items():
                s3.put_object(Bucket=HUB_BUCKET, Key=key.format(model=model), Body=body.encode())
        self._seeded = True

    def describe_hub_content(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        hub, kind, model = params["HubName"], params["HubContentType"], params["HubContentName"]
        if hub != HUB_NAME and hub != hub_arn(region):
            raise ServiceError("ResourceNotFound", f"Hub {hub} does not exist.")
        if kind != HUB_CONTENT_TYPE:
            raise ServiceError("ResourceNotFound", f"Hub content {model!r} of type {kind} does not exist in hub {HUB_NAME}.")
        _require_model(model)
        if region not in MODELS[model][1]:
            raise ServiceError("ResourceNotFound", f"Hub content {model!r} is not available in {region}.")
        version = params.get("HubContentVersion") or HUB_CONTENT_VERSION
        if version != HUB_CONTENT_VERSION:
            raise ServiceError("ResourceNotFound", f"Hub content {model!r} has no version {version}.")
        self.seed()
        return {
            "HubContentName": model,
            "HubContentArn": hub_content_arn(region, model),
            "HubContentVersion": HUB_CONTENT_VERSION,
            "HubContentType": HUB_CONTENT_TYPE,
            "DocumentSchemaVersion": HUB_DOCUMENT_SCHEMA_VERSION,
            "HubName": HUB_NAME,
            "HubArn": hub_arn(region),
            "HubContentDisplayName": MODELS[model][0],
            "HubContentDocument": json.dumps(_document(model)),
            "HubContentSearchKeywords": [TRAINING_KEYWORD, EVALUATION_KEYWORD],
            "HubContentStatus": "Available",
            "CreationTime": HUB_CREATION_TIME,
        }

    def list_hub_contents(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        hub = params["HubName"]
        if hub != HUB_NAME and hub != hub_arn(region):
            raise ServiceError("ResourceNotFound", f"Hub {hub} does not exist.")
        if params["HubContentType"] != HUB_CONTENT_TYPE:
            return {"HubContentSummaries": []}
        needle = (params.get("NameContains") or "").lower()
        summaries = [
            {
                "HubContentName": model,
                "HubContentArn": hub_content_arn(region, model),
                "HubContentVersion": HUB_CONTENT_VERSION,
                "HubContentType": HUB_CONTENT_TYPE,
                "DocumentSchemaVersion": HUB_DOCUMENT_SCHEMA_VERSION,
                "HubContentDisplayName": display,
                "HubContentSearchKeywords": [TRAINING_KEYWORD, EVALUATION_KEYWORD],
                "HubContentStatus": "Available",
                "CreationTime": HUB_CREATION_TIME,
            }
            for model, (display, regions) in sorted(MODELS.items())
            if region in regions and needle in model.lower()
        ]
        return {"HubContentSummaries": summaries}
