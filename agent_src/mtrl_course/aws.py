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

| operations | local implementation |
|---|---|
| sagemaker CreateJob/DescribeJob/ListJobs/StopJob/DeleteJob | `local.service.LocalMTRLService` |
| sagemaker *MlflowApp*, CreatePresignedMlflowAppUrl | `LocalMlflowApps` (sqlite MLflow per app) |
| sagemaker DescribeHubContent/ListHubContents | `local.hub.LocalHub` |
| sagemaker Start/Describe/List/StopPipelineExecution(s), ListPipelineExecutionSteps | `LocalPipelines`: runs Job steps through the local service |
| sagemaker CreateArtifact/DescribeArtifact/ListArtifacts (the evaluator's lineage) | `LocalLineage` |
| iam SimulatePrincipalPolicy | `simulate_principal_policy` over the policies moto holds |
| bedrock-agentcore InvokeAgentRuntime; -control Get/ListAgentRuntimes | runtimes registered by `local.runtime.LocalAgentRuntime` |
| sagemakerjobruntime Sample/SampleWithResponseStream/CompleteRollout/UpdateReward | the attached `JobRuntimeEmulator`, in-process |

Routed calls still run botocore's parameter events and client-side validation, so a learner
sees the same ParamValidationError as live; a local implementation's `ServiceError` becomes the
botocore ClientError subclass for the service's error code.
"""

from __future__ import annotations

import base64
import datetime as dt
import fnmatch
import hashlib
import importlib.abc
import importlib.metadata
import importlib.util
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from mtrl_course import config, netguard, telemetry
from mtrl_course.local.service import LocalMTRLService, MlflowAppInfo, ServiceError, validation_error

if TYPE_CHECKING:
    import boto3

logger = logging.getLogger(__name__)

# Fake credentials for the offline backend (moto accepts anything; these are moto's convention).
OFFLINE_ACCESS_KEY = "testing"
OFFLINE_SECRET_KEY = "testing"
OFFLINE_ACCOUNT = config.MOTO_ACCOUNT
REGION_ENV_VARS = ("AWS_DEFAULT_REGION", "AWS_REGION")
# Offline, nothing may come from a developer's AWS setup: a profile could run an SSO login or a
# credential_process, and an endpoint variable could point a client at a real service.
UNSET_OFFLINE_ENV = (
    "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ENDPOINT_URL",
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
            ignored = f" (AWS_REGION={os.environ['AWS_REGION']!r} is set, but boto3 ignores it)" if os.environ.get("AWS_REGION") else ""
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
        return live
    offline_backend()
    return boto3.Session(
        aws_access_key_id=OFFLINE_ACCESS_KEY,
        aws_secret_access_key=OFFLINE_SECRET_KEY,
        region_name=region or config.OFFLINE_REGION,
    )


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
            _BACKEND = OfflineBackend(config.STATE_DIR / OFFLINE_STATE_SUBDIR)
        return _BACKEND


def reset_offline(state_dir: Path | None = None) -> OfflineBackend:
    """Forget everything the offline backend holds (for tests): moto data, jobs, runners, MLflow
    apps, runtimes (stopped), the attached Job Runtime emulator and the call trace.

    `state_dir` moves the MLflow stores and other files (tests pass a temporary directory).
    Process-wide settings stay: environment, network guard, the API override.
    """
    backend = offline_backend()
    backend.reset(state_dir)
    return backend


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
    botocore.client.BaseClient._make_api_call = _routed_make_api_call  # type: ignore[method-assign]


@dataclass
class ApiCall:
    """One routed call: what a local implementation gets."""

    client: Any
    service: str
    operation: str
    params: dict[str, Any]

    @property
    def region(self) -> str:
        return self.client.meta.region_name or config.OFFLINE_REGION

    def original(self, params: Mapping[str, Any] | None = None) -> Any:
        """Send this call (or these params) on to moto, as if there were no override."""
        assert _ORIGINAL_MAKE_API_CALL is not None
        return _ORIGINAL_MAKE_API_CALL(self.client, self.operation, dict(self.params if params is None else params))


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
    response.setdefault("ResponseMetadata", _metadata(response.pop("_status", 200)))
    return response


def _metadata(status: int) -> JSON:
    return {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _short_id(text: str, length: int) -> str:
    """A stable id of letters and digits derived from `text` (deterministic ARNs, reproducible outputs)."""
    digest = base64.b32encode(hashlib.sha256(text.encode()).digest()).decode().lower()
    return digest[:length]


# ----------------------------------------------------------------------------------------------
# MLflow apps


@dataclass
class _App:
    arn: str
    name: str
    region: str
    artifact_store_uri: str
    role_arn: str
    directory: Path
    port: int
    created: dt.datetime
    modified: dt.datetime
    status: str = "Created"
    model_registration_mode: str = "AutoModelRegistrationDisabled"
    account_default_status: str = "DISABLED"
    default_domains: list[str] = field(default_factory=list)
    maintenance_window: str | None = None
    tags: list[JSON] = field(default_factory=list)

    @property
    def tracking_uri(self) -> str:
        return f"sqlite:///{(self.directory / 'mlflow.db').as_posix()}"

    @property
    def artifact_root(self) -> str:
        return (self.directory / "artifacts").as_uri()


MLFLOW_UI_HOST = "127.0.0.1"
# A fixed first port keeps presigned URLs in committed notebook outputs stable; app n gets +n.
MLFLOW_UI_BASE_PORT = 5055
# One worker: the default four made `mlflow ui` take 40 s to answer on the 2-core machine, one
# takes about 9 s (measured); a single local reader needs no more.
MLFLOW_UI_WORKERS = "1"
MLFLOW_UI_START_TIMEOUT_S = 60.0
MLFLOW_UI_STOP_TIMEOUT_S = 10.0
MLFLOW_UI_HEALTH = "/health"
PRESIGNED_EXPIRY_RANGE = (5, 300)
SESSION_EXPIRY_RANGE = (1800, 43200)
MLFLOW_APP_ID_LENGTH = 12


class LocalMlflowApps:
    """MLflow apps offline: each app is a local sqlite tracking store plus an artifact folder.

    The store lives at `<state>/mlflow/<app name>/` and survives the process (moto's records do
    not), so a later process that creates the app again finds the earlier runs. Once an app
    exists, `mlflow.set_tracking_uri(<app ARN>)` works offline too: the "arn" tracking-store
    scheme (the sagemaker-mlflow plugin's, live) is pointed at the local store. Apps are
    "Created" at once; the real service takes minutes.
    """

    def __init__(self, state_dir: Path, account: str, client: Callable[[str, str], Any]):
        self.state_dir = state_dir
        self.account = account
        self._client = client
        self._apps: dict[str, _App] = {}
        self._ui: dict[str, subprocess.Popen] = {}
        self._created = 0
        self._lock = threading.RLock()

    # -- lookups ------------------------------------------------------------------------------
    def info(self, arn: str) -> MlflowAppInfo | None:
        with self._lock:
            app = self._apps.get(arn)
        if app is None or app.status not in ("Created", "Updated"):
            return None
        return MlflowAppInfo(app.arn, app.tracking_uri, app.artifact_root)

    def _app(self, arn: str) -> _App:
        with self._lock:
            app = self._apps.get(arn)
        if app is None:
            raise ServiceError("ResourceNotFound", f"MLflow app {arn} does not exist.")
        return app

    # -- API ----------------------------------------------------------------------------------
    def create(self, call: ApiCall) -> JSON:
        params = call.params
        name = params["Name"]
        with self._lock:
            if any(a.name == name and a.region == call.region for a in self._apps.values()):
                raise validation_error(f"An MLflow app with name {name} already exists.")
        bucket = _s3_bucket_of(params["ArtifactStoreUri"])
        if bucket is None:
            raise validation_error(f"ArtifactStoreUri {params['ArtifactStoreUri']!r} is not an s3:// URI.")
        try:
            self._client("s3", call.region).head_bucket(Bucket=bucket)
        except Exception:
            raise validation_error(f"The artifact store bucket {bucket} does not exist or is not accessible.") from None
        role_name = params["RoleArn"].rsplit("/", 1)[-1]
        try:
            self._client("iam", call.region).get_role(RoleName=role_name)
        except Exception:
            raise validation_error(f"Role {params['RoleArn']} does not exist.") from None
        now = _now()
        app_id = "app-" + _short_id(f"{call.region}/{name}", MLFLOW_APP_ID_LENGTH)
        with self._lock:
            app = _App(
                arn=f"arn:aws:sagemaker:{call.region}:{self.account}:mlflow-app/{app_id}",
                name=name,
                region=call.region,
                artifact_store_uri=params["ArtifactStoreUri"],
                role_arn=params["RoleArn"],
                directory=self.state_dir / "mlflow" / name,
                port=MLFLOW_UI_BASE_PORT + self._created,
                created=now,
                modified=now,
                model_registration_mode=params.get("ModelRegistrationMode", "AutoModelRegistrationDisabled"),
                account_default_status=params.get("AccountDefaultStatus", "DISABLED"),
                default_domains=list(params.get("DefaultDomainIdList") or []),
                maintenance_window=params.get("WeeklyMaintenanceWindowStart"),
                tags=list(params.get("Tags") or []),
            )
            self._created += 1
            (app.directory / "artifacts").mkdir(parents=True, exist_ok=True)
            self._apps[app.arn] = app
        _enable_arn_tracking_scheme(self)
        return {"Arn": app.arn}

    def describe(self, call: ApiCall) -> JSON:
        app = self._app(call.params["Arn"])
        response = {
            "Arn": app.arn,
            "Name": app.name,
            "ArtifactStoreUri": app.artifact_store_uri,
            "MlflowVersion": _mlflow_version(),
            "RoleArn": app.role_arn,
            "Status": app.status,
            "ModelRegistrationMode": app.model_registration_mode,
            "AccountDefaultStatus": app.account_default_status,
            "DefaultDomainIdList": list(app.default_domains),
            "CreationTime": app.created,
            "LastModifiedTime": app.modified,
        }
        if app.maintenance_window:
            response["WeeklyMaintenanceWindowStart"] = app.maintenance_window
        return response

    def list(self, call: ApiCall) -> JSON:
        params = call.params
        with self._lock:
            apps = [a for a in self._apps.values() if a.region == call.region]
        if params.get("Status"):
            apps = [a for a in apps if a.status == params["Status"]]
        if params.get("AccountDefaultStatus"):
            apps = [a for a in apps if a.account_default_status == params["AccountDefaultStatus"]]
        if params.get("DefaultForDomainId"):
            apps = [a for a in apps if params["DefaultForDomainId"] in a.default_domains]
        if params.get("CreatedAfter"):
            apps = [a for a in apps if a.created > params["CreatedAfter"]]
        if params.get("CreatedBefore"):
            apps = [a for a in apps if a.created < params["CreatedBefore"]]
        key = (lambda a: a.name) if params.get("SortBy") == "Name" else (lambda a: a.created)
        apps.sort(key=key, reverse=params.get("SortOrder", "Descending") == "Descending")
        version = _mlflow_version()
        return {
            "Summaries": [
                {"Arn": a.arn, "Name": a.name, "Status": a.status, "CreationTime": a.created, "LastModifiedTime": a.modified, "MlflowVersion": version}
                for a in apps
            ]
        }

    def update(self, call: ApiCall) -> JSON:
        app = self._app(call.params["Arn"])
        with self._lock:
            for key, attribute in (
                ("ArtifactStoreUri", "artifact_store_uri"),
                ("ModelRegistrationMode", "model_registration_mode"),
                ("WeeklyMaintenanceWindowStart", "maintenance_window"),
                ("AccountDefaultStatus", "account_default_status"),
            ):
                if key in call.params:
                    setattr(app, attribute, call.params[key])
            if "DefaultDomainIdList" in call.params:
                app.default_domains = list(call.params["DefaultDomainIdList"])
            app.status = "Updated"
            app.modified = _now()
        return {"Arn": app.arn}

    def delete(self, call: ApiCall) -> JSON:
        app = self._app(call.params["Arn"])
        self.stop_ui(app.arn)
        with self._lock:
            self._apps.pop(app.arn, None)
        _forget_cached_stores()
        shutil.rmtree(app.directory, ignore_errors=True)
        return {"Arn": app.arn}

    def presigned_url(self, call: ApiCall) -> JSON:
        app = self._app(call.params["Arn"])
        for key, (low, high) in (("ExpiresInSeconds", PRESIGNED_EXPIRY_RANGE), ("SessionExpirationDurationInSeconds", SESSION_EXPIRY_RANGE)):
            value = call.params.get(key)
            if value is not None and not low <= value <= high:
                raise validation_error(f"1 validation error detected: Value '{value}' at '{key}' failed to satisfy constraint: Member must have value between {low} and {high}")
        # A loopback URL of the local MLflow UI (start it with start_ui); never a signed AWS URL.
        return {"AuthorizedUrl": f"http://{MLFLOW_UI_HOST}:{app.port}/"}

    # -- the local MLflow UI ------------------------------------------------------------------
    def start_ui(self, arn: str) -> str:
        """Serve the app's store with `mlflow ui` on loopback; returns its URL (idempotent)."""
        app = self._app(arn)
        with self._lock:
            process = self._ui.get(arn)
            if process is not None and process.poll() is None:
                return f"http://{MLFLOW_UI_HOST}:{app.port}/"
            if not _port_free(app.port):
                app.port = _free_port()
            command = [
                sys.executable, "-m", "mlflow", "ui",
                "--backend-store-uri", app.tracking_uri,
                "--default-artifact-root", app.artifact_root,
                "--host", MLFLOW_UI_HOST, "--port", str(app.port), "--workers", MLFLOW_UI_WORKERS,
            ]
            # Its own process group: `mlflow ui` runs the server as a child process, and stop_ui
            # must end both.
            self._ui[arn] = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        import http.client

        deadline = time.monotonic() + MLFLOW_UI_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._ui[arn].poll() is not None:
                raise RuntimeError(f"mlflow ui for {app.name} exited with code {self._ui[arn].returncode}")
            # The port opens about a second before the server answers: wait for /health.
            connection = http.client.HTTPConnection(MLFLOW_UI_HOST, app.port, timeout=2)
            try:
                connection.request("GET", MLFLOW_UI_HEALTH)
                if connection.getresponse().status == 200:
                    return f"http://{MLFLOW_UI_HOST}:{app.port}/"
            except OSError:
                pass
            finally:
                connection.close()
            time.sleep(0.2)
        self.stop_ui(arn)
        raise RuntimeError(f"mlflow ui for {app.name} did not start within {MLFLOW_UI_START_TIMEOUT_S:.0f} s")

    def stop_ui(self, arn: str) -> None:
        with self._lock:
            process = self._ui.pop(arn, None)
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(MLFLOW_UI_STOP_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                continue

    def reset(self, state_dir: Path) -> None:
        for arn in list(self._ui):
            self.stop_ui(arn)
        with self._lock:
            self._apps.clear()
            self._created = 0
            self.state_dir = state_dir
        _forget_cached_stores()


def _s3_bucket_of(uri: str) -> str | None:
    if not uri.startswith("s3://"):
        return None
    bucket = uri[5:].split("/", 1)[0]
    return bucket or None


def _mlflow_version() -> str:
    """The local MLflow's major.minor: what actually backs the offline apps."""
    version = importlib.metadata.version("mlflow")
    return ".".join(version.split(".")[:2])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((MLFLOW_UI_HOST, port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((MLFLOW_UI_HOST, 0))
        return probe.getsockname()[1]


# The "arn" tracking-store scheme. Registering needs mlflow's store registry module, a 3 s
# import; rather than pay it in every CreateMlflowApp, register when that module loads (or at
# once if it already has).
_TRACKING_UTILS = "mlflow.tracking._tracking_service.utils"
_ARN_APPS: LocalMlflowApps | None = None


def _enable_arn_tracking_scheme(apps: LocalMlflowApps) -> None:
    global _ARN_APPS
    first = _ARN_APPS is None
    _ARN_APPS = apps
    if _TRACKING_UTILS in sys.modules:
        _register_arn_stores()
    elif first:
        sys.meta_path.insert(0, _AfterImport(_TRACKING_UTILS, _register_arn_stores))


def _arn_tracking_store(store_uri: str, artifact_uri: str | None = None) -> Any:
    from mlflow.tracking._tracking_service.utils import _get_sqlalchemy_store

    info = _ARN_APPS.info(store_uri) if _ARN_APPS else None
    if info is None:
        raise ValueError(f"offline mode: no MLflow app {store_uri}; create it with CreateMlflowApp first")
    return _get_sqlalchemy_store(info.tracking_uri, artifact_uri or info.artifact_root)


def _arn_registry_store(store_uri: str, tracking_uri: str | None = None) -> Any:
    from mlflow.tracking._model_registry.utils import _get_sqlalchemy_store

    info = _ARN_APPS.info(store_uri) if _ARN_APPS else None
    if info is None:
        raise ValueError(f"offline mode: no MLflow app {store_uri}; create it with CreateMlflowApp first")
    return _get_sqlalchemy_store(info.tracking_uri)


def _register_arn_stores() -> None:
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    tracking_utils._tracking_store_registry.register("arn", _arn_tracking_store)
    registry_utils._get_store_registry().register("arn", _arn_registry_store)
    _forget_cached_stores()


def _forget_cached_stores() -> None:
    """Drop MLflow's cached store objects (a deleted app's ARN must not reach its old store)."""
    tracking = sys.modules.get(_TRACKING_UTILS)
    if tracking is not None:
        tracking._tracking_store_registry._get_store_with_resolved_uri.cache_clear()
        tracking._get_tracking_scheme_with_resolved_uri.cache_clear()
    registry = sys.modules.get("mlflow.tracking._model_registry.utils")
    if registry is not None and registry._model_registry_store_registry is not None:
        registry._model_registry_store_registry._get_store_with_resolved_uri.cache_clear()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `callback` right after module `name` has been executed."""

    def __init__(self, name: str, callback: Callable[[], None]):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, callback = spec.loader, self.callback
        original_exec = loader.exec_module

        def exec_then_register(module: Any) -> None:
            original_exec(module)
            callback()

        loader.exec_module = exec_then_register  # type: ignore[method-assign]
        return spec


# ----------------------------------------------------------------------------------------------
# SageMaker Pipelines: run the evaluator's Job steps through the local service

PIPELINE_FAILURE = "Step failure: One or multiple steps failed."
STEP_POLL_S = 0.05


@dataclass
class _Step:
    name: str
    kind: str
    arguments: JSON
    depends_on: list[str]
    status: str = "Starting"
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    failure: str | None = None
    job_arn: str | None = None
    job_name: str | None = None


@dataclass
class _Execution:
    arn: str
    steps: list[_Step]
    status: str = "Executing"
    failure: str | None = None
    modified: dt.datetime = field(default_factory=_now)
    stop: threading.Event = field(default_factory=threading.Event)


class LocalPipelines:
    """Executes pipelines that contain `Type: Job` steps, which moto records but never runs.

    MultiTurnRLEvaluator renders a pipeline (Lineage -> Job(AgentRFTEvaluation) -> Lineage) and
    starts it; moto marks every execution Succeeded at once. For executions with Job steps this
    runs the steps in DependsOn order: Lineage steps succeed without doing anything, Job steps
    become CreateJob calls on the local service and finish with their job. Other executions are
    left to moto.
    """

    def __init__(self, service: LocalMTRLService, client: Callable[[str, str], Any]):
        self.service = service
        self._client = client
        self._executions: dict[str, _Execution] = {}
        self._lock = threading.RLock()

    def start(self, call: ApiCall) -> JSON:
        response = call.original()
        arn = response["PipelineExecutionArn"]
        sagemaker = self._client("sagemaker", call.region)
        definition = json.loads(sagemaker.describe_pipeline(PipelineName=call.params["PipelineName"])["PipelineDefinition"])
        raw_steps = definition.get("Steps") or []
        if not any(s.get("Type") == "Job" for s in raw_steps):
            return response
        steps = [_Step(s["Name"], s.get("Type", ""), s.get("Arguments") or {}, list(s.get("DependsOn") or [])) for s in raw_steps]
        execution = _Execution(arn, steps)
        with self._lock:
            self._executions[arn] = execution
        threading.Thread(target=self._run, args=(execution, call.region), name=f"pipeline-{arn.rsplit('/', 1)[-1]}", daemon=True).start()
        return response

    def _run(self, execution: _Execution, region: str) -> None:
        execution_id = execution.arn.rsplit("/", 1)[-1]
        done: set[str] = set()
        pending = list(execution.steps)
        while pending:
            ready = [s for s in pending if all(d in done for d in s.depends_on)]
            if not ready or execution.stop.is_set():
                break
            step = ready[0]
            pending.remove(step)
            step.start, step.status = _now(), "Executing"
            self._touch(execution)
            ok = self._run_step(step, execution, execution_id, region)
            step.end = _now()
            self._touch(execution)
            if not ok:
                break
            done.add(step.name)
        with self._lock:
            if execution.stop.is_set():
                execution.status = "Stopped"
            elif any(s.status == "Failed" for s in execution.steps):
                execution.status, execution.failure = "Failed", PIPELINE_FAILURE
            else:
                execution.status = "Succeeded"
            execution.modified = _now()

    def _unused_job_name(self, base: str, category: str) -> str:
        """`base`, or `base-2`, `base-3`... when an earlier kernel's persisted job holds the name.

        moto draws execution ids from Python's global `random`, which the notebooks seed, so two
        kernels can get the same id; job records outlive their kernel, so the name must not clash.
        """
        candidate, counter = base[:63].rstrip("-"), 1
        while True:
            try:
                self.service.get_job(candidate, category)
            except Exception:
                return candidate
            counter += 1
            suffix = f"-{counter}"
            candidate = base[: 63 - len(suffix)].rstrip("-") + suffix

    def _run_step(self, step: _Step, execution: _Execution, execution_id: str, region: str) -> bool:
        if step.kind == "Lineage":
            step.status = "Succeeded"
            return True
        if step.kind != "Job":
            step.status, step.failure = "Failed", f"Step type {step.kind} is not supported by the offline pipeline runner."
            return False
        args = step.arguments
        # Guess: Pipelines' own naming of Job-step jobs is not documented; this mirrors the
        # `pipelines-<execution id>-<step>` names it gives training jobs.
        name = self._unused_job_name(f"pipelines-{execution_id}-{step.name}", args.get("JobCategory", ""))
        document = args.get("JobConfigDocument")
        try:
            created = self.service.create_job(
                {
                    "JobName": name,
                    "RoleArn": args.get("RoleArn", ""),
                    "JobCategory": args.get("JobCategory", ""),
                    "JobConfigSchemaVersion": args.get("JobConfigSchemaVersion", ""),
                    "JobConfigDocument": document if isinstance(document, str) else json.dumps(document),
                    "Tags": args.get("Tags") or [],
                },
                region,
            )
        except ServiceError as err:
            step.status, step.failure = "Failed", f"{err.code}: {err.message}"
            return False
        step.job_arn, step.job_name = created["JobArn"], name
        job = self.service.get_job(name, args["JobCategory"])
        while not job.wait(STEP_POLL_S):
            if execution.stop.is_set() and job.status == "InProgress":
                step.status = "Stopping"
                self.service.stop_job({"JobName": name, "JobCategory": job.category})
        step.status = {"Completed": "Succeeded", "Stopped": "Stopped"}.get(job.status, "Failed")
        step.failure = job.failure_reason
        return step.status == "Succeeded"

    def _touch(self, execution: _Execution) -> None:
        with self._lock:
            execution.modified = _now()

    def _get(self, arn: str) -> _Execution | None:
        with self._lock:
            return self._executions.get(arn)

    def describe(self, call: ApiCall) -> JSON:
        response = call.original()
        execution = self._get(call.params["PipelineExecutionArn"])
        if execution is not None:
            response["PipelineExecutionStatus"] = execution.status
            response["LastModifiedTime"] = execution.modified
            response.pop("FailureReason", None)
            if execution.failure:
                response["FailureReason"] = execution.failure
        return response

    def list_executions(self, call: ApiCall) -> JSON:
        response = call.original()
        for summary in response.get("PipelineExecutionSummaries", []):
            execution = self._get(summary["PipelineExecutionArn"])
            if execution is not None:
                summary["PipelineExecutionStatus"] = execution.status
                if execution.failure:
                    summary["PipelineExecutionFailureReason"] = execution.failure
        return response

    def list_steps(self, call: ApiCall) -> JSON:
        execution = self._get(call.params["PipelineExecutionArn"])
        if execution is None:
            # moto has no steps for the executions it "ran"; answer with none rather than fail.
            self._require_moto_execution(call.params["PipelineExecutionArn"], call.region)
            return {"PipelineExecutionSteps": []}
        steps = []
        for step in execution.steps:
            if step.start is None:
                continue
            entry: JSON = {"StepName": step.name, "StartTime": step.start, "StepStatus": step.status, "AttemptCount": 1}
            if step.end:
                entry["EndTime"] = step.end
            if step.failure:
                entry["FailureReason"] = step.failure
            if step.job_arn:
                entry["Metadata"] = {"Job": {"Arn": step.job_arn}}
            steps.append(entry)
        steps.sort(key=lambda s: s["StartTime"], reverse=call.params.get("SortOrder", "Descending") == "Descending")
        return {"PipelineExecutionSteps": steps}

    def stop(self, call: ApiCall) -> JSON:
        arn = call.params["PipelineExecutionArn"]
        execution = self._get(arn)
        if execution is None:
            self._require_moto_execution(arn, call.region)
            raise ServiceError("ConflictException", f"Pipeline execution {arn} is not running and cannot be stopped.")
        with self._lock:
            if execution.status != "Executing":
                raise ServiceError("ConflictException", f"Pipeline execution {arn} is {execution.status} and cannot be stopped.")
            execution.status = "Stopping"
            execution.stop.set()
        return {"PipelineExecutionArn": arn}

    def _require_moto_execution(self, arn: str, region: str) -> None:
        try:
            self._client("sagemaker", region).describe_pipeline_execution(PipelineExecutionArn=arn)
        except Exception:
            raise ServiceError("ResourceNotFound", f"Pipeline execution {arn} does not exist.") from None

    def reset(self) -> None:
        with self._lock:
            for execution in self._executions.values():
                execution.stop.set()
            self._executions.clear()


# ----------------------------------------------------------------------------------------------
# Lineage artifacts (the evaluator records the evaluated model as one; moto has none)


class LocalLineage:
    """CreateArtifact / DescribeArtifact / ListArtifacts, kept in memory."""

    def __init__(self, account: str):
        self.account = account
        self._artifacts: dict[str, JSON] = {}
        self._lock = threading.Lock()

    def create(self, call: ApiCall) -> JSON:
        now = _now()
        arn = f"arn:aws:sagemaker:{call.region}:{self.account}:artifact/{uuid.uuid4().hex}"
        record = {key: value for key, value in call.params.items() if key != "Tags"}
        record.update(ArtifactArn=arn, CreationTime=now, LastModifiedTime=now)
        with self._lock:
            self._artifacts[arn] = record
        return {"ArtifactArn": arn}

    def describe(self, call: ApiCall) -> JSON:
        with self._lock:
            record = self._artifacts.get(call.params["ArtifactArn"])
        if record is None:
            raise ServiceError("ResourceNotFound", f"Artifact {call.params['ArtifactArn']} does not exist.")
        return dict(record)

    def list(self, call: ApiCall) -> JSON:
        params = call.params
        with self._lock:
            records = list(self._artifacts.values())
        if params.get("SourceUri"):
            records = [r for r in records if (r.get("Source") or {}).get("SourceUri") == params["SourceUri"]]
        if params.get("ArtifactType"):
            records = [r for r in records if r.get("ArtifactType") == params["ArtifactType"]]
        keys = ("ArtifactArn", "ArtifactName", "Source", "ArtifactType", "CreationTime", "LastModifiedTime")
        return {"ArtifactSummaries": [{k: r[k] for k in keys if k in r} for r in records]}

    def reset(self) -> None:
        with self._lock:
            self._artifacts.clear()


# ----------------------------------------------------------------------------------------------
# IAM SimulatePrincipalPolicy


def simulate_principal_policy(call: ApiCall, iam: Any) -> JSON:
    """Evaluate the principal's policies as stored in moto: allowed unless explicitly denied.

    Deliberately simple: Deny statements whose Action/NotAction and Resource/NotResource match
    give `explicitDeny`; everything else is `allowed` (conditions, boundaries, SCPs and the
    missing-Allow case are ignored). That is enough for the SDK's role pre-checks, which only
    block on a definite denial; it is not a policy evaluator to learn IAM from.
    """
    params = call.params
    documents = [json.loads(p) for p in params.get("PolicyInputList") or []]
    documents += _principal_policies(iam, params["PolicySourceArn"])
    resources = params.get("ResourceArns") or ["*"]
    results = []
    for action in params["ActionNames"]:
        for resource in resources:
            denied = [s for d in documents for s in _statements(d) if s.get("Effect") == "Deny" and _matches(s, action, resource)]
            results.append(
                {
                    "EvalActionName": action,
                    "EvalResourceName": resource,
                    "EvalDecision": "explicitDeny" if denied else "allowed",
                    "MatchedStatements": [],
                    "MissingContextValues": [],
                }
            )
    return {"EvaluationResults": results, "IsTruncated": False}


def _principal_policies(iam: Any, arn: str) -> list[JSON]:
    kind_and_name = arn.split(":", 5)[-1]
    kind, _, path_name = kind_and_name.partition("/")
    name = path_name.rsplit("/", 1)[-1]
    try:
        if kind == "role":
            attached = iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
            inline = [iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"] for p in iam.list_role_policies(RoleName=name)["PolicyNames"]]
        elif kind == "user":
            attached = iam.list_attached_user_policies(UserName=name)["AttachedPolicies"]
            inline = [iam.get_user_policy(UserName=name, PolicyName=p)["PolicyDocument"] for p in iam.list_user_policies(UserName=name)["PolicyNames"]]
            for group in iam.list_groups_for_user(UserName=name)["Groups"]:
                attached += iam.list_attached_group_policies(GroupName=group["GroupName"])["AttachedPolicies"]
                inline += [iam.get_group_policy(GroupName=group["GroupName"], PolicyName=p)["PolicyDocument"] for p in iam.list_group_policies(GroupName=group["GroupName"])["PolicyNames"]]
        else:
            raise ServiceError("InvalidInput", f"PolicySourceArn {arn} must be an IAM user, group or role ARN.")
    except ServiceError:
        raise
    except Exception:
        raise ServiceError("NoSuchEntity", f"The principal {arn} cannot be found.", 404) from None
    documents = []
    for policy in attached:
        version = iam.get_policy(PolicyArn=policy["PolicyArn"])["Policy"]["DefaultVersionId"]
        documents.append(iam.get_policy_version(PolicyArn=policy["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"])
    documents += inline
    return [json.loads(unquote(d)) if isinstance(d, str) else d for d in documents]


def _statements(document: Mapping[str, Any]) -> list[JSON]:
    statements = document.get("Statement") or []
    return [statements] if isinstance(statements, dict) else list(statements)


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _matches(statement: Mapping[str, Any], action: str, resource: str) -> bool:
    def any_match(patterns: list[str], value: str) -> bool:
        return any(fnmatch.fnmatchcase(value.lower(), p.lower()) for p in patterns)

    if "NotAction" in statement:
        action_ok = not any_match(_as_list(statement["NotAction"]), action)
    else:
        action_ok = any_match(_as_list(statement.get("Action")), action)
    if "NotResource" in statement:
        resource_ok = not any_match(_as_list(statement["NotResource"]), resource)
    else:
        resource_ok = any_match(_as_list(statement.get("Resource", "*")), resource) or resource == "*"
    return action_ok and resource_ok


# ----------------------------------------------------------------------------------------------
# AgentCore runtimes (served by local.runtime.LocalAgentRuntime)

# AgentCore's rule for runtimeSessionId (botocore SessionType: 33 to 256 characters).
SESSION_ID_MIN, SESSION_ID_MAX = 33, 256
DEFAULT_CONTENT_TYPE = "application/json"


class RuntimeRegistry:
    """The local runtimes, by ARN; what bedrock-agentcore(-control) calls reach offline."""

    def __init__(self) -> None:
        self._runtimes: dict[str, Any] = {}
        self._lock = threading.RLock()

    def register(self, runtime: Any) -> None:
        with self._lock:
            self._runtimes[runtime.arn] = runtime

    def unregister(self, arn: str) -> None:
        with self._lock:
            self._runtimes.pop(arn, None)

    def get(self, arn: str) -> Any | None:
        with self._lock:
            return self._runtimes.get(arn)

    def by_id(self, runtime_id: str) -> Any | None:
        with self._lock:
            return next((r for r in self._runtimes.values() if r.runtime_id == runtime_id), None)

    def all(self) -> list[Any]:
        with self._lock:
            return list(self._runtimes.values())

    def clear(self) -> list[Any]:
        with self._lock:
            runtimes, self._runtimes = list(self._runtimes.values()), {}
        return runtimes

    # -- API ----------------------------------------------------------------------------------
    def invoke(self, call: ApiCall) -> JSON:
        params = call.params
        session_id = params.get("runtimeSessionId") or ""
        if not SESSION_ID_MIN <= len(session_id) <= SESSION_ID_MAX:
            relation = f"greater than or equal to {SESSION_ID_MIN}" if len(session_id) < SESSION_ID_MIN else f"less than or equal to {SESSION_ID_MAX}"
            raise ServiceError(
                "ValidationException",
                f"1 validation error detected: Value at 'runtimeSessionId' failed to satisfy constraint: Member must have length {relation}",
            )
        arn = unquote(params["agentRuntimeArn"])
        runtime = self.get(arn)
        if runtime is None:
            raise ServiceError("ResourceNotFoundException", f"No agent runtime found with ARN {arn}.", 404)
        payload = params["payload"]
        if hasattr(payload, "read"):
            payload = payload.read()
        if isinstance(payload, str):
            payload = payload.encode()
        content_type = params.get("contentType") or DEFAULT_CONTENT_TYPE
        status, response_type, body = runtime.invoke_http(payload, session_id, content_type=content_type, accept=params.get("accept"))
        from botocore.response import StreamingBody

        return {
            "response": StreamingBody(io.BytesIO(body), len(body)),
            "contentType": response_type,
            "runtimeSessionId": session_id,
            "statusCode": status,
            "_status": status,
        }

    def get_runtime(self, call: ApiCall) -> JSON:
        runtime = self.by_id(call.params["agentRuntimeId"])
        if runtime is None:
            return call.original()
        return runtime.describe()

    def list_runtimes(self, call: ApiCall) -> JSON:
        response = call.original()
        local = [r.summary() for r in sorted(self.all(), key=lambda r: r.name)]
        response["agentRuntimes"] = local + list(response.get("agentRuntimes", []))
        return response


# ----------------------------------------------------------------------------------------------
# The Job Runtime (sagemakerjobruntime), in-process


class JobRuntimeRoute:
    """Routes boto3 `sagemakerjobruntime` calls to an attached JobRuntimeEmulator, in-process.

    boto3 signs these calls with SigV4 rather than a bearer token, so the emulator's token
    check is skipped and the caller counts as the offline account (moto's).
    """

    def __init__(self, account: str):
        self.account = account
        self.emulator: Any = None

    def _emulator(self) -> Any:
        if self.emulator is None:
            raise ServiceError("InternalServiceError", "offline mode: no Job Runtime emulator is attached (offline_backend().attach_job_runtime(emulator)).", 500)
        return self.emulator

    def _call(self, function: Callable[[], Any]) -> Any:
        from mtrl_course.local.jobruntime import JobRuntimeError

        try:
            return function()
        except JobRuntimeError as err:
            raise ServiceError(err.error_type, err.message, err.status) from None

    def sample(self, call: ApiCall) -> JSON:
        from mtrl_course.local import jobruntime

        emulator = self._emulator()
        request = _json_body(call.params["Body"])
        streaming = call.operation == "SampleWithResponseStream"
        path = jobruntime.SAMPLE_STREAM_PATH if streaming else jobruntime.SAMPLE_PATH
        response = self._call(lambda: emulator.sample(call.params["JobArn"], call.params["TrajectoryId"], request, account=self.account, path=path))
        if streaming or request.get("stream"):
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            body = jobruntime.encode_sse(jobruntime.stream_chunks(response, include_usage))
            content_type = "text/event-stream; charset=utf-8"
        else:
            body, content_type = json.dumps(response).encode(), DEFAULT_CONTENT_TYPE
        if streaming:
            from botocore.response import StreamingBody

            return {"ContentType": content_type, "Body": StreamingBody(io.BytesIO(body), len(body))}
        return {"ContentType": content_type, "Body": body}

    def complete_rollout(self, call: ApiCall) -> JSON:
        emulator = self._emulator()
        p = call.params
        self._call(lambda: emulator.complete_rollout(p["JobArn"], p["TrajectoryId"], p.get("Status") or "ready", p.get("ClientToken"), account=self.account))
        return {}

    def update_reward(self, call: ApiCall) -> JSON:
        emulator = self._emulator()
        p = call.params
        self._call(lambda: emulator.update_reward(p["JobArn"], p["TrajectoryId"], p["Rewards"], p.get("ClientToken"), account=self.account))
        return {}


def _json_body(body: Any) -> JSON:
    if hasattr(body, "read"):
        body = body.read()
    try:
        value = json.loads(body)
    except (TypeError, ValueError):
        raise validation_error("Body must be a JSON chat completion request.") from None
    if not isinstance(value, dict):
        raise validation_error("Body must be a JSON object.")
    return value


# ----------------------------------------------------------------------------------------------
# The backend

CALL_TRACE_LENGTH = 10_000
INTERNAL_CLIENT_MARK = "_mtrl_offline_internal"


class OfflineBackend:
    """Everything the offline mode runs in this process; get it with `offline_backend()`.

    Attributes: `service` (LocalMTRLService), `mlflow` (LocalMlflowApps), `hub` (LocalHub),
    `runtimes` (RuntimeRegistry), `pipelines` (LocalPipelines), `job_runtime` (JobRuntimeRoute).
    `calls` is the trace of every AWS API call made through botocore, as "service.Operation".
    """

    def __init__(self, state_dir: Path):
        from moto import mock_aws

        from mtrl_course.local.hub import LocalHub

        self.state_dir = state_dir
        _prepare_offline_environment(state_dir)
        install_network_guard()
        _share_botocore_loaders()
        self._mock = mock_aws()
        self._mock.start()
        self._clients: dict[tuple[str, str], Any] = {}
        self._clients_lock = threading.Lock()
        self.calls: deque[str] = deque(maxlen=CALL_TRACE_LENGTH)
        self.account = OFFLINE_ACCOUNT
        self.hub = LocalHub(lambda: self.client("s3", config.OFFLINE_REGION))
        self.runtimes = RuntimeRegistry()
        self.mlflow = LocalMlflowApps(state_dir, self.account, self.client)
        self.service = LocalMTRLService(
            self.client, self.mlflow.info, lambda arn: self.runtimes.get(arn) is not None, self.account,
            state_dir=lambda: self.state_dir,
        )
        self.pipelines = LocalPipelines(self.service, self.client)
        self.job_runtime = JobRuntimeRoute(self.account)
        self.lineage = LocalLineage(self.account)
        self.handlers = self._handlers()
        _install_api_override()

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
        service, hub, apps, pipes = self.service, self.hub, self.mlflow, self.pipelines
        return {
            ("sagemaker", "CreateJob"): lambda c: service.create_job(c.params, c.region),
            ("sagemaker", "DescribeJob"): lambda c: service.describe_job(c.params),
            ("sagemaker", "ListJobs"): lambda c: service.list_jobs(c.params),
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
        self.state_dir = state_dir or self.state_dir
        self.mlflow.reset(self.state_dir)
        self.service.reset()
        self.job_runtime.emulator = None
        self._mock.stop()
        self._mock.start()
        self.hub.reset()
        self.lineage.reset()
        self.calls.clear()
