"""Issue 21 item 1: every live MLflow read works with the real sagemaker-mlflow plugin.

The plugin builds its routing header and SigV4 signature from MLflow's *global* tracking URI at
request time. Here the plugin's own `arn` tracking store is put back in place of the offline
one, HTTP is stubbed below `requests` (nothing leaves the machine), and each public read path is
run with the global URI either at MLflow's default (a fresh kernel) or at another app's ARN (a lab
learner who read their own app first). Each request must reach the job's app, routed and signed
for it. On the code before this fix the first case raised IndexError and the second sent the
other app's header.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from mtrl_course import config, evaluation, instructor_run, monitoring, progress, service_spec

ACCOUNT = config.PLACEHOLDER_ACCOUNT
REGION = "us-west-2"
APP = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-JOBAPP000001"
OTHER_APP = f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:mlflow-app/app-OTHERAPP0001"
RUN_ID = "0123456789abcdef0123456789abcdef"
METRICS = {"rollout/reward/mean": [(1, -0.5), (2, 0.25)], "val/reward/pass_at_1": [(2, 0.4)]}
EVAL_METRICS = {"eval/reward/pass_at_1": 0.375, "eval/reward/mean": 0.5}


class StubbedMlflowApp:
    """Answers MLflow's REST calls for one run; records every request the plugin prepared."""

    def __init__(self) -> None:
        self.requests: list[requests.PreparedRequest] = []

    def send(self, request: requests.PreparedRequest) -> requests.Response:
        self.requests.append(request)
        if "/runs/get" in request.url:
            metrics = [{"key": k, "value": v, "timestamp": 1, "step": 0} for k, v in EVAL_METRICS.items()]
            metrics += [{"key": k, "value": h[-1][1], "timestamp": 1, "step": h[-1][0]} for k, h in METRICS.items()]
            body: dict[str, Any] = {
                "run": {
                    "info": {
                        "run_id": RUN_ID,
                        "run_uuid": RUN_ID,
                        "experiment_id": "1",
                        "status": "FINISHED",
                        "lifecycle_stage": "active",
                        "start_time": 1,
                    },
                    "data": {"metrics": metrics, "tags": [{"key": "source", "value": "stub"}]},
                }
            }
        elif "/metrics/get-history" in request.url:
            key = requests.utils.unquote(request.url.split("metric_key=")[1].split("&")[0]).replace("+", " ")
            body = {"metrics": [{"key": key, "value": v, "timestamp": s, "step": s} for s, v in METRICS.get(key, [])]}
        else:
            raise AssertionError(f"unexpected MLflow call {request.method} {request.url}")
        response = requests.Response()
        response.status_code = 200
        response.url = request.url
        response.request = request
        response.headers["Content-Type"] = "application/json"
        response._content = json.dumps(body).encode()
        return response


@pytest.fixture
def live():
    previous, config.MODE = config.MODE, config.Mode.LIVE
    yield
    config.MODE = previous


@pytest.fixture(params=["default", "another app"])
def plugin(request, monkeypatch, live) -> StubbedMlflowApp:
    """The real sagemaker-mlflow plugin behind the `arn` scheme, HTTP stubbed, the global URI set."""
    from mlflow.tracking._tracking_service import utils as tracking_utils
    from sagemaker_mlflow.mlflow_sagemaker_store import MlflowSageMakerStore

    def forget_cached_stores() -> None:
        tracking_utils._tracking_store_registry._get_store_with_resolved_uri.cache_clear()
        tracking_utils._get_tracking_scheme_with_resolved_uri.cache_clear()

    # The offline backend (if an earlier test on this worker built one) registers its own store for
    # `arn`; the plugin's is what a live kernel has.
    monkeypatch.setitem(tracking_utils._tracking_store_registry._registry, "arn", MlflowSageMakerStore)
    forget_cached_stores()
    if request.param == "default":
        monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    else:
        monkeypatch.setattr(tracking_utils, "_tracking_uri", OTHER_APP)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", OTHER_APP)
    app = StubbedMlflowApp()
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", lambda adapter, request, **kwargs: app.send(request))
    yield app
    forget_cached_stores()


def assert_routed_and_signed_for_the_jobs_app(app: StubbedMlflowApp) -> None:
    assert app.requests, "no MLflow request was sent"
    for request in app.requests:
        assert request.url.startswith(f"https://mlflow.sagemaker.{REGION}.app.aws/api/2.0/mlflow/")
        assert request.headers["x-sm-mlflow-app-arn"] == APP
        # SigV4 scope: .../<date>/<region>/<service>/aws4_request; an MLflow app signs as "sagemaker".
        assert f"/{REGION}/sagemaker/aws4_request" in request.headers["Authorization"]


def training_describe() -> dict[str, Any]:
    document = {
        "TrainingConfig": {"MlflowConfig": {"MlflowResourceArn": APP, "MlflowExperimentName": "mtrl-wordle-training"}},
        "ServiceOutput": {"MlflowDetails": {"RunId": RUN_ID, "RunName": "job", "ExperimentName": "x"}},
    }
    return {
        "JobName": "mtrl-wordle-train-abc-1",
        "JobCategory": service_spec.TRAINING,
        "JobStatus": "InProgress",
        "JobConfigDocument": json.dumps(document),
    }


def evaluation_describe(name: str = "mtrl-wordle-eval-abc-base-low-t10-20261203000000") -> dict[str, Any]:
    document = {
        "OutputDataConfig": {"MlflowConfig": {"MlflowResourceArn": APP, "MlflowExperimentName": "e"}},
        "EvaluationConfig": {"HyperParameters": {"temperature": "1.0"}},
        "ServiceOutput": {
            "MlflowDetails": {"RunId": RUN_ID},
            "BillableTokenUsage": {"PrefillTokenCount": 10, "SampleTokenCount": 5},
        },
    }
    return {
        "JobName": name,
        "JobCategory": service_spec.EVALUATION,
        "JobStatus": "Completed",
        "JobConfigDocument": json.dumps(document),
        "Tags": [],
    }


def test_notebook_06_metrics_and_run_tags(plugin):
    frame = monitoring.metrics_frame(training_describe(), keys=list(METRICS))
    assert frame.loc[2, "rollout/reward/mean"] == 0.25 and frame.loc[2, "val/reward/pass_at_1"] == 0.4
    assert monitoring.run_tags(training_describe())["source"] == "stub"
    assert_routed_and_signed_for_the_jobs_app(plugin)


def test_the_training_progress_reader(plugin):
    class Job:
        training_config = json.loads(training_describe()["JobConfigDocument"])["TrainingConfig"]
        mlflow_details = {"RunId": RUN_ID}

    rows = progress.StepMetrics(Job(), names=tuple(METRICS))()
    assert rows[-1] == {"step": 2, "rollout/reward/mean": 0.25, "val/reward/pass_at_1": 0.4}
    assert_routed_and_signed_for_the_jobs_app(plugin)


def test_an_evaluations_results(plugin):
    # evaluate() reads a finished job's results through this function once the job has Completed.
    results = evaluation._results(evaluation_describe(), APP, (1,))
    assert results["pass_at_1"] == 0.375 and results["mean_reward"] == 0.5 and results["prefill_tokens"] == 10
    assert_routed_and_signed_for_the_jobs_app(plugin)


def test_the_labs_evaluation_results(plugin):
    name = evaluation_describe()["JobName"]

    class SageMaker:
        def describe_job(self, JobName: str, JobCategory: str) -> dict[str, Any]:
            assert JobCategory == service_spec.EVALUATION
            return evaluation_describe(JobName)

    class Session:
        def client(self, service: str) -> SageMaker:
            assert service == "sagemaker"
            return SageMaker()

    attachment = instructor_run.Attachment(
        run_id="abc",
        job_name="mtrl-wordle-train-abc-1",
        job_status="Completed",
        region=REGION,
        job_role_arn=f"arn:aws:iam::{ACCOUNT}:role/r",
        runtime_arn=f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/x",
        mlflow_app_arn=APP,
        bucket="b",
        train_s3_uri="s3://b/t.jsonl",
        validation_s3_uri="s3://b/v.jsonl",
        output_s3_uri="s3://b/o/",
        evaluation_jobs=(name,),
    )
    frame = instructor_run.evaluation_results(attachment, Session())
    assert list(frame["pass_at_1"]) == [0.375] and list(frame["temperature"]) == [1.0]
    assert_routed_and_signed_for_the_jobs_app(plugin)
