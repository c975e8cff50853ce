"""One boto3 session factory, two backends: real AWS (live) or moto plus local stand-ins (offline).

Course code asks `session()` for a boto3 Session and never checks the mode itself. Live, that is
an ordinary Session. Offline, the first call activates the offline backend for the whole
process: fake credentials, Region us-east-1, `moto.mock_aws()` kept running, a guard that refuses
any network connection except loopback, and ONE override at
`botocore.client.BaseClient._make_api_call`. Because it patches the client class, the override
also reaches the clients the SageMaker SDK creates internally, so `MultiTurnRLTrainer` and
`MultiTurnRLEvaluator` run unchanged.

The override sends each (service, operation) pair moto lacks to a local implementation and
everything else to moto:

| operations | local implementation (all in `mtrl_course.local`) |
|---|---|
| sagemaker CreateJob/DescribeJob/ListJobs/StopJob/DeleteJob | `service.LocalMTRLService` (jobs in `job`, records on disk in `store`) |
| sagemaker *MlflowApp*, CreatePresignedMlflowAppUrl | `mlflow_apps.LocalMlflowApps` (sqlite MLflow per app) |
| sagemaker DescribeHubContent/ListHubContents | `hub.LocalHub` (the tables of `mtrl_course.service_spec`) |
| sagemaker Start/Describe/List/StopPipelineExecution(s), ListPipelineExecutionSteps | `pipelines.LocalPipelines`: runs Job steps through the local service |
| sagemaker CreateArtifact/DescribeArtifact/ListArtifacts (the evaluator's lineage) | `pipelines.LocalLineage` |
| iam SimulatePrincipalPolicy | `iam_simulator.simulate_principal_policy` over the policies moto holds |
| bedrock-agentcore InvokeAgentRuntime; -control Get/ListAgentRuntimes | `agentcore.RuntimeRegistry`: runtimes registered by `agent_server.LocalAgentRuntime` |
| sagemakerjobruntime Sample/SampleWithResponseStream/CompleteRollout/UpdateReward | `job_runtime_route.JobRuntimeRoute`: the attached `JobRuntimeEmulator`, in-process |

This module is only the seam: the session factory, the network guard, the override and the
routing table's lookup. `local.backend.OfflineBackend` holds the stand-ins and the table itself.

Routed calls still run botocore's parameter events and client-side validation, so a learner
sees the same ParamValidationError as live; a local implementation's `ServiceError` becomes the
botocore ClientError subclass for the service's error code.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtrl_course import config, netguard, telemetry
from mtrl_course.errors import ServiceError
from mtrl_course.local import apicall
from mtrl_course.local.apicall import ApiCall
from mtrl_course.local.offline_backend import INTERNAL_CLIENT_MARK

if TYPE_CHECKING:
    from mtrl_course.local.offline_backend import OfflineBackend

if TYPE_CHECKING:
    import boto3

logger = logging.getLogger(__name__)

# Fake credentials for the offline backend (stated once, in config).
OFFLINE_ACCESS_KEY = config.OFFLINE_ACCESS_KEY
OFFLINE_SECRET_KEY = config.OFFLINE_SECRET_KEY
OFFLINE_ACCOUNT = config.MOTO_ACCOUNT
REGION_ENV_VARS = ("AWS_DEFAULT_REGION", "AWS_REGION")
# Offline, nothing may come from a developer's AWS setup: a profile could run an SSO login or a
# credential_process, and an endpoint variable could point a client at a real service.
UNSET_OFFLINE_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ENDPOINT_URL",
)
OFFLINE_ENV = {
    "AWS_ACCESS_KEY_ID": OFFLINE_ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": OFFLINE_SECRET_KEY,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
# Offline, an MLflow URL is a loopback one; if its UI is not running, MLflow's default of 7
# retries with exponential backoff kept the SDK's wait() busy for about four minutes (measured)
# before it gave up on a link it only prints.
MLFLOW_RETRIES_ENV_VAR = "MLFLOW_HTTP_REQUEST_MAX_RETRIES"
# Telemetry switches (the SageMaker SDK's is a config file this variable points at): telemetry.py.
SDK_CONFIG_ENV_VAR = telemetry.SDK_CONFIG_ENV_VAR
OFFLINE_STATE_SUBDIR = "offline"

JSON = dict[str, Any]


# A connection to anything but loopback while the offline backend is active (netguard.py).
OfflineNetworkError = netguard.OfflineNetworkError


# ----------------------------------------------------------------------------------------------
# The session factory


def session(region: str | None = None) -> boto3.Session:
    """A boto3 Session for the current mode (`config.MODE`).

    Live: the learner's own credentials and Region (`region`, else the environment or profile);
    raises RuntimeError naming what is missing. Offline: activates the offline backend (once
    per process) and returns a Session with fake credentials in `region` (default us-east-1).
    Either way the Region ends up in AWS_DEFAULT_REGION/AWS_REGION, which
    `sagemaker.train.multi_turn_rl_trainer` needs before it is even imported.
    """
    import boto3

    if config.is_live():
        live = boto3.Session(region_name=region) if region else boto3.Session()
        if not live.region_name:
            ignored = (
                f" (AWS_REGION={os.environ['AWS_REGION']!r} is set, but boto3 ignores it)"
                if os.environ.get("AWS_REGION")
                else ""
            )
            raise RuntimeError(f"No AWS Region{ignored}: {config.REGION_ADVICE}, or pass session(region=...).")
        if live.get_credentials() is None:
            raise RuntimeError(
                "No AWS credentials: configure a profile (aws configure / aws sso login), set "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run in a SageMaker Studio space. "
                "To run without AWS, unset MTRL_MODE (offline is the default)."
            )
        for name in REGION_ENV_VARS:
            os.environ.setdefault(name, live.region_name)
        telemetry.switch_off()
        telemetry.sdk_opt_out(config.STATE_DIR, keep_user_config=True)
        return reuse_clients(live)
    _refresh_offline_files(offline_backend())
    return reuse_clients(
        boto3.Session(
            aws_access_key_id=OFFLINE_ACCESS_KEY,
            aws_secret_access_key=OFFLINE_SECRET_KEY,
            region_name=region or config.OFFLINE_REGION,
        )
    )


def session_or_new(given: boto3.Session | None) -> boto3.Session:
    """`given` when a caller passed one, else a new `session()`: the step functions' optional
    `session=` argument, resolved in one place."""
    return given if given is not None else session()


def reuse_clients(session: boto3.Session) -> boto3.Session:
    """`session`, whose `client(...)` returns the client it made before for the same arguments.

    Building a botocore client is costly (about 15 ms: a new client class with one method per
    operation, the endpoint rules, a copy of the event hooks), and the toolkit and the SageMaker
    SDK ask one session for the same client again and again: in the test modules of `make
    test`, 1,108 of 2,124 clients were repeats from one session. Clients are thread-safe, so one
    is shared; the lock makes creating them safe too (a boto3 Session is not). A call with a
    `config` (a botocore Config) or unhashable arguments always gets a new client. Clients of
    different sessions are never shared: a test or a new `session()` starts from fresh clients.
    """
    create = session.client
    made: dict[Any, Any] = {}
    lock = threading.Lock()

    def client(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("config") is not None:
            return create(*args, **kwargs)
        key = (args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:
            return create(*args, **kwargs)
        with lock:
            if key not in made:
                made[key] = create(*args, **kwargs)
            return made[key]

    session.client = client  # type: ignore[method-assign]
    return session


_BACKEND: OfflineBackend | None = None
_BACKEND_LOCK = threading.RLock()
_ORIGINAL_MAKE_API_CALL: Callable[..., Any] | None = None


def offline_backend() -> OfflineBackend:
    """The process's offline backend, activated on first use (thread-safe, idempotent)."""
    global _BACKEND
    if config.is_live():
        raise RuntimeError("the offline backend is not available with MTRL_MODE=live")
    with _BACKEND_LOCK:
        if _BACKEND is None:
            from mtrl_course.local import offline_backend

            state_dir = config.STATE_DIR / OFFLINE_STATE_SUBDIR
            _prepare_offline_environment(state_dir)
            install_network_guard()
            _share_botocore_loaders()
            _BACKEND = offline_backend.OfflineBackend(state_dir)
            _install_api_override()
            offline_backend.set_active(_BACKEND)
        return _BACKEND


def reset_offline(state_dir: Path | None = None) -> OfflineBackend:
    """Forget everything the offline backend holds (for tests): moto data, jobs, runners, MLflow
    apps, runtimes (stopped), the attached Job Runtime emulator and the call trace.

    `state_dir` moves the MLflow stores and other files (tests pass a temporary directory).
    Process-wide settings stay: environment, network guard, the API override.
    """
    backend = offline_backend()
    backend.reset(state_dir)
    _refresh_offline_files(backend)
    return backend


def _refresh_offline_files(backend: OfflineBackend) -> None:
    """Write again the two files the offline process points others at, if a folder was removed.

    The SageMaker SDK refuses to start when its config override is missing, and Python children
    find the network guard's `sitecustomize` through PYTHONPATH; both live in the state folder,
    which a reset (or a test's clean-up) can remove. Cheap when nothing changed.
    """
    telemetry.sdk_opt_out(Path(backend.state_dir), keep_user_config=False)
    netguard.guard_children(Path(backend.state_dir))


# ----------------------------------------------------------------------------------------------
# Process-wide offline plumbing: environment, network guard, the API-call override


def _prepare_offline_environment(state_dir: Path) -> None:
    for name in UNSET_OFFLINE_ENV:
        os.environ.pop(name, None)
    os.environ.update(OFFLINE_ENV)
    for name in REGION_ENV_VARS:
        os.environ[name] = config.OFFLINE_REGION
    os.environ.setdefault(MLFLOW_RETRIES_ENV_VAR, "0")
    telemetry.switch_off()
    telemetry.sdk_opt_out(state_dir, keep_user_config=False)
    netguard.guard_children(state_dir)


def install_network_guard() -> None:
    """Refuse connections, datagrams and name lookups that would leave the machine (idempotent).

    moto intercepts AWS calls inside botocore, but anything else (telemetry GETs, a stray
    https:// URL, an IMDS probe) would reach the network; offline must not, and must say why.
    The offline backend installs it (and `guard_children` for Python children); a test suite
    can install it on its own as well. What it covers and what it cannot: netguard.py.
    """
    netguard.install()


_LOADERS_SHARED = False


def _share_botocore_loaders() -> None:
    """One botocore data loader per data path for the whole process.

    Every new boto3 Session parses the service models again (0.2 to 0.5 s for SageMaker's), and
    the SageMaker SDK makes a fresh Session for most calls; a shared loader parses each once.
    Clients of one session already share their loader this way, so nothing new is shared.
    """
    global _LOADERS_SHARED
    import botocore.session

    if _LOADERS_SHARED:
        return
    create = botocore.session.create_loader
    loaders: dict[Any, Any] = {}
    lock = threading.Lock()

    def shared_loader(search_path_string: Any = None) -> Any:
        with lock:
            if search_path_string not in loaders:
                loaders[search_path_string] = create(search_path_string)
            return loaders[search_path_string]

    botocore.session.create_loader = shared_loader
    _LOADERS_SHARED = True


def _install_api_override() -> None:
    global _ORIGINAL_MAKE_API_CALL
    import botocore.client

    if _ORIGINAL_MAKE_API_CALL is not None:
        return
    _ORIGINAL_MAKE_API_CALL = botocore.client.BaseClient._make_api_call
    apicall.set_original(_ORIGINAL_MAKE_API_CALL)
    botocore.client.BaseClient._make_api_call = _routed_make_api_call  # type: ignore[method-assign]


def _routed_make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
    backend = _BACKEND
    service = client.meta.service_model.service_name
    if backend is None:
        return _ORIGINAL_MAKE_API_CALL(client, operation_name, api_params)  # type: ignore[misc]
    if not getattr(client, INTERNAL_CLIENT_MARK, False):
        backend.record_call(service, operation_name)
    handler = backend.handlers.get((service, operation_name))
    if handler is None:
        return _ORIGINAL_MAKE_API_CALL(client, operation_name, api_params)  # type: ignore[misc]
    from botocore.validate import ParamValidationDecorator, validate_parameters

    operation_model = client.meta.service_model.operation_model(operation_name)
    context = {"client_region": client.meta.region_name, "client_config": client.meta.config}
    # The same parameter hooks as a real call: idempotency tokens (runtimeSessionId!) and the
    # injections the SDKs register, then botocore's own client-side validation, which a client
    # has exactly when its serializer is wrapped in the validator (Config(parameter_validation)).
    api_params = client._emit_api_params(api_params=api_params, operation_model=operation_model, context=context)
    if isinstance(client._serializer, ParamValidationDecorator) and operation_model.input_shape is not None:
        validate_parameters(api_params, operation_model.input_shape)
    try:
        response = handler(ApiCall(client, service, operation_name, api_params))
    except ServiceError as err:
        error = {"Error": {"Code": err.code, "Message": err.message}, "ResponseMetadata": _metadata(err.status_code)}
        raise client.exceptions.from_code(err.code)(error, operation_name) from None
    status = response.pop("_status", 200)
    problems = response_problems(operation_model.output_shape, response)
    if problems:
        # A stand-in answering with fields the service model does not have would let the
        # toolkit read something a live response never carries: fail here, offline, instead.
        raise StandInContractError(
            f"{service}.{operation_name} stand-in response does not match botocore's model: " + "; ".join(problems)
        )
    response.setdefault("ResponseMetadata", _metadata(status))
    return response


class StandInContractError(RuntimeError):
    """An offline stand-in answered with a response botocore's service model does not allow."""


def response_problems(shape: Any, value: Any, path: str = "") -> list[str]:
    """Where `value` leaves botocore's output `shape`: unknown members, missing required ones."""
    if shape is None:
        return [f"{path or 'response'}: the operation has no output, got {sorted(value)}"] if value else []
    problems: list[str] = []
    if shape.type_name == "structure":
        if not isinstance(value, dict):
            return [f"{path or 'response'}: expected a structure, got {type(value).__name__}"]
        members = shape.members
        for key, inner in value.items():
            if key == "ResponseMetadata" and not path:
                continue
            if key not in members:
                problems.append(f"{path}{key}: not a member of {shape.name}")
            else:
                problems += response_problems(members[key], inner, f"{path}{key}.")
        for key in shape.required_members:
            if key not in value:
                problems.append(f"{path}{key}: required by {shape.name} but missing")
    elif shape.type_name == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            problems += response_problems(shape.member, item, f"{path}[{index}].")
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            problems += response_problems(shape.value, item, f"{path}{key}.")
    return problems


def _metadata(status: int) -> JSON:
    return {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0}
