"""boto3 `sagemakerjobruntime` calls, routed in-process to the attached Job Runtime emulator."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from typing import Any

from mtrl_course.errors import ServiceError, validation_error
from mtrl_course.local.agentcore import DEFAULT_CONTENT_TYPE
from mtrl_course.local.apicall import JSON, ApiCall

logger = logging.getLogger(__name__)

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
            raise ServiceError(
                "InternalServiceError",
                "offline mode: no Job Runtime emulator is attached (offline_backend().attach_job_runtime(emulator)).",
                500,
            )
        return self.emulator

    def _call(self, function: Callable[[], Any]) -> Any:
        from mtrl_course.local.job_runtime_emulator import JobRuntimeError

        try:
            return function()
        except JobRuntimeError as err:
            raise ServiceError(err.error_type, err.message, err.status) from None

    def sample(self, call: ApiCall) -> JSON:
        from mtrl_course.local import job_runtime_emulator

        emulator = self._emulator()
        request = _json_body(call.params["Body"])
        streaming = call.operation == "SampleWithResponseStream"
        path = job_runtime_emulator.SAMPLE_STREAM_PATH if streaming else job_runtime_emulator.SAMPLE_PATH
        response = self._call(
            lambda: emulator.sample(
                call.params["JobArn"], call.params["TrajectoryId"], request, account=self.account, path=path
            )
        )
        if streaming or request.get("stream"):
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            body = job_runtime_emulator.encode_sse(job_runtime_emulator.stream_chunks(response, include_usage))
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
        self._call(
            lambda: emulator.complete_rollout(
                p["JobArn"], p["TrajectoryId"], p.get("Status") or "ready", p.get("ClientToken"), account=self.account
            )
        )
        return {}

    def update_reward(self, call: ApiCall) -> JSON:
        emulator = self._emulator()
        p = call.params
        self._call(
            lambda: emulator.update_reward(
                p["JobArn"], p["TrajectoryId"], p["Rewards"], p.get("ClientToken"), account=self.account
            )
        )
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
