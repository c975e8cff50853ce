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

Restarts, as AgentCore behaves (a redeploy replaces the session's microVM):
- every invocation in flight fails at once with RuntimeClientError (424) saying the runtime was
  restarted; `stop()` shuts down each in-flight connection itself, because closing a socket
  from another thread does not wake a thread blocked reading it (callers used to wait out the
  900 s invoke timeout);
- the agent behind a cut-off invocation can no longer reach the Job Runtime: AgentCore kills it
  with its microVM; here a subprocess is killed, and in thread mode (threads cannot be killed)
  the Job Runtime emulator the payload names is told to refuse the trajectory's later calls
  (`JobRuntimeEmulator.end_session`). So no reward is recorded for a rollout whose caller was
  told it failed; a reward the agent had reported before the cut is named in the error (the
  caller is told the truth).
- a subprocess that dies on its own is not `serving`, and invocations fail at once saying so.

Transport, sized on purpose (DESIGN.md, "Transport sizing"):
- one loopback connection per invocation (`http.client`, no pool): no pool limit can queue an
  invocation behind others (httpx's default pool holds 100 connections, and a caller waiting for
  a pool slot counts against its timeout), and a restart has exactly the sockets in flight to
  cut. A loopback connect costs about 0.1 ms against rollouts of 100 ms and more.
- the listening socket's backlog is uvicorn's 2048 (the kernel caps it at somaxconn), far above
  the service's maximum `rollout_max_concurrency` of 96 and the 256 the stress test uses.
- no retry here: AgentCore does not retry an invocation; the service does, with a new
  trajectory (`rollout_max_retries`).
- timeouts: `init_timeout` for a runtime that is not serving, `invoke_timeout` (900 s, above the
  service's 600 s rollout_timeout) for each read of one invocation.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import http.client
import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtrl_course import config
from mtrl_course.local.names import DEFAULT_RUNTIME_NAME, INIT_TIMEOUT_MESSAGE
from mtrl_course.local.service import ServiceError

DEFAULT_APP = "wordle_agent.main:app"
DEFAULT_NAME = DEFAULT_RUNTIME_NAME
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
# Guesses at AgentCore's messages (the Python SDK does not contain them; INIT_TIMEOUT_MESSAGE is in names).
RUNTIME_ERROR_MESSAGE = (
    "Received error ({status}) from runtime. Please check your CloudWatch logs for more information."
)
RUNTIME_DROPPED_MESSAGE = (
    "The runtime session ended before the agent answered ({reason}); the runtime may have been restarted."
)
RUNTIME_RESTARTED_MESSAGE = (
    "The runtime session ended before the agent answered: the runtime was restarted (redeployed) "
    "while this invocation was in flight."
)
RUNTIME_EXITED_MESSAGE = "The runtime's process exited (code {code}) and is not serving; restart it."
# Appended to RUNTIME_RESTARTED_MESSAGE when the agent had reported its reward before the cut.
REWARD_ALREADY_RECORDED = " The agent had already reported trajectory {trajectory}'s reward ({rewards}) before the restart; the Job Runtime keeps it."
# The endpoint the agent reads when the payload names none (wordle_agent.rollout.RUNTIME_ENDPOINT_ENV).
RUNTIME_ENDPOINT_ENV = "RFT_RUNTIME_ENDPOINT"
TRAJECTORY_KEYS = ("rolloutId", "trajectory_id", "trajectoryId")


def runtime_id_for(name: str) -> str:
    """`<name>-<10 chars>`, stable for a name, so offline ARNs repeat from run to run."""
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()
    return f"{name}-{digest[:RUNTIME_SUFFIX_LENGTH]}"


@dataclass(eq=False)  # identity hashing: kept in a set
class _Invocation:
    """One invocation in flight: its connection, and what to fence if a restart cuts it."""

    connection: http.client.HTTPConnection
    payload: bytes
    cut: bool = False
    recorded_reward: tuple[float, ...] | None = None
    fenced_trajectory: str | None = None


def _rollout_ids(payload: bytes, default_endpoint: str | None) -> tuple[str, str, str] | None:
    """(Job Runtime endpoint, job ARN, trajectory id) a rollout payload names, if it names them."""
    try:
        metadata = json.loads(payload).get("metadata")
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(metadata, dict):
        return None
    job_arn = metadata.get("jobArn") or metadata.get("job_arn")
    trajectory = next((metadata[k] for k in TRAJECTORY_KEYS if isinstance(metadata.get(k), str)), None)
    endpoint = metadata.get("endpoint") if isinstance(metadata.get("endpoint"), str) else default_endpoint
    if not (isinstance(job_arn, str) and trajectory and endpoint):
        return None
    return endpoint.rstrip("/"), job_arn, trajectory


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    """Signal the runtime's process group (it was started as its own session)."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def live_group_members(pgid: int) -> list[int]:
    """Process ids in group `pgid` that are still running (zombies awaiting their reaper excluded).

    After a SIGKILL the workers a supervisor forked are reparented and stay zombies until init
    reaps them; they hold no port and run no code, but `killpg(pgid, 0)` still finds them.
    Reads /proc where there is one, else falls back to that signal probe.
    """
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone while we looked
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            members.append(int(entry))
    return members


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
        app: the app object itself, instead (thread mode only): an in-process caller's own
            `wordle_agent.main.build_app(model, observer)`; `app_import` then only names it.
        name: the runtime name (AgentCore's rule: a letter, then letters, digits or _).
        mode: "thread" or "subprocess" (see the module docstring).
        env: environment variables of the runtime (process-wide in thread mode).
        init_timeout: how long an invocation waits for a runtime that is not serving yet.
        invoke_timeout: how long one invocation may take.
        region, account: where the ARN says the runtime lives (default: the offline ones).
        register: register with the offline backend (the default in offline mode).
        workers: app processes sharing the port (subprocess mode). AgentCore runs every session
            in its own microVM, so concurrent invocations never share an interpreter lock there;
            one process here would serialise them on one core.
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
        workers: int = 1,
        app: Any = None,
    ):
        if not re.fullmatch(NAME_PATTERN, name):
            raise ValueError(f"runtime name {name!r} is not valid: it must match {NAME_PATTERN} (no hyphens)")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if workers < 1 or (workers > 1 and mode != "subprocess"):
            raise ValueError(f"workers must be 1, or more in subprocess mode; got {workers} in {mode} mode")
        if ":" not in app_import:
            raise ValueError(f"app_import must look like 'package.module:app', got {app_import!r}")
        if app is not None and mode != "thread":
            raise ValueError("an app object can only be served in thread mode; a subprocess imports app_import")
        self.app_import = app_import
        self.app = app
        self.workers = workers
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
        self._in_flight: set[_Invocation] = set()
        self._saved_env: dict[str, str | None] = {}
        self.registered = (not config.is_live()) if register is None else register
        if self.registered:
            from mtrl_course.local.offline_backend import active as offline_backend

            offline_backend().register_runtime(self)

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError(f"runtime {self.name} is not started; call start()")
        return f"http://{HOST}:{self._port}"

    @property
    def serving(self) -> bool:
        """Answering `/ping` and still running (a dead child process is not serving)."""
        return self._ready.is_set() and self._alive()

    @property
    def in_flight(self) -> int:
        """Invocations sent and not yet answered."""
        with self._lock:
            return len(self._in_flight)

    def start(self, wait: bool = True) -> LocalAgentRuntime:
        """Start serving (idempotent); with `wait`, block until `/ping` answers."""
        with self._lock:
            if self._thread is None and self._process is None:
                sock = self._bind()
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
                    raise RuntimeError(
                        f"runtime {self.name} stopped while starting ({self.app_import}); see its log output"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(f"runtime {self.name} did not answer {PING_PATH} within {self.init_timeout:g} s")
        return self

    def _bind(self) -> socket.socket:
        # On restart the port is the old server's; its thread releases it within a loop tick
        # or two of stop(), even while cut-off handler threads are still winding down.
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while True:
            try:
                return _bound_socket(self._port or 0)
            except OSError:
                if self._port is None or time.monotonic() > deadline:
                    raise
                time.sleep(PING_INTERVAL_S)

    def _alive(self) -> bool:
        thread, process = self._thread, self._process
        return (thread is not None and thread.is_alive()) or (process is not None and process.poll() is None)

    def _start_thread(self, sock: socket.socket) -> None:
        import uvicorn

        app = self.app
        if app is None:
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
        server = uvicorn.Server(
            uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=1)
        )

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
            sys.executable,
            "-m",
            "uvicorn",
            self.app_import,
            "--fd",
            str(sock.fileno()),
            "--lifespan",
            "off",
            "--log-level",
            "warning",
            "--no-access-log",
            "--timeout-graceful-shutdown",
            "1",
            "--workers",
            str(self.workers),
        ]
        environment = {**os.environ, **self.env}
        # Its own process group: a stop reaches uvicorn's worker processes too, not only their supervisor.
        self._process = subprocess.Popen(
            command, env=environment, pass_fds=(sock.fileno(),), stdout=subprocess.DEVNULL, start_new_session=True
        )
        sock.close()  # the child holds its own copy

    def _watch_ready(self) -> None:
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
        """Stop serving; in-flight invocations are cut off at once (idempotent).

        Order matters: the cut-off trajectories are fenced at the Job Runtime before their
        connections are shut down, so an agent thread that outlives its invocation (thread mode)
        cannot report a reward its caller will be told never came.
        """
        with self._lock:
            self._ready.clear()
            server, thread, process = self._server, self._thread, self._process
            self._server = self._thread = self._process = None
            cut = list(self._in_flight)
            for invocation in cut:
                invocation.cut = True
        for invocation in cut:
            self._fence(invocation)
        for invocation in cut:
            sock = invocation.connection.sock
            if sock is not None:
                try:
                    # shutdown, not close: it wakes the invoking thread blocked in recv().
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if server is not None:
            server.should_exit = True
            server.force_exit = True
        if process is not None:
            # A redeploy ends the session's microVM: with invocations cut, nothing is left to finish.
            _signal_group(process, signal.SIGKILL if cut else signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(STOP_TIMEOUT_S)
            _signal_group(process, signal.SIGKILL)  # any worker its supervisor left behind
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while live_group_members(process.pid) and time.monotonic() < deadline:
                time.sleep(0.02)  # a killed worker runs until the kernel delivers the signal
        if thread is not None:
            # Cut-off handler threads keep the old server's loop waiting for them (fenced, they
            # end quickly); the port is free already, so a restart does not wait for them long.
            thread.join(1.0 if cut else STOP_TIMEOUT_S)
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    def _fence(self, invocation: _Invocation) -> None:
        from mtrl_course.local.job_runtime_emulator import serving_emulator

        ids = _rollout_ids(
            invocation.payload, self.env.get(RUNTIME_ENDPOINT_ENV) or os.environ.get(RUNTIME_ENDPOINT_ENV)
        )
        if ids is None:
            return
        endpoint, job_arn, trajectory = ids
        emulator = serving_emulator(endpoint)
        if emulator is None:
            return
        try:
            record = emulator.end_session(job_arn, trajectory, f"the agent runtime {self.arn} was restarted")
        except (KeyError, ValueError):
            return
        invocation.fenced_trajectory = trajectory
        invocation.recorded_reward = record.rewards

    def restart(self, env: Mapping[str, str] | None = None) -> LocalAgentRuntime:
        """Stop and start again on the same port (a redeploy); `env` replaces the variables given."""
        with self._lock:
            # Before the cut, so a caller told "restarted" already sees the new generation.
            self.generation += 1
            self.updated_at = dt.datetime.now(dt.timezone.utc)
        self.stop()
        if env is not None:
            self.env.update(env)
        return self.start()

    def close(self) -> None:
        """Stop and unregister from the offline backend."""
        self.stop()
        if self.registered:
            from mtrl_course.local.offline_backend import active as offline_backend

            offline_backend().unregister_runtime(self.arn)
            self.registered = False

    def __enter__(self) -> LocalAgentRuntime:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- invocations --------------------------------------------------------------------------
    def invoke_http(
        self,
        payload: bytes,
        session_id: str,
        *,
        content_type: str = "application/json",
        accept: str | None = None,
        generation: int | None = None,
    ) -> tuple[int, str, bytes]:
        """One InvokeAgentRuntime as AgentCore performs it: returns (status, content type, body).

        Raises `ServiceError` as AgentCore would answer: RuntimeClientError (424) when the
        runtime does not come up within `init_timeout`, when its process has exited, when the app
        answers 4xx/5xx, when a restart cuts the invocation off, or when the connection drops.
        `generation` pins the deployment (as a job is bound to the runtime version it started
        with): once the runtime has been restarted past it, the invocation fails at once.
        """
        headers = {"Content-Type": content_type, SESSION_HEADER: session_id, REQUEST_ID_HEADER: str(uuid.uuid4())}
        if accept:
            headers["Accept"] = accept
        invocation = self._begin(payload, generation)
        connection = invocation.connection
        try:
            connection.request("POST", INVOCATIONS_PATH, body=payload, headers=headers)
            reply = connection.getresponse()
            body = reply.read()
            status, reply_type = reply.status, reply.getheader("content-type", "application/json")
        except (OSError, http.client.HTTPException) as err:
            if invocation.cut:
                raise ServiceError("RuntimeClientError", self._restarted_message(invocation), 424) from None
            if not self._alive():
                raise ServiceError("RuntimeClientError", self._exited_message(), 424) from None
            raise ServiceError(
                "RuntimeClientError", RUNTIME_DROPPED_MESSAGE.format(reason=type(err).__name__), 424
            ) from None
        finally:
            with self._lock:
                self._in_flight.discard(invocation)
            connection.close()
        # A complete answer that a restart raced past is still the agent's answer: returned.
        if status >= 400:
            raise ServiceError("RuntimeClientError", RUNTIME_ERROR_MESSAGE.format(status=status), 424)
        return status, reply_type, body

    def _begin(self, payload: bytes, pinned: int | None) -> _Invocation:
        """Wait for the runtime to serve, connect, and register the invocation as in flight."""
        deadline = time.monotonic() + self.init_timeout
        with self._lock:
            # An invocation belongs to the deployment it arrived at: if that one is restarted
            # before the invocation is registered, it is cut off like those already in flight
            # (a restart bumps the generation before it stops the server).
            generation = self.generation if pinned is None else pinned
        while True:
            if generation != self.generation:
                raise ServiceError("RuntimeClientError", RUNTIME_RESTARTED_MESSAGE, 424)
            if not self._ready.wait(max(0.0, deadline - time.monotonic())):
                raise ServiceError("RuntimeClientError", INIT_TIMEOUT_MESSAGE.format(seconds=self.init_timeout), 424)
            if not self._alive():
                raise ServiceError("RuntimeClientError", self._exited_message(), 424)
            connection = http.client.HTTPConnection(HOST, self._port, timeout=self.invoke_timeout)
            invocation = _Invocation(connection, payload)
            try:
                connection.connect()
                connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                connection.close()
                if generation != self.generation:
                    raise ServiceError("RuntimeClientError", RUNTIME_RESTARTED_MESSAGE, 424) from None
                if self._ready.is_set():
                    raise ServiceError(
                        "RuntimeClientError", RUNTIME_DROPPED_MESSAGE.format(reason="connection refused"), 424
                    ) from None
                continue  # stopped meanwhile (not restarted): wait for it to serve again
            with self._lock:
                # Registered under the lock stop() takes: either stop() sees this socket and
                # shuts it down, or this sees that the runtime was stopped or restarted.
                if self._ready.is_set() and generation == self.generation:
                    self._in_flight.add(invocation)
                    return invocation
            connection.close()
            if generation != self.generation:
                raise ServiceError("RuntimeClientError", RUNTIME_RESTARTED_MESSAGE, 424)

    def _restarted_message(self, invocation: _Invocation) -> str:
        message = RUNTIME_RESTARTED_MESSAGE
        if invocation.recorded_reward is not None:
            rewards = ", ".join(f"{r:g}" for r in invocation.recorded_reward)
            message += REWARD_ALREADY_RECORDED.format(trajectory=invocation.fenced_trajectory, rewards=rewards)
        return message

    def _exited_message(self) -> str:
        process = self._process
        code = process.poll() if process is not None else None
        return RUNTIME_EXITED_MESSAGE.format(code=code)

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
