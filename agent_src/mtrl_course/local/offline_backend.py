"""The offline backend: every stand-in this process runs, and the routing table the seam uses.

`mtrl_course.aws` (the seam) creates one `OfflineBackend` per process and routes each botocore
call moto lacks to `backend.handlers[(service, operation)]`. Local modules reach the running
backend through `active()`, never by importing the seam.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtrl_course import config
from mtrl_course.local.apicall import JSON, ApiCall

logger = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# The backend

CALL_TRACE_LENGTH = 10_000
# Fake credentials for the stand-ins' own clients (stated once, in config).
OFFLINE_ACCESS_KEY = config.OFFLINE_ACCESS_KEY
OFFLINE_SECRET_KEY = config.OFFLINE_SECRET_KEY
INTERNAL_CLIENT_MARK = "_mtrl_offline_internal"


class OfflineBackend:
    """Everything the offline mode runs in this process; the seam's `aws.offline_backend()` builds it.

    Attributes: `service` (LocalMTRLService), `mlflow` (LocalMlflowApps), `hub` (LocalHub),
    `runtimes` (RuntimeRegistry), `pipelines` (LocalPipelines), `job_runtime` (JobRuntimeRoute).
    `calls` is the trace of every AWS API call made through botocore, as "service.Operation".
    """

    def __init__(self, state_dir: Path):
        """Start moto and every stand-in. The seam prepares the process (environment, network
        guard, the API override) before it builds one; build it only through the seam."""
        from moto import mock_aws

        from mtrl_course.local.agentcore import RuntimeRegistry
        from mtrl_course.local.hub import LocalHub
        from mtrl_course.local.iam_simulator import simulate_principal_policy  # noqa: F401 (used in _handlers)
        from mtrl_course.local.job_runtime_route import JobRuntimeRoute
        from mtrl_course.local.mlflow_apps import LocalMlflowApps
        from mtrl_course.local.pipelines import LocalLineage, LocalPipelines
        from mtrl_course.local.service import LocalMTRLService

        self.state_dir = state_dir
        self._mock = mock_aws()
        self._mock.start()
        self._clients: dict[tuple[str, str], Any] = {}
        self._clients_lock = threading.Lock()
        self.calls: deque[str] = deque(maxlen=CALL_TRACE_LENGTH)
        self.account = config.MOTO_ACCOUNT
        self.hub = LocalHub(lambda: self.client("s3", config.OFFLINE_REGION))
        self.runtimes = RuntimeRegistry()
        self.mlflow = LocalMlflowApps(state_dir, self.account, self.client)
        self.service = LocalMTRLService(
            self.client,
            self.mlflow.info,
            lambda arn: self.runtimes.get(arn) is not None,
            self.account,
            state_dir=lambda: self.state_dir,
        )
        self.pipelines = LocalPipelines(self.service, self.client)
        self.job_runtime = JobRuntimeRoute(self.account)
        self.lineage = LocalLineage(self.account)
        self.handlers = self._handlers()

    def client(self, service: str, region: str = config.OFFLINE_REGION) -> Any:
        """A cached boto3 client reaching moto (or the local stand-ins), for the stand-ins' own use."""
        key = (service, region)
        with self._clients_lock:
            if key not in self._clients:
                import boto3

                client = boto3.Session(
                    aws_access_key_id=OFFLINE_ACCESS_KEY, aws_secret_access_key=OFFLINE_SECRET_KEY, region_name=region
                ).client(service)
                setattr(client, INTERNAL_CLIENT_MARK, True)  # the stand-ins' own calls stay out of the trace
                self._clients[key] = client
            return self._clients[key]

    def _handlers(self) -> dict[tuple[str, str], Callable[[ApiCall], JSON]]:
        from mtrl_course.local.iam_simulator import simulate_principal_policy

        service, hub, apps, pipes = self.service, self.hub, self.mlflow, self.pipelines
        return {
            ("sagemaker", "CreateJob"): lambda c: service.create_job(c.params, c.region),
            ("sagemaker", "DescribeJob"): lambda c: service.describe_job(c.params),
            ("sagemaker", "ListJobs"): lambda c: service.list_jobs(c.params),
            ("sagemaker", "ListJobSchemaVersions"): lambda c: service.list_job_schema_versions(c.params),
            ("sagemaker", "DescribeJobSchemaVersion"): lambda c: service.describe_job_schema_version(c.params),
            ("sagemaker", "StopJob"): lambda c: service.stop_job(c.params),
            ("sagemaker", "DeleteJob"): lambda c: service.delete_job(c.params),
            ("sagemaker", "CreateMlflowApp"): apps.create,
            ("sagemaker", "DescribeMlflowApp"): apps.describe,
            ("sagemaker", "ListMlflowApps"): apps.list,
            ("sagemaker", "UpdateMlflowApp"): apps.update,
            ("sagemaker", "DeleteMlflowApp"): apps.delete,
            ("sagemaker", "CreatePresignedMlflowAppUrl"): apps.presigned_url,
            ("sagemaker", "DescribeHubContent"): lambda c: hub.describe_hub_content(c.params, c.region),
            ("sagemaker", "ListHubContents"): lambda c: hub.list_hub_contents(c.params, c.region),
            ("sagemaker", "StartPipelineExecution"): pipes.start,
            ("sagemaker", "DescribePipelineExecution"): pipes.describe,
            ("sagemaker", "ListPipelineExecutions"): pipes.list_executions,
            ("sagemaker", "ListPipelineExecutionSteps"): pipes.list_steps,
            ("sagemaker", "StopPipelineExecution"): pipes.stop,
            ("iam", "SimulatePrincipalPolicy"): lambda c: simulate_principal_policy(c, self.client("iam", c.region)),
            ("sagemaker", "CreateArtifact"): self.lineage.create,
            ("sagemaker", "DescribeArtifact"): self.lineage.describe,
            ("sagemaker", "ListArtifacts"): self.lineage.list,
            ("bedrock-agentcore", "InvokeAgentRuntime"): self.runtimes.invoke,
            ("bedrock-agentcore-control", "GetAgentRuntime"): self.runtimes.get_runtime,
            ("bedrock-agentcore-control", "ListAgentRuntimes"): self.runtimes.list_runtimes,
            ("sagemakerjobruntime", "Sample"): self.job_runtime.sample,
            ("sagemakerjobruntime", "SampleWithResponseStream"): self.job_runtime.sample,
            ("sagemakerjobruntime", "CompleteRollout"): self.job_runtime.complete_rollout,
            ("sagemakerjobruntime", "UpdateReward"): self.job_runtime.update_reward,
        }

    def record_call(self, service: str, operation: str) -> None:
        self.calls.append(f"{service}.{operation}")

    def attach_job_runtime(self, emulator: Any) -> None:
        """Route boto3 `sagemakerjobruntime` calls to this JobRuntimeEmulator (None detaches)."""
        self.job_runtime.emulator = emulator

    def register_runtime(self, runtime: Any) -> None:
        self.runtimes.register(runtime)

    def unregister_runtime(self, arn: str) -> None:
        self.runtimes.unregister(arn)

    def reset(self, state_dir: Path | None = None) -> None:
        """Stop jobs and runtimes, then give moto and every stand-in a clean slate."""
        self.service.shutdown()
        self.pipelines.reset()
        for runtime in self.runtimes.clear():
            try:
                runtime.stop()
            except Exception as err:  # a broken runtime must not block the reset
                logger.warning("could not stop runtime %s: %s", getattr(runtime, "arn", runtime), err)
        # A str works as well as a Path (callers write `reset_offline(tempfile.mkdtemp())`).
        self.state_dir = Path(state_dir) if state_dir else self.state_dir
        self.mlflow.reset(self.state_dir)
        self.service.reset()
        self.job_runtime.emulator = None
        self._mock.stop()
        self._mock.start()
        self.hub.reset()
        self.lineage.reset()
        self.calls.clear()


# --- the running backend, for local modules (they never import the seam) -------------------------

_ACTIVE: OfflineBackend | None = None


def set_active(backend: OfflineBackend | None) -> None:
    """Called by the seam when it has built (or dropped) the process's backend."""
    global _ACTIVE
    _ACTIVE = backend


def active() -> OfflineBackend:
    """The process's running offline backend; RuntimeError if offline mode was never started."""
    if _ACTIVE is None:
        raise RuntimeError(
            "the offline backend is not running: call mtrl_course.aws.session() (or any step function) first"
        )
    return _ACTIVE
