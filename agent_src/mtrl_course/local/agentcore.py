"""Offline Bedrock AgentCore control and data plane: the registry of local runtimes.

InvokeAgentRuntime, GetAgentRuntime and ListAgentRuntimes reach the runtimes that
`local.agent_server.LocalAgentRuntime` registers here.
"""

from __future__ import annotations

import io
import logging
import threading
from typing import Any
from urllib.parse import unquote

from mtrl_course.errors import ServiceError
from mtrl_course.local.apicall import JSON, ApiCall

logger = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# AgentCore runtimes (served by local.agent_server.LocalAgentRuntime)

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
            relation = (
                f"greater than or equal to {SESSION_ID_MIN}"
                if len(session_id) < SESSION_ID_MIN
                else f"less than or equal to {SESSION_ID_MAX}"
            )
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
        status, response_type, body = runtime.invoke_http(
            payload, session_id, content_type=content_type, accept=params.get("accept")
        )
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
