"""Offline SageMaker MLflow apps: one sqlite MLflow store per app, and the `arn` tracking scheme.

The sagemaker-mlflow plugin lets live code use an MLflow app ARN as the tracking URI; offline, the
same ARN resolves to the app's local store, so reading code is the same in both modes.
"""

from __future__ import annotations

import datetime as dt
import importlib.abc
import importlib.metadata
import importlib.util
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course.errors import ServiceError, validation_error
from mtrl_course.local.apicall import JSON, ApiCall
from mtrl_course.local.apicall import now as _now
from mtrl_course.local.apicall import short_id as _short_id
from mtrl_course.local import mlflow_store
from mtrl_course.local.job import MlflowAppInfo
from mtrl_course.local.names import MLFLOW_UI_WORKERS

logger = logging.getLogger(__name__)

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
        return mlflow_store.tracking_uri(self.directory / "mlflow.db")

    @property
    def artifact_root(self) -> str:
        return (self.directory / "artifacts").as_uri()


MLFLOW_UI_HOST = "127.0.0.1"
# A fixed first port keeps presigned URLs in committed notebook outputs stable; app n gets +n.
MLFLOW_UI_BASE_PORT = 5055
MLFLOW_UI_START_TIMEOUT_S = 60.0
MLFLOW_UI_STOP_TIMEOUT_S = 10.0
MLFLOW_UI_HEALTH = "/health"
PRESIGNED_EXPIRY_RANGE = (5, 300)
SESSION_EXPIRY_RANGE = (1800, 43200)
MLFLOW_APP_ID_LENGTH = 12
# Written next to each app's store, so a later process can read the app's runs by its ARN.
APP_RECORD = "app.json"


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
        # Apps of earlier processes are readable by ARN at once (see _persisted_info).
        _enable_arn_tracking_scheme(self)

    # -- lookups ------------------------------------------------------------------------------
    def info(self, arn: str) -> MlflowAppInfo | None:
        with self._lock:
            app = self._apps.get(arn)
        if app is None:
            return self._persisted_info(arn)
        if app.status not in ("Created", "Updated"):
            return None
        return MlflowAppInfo(app.arn, app.tracking_uri, app.artifact_root)

    def _persisted_info(self, arn: str) -> MlflowAppInfo | None:
        """An app an earlier process created under this state folder, for reading its runs.

        moto's records die with their process, but a live MLflow app outlives the notebook that
        made it: a learner's fresh kernel reads an instructor's runs by the app's ARN alone.
        """
        for record in sorted((self.state_dir / "mlflow").glob(f"*/{APP_RECORD}")):
            try:
                data = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if data.get("arn") == arn:
                directory = record.parent
                return MlflowAppInfo(
                    arn, mlflow_store.tracking_uri(directory / "mlflow.db"), (directory / "artifacts").as_uri()
                )
        return None

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
            mlflow_store.ensure_store(app.directory / "mlflow.db")
            (app.directory / APP_RECORD).write_text(
                json.dumps({"arn": app.arn, "name": name, "region": call.region}) + "\n", encoding="utf-8"
            )
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
                {
                    "Arn": a.arn,
                    "Name": a.name,
                    "Status": a.status,
                    "CreationTime": a.created,
                    "LastModifiedTime": a.modified,
                    "MlflowVersion": version,
                }
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
        for key, (low, high) in (
            ("ExpiresInSeconds", PRESIGNED_EXPIRY_RANGE),
            ("SessionExpirationDurationInSeconds", SESSION_EXPIRY_RANGE),
        ):
            value = call.params.get(key)
            if value is not None and not low <= value <= high:
                raise validation_error(
                    f"1 validation error detected: Value '{value}' at '{key}' failed to satisfy constraint: Member must have value between {low} and {high}"
                )
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
                sys.executable,
                "-m",
                "mlflow",
                "ui",
                "--backend-store-uri",
                app.tracking_uri,
                "--default-artifact-root",
                app.artifact_root,
                "--host",
                MLFLOW_UI_HOST,
                "--port",
                str(app.port),
                "--workers",
                MLFLOW_UI_WORKERS,
            ]
            # Its own process group: `mlflow ui` runs the server as a child process, and stop_ui
            # must end both.
            self._ui[arn] = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
            )
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
