"""A local AgentCore runtime: the real BedrockAgentCoreApp served by uvicorn on loopback.

Live, `agentcore deploy` puts the agent in a runtime that AgentCore invokes at `/invocations`
and health-checks at `/ping`. Offline, `LocalAgentRuntime` serves the same app object
(`wordle_agent.main:app` by default) on 127.0.0.1 and registers itself with the offline backend
under a runtime ARN in the real format, so `boto3.client("bedrock-agentcore").invoke_agent_runtime`
and the local MTRL service reach it exactly as they would reach AgentCore.

Two ways to run the app:
- `mode="thread"` (default): uvicorn in a background thread of this process. Starts in well under
  a second once the app is imported, but shares this process's environment variables.
- `mode="subprocess"`: `python -m uvicorn` in a child process, with its own environment (what a
  redeploy with new runtime variables such as REASONING_EFFORT means). Pays the app's import time
  (about 10 s for the Wordle agent) on every start.

`restart()` drops in-flight invocations, as a redeploy does: a job running meanwhile fails the
way the walkthrough describes.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import importlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from mtrl_course import config
from mtrl_course.local.service import ServiceError

DEFAULT_APP = "wordle_agent.main:app"
DEFAULT_NAME = "WordleMTRL"
HOST = "127.0.0.1"
PING_PATH = "/ping"
INVOCATIONS_PATH = "/invocations"
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
REQUEST_ID_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Request-Id"
# AgentCore gives a runtime 30 s to come up; an app that never serves (for example a handler
# without @app.entrypoint: no HTTP server at all) fails every invocation after that long.
INIT_TIMEOUT_S = 30.0
# A rollout may take minutes (the service's rollout_timeout defaults to 600 s).
INVOKE_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 10.0
PING_INTERVAL_S = 0.05
# The runtime id is `<name>-<10 letters or digits>` (the trainer's AGENT_RUNTIME_ID_PATTERN).
RUNTIME_SUFFIX_LENGTH = 10
NAME_PATTERN = "[a-zA-Z][a-zA-Z0-9_]{0,47}"
RUNTIME_VERSION = "1"
MODES = ("thread", "subprocess")
# Guesses at AgentCore's messages (the Python SDK does not contain them).
INIT_TIMEOUT_MESSAGE = "Runtime initialization time exceeded. Please make sure that initialization completes in {seconds:g}s."
RUNTIME_ERROR_MESSAGE = "Received error ({status}) from runtime. Please check your CloudWatch logs for more information."
RUNTIME_DROPPED_MESSAGE = "The runtime session ended before the agent answered ({reason}); the runtime may have been restarted."


def runtime_id_for(name: str) -> str:
    """`<name>-<10 chars>`, stable for a name, so offline ARNs repeat from run to run."""
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()
    return f"{name}-{digest[:RUNTIME_SUFFIX_LENGTH]}"


def _bound_socket(port: int = 0) -> socket.socket:
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it keep-alive requests stall on delayed ACKs (about 40 ms each).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.set_inheritable(True)
    return sock


class LocalAgentRuntime:
    """Serve an AgentCore app on loopback and answer InvokeAgentRuntime for its ARN (offline).

    Args:
        app_import: "module:attribute" of the ASGI app (a BedrockAgentCoreApp).
        name: the runtime name (AgentCore's rule: a letter, then letters, digits or _).
        mode: "thread" or "subprocess" (see the module docstring).
        env: environment variables of the runtime (process-wide in thread mode).
        init_timeout: how long an invocation waits for a runtime that is not serving yet.
        invoke_timeout: how long one invocation may take.
        region, account: where the ARN says the runtime lives (default: the offline ones).
        register: register with the offline backend (the default in offline mode).
    """

    def __init__(
        self,
        app_import: str = DEFAULT_APP,
        name: str = DEFAULT_NAME,
        *,
        mode: str = "thread",
        env: Mapping[str, str] | None = None,
        init_timeout: float = INIT_TIMEOUT_S,
        invoke_timeout: float = INVOKE_TIMEOUT_S,
        region: str | None = None,
        account: str | None = None,
        register: bool | None = None,
    ):
        if not re.fullmatch(NAME_PATTERN, name):
            raise ValueError(f"runtime name {name!r} is not valid: it must match {NAME_PATTERN} (no hyphens)")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if ":" not in app_import:
            raise ValueError(f"app_import must look like 'package.module:app', got {app_import!r}")
        self.app_import = app_import
        self.name = name
        self.mode = mode
        self.env = dict(env or {})
        self.init_timeout = init_timeout
        self.invoke_timeout = invoke_timeout
        self.region = region or config.OFFLINE_REGION
        self.account = account or config.MOTO_ACCOUNT
        self.runtime_id = runtime_id_for(name)
        self.arn = f"arn:aws:bedrock-agentcore:{self.region}:{self.account}:runtime/{self.runtime_id}"
        self.created_at = dt.datetime.now(dt.timezone.utc)
        self.updated_at = self.created_at
        self.generation = 0  # +1 on every restart: a job can tell its runtime was restarted
        self._port: int | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._lock = threading.RLock()
        self._client: Any = None
        self._saved_env: dict[str, str | None] = {}
        self.registered = (not config.is_live()) if register is None else register
        if self.registered:
            from mtrl_course.local.stack import active as offline_backend

            offline_backend().register_runtime(self)

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError(f"runtime {self.name} is not started; call start()")
        return f"http://{HOST}:{self._port}"

    @property
    def serving(self) -> bool:
        return self._ready.is_set()

    def start(self, wait: bool = True) -> LocalAgentRuntime:
        """Start serving (idempotent); with `wait`, block until `/ping` answers."""
        with self._lock:
            if self._thread is None and self._process is None:
                sock = _bound_socket(self._port or 0)
                self._port = sock.getsockname()[1]
                if self.mode == "thread":
                    self._start_thread(sock)
                else:
                    self._start_subprocess(sock)
                threading.Thread(target=self._watch_ready, name=f"runtime-{self.name}-ping", daemon=True).start()
        if wait:
            deadline = time.monotonic() + self.init_timeout
            while not self._ready.wait(PING_INTERVAL_S):
                if not self._alive():
                    self.stop()
                    raise RuntimeError(f"runtime {self.name} stopped while starting ({self.app_import}); see its log output")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"runtime {self.name} did not answer {PING_PATH} within {self.init_timeout:g} s")
        return self

    def _alive(self) -> bool:
        thread, process = self._thread, self._process
        return (thread is not None and thread.is_alive()) or (process is not None and process.poll() is None)

    def _start_thread(self, sock: socket.socket) -> None:
        import uvicorn

        module_name, _, attribute = self.app_import.partition(":")
        app = getattr(importlib.import_module(module_name), attribute, None)
        if not callable(app):
            # The walkthrough's failure: a handler without the app entrypoint serves nothing.
            raise TypeError(
                f"{self.app_import} is not an ASGI app: the runtime needs the BedrockAgentCoreApp object "
                "(@sagemaker_rft_handler alone starts no HTTP server)"
            )
        for key, value in self.env.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=1))

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            finally:
                sock.close()

        self._server = server
        self._thread = threading.Thread(target=serve, name=f"runtime-{self.name}", daemon=True)
        self._thread.start()

    def _start_subprocess(self, sock: socket.socket) -> None:
        command = [
            sys.executable, "-m", "uvicorn", self.app_import, "--fd", str(sock.fileno()),
            "--lifespan", "off", "--log-level", "warning", "--no-access-log",
        ]
        environment = {**os.environ, **self.env}
        self._process = subprocess.Popen(command, env=environment, pass_fds=(sock.fileno(),), stdout=subprocess.DEVNULL)
        sock.close()  # the child holds its own copy

    def _watch_ready(self) -> None:
        import http.client

        port = self._port
        while self._thread is not None or self._process is not None:
            if self._process is not None and self._process.poll() is not None:
                return
            connection = http.client.HTTPConnection(HOST, port, timeout=1.0)
            try:
                connection.request("GET", PING_PATH)
                if connection.getresponse().status == 200:
                    self._ready.set()
                    return
            except OSError:
                pass
            finally:
                connection.close()
            time.sleep(PING_INTERVAL_S)

    def stop(self) -> None:
        """Stop serving; in-flight invocations are cut off (idempotent)."""
        with self._lock:
            self._ready.clear()
            server, thread, process = self._server, self._thread, self._process
            self._server = self._thread = self._process = None
            if self._client is not None:
                self._client.close()
                self._client = None
        if server is not None:
            server.should_exit = True
            server.force_exit = True
        if thread is not None:
            thread.join(STOP_TIMEOUT_S)
        if process is not None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    def restart(self, env: Mapping[str, str] | None = None) -> LocalAgentRuntime:
        """Stop and start again on the same port (a redeploy); `env` replaces the variables given."""
        self.stop()
        if env is not None:
            self.env.update(env)
        with self._lock:
            self.generation += 1
            self.updated_at = dt.datetime.now(dt.timezone.utc)
        return self.start()

    def close(self) -> None:
        """Stop and unregister from the offline backend."""
        self.stop()
        if self.registered:
            from mtrl_course.local.stack import active as offline_backend

            offline_backend().unregister_runtime(self.arn)
            self.registered = False

    def __enter__(self) -> LocalAgentRuntime:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- invocations --------------------------------------------------------------------------
    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.invoke_timeout)
            return self._client

    def invoke_http(self, payload: bytes, session_id: str, *, content_type: str = "application/json", accept: str | None = None) -> tuple[int, str, bytes]:
        """One InvokeAgentRuntime as AgentCore performs it: returns (status, content type, body).

        Raises `ServiceError` as AgentCore would answer: RuntimeClientError (424) when the
        runtime does not come up within `init_timeout`, when the app answers 4xx/5xx, or when the
        connection drops mid-invocation.
        """
        import httpx

        if not self._ready.wait(self.init_timeout):
            raise ServiceError("RuntimeClientError", INIT_TIMEOUT_MESSAGE.format(seconds=self.init_timeout), 424)
        headers = {"Content-Type": content_type, SESSION_HEADER: session_id, REQUEST_ID_HEADER: str(uuid.uuid4())}
        if accept:
            headers["Accept"] = accept
        try:
            reply = self._http().post(self.url + INVOCATIONS_PATH, content=payload, headers=headers)
        except httpx.HTTPError as err:
            raise ServiceError("RuntimeClientError", RUNTIME_DROPPED_MESSAGE.format(reason=type(err).__name__), 424) from None
        if reply.status_code >= 400:
            raise ServiceError("RuntimeClientError", RUNTIME_ERROR_MESSAGE.format(status=reply.status_code), 424)
        return reply.status_code, reply.headers.get("content-type", "application/json"), reply.content

    def invoke(self, payload: Any, session_id: str | None = None) -> Any:
        """Invoke the app directly (no boto3); returns the decoded JSON answer (or the text)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        _, content_type, raw = self.invoke_http(body, session_id or str(uuid.uuid4()))
        text = raw.decode()
        if "json" in content_type:
            return json.loads(text)
        return text

    # -- control-plane shapes -----------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        return {
            "agentRuntimeArn": self.arn,
            "agentRuntimeId": self.runtime_id,
            "agentRuntimeVersion": RUNTIME_VERSION,
            "agentRuntimeName": self.name,
            "description": f"Local runtime serving {self.app_import} (offline stand-in)",
            "lastUpdatedAt": self.updated_at,
            "status": "READY",
        }

    def describe(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "createdAt": self.created_at,
            "roleArn": f"arn:aws:iam::{self.account}:role/AgentCoreRuntime-{self.name}",
            "networkConfiguration": {"networkMode": "PUBLIC"},
            "protocolConfiguration": {"serverProtocol": "HTTP"},
            "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
            "environmentVariables": dict(self.env),
        }
