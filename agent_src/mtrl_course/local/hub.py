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

import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from mtrl_course.errors import ServiceError
from mtrl_course.service_spec import (
    EVALUATION_SPEC,
    HUB_CONTENT_TYPE,
    HUB_CONTENT_VERSION,
    HUB_NAME,
    MODELS,
    TRAINING_SPEC,
    hub_arn,
    hub_content_arn,
    require_model,
)

HUB_DOCUMENT_SCHEMA_VERSION = "2.0.0"
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


TRAINING_SPEC_KEY = "mtrl/{model}/mtrl_lora_override_params.json"
TRAINING_RECIPE_KEY = "mtrl/{model}/mtrl_lora_recipe.yaml"
EVALUATION_SPEC_KEY = "mtrl/{model}/mtrl_evaluation_override_params.json"
EVALUATION_RECIPE_KEY = "mtrl/{model}/mtrl_evaluation_recipe.yaml"
# The recipe templates are never read by the MTRL trainer or evaluator (checked by running them);
# the objects exist so the documents' URIs resolve.
RECIPE_PLACEHOLDER = "# Offline stand-in: the MTRL service runs the recipe; nothing here is read.\n"


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
            raise ServiceError(
                "ResourceNotFound", f"Hub content {model!r} of type {kind} does not exist in hub {HUB_NAME}."
            )
        require_model(model)
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
