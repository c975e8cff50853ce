"""Offline: an AgentCore runtime whose program never serves HTTP, as with the handler alone.

Notebook 03 uses it to reproduce the diagnosis table's timeout row: without `@app.entrypoint` the
program defines the handler and ends, so every invocation waits for a port that never opens.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from mtrl_course import config
from mtrl_course.errors import ServiceError
from mtrl_course.local.names import INIT_TIMEOUT_MESSAGE, NO_ENTRYPOINT_PROGRAM, NO_SERVER_NAME, OFFLINE_INIT_TIMEOUT_S
from mtrl_course.local.agent_server import runtime_id_for
from mtrl_course.local.offline_backend import active as offline_backend

PORT_POLL_S = 0.1
PROGRAM_STOP_TIMEOUT_S = 10.0
# The program only imports the SageMaker SDK (several seconds) and ends.
PROGRAM_WAIT_S = 60.0
# NO_ENTRYPOINT_PROGRAM (names): the walkthrough's broken decorator stack, no HTTP server at all.


class NoServerRuntime:
    """Offline: a runtime whose program never serves HTTP, as with the handler alone.

    `start()` runs `NO_ENTRYPOINT_PROGRAM` as its own process, the way AgentCore runs the
    entrypoint file: it defines the `@sagemaker_rft_handler` function and ends, listening on no
    port. An invocation waits `init_timeout` seconds for the port, then fails with AgentCore's
    RuntimeClientError, as the deployed runtime fails after 30 s. Registered with the offline
    backend like any local runtime; `close()` stops the program and unregisters.
    """

    def __init__(self, name: str = NO_SERVER_NAME, *, init_timeout: float = OFFLINE_INIT_TIMEOUT_S):
        if config.is_live():
            raise RuntimeError("NoServerRuntime is offline only")
        self.name = name
        self.init_timeout = float(init_timeout)
        self.runtime_id = runtime_id_for(name)
        self.arn = f"arn:aws:bedrock-agentcore:{config.OFFLINE_REGION}:{config.MOTO_ACCOUNT}:runtime/{self.runtime_id}"
        self.port = _free_port()
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        offline_backend().register_runtime(self)

    def start(self) -> NoServerRuntime:
        with self._lock:
            if self._process is None:
                env = {**os.environ, "PORT": str(self.port)}
                self._process = subprocess.Popen(
                    [sys.executable, "-c", NO_ENTRYPOINT_PROGRAM],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
        return self

    def program_status(self) -> str:
        """What the runtime's program is doing: still starting, or ended without serving."""
        if self._process is None:
            return "not started"
        code = self._process.poll()
        listening = _port_open(self.port)
        if code is None:
            return "running, " + ("listening on its port" if listening else "not listening on any port")
        return f"ended with exit code {code}, having never listened on a port"

    def wait(self, timeout: float = PROGRAM_WAIT_S) -> str:
        """Wait up to `timeout` seconds for the program to end; returns `program_status()`."""
        process = self._process
        if process is not None:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.program_status()

    def invoke_http(
        self, payload: bytes, session_id: str, *, content_type: str = "", accept: str | None = None
    ) -> tuple[int, str, bytes]:
        deadline = time.monotonic() + self.init_timeout
        while time.monotonic() < deadline:
            if _port_open(self.port):  # never, for this program; a server would be forwarded to here
                raise ServiceError("RuntimeClientError", "NoServerRuntime found a server it did not expect", 424)
            time.sleep(PORT_POLL_S)
        raise ServiceError("RuntimeClientError", INIT_TIMEOUT_MESSAGE.format(seconds=self.init_timeout), 424)

    def summary(self) -> dict[str, Any]:
        return {
            "agentRuntimeArn": self.arn,
            "agentRuntimeId": self.runtime_id,
            "agentRuntimeVersion": "1",
            "agentRuntimeName": self.name,
            "description": "Offline stand-in: an entrypoint without @app.entrypoint (never serves HTTP)",
            "status": "READY",
        }

    def describe(self) -> dict[str, Any]:
        return self.summary()

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(PROGRAM_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()

    def close(self) -> None:
        self.stop()
        offline_backend().unregister_runtime(self.arn)

    def __enter__(self) -> NoServerRuntime:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(PORT_POLL_S)
        return probe.connect_ex(("127.0.0.1", port)) == 0
