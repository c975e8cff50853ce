"""One job of the local MTRL service: its configuration, status, transitions and DescribeJob record.

The service (`local.service`) creates `LocalJob`s and a runner drives them; everything DescribeJob
reports about a job lives here. See `local.service` for the control plane.

The three modules of the service are one concern with a public interface between them, imported in
one direction only: `job` (a job and `JobHost`, what a job needs from whoever runs it), `store`
(job records on disk; it reads `job`) and `service` (the control plane; it implements `JobHost`
and uses both). A job never imports the service: it is handed its host.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mtrl_course.service_spec import TRAINING, TrainingHyperparameters

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1.0.0"
MAX_TRANSITIONS = 100  # DescribeJob's documented maximum
# Terminal statuses as the SDK's waiters read them (agent_rft_job.TERMINAL_STATUSES).
ACTIVE = ("InProgress", "Stopping")
STAND_IN_IMAGE = "mtrl-offline-stand-in-adapter:latest"
TERMINAL = ("Completed", "Failed", "Stopped")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# ----------------------------------------------------------------------------------------------
# What the service needs from the rest of the offline backend


@dataclass(frozen=True)
class MlflowAppInfo:
    """Where a (local) MLflow app keeps its data."""

    arn: str
    tracking_uri: str
    artifact_root: str


@dataclass
class JobConfig:
    """The parts of a parsed JobConfigDocument a runner needs (defaults applied)."""

    category: str
    region: str
    document: dict[str, Any]
    base_model: str
    base_model_arn: str
    hyperparameters: dict[str, Any]
    runtime_arn: str
    runtime_qualifier: str
    mlflow: MlflowAppInfo
    experiment_name: str
    run_name: str
    prompts: dict[str, list[str]]
    s3_output_path: str
    output_model_package_group_arn: str | None
    checkpoint_model_package_group_arn: str | None
    input_model_package_arn: str | None
    max_runtime_seconds: int | None
    # A training job's hyperparameters, typed (the same values as `hyperparameters`); None for evaluation.
    training: TrainingHyperparameters | None = None


class JobHost(Protocol):
    """What a job needs from the service that runs it (`local.service.LocalMTRLService` is one)."""

    account: str
    client: Callable[[str, str], Any]  # (service name, Region) -> a boto3 client

    def put_log(self, job: LocalJob, message: str) -> None:
        """One line in the job's log stream."""

    def save_job(self, job: LocalJob) -> None:
        """Write the job's DescribeJob record where later processes read it (if anywhere)."""

    def record_package(self, arn: str, region: str, request: Mapping[str, Any]) -> None:
        """Remember a model package the job registered, so later processes restore it."""


# ----------------------------------------------------------------------------------------------
# One job


class LocalJob:
    """A job as the service tracks it; the runner reports progress through these methods.

    Status contract: the service walks Starting -> Downloading -> Pending and then calls the
    runner, which sets Training (or Evaluating) and Uploading with `set_secondary`. When the
    runner returns, the service completes the job, unless it called `fail` (the job is Failed
    at once) or a StopJob arrived (Stopped). A runner should poll `should_stop()` between units
    of work. An exception from the runner fails the job with the exception as the reason.
    """

    def __init__(self, host: JobHost, name: str, arn: str, role_arn: str, config: JobConfig, tags: list[dict]):
        self._host = host
        self.name = name
        self.arn = arn
        self.role_arn = role_arn
        self.config = config
        self.category = config.category
        self.tags = tags
        self.creation_time = _now()
        self.last_modified_time = self.creation_time
        self.end_time: dt.datetime | None = None
        self.status = "InProgress"
        self.secondary_status = ""
        self.failure_reason: str | None = None
        self.transitions: list[dict[str, Any]] = []
        self.service_output: dict[str, Any] = {}
        self._tokens = {"PrefillTokenCount": 0, "SampleTokenCount": 0, "TrainTokenCount": 0}
        self._stop_requested = threading.Event()
        self._terminal = threading.Event()
        self._lock = threading.RLock()
        self.set_secondary("Starting", "Starting the job")

    # -- accessors for runners ----------------------------------------------------------------
    @property
    def hyperparameters(self) -> dict[str, Any]:
        return self.config.hyperparameters

    @property
    def training_hyperparameters(self) -> TrainingHyperparameters:
        """A training job's hyperparameters, typed (built once, when CreateJob was validated)."""
        if self.config.training is None:
            raise TypeError(f"{self.name} is a {self.category} job: it has no training hyperparameters")
        return self.config.training

    @property
    def runtime_arn(self) -> str:
        return self.config.runtime_arn

    @property
    def mlflow_app_arn(self) -> str:
        return self.config.mlflow.arn

    @property
    def mlflow_tracking_uri(self) -> str:
        return self.config.mlflow.tracking_uri

    @property
    def experiment_name(self) -> str:
        return self.config.experiment_name

    @property
    def run_name(self) -> str:
        return self.config.run_name

    def prompts(self, channel: str) -> list[str]:
        """The prompt strings of one input channel, exactly as the service passes them on."""
        return list(self.config.prompts.get(channel, []))

    # -- progress reporting -------------------------------------------------------------------
    def set_secondary(self, status: str, message: str = "") -> None:
        """Enter a secondary status; the previous transition gets its end time."""
        with self._lock:
            if self._terminal.is_set():
                return
            now = _now()
            if self.transitions and "EndTime" not in self.transitions[-1]:
                self.transitions[-1]["EndTime"] = now
            self.transitions.append({"Status": status, "StartTime": now, "StatusMessage": message})
            del self.transitions[:-MAX_TRANSITIONS]
            self.secondary_status = status
            self.last_modified_time = now
            self._host.save_job(self)
        self.log(f"{status}: {message}" if message else status)

    def update_progress(self, **info: Any) -> None:
        """Merge ProgressInfo keys: MaxEpoch, StepsPerEpoch, CurrentEpoch, CurrentStep, MaxSteps, BatchSize."""
        self._update_output("ProgressInfo", info)

    def set_rollout_info(self, total: int, completed: int) -> None:
        self._update_output("RolloutInfo", {"Total": int(total), "Completed": int(completed)})

    def add_billable_tokens(self, prefill: int = 0, sample: int = 0, train: int = 0) -> None:
        with self._lock:
            self._tokens["PrefillTokenCount"] += int(prefill)
            self._tokens["SampleTokenCount"] += int(sample)
            self._tokens["TrainTokenCount"] += int(train)
            usage = dict(self._tokens)
            if self.category == TRAINING:
                # The SDK docstring says TrainTokenCount, the API type says TrainingTokenCount
                # (aws-docs.md §1.6 CONFLICT): report both so either reader works.
                usage["TrainingTokenCount"] = usage["TrainTokenCount"]
            else:
                # Evaluation does no training; a third-party test shows only these two keys.
                del usage["TrainTokenCount"]
            self.service_output["BillableTokenUsage"] = usage
            self.last_modified_time = _now()
            self._host.save_job(self)

    def set_output_model_package(self, arn: str) -> None:
        self._update_output("OutputModelPackageArn", arn, merge=False)

    def register_output_model_package(
        self, description: str = "", checkpoint: bool = False, adapter_s3_uri: str | None = None
    ) -> str:
        """Create a model package in the output (or checkpoint) group in moto; records its ARN.

        The package names its base model in InferenceSpecification.Containers[0].BaseModel,
        which is how MultiTurnRLEvaluator recognises "a model package customized by SageMaker's
        fine-tuning flows". `adapter_s3_uri` is where the adapter files are, if anywhere.
        """
        from mtrl_course.local import hub

        group_arn = (
            self.config.checkpoint_model_package_group_arn if checkpoint else self.config.output_model_package_group_arn
        )
        if not group_arn:
            raise RuntimeError(f"job {self.name} has no {'checkpoint' if checkpoint else 'output'} model package group")
        container: dict[str, Any] = {
            # Never pulled offline; names the stand-in honestly instead of a real serving image.
            "Image": f"{self._host.account}.dkr.ecr.{self.config.region}.amazonaws.com/{STAND_IN_IMAGE}",
            "BaseModel": {"HubContentName": self.config.base_model, "HubContentVersion": hub.HUB_CONTENT_VERSION},
            "IsCheckpoint": checkpoint,
        }
        if adapter_s3_uri:
            container["ModelDataSource"] = {
                "S3DataSource": {"S3Uri": adapter_s3_uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
            }
        sagemaker = self._host.client("sagemaker", self.config.region)
        group = group_arn.rsplit("/", 1)[-1]
        request = {
            "ModelPackageGroupName": group,
            "ModelPackageDescription": description
            or f"LoRA adapter from {self.category} job {self.name} (offline stand-in)",
            "InferenceSpecification": {
                "Containers": [container],
                "SupportedContentTypes": ["application/json"],
                "SupportedResponseMIMETypes": ["application/json"],
            },
        }
        arn = sagemaker.create_model_package(**request)["ModelPackageArn"]
        self._host.record_package(arn, self.config.region, request)
        if not checkpoint:
            self.set_output_model_package(arn)
        return arn

    def set_mlflow_details(
        self, experiment_id: str, run_id: str, experiment_name: str | None = None, run_name: str | None = None
    ) -> None:
        details = {
            "ExperimentName": experiment_name or self.experiment_name,
            "RunName": run_name or self.run_name,
            "ExperimentId": str(experiment_id),
            "RunId": str(run_id),
        }
        self._update_output("MlflowDetails", details, merge=False)

    def start_mlflow_run(self) -> tuple[str, str]:
        """Create (or reuse) the job's experiment, start its run; returns (experiment_id, run_id).

        Guess: with no MlflowExperimentName / MlflowRunName the real defaults are not
        documented; the local service uses the job name for both.
        """
        from mlflow.tracking import (
            MlflowClient,  # 3 s import: only when a runner logs metrics
        )

        client = MlflowClient(tracking_uri=self.mlflow_tracking_uri)
        experiment = client.get_experiment_by_name(self.experiment_name)
        if experiment is None:
            location = f"{self.config.mlflow.artifact_root.rstrip('/')}/{self.experiment_name}"
            experiment_id = client.create_experiment(self.experiment_name, artifact_location=location)
        else:
            experiment_id = experiment.experiment_id
        run = client.create_run(experiment_id, run_name=self.run_name, tags={"sagemaker.job_arn": self.arn})
        self.set_mlflow_details(experiment_id, run.info.run_id)
        return str(experiment_id), run.info.run_id

    def log(self, message: str) -> None:
        """One line in the job's CloudWatch log stream (moto), as `trainer.stream_logs()` reads."""
        self._host.put_log(self, message)

    def fail(self, reason: str) -> None:
        """Fail the job now with this FailureReason; later status calls are ignored."""
        self.finish("Failed", reason)

    def begin_stopping(self) -> bool:
        """StopJob: InProgress becomes Stopping (True); a job in any other status stays (False)."""
        with self._lock:
            if self.status != "InProgress":
                return False
            self.status = "Stopping"
            self._stop_requested.set()
            return True

    def request_stop(self) -> None:
        """Ask the runner to stop at its next `should_stop()` check (StopJob, a reset)."""
        self._stop_requested.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested.is_set()

    def finish(self, status: str, reason: str | None) -> None:
        """Enter a terminal status (Completed, Failed or Stopped) once; later calls are ignored."""
        with self._lock:
            if self._terminal.is_set():
                return
            self.set_secondary(status, reason or "")
            now = _now()
            self.transitions[-1]["EndTime"] = now
            self.status = status
            self.failure_reason = reason
            self.end_time = now
            self.last_modified_time = now
            self._host.save_job(self)
            self._terminal.set()

    def should_stop(self) -> bool:
        return self._stop_requested.is_set() or self._terminal.is_set()

    @property
    def done(self) -> bool:
        return self._terminal.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job is terminal; True if it is."""
        return self._terminal.wait(timeout)

    def _update_output(self, key: str, value: Any, merge: bool = True) -> None:
        with self._lock:
            if merge:
                self.service_output.setdefault(key, {}).update(value)
            else:
                self.service_output[key] = value
            self.last_modified_time = _now()
            self._host.save_job(self)

    # -- API shapes ---------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        with self._lock:
            document = dict(self.config.document)
            if self.service_output:
                document["ServiceOutput"] = copy.deepcopy(self.service_output)
            response = {
                "JobName": self.name,
                "JobArn": self.arn,
                "RoleArn": self.role_arn,
                "JobCategory": self.category,
                "JobConfigSchemaVersion": SCHEMA_VERSION,
                "JobConfigDocument": json.dumps(document),
                "CreationTime": self.creation_time,
                "LastModifiedTime": self.last_modified_time,
                "JobStatus": self.status,
                "SecondaryStatus": self.secondary_status,
                "SecondaryStatusTransitions": copy.deepcopy(self.transitions),
            }
            if self.end_time:
                response["EndTime"] = self.end_time
            if self.failure_reason:
                response["FailureReason"] = self.failure_reason
            if self.tags:
                response["Tags"] = copy.deepcopy(self.tags)
            return response

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return job_summary(self)


def job_summary(job: Any) -> dict[str, Any]:
    """A ListJobs `JobSummaries` entry for a live or a stored job."""
    summary = {
        "JobArn": job.arn,
        "JobName": job.name,
        "JobCategory": job.category,
        "JobStatus": job.status,
        "JobSecondaryStatus": job.secondary_status,
        "CreationTime": job.creation_time,
        "LastModifiedTime": job.last_modified_time,
    }
    if job.end_time:
        summary["EndTime"] = job.end_time
    return summary


Runner = Callable[[LocalJob], None]
