"""A light AgentCore-style app for transport and restart tests: it reports to the Job Runtime
emulator over HTTP, like the real agent, but plays no game (no Strands, so hundreds of
concurrent rollouts stay cheap on two cores).

The payload's `prompt` says what to do:
- "quick": CompleteRollout and UpdateReward, then answer {"reward": r};
- "report-then-hold": report, then hold the answer until released (or HOLD_S passes);
- "hold-then-report": one sampling call, then hold, then report (an orphan once a restart cut
  its caller off).
`r` is taken from the rollout id's last three digits / 100, so a reward landing on the wrong
trajectory would show. The work runs in a thread pool (threads, like a sync handler under
BedrockAgentCoreApp), which a restart cannot cancel.

Importable in a child process (`mode="subprocess"`): it only needs the standard library and
`mtrl_course.local.tokens`.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from mtrl_course.local.tokens import mint_token

ACCESS_KEY = "testing-reporting-app"
SECRET = "reporting-app-secret-for-offline-tests-only"
ACCOUNT = "111122223333"
REGION = "us-east-1"
HOLD_S = 20.0
WORKERS = 300  # more than any test's concurrency: no rollout queues for a thread

RELEASE = threading.Event()
ORPHAN_STATUSES: list[tuple[str, int]] = []  # (rollout id, status of its late UpdateReward)
_pool = ThreadPoolExecutor(WORKERS, "reporting-app")
_token_lock = threading.Lock()
_token: tuple[str, float] | None = None


def reward_for(rollout_id: str) -> float:
    return int(rollout_id[-3:]) / 100


def _bearer() -> str:
    global _token
    with _token_lock:
        if _token is None or time.monotonic() > _token[1]:
            _token = (mint_token(ACCESS_KEY, SECRET, REGION), time.monotonic() + 600)
        return _token[0]


def _post(endpoint: str, path: str, body: dict, **extra_headers: str) -> int:
    url = urlsplit(endpoint)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {_bearer()}", **extra_headers}
        connection.request("POST", path, body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def _report(metadata: dict) -> int:
    ids = {"JobArn": metadata["jobArn"], "TrajectoryId": metadata["rolloutId"]}
    first = _post(metadata["endpoint"], "/complete-rollout", {**ids, "Status": "ready"})
    second = _post(metadata["endpoint"], "/update-reward", {**ids, "Rewards": [reward_for(metadata["rolloutId"])]})
    return second if first == 200 else first


def _work(payload: dict) -> dict:
    kind, metadata = payload["prompt"], payload["metadata"]
    if kind == "hold-then-report":
        # One sampling call first: the test sees the rollout has reached the agent.
        _post(
            metadata["endpoint"],
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}]},
            **{
                "X-Amzn-SageMaker-Job-Arn": metadata["jobArn"],
                "X-Amzn-SageMaker-Trajectory-Id": metadata["rolloutId"],
            },
        )
        released = RELEASE.wait(HOLD_S)
        status = _report(metadata)
        if released:
            ORPHAN_STATUSES.append((metadata["rolloutId"], status))
        return {"reward": reward_for(metadata["rolloutId"])}
    status = _report(metadata)
    if status != 200:
        raise RuntimeError(f"reporting {metadata['rolloutId']} answered {status}")
    if kind == "report-then-hold":
        RELEASE.wait(HOLD_S)
    return {"reward": reward_for(metadata["rolloutId"])}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    status, reply = 200, {"status": "Healthy"}
    if scope["path"] == "/invocations":
        try:
            reply = await asyncio.get_running_loop().run_in_executor(_pool, _work, json.loads(body))
        except Exception as error:  # the app's 500, as BedrockAgentCoreApp answers a handler error
            status, reply = 500, {"error": str(error)}
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(reply).encode()})
