"""The local AgentCore runtime: serving the real Wordle app (and tiny apps) on loopback, boto3's
invoke_agent_runtime reaching it offline, restart, stop, and the subprocess mode."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import httpx
import pytest
from botocore.exceptions import ClientError

from mtrl_course import aws, config, dataset
from mtrl_course.local.jobruntime import JOB_NOT_FOUND_MESSAGE, JobRuntimeEmulator
from mtrl_course.local.runtime import LocalAgentRuntime, runtime_id_for

SESSION_ID = "course-smoke-test-session-0000000001"  # 36 characters, like the walkthrough's
SLOW_HANDLER_S = 3.0
TESTS_DIR = str(Path(__file__).resolve().parent)


async def tiny_app(scope, receive, send):
    """/ping, and /invocations that answers {"reward": ...} or sleeps for a "slow" payload."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["path"] == "/invocations" and body == b'"slow"':
        import asyncio

        await asyncio.sleep(SLOW_HANDLER_S)
    reply = {"status": "Healthy"} if scope["path"] == "/ping" else {"reward": 0.25, "effort": os.environ.get("REASONING_EFFORT")}
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(reply).encode()})


@pytest.fixture
def offline(tmp_path):
    backend = aws.reset_offline(tmp_path / "state")
    yield backend
    aws.reset_offline(tmp_path / "state")


def invoke(arn: str, payload: bytes) -> dict:
    client = aws.session().client("bedrock-agentcore")
    reply = client.invoke_agent_runtime(agentRuntimeArn=arn, payload=payload, runtimeSessionId=SESSION_ID)
    assert reply["statusCode"] == 200
    return json.loads(reply["response"].read())


def test_names_must_follow_agentcore_rules(offline):
    with pytest.raises(ValueError, match="no hyphens"):
        LocalAgentRuntime(f"{__name__}:tiny_app", name="wordle-agent")
    assert runtime_id_for("WordleMTRL") == runtime_id_for("WordleMTRL")  # stable ARNs across runs
    assert len(runtime_id_for("WordleMTRL").split("-", 1)[1]) == 10


def test_tiny_app_serves_ping_and_invocations_through_boto3(offline):
    with LocalAgentRuntime(f"{__name__}:tiny_app", name="Tiny") as runtime:
        assert httpx.get(runtime.url + "/ping").json() == {"status": "Healthy"}
        assert invoke(runtime.arn, b"{}")["reward"] == 0.25
        assert runtime.invoke({"prompt": "x"})["reward"] == 0.25
    assert offline.runtimes.get(runtime.arn) is None  # closing unregisters it


def test_thread_mode_sets_runtime_env_and_restores_it_on_stop(offline, monkeypatch):
    monkeypatch.delenv("REASONING_EFFORT", raising=False)
    runtime = LocalAgentRuntime(f"{__name__}:tiny_app", name="Effort", env={"REASONING_EFFORT": "low"}).start()
    assert runtime.invoke({})["effort"] == "low"
    runtime.stop()
    assert "REASONING_EFFORT" not in os.environ
    runtime.close()


def test_restart_keeps_the_arn_and_cuts_off_in_flight_invocations(offline):
    runtime = LocalAgentRuntime(f"{__name__}:tiny_app", name="Restarts", init_timeout=5.0).start()
    port = runtime.url
    outcome = {}

    def slow_call():
        try:
            outcome["reply"] = invoke(runtime.arn, b'"slow"')
        except ClientError as err:
            outcome["error"] = err.response["Error"]

    caller = threading.Thread(target=slow_call)
    caller.start()
    time.sleep(0.3)
    started = time.monotonic()
    runtime.restart()
    caller.join(10)
    assert time.monotonic() - started < SLOW_HANDLER_S  # the restart did not wait for the rollout
    assert outcome["error"]["Code"] == "RuntimeClientError" and "restarted" in outcome["error"]["Message"]
    assert (runtime.generation, runtime.url) == (1, port)
    assert invoke(runtime.arn, b"{}")["reward"] == 0.25
    runtime.close()


def test_stopped_runtime_times_out_like_an_app_without_a_server(offline):
    runtime = LocalAgentRuntime(f"{__name__}:tiny_app", name="Stopped", init_timeout=0.3).start()
    runtime.stop()
    with pytest.raises(ClientError) as excinfo:
        invoke(runtime.arn, b"{}")
    assert excinfo.value.response["Error"]["Message"].startswith("Runtime initialization time exceeded")
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 424


def test_subprocess_mode_serves_the_same_app_with_its_own_environment(offline):
    env = {"PYTHONPATH": os.pathsep.join([TESTS_DIR, os.environ.get("PYTHONPATH", "")]), "REASONING_EFFORT": "medium"}
    with LocalAgentRuntime("test_local_runtime:tiny_app", name="Child", mode="subprocess", env=env) as runtime:
        assert invoke(runtime.arn, b"{}") == {"reward": 0.25, "effort": "medium"}
        assert "REASONING_EFFORT" not in os.environ or os.environ["REASONING_EFFORT"] != "medium"
        runtime.restart(env={"REASONING_EFFORT": "low"})
        assert invoke(runtime.arn, b"{}")["effort"] == "low"


@pytest.mark.slow
def test_real_wordle_app_answers_the_smoke_payload_offline(offline):
    """The walkthrough's runtime check: fake job ARN in our account -> 400 "Could not find job" -> -1.5."""
    emulator = JobRuntimeEmulator().serve()
    # The handler signs its bearer tokens with the process's credentials: trust those.
    emulator.add_credentials(
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], config.MOTO_ACCOUNT, session_token=os.environ.get("AWS_SESSION_TOKEN")
    )
    payload = dataset.smoke_payload(account_id=config.MOTO_ACCOUNT, region=config.OFFLINE_REGION)
    try:
        with LocalAgentRuntime(env={"RFT_RUNTIME_ENDPOINT": emulator.endpoint}) as runtime:
            assert runtime.arn.endswith(":runtime/" + runtime_id_for("WordleMTRL"))
            assert httpx.get(runtime.url + "/ping").json()["status"] in ("Healthy", "HealthyBusy")
            assert invoke(runtime.arn, json.dumps(payload).encode()) == {"reward": -1.5}
            rejected = emulator.rejections(payload["metadata"]["jobArn"])
            # A token cached by an earlier test may be refused first (403); the agent re-signs.
            assert rejected[-1].status == 400 and rejected[-1].message.startswith(JOB_NOT_FOUND_MESSAGE)
            assert {r.status for r in rejected} <= {400, 403}
            runtime.restart()
            assert invoke(runtime.arn, json.dumps(payload).encode()) == {"reward": -1.5}
    finally:
        emulator.stop()


not_an_app = None


def test_module_without_an_app_object_is_refused_clearly(offline):
    runtime = LocalAgentRuntime(f"{__name__}:not_an_app", name="NoApp")
    with pytest.raises(TypeError, match="starts no HTTP server"):
        runtime.start()
    runtime.close()
