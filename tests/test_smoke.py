"""The runtime smoke test: session ids, the payload, the invocation through boto3 (offline: the
local runtime), the log capture, and the diagnosis table, row by row, on real offline outcomes."""

from __future__ import annotations

import json
import logging

import pytest

from mtrl_course import aws, config, smoke
from mtrl_course.local.agent_server import LocalAgentRuntime

REAL_LOOKING = "4" + "0" * 7 + "9876"
ARN = f"arn:aws:bedrock-agentcore:us-east-1:{config.MOTO_ACCOUNT}:runtime/WordleMTRL_WordleAgent-ABCDEFGHIJ"
APP_LOGGER = "wordle_agent.smoke_test_app"


async def reward_app(scope, receive, send):
    """An AgentCore-shaped app: /ping is healthy, /invocations logs one line and answers -1.5."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/invocations":
        logging.getLogger(APP_LOGGER).info("parsed task smoke-test")
        logging.getLogger("mtrl_course.local.job_runtime_emulator").info("refused: 400 Could not find job: x")
    body = json.dumps({"status": "Healthy"} if scope["path"] == "/ping" else {"reward": -1.5}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def offline(offline_session):
    return offline_session


def result(**fields) -> smoke.SmokeResult:
    base = {
        "runtime_arn": ARN,
        "session_id": "s" * 40,
        "job_arn": None,
        "status": 200,
        "body": "",
        "reward": None,
        "elapsed": 0.1,
    }
    return smoke.SmokeResult(**{**base, **fields})


def lines(*messages: str) -> tuple[smoke.LogLine, ...]:
    return tuple(smoke.LogLine("agent", "INFO", m) for m in messages)


# --- payload and session id -----------------------------------------------------------------------


def test_session_ids_meet_agentcore_length_rule_and_differ():
    ids = {smoke.runtime_session_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(smoke.SESSION_ID_MIN <= len(i) <= smoke.SESSION_ID_MAX for i in ids)
    with pytest.raises(ValueError, match="33 to 256"):
        smoke.runtime_session_id("p" * 250)


def test_payload_carries_the_account_and_a_task_string():
    payload = smoke.smoke_payload(config.MOTO_ACCOUNT, "us-west-2")
    assert payload["metadata"]["jobArn"] == f"arn:aws:sagemaker:us-west-2:{config.MOTO_ACCOUNT}:job/AgentRFT/smoke-test"
    assert isinstance(payload["prompt"], str) and json.loads(payload["prompt"])["answer"] == "beach"
    with pytest.raises(ValueError, match="12-digit"):
        smoke.smoke_payload("1234")


def test_expected_reward_is_the_agents_no_play_reward():
    from wordle_agent.reward import NO_PLAY_REWARD

    assert smoke.EXPECTED_REWARD == NO_PLAY_REWARD


def test_runtime_region_and_log_group():
    assert smoke.runtime_region(ARN) == "us-east-1"
    assert smoke.runtime_log_group(ARN) == "/aws/bedrock-agentcore/runtimes/WordleMTRL_WordleAgent-ABCDEFGHIJ-DEFAULT"
    with pytest.raises(ValueError, match="not an AgentCore runtime ARN"):
        smoke.runtime_log_group("arn:aws:lambda:us-east-1:123456789012:function:f")


# --- diagnosis, on recorded outcomes ---------------------------------------------------------------


def test_each_symptom_maps_to_its_row():
    not_found = "rollout r1: attempt failed: BadRequestError: Error code: 400 - {'Message': 'Could not find job: arn'}"
    cases = [
        (result(reward=-1.5, body='{"reward": -1.5}', logs=lines("parsed task", not_found)), smoke.WORKS),
        (
            result(
                reward=-1.5, logs=lines("403 - {'Message': 'The caller is not authorized to access this resource'}")
            ),
            smoke.OTHER_ACCOUNT,
        ),
        (
            result(status=424, error_code="RuntimeClientError", error_message="Runtime initialization time exceeded."),
            smoke.NO_SERVER,
        ),
        (
            result(status=None, error_code="ReadTimeoutError", error_message="Read timeout on endpoint URL"),
            smoke.NO_SERVER,
        ),
        (
            result(
                status=None,
                error_code="ParamValidationError",
                error_message="Invalid length for parameter runtimeSessionId, value: 32",
            ),
            smoke.SHORT_SESSION,
        ),
        (
            result(
                status=400,
                error_code="ValidationException",
                error_message="Value at 'runtimeSessionId' failed to satisfy constraint",
            ),
            smoke.SHORT_SESSION,
        ),
        (
            result(
                reward=-1.5, logs=lines("AccessDeniedException: role/x is not authorized to perform: sagemaker:Sample")
            ),
            smoke.MISSING_POLICY,
        ),
        (
            result(status=424, error_code="RuntimeClientError", error_message="Received error (500) from runtime."),
            smoke.AGENT_ERROR,
        ),
        (result(reward=-1.5, body='{"reward": -1.5}'), smoke.UNCONFIRMED),
        (result(reward=1.25, body='{"reward": 1.25}', logs=lines("solved")), smoke.UNKNOWN),
    ]
    for outcome, expected in cases:
        assert smoke.diagnose_row(outcome) is expected, outcome
        assert smoke.diagnose(outcome) == (expected.cause, expected.fix)
    assert cases[0][0].ok and not cases[1][0].ok


def test_diagnose_reads_text_and_exceptions_too():
    assert smoke.diagnose_row('{"reward": -1.5} ... 400 Could not find job') is smoke.WORKS
    assert smoke.diagnose_row("403 The caller is not authorized to access this resource") is smoke.OTHER_ACCOUNT
    from botocore.exceptions import ParamValidationError

    error = ParamValidationError(
        report="Invalid length for parameter runtimeSessionId, value: 32, valid min length: 33"
    )
    assert smoke.diagnose_row(error) is smoke.SHORT_SESSION
    assert [row["symptom"] for row in smoke.diagnosis_table()] == [d.symptom for d in smoke.DIAGNOSIS_TABLE]


def test_summary_and_log_table_mask_accounts_and_blank_timings():
    outcome = result(
        job_arn=f"arn:aws:sagemaker:us-east-1:{REAL_LOOKING}:job/AgentRFT/smoke-test",
        reward=-1.5,
        logs=lines(f"job {REAL_LOOKING} reward=-1.5000 elapsed=0.4s", "x" * 400),
    )
    text = json.dumps([outcome.summary(), outcome.log_table()], ensure_ascii=False)
    assert REAL_LOOKING not in text and "9876" in text
    assert "elapsed=0.4s" not in text and "elapsed=…" in text
    assert len(outcome.log_table()[1]["message"]) == smoke.LOG_MESSAGE_CHARS


def test_log_table_blanks_loopback_ports_so_a_status_filter_cannot_match_one():
    # CI once failed on notebook 03: the offline port was 45403 and the "403" filter kept its line.
    outcome = result(logs=lines("policy endpoint http://127.0.0.1:45403/v1", "refused: 403 AccessDenied"))
    rows = outcome.log_table()
    assert rows[0]["message"] == "policy endpoint http://127.0.0.1:<port>/v1"
    assert [row["message"] for row in rows if "403" in row["message"]] == ["refused: 403 AccessDenied"]


# --- invocations offline ----------------------------------------------------------------------------


def test_capture_collects_runtime_lines_and_restores_the_loggers():
    logger = logging.getLogger("wordle_agent")
    before = (logger.level, logger.propagate, list(logger.handlers))
    with smoke.capture_runtime_logs() as captured:
        logging.getLogger("wordle_agent.rollout").info("parsed task t1")
        logging.getLogger("mtrl_course.local.job_runtime_emulator").info("refused POST /sample")
        logging.getLogger("unrelated").warning("not ours")
    assert [(line.source, line.message) for line in captured] == [
        ("agent", "parsed task t1"),
        (smoke.JOB_RUNTIME_SOURCE, "refused POST /sample"),
    ]
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


def test_invoke_smoke_through_boto3_with_captured_logs(offline):
    with LocalAgentRuntime(f"{__name__}:reward_app", name="SmokeTestApp") as runtime:
        outcome = smoke.invoke_smoke(runtime.arn, smoke.smoke_payload(config.MOTO_ACCOUNT), offline)
        assert (outcome.status, outcome.reward, outcome.error_code) == (200, -1.5, None)
        assert outcome.job_arn.endswith(f":{config.MOTO_ACCOUNT}:job/AgentRFT/smoke-test")
        assert len(outcome.session_id) >= smoke.SESSION_ID_MIN
        assert [line.message for line in outcome.logs] == [
            "parsed task smoke-test",
            "refused: 400 Could not find job: x",
        ]
        assert outcome.ok
        short = smoke.invoke_smoke(runtime.arn, b"{}", offline, session_id="x" * 32)
        assert short.error_code == "ParamValidationError" and smoke.diagnose_row(short) is smoke.SHORT_SESSION
        served = smoke.invoke_smoke(runtime.arn, b"{}", offline, session_id="x" * 32, validate=False)
        assert served.error_code == "ValidationException" and served.status == 400
    missing = smoke.invoke_smoke(ARN, b"{}", offline)
    assert missing.error_code == "ResourceNotFoundException" and smoke.diagnose_row(missing) is smoke.UNKNOWN


def test_find_runtime_arn(offline):
    with pytest.raises(LookupError, match="smoke.local_runtime"):
        smoke.find_runtime_arn(offline)
    with LocalAgentRuntime(f"{__name__}:reward_app", name="WordleMTRL_WordleAgent") as runtime:
        assert smoke.find_runtime_arn(offline) == runtime.arn


def test_a_runtime_that_never_serves_times_out(offline):
    with smoke.NoServerRuntime(init_timeout=0.3) as runtime:
        outcome = smoke.invoke_smoke(runtime.arn, smoke.smoke_payload(config.MOTO_ACCOUNT), offline)
        assert outcome.error_code == "RuntimeClientError" and outcome.status == 424
        assert smoke.diagnose_row(outcome) is smoke.NO_SERVER
        assert 0.3 <= outcome.elapsed < 5
        assert "not listening" in runtime.program_status() or "never listened" in runtime.program_status()
    assert aws.offline_backend().runtimes.get(runtime.arn) is None


@pytest.mark.slow
def test_the_real_agent_reproduces_the_walkthroughs_rows(offline):
    """The real app against the Job Runtime emulator: own account -> 400 and -1.5; another -> 403."""
    runtime = smoke.local_runtime()
    try:
        arn = smoke.find_runtime_arn(offline)
        assert arn == runtime.arn and arn.endswith(":runtime/" + runtime.runtime_id)
        works = smoke.invoke_smoke(arn, smoke.smoke_payload(smoke.caller_account(offline)), offline)
        assert works.reward == smoke.EXPECTED_REWARD and works.ok, works.log_table()
        messages = " | ".join(line.message for line in works.logs)
        assert "parsed task smoke-test" in messages and "Could not find job" in messages
        other = smoke.invoke_smoke(arn, smoke.smoke_payload(config.PLACEHOLDER_ACCOUNT), offline)
        assert other.reward == smoke.EXPECTED_REWARD and smoke.diagnose_row(other) is smoke.OTHER_ACCOUNT
        # Starting it again replaces the first one instead of leaving it serving.
        again = smoke.local_runtime()
        assert again is not runtime and aws.offline_backend().runtimes.get(arn) is again and not runtime.serving
        again.close()
    finally:
        runtime.close()


@pytest.mark.slow
@pytest.mark.experiments
def test_the_no_entrypoint_program_ends_without_ever_listening(offline):
    """The handler alone is a plain function: the program imports the SDK, defines it and exits 0."""
    with smoke.NoServerRuntime(init_timeout=0.1) as runtime:
        assert runtime.wait() == "ended with exit code 0, having never listened on a port"
