"""The Job Runtime emulator, checked with the real SDK clients as its callers (loopback only).

The emulator is correct when the clients the agent uses in production work against it unchanged:
`RolloutFeedbackClient` (behind `@sagemaker_rft_handler`), `wrap_model(OpenAIModel(...))` in a
real Strands agent, and tokens from `sagemaker.core.token_generator.generate_token`. Credentials
here are fake and live only in this process's environment for the duration of the module.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import openai
import pytest
import requests
from bedrock_agentcore import BedrockAgentCoreApp
from botocore.credentials import CredentialProvider, Credentials

# These imports take several seconds each; they happen once for the module.
from sagemaker.core.token_generator import generate_token
from sagemaker.train.rft import (
    RolloutFeedbackClient,
    clear_rollout_context,
    sagemaker_rft_handler,
    set_rollout_context,
)
from sagemaker.train.rft.adapters.strands import wrap_model
from strands import Agent, tool
from strands.models.openai import OpenAIModel

from mtrl_course.local.job_runtime_emulator import (
    AUTH_FAILED_MESSAGE,
    ERROR_TYPE_HEADER,
    JOB_NOT_FOUND_MESSAGE,
    JobRuntimeEmulator,
    JobRuntimeError,
    LoopbackServer,
    ScriptedPolicy,
    chat_completion,
)
from mtrl_course.local.tokens import (
    TOKEN_PREFIX,
    TokenError,
    mint_token,
    parse_token,
    signature_matches,
)

ACCOUNT = "111122223333"
OTHER_ACCOUNT = "123456789012"
REGION = "us-east-1"
# Fake key material: shaped so the repository's secret scan cannot mistake it for a real key.
ACCESS_KEY = "EMULATORTESTKEY01"
SECRET = "emulator-test-secret"
NEW_ACCESS_KEY = "EMULATORTESTKEY02"
NEW_SECRET = "emulator-test-secret-2"
GUESSES = ("CRANE", "SLATE", "PIOUS")
# Concurrent rollouts in the emulator's own test: enough threads at once to expose a lost or doubled
# reward. The service's maximum (96) and beyond (256) are driven at the agent server in
# tests/test_agent_server.py, and 96 through a whole runtime in tests/test_training.py (second tier).
CONCURRENT_ROLLOUTS = 32


def job_arn(name: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:sagemaker:{REGION}:{account}:job/AgentRFT/{name}"


def guess_script(final_text: str = "Done.") -> ScriptedPolicy:
    return ScriptedPolicy([{"name": "guess_word", "arguments": {"guess": g}} for g in GUESSES], final_text)


class StaticProvider(CredentialProvider):
    METHOD = "emulator-test-static"

    def __init__(self, access_key: str, secret: str) -> None:
        super().__init__()
        self._creds = Credentials(access_key, secret)

    def load(self) -> Credentials:
        return self._creds


@pytest.fixture(scope="module", autouse=True)
def fake_aws_env():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        mp.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        mp.setenv("AWS_REGION", REGION)
        mp.setenv("AWS_DEFAULT_REGION", REGION)
        # Never let a developer's own profile or files leak into token signing.
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "RFT_RUNTIME_ENDPOINT"):
            mp.delenv(name, raising=False)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
        mp.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        agentcore_log = logging.getLogger("bedrock_agentcore")
        level = agentcore_log.level
        agentcore_log.setLevel(logging.WARNING)  # one JSON line per invocation otherwise
        yield
        agentcore_log.setLevel(level)


class Clock:
    """Wall time plus an offset the test can advance (tokens are dated with the real clock)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def served_emulator(clock: Clock) -> JobRuntimeEmulator:
    emulator = JobRuntimeEmulator(clock=clock)
    emulator.add_credentials(ACCESS_KEY, SECRET, ACCOUNT)
    return emulator.serve()


@pytest.fixture(scope="module")
def shared_clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def shared_emu(shared_clock):
    # One server for the module: stopping uvicorn takes about 0.2 s, which adds up over 40 tests.
    # Tests stay independent because each registers its own job (see `arn`).
    with served_emulator(shared_clock) as emulator:
        yield emulator


@pytest.fixture
def clock(shared_clock):
    yield shared_clock
    shared_clock.offset = 0.0


@pytest.fixture
def emu(shared_emu, clock):
    return shared_emu


@pytest.fixture
def own_emu():
    """A private emulator, for tests that change credentials."""
    with served_emulator(Clock()) as emulator:
        yield emulator


@pytest.fixture
def arn(request) -> str:
    """A job ARN unique to the test (job names allow letters, digits and hyphens, up to 63)."""
    name = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name.removeprefix("test_")).strip("-")
    return job_arn(name[-60:].strip("-"))


def feedback_client(emu: JobRuntimeEmulator, arn: str, tid: str) -> RolloutFeedbackClient:
    # camelCase keys, as the service's payload spells them.
    return RolloutFeedbackClient({"jobArn": arn, "rolloutId": tid, "endpoint": emu.endpoint, "region": REGION})


def post_sample(emu, arn, tid, token=None, body=None, path="/v1/chat/completions"):
    hdrs = {"Authorization": f"Bearer {token or generate_token(REGION)}"}
    if arn is not None:
        hdrs["X-Amzn-SageMaker-Job-Arn"] = arn
    if tid is not None:
        hdrs["X-Amzn-SageMaker-Trajectory-Id"] = tid
    body = body or {"model": "default", "messages": [{"role": "user", "content": "play"}]}
    return httpx.post(f"{emu.endpoint}{path}", json=body, headers=hdrs)


# --- tokens ---------------------------------------------------------------------------------------
def test_sdk_token_format_parses_and_verifies():
    token = generate_token(REGION)
    assert token.startswith(TOKEN_PREFIX)
    url = base64.b64decode(token[len(TOKEN_PREFIX) :]).decode()
    assert url.startswith("sagemaker.amazonaws.com/?Action=CallWithBearerToken&") and url.endswith("&Version=1")
    parsed = parse_token(token)
    assert (parsed.access_key, parsed.region, parsed.expires_in, parsed.session_token) == (
        ACCESS_KEY,
        REGION,
        43200,
        None,
    )
    assert abs(parsed.issued_at - time.time()) < 5
    assert signature_matches(parsed, SECRET)
    assert not signature_matches(parsed, SECRET + "x")
    # Rebuilding the token from its own timestamp gives the SDK's bytes exactly.
    assert mint_token(ACCESS_KEY, SECRET, REGION, issued_at=parsed.issued_at) == token


def test_session_token_is_signed_and_must_match(own_emu, monkeypatch):
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session/token+value=")
    token = generate_token(REGION, expiry=timedelta(minutes=5))
    parsed = parse_token(token)
    assert parsed.session_token == "session/token+value=" and parsed.expires_in == 300
    assert (
        mint_token(
            ACCESS_KEY,
            SECRET,
            REGION,
            issued_at=parsed.issued_at,
            expires_in=300,
            session_token="session/token+value=",
        )
        == token
    )
    # Registered as long-term credentials (no session token): the token must be refused.
    with pytest.raises(JobRuntimeError, match=AUTH_FAILED_MESSAGE):
        own_emu.authenticate(f"Bearer {token}")
    own_emu.add_credentials(ACCESS_KEY, SECRET, ACCOUNT, session_token="session/token+value=")
    assert own_emu.authenticate(f"Bearer {token}") == ACCOUNT


def tampered(token: str) -> str:
    """The same token with the last digit of its signature changed."""
    url = base64.b64decode(token[len(TOKEN_PREFIX) :]).decode()
    signed, version = url.rsplit("&", 1)
    flipped = signed[:-1] + ("0" if signed[-1] != "0" else "1")
    return TOKEN_PREFIX + base64.b64encode(f"{flipped}&{version}".encode()).decode()


@pytest.mark.parametrize(
    "make_token, reason",
    [
        (lambda: "not-a-token", "malformed"),
        (lambda: TOKEN_PREFIX + "!!!notbase64", "malformed"),
        (
            lambda: TOKEN_PREFIX + base64.b64encode(b"example.com/?Action=Other").decode(),
            "malformed",
        ),
        (lambda: tampered(mint_token(ACCESS_KEY, SECRET, REGION)), "signature"),
        (lambda: mint_token(ACCESS_KEY, "wrong-secret", REGION), "signature"),
        (lambda: mint_token("UNKNOWNKEY", SECRET, REGION), "unknown access key"),
        (lambda: mint_token(ACCESS_KEY, SECRET, REGION, issued_at=time.time() + 3600), "future"),
    ],
    ids=[
        "garbage",
        "not-base64",
        "wrong-action",
        "tampered",
        "wrong-secret",
        "unknown-key",
        "future-dated",
    ],
)
def test_bad_tokens_fail_authentication(make_token, reason):
    emulator = JobRuntimeEmulator()
    emulator.add_credentials(ACCESS_KEY, SECRET, ACCOUNT)
    assert emulator.authenticate(f"Bearer {mint_token(ACCESS_KEY, SECRET, REGION)}") == ACCOUNT
    with pytest.raises(JobRuntimeError) as err:
        emulator.authenticate(f"Bearer {make_token()}")
    assert (err.value.status, err.value.message) == (403, AUTH_FAILED_MESSAGE)
    assert reason in err.value.detail


def test_parse_token_names_what_is_wrong():
    with pytest.raises(TokenError, match="does not start with"):
        parse_token("Bearer-ish")


def test_endpoint_region_is_enforced_when_set():
    emulator = JobRuntimeEmulator(region="us-west-2")
    emulator.add_credentials(ACCESS_KEY, SECRET, ACCOUNT)
    assert emulator.authenticate(mint_token(ACCESS_KEY, SECRET, "us-west-2")) == ACCOUNT
    with pytest.raises(JobRuntimeError, match="Region"):
        emulator.authenticate(mint_token(ACCESS_KEY, SECRET, REGION))


# --- feedback: the real RolloutFeedbackClient -----------------------------------------------------
def test_report_complete_records_completion_then_reward_once(emu, arn):
    emu.register_job(arn, guess_script())
    client = feedback_client(emu, arn, "rollout-1")
    client.report_complete(0.7)
    record = emu.trajectory(arn, "rollout-1")
    assert (record.state, record.completion_status, record.rewards) == (
        "reward_received",
        "ready",
        (0.7,),
    )
    assert record.completed_at <= record.rewarded_at

    # A second completion is refused with the service's message; the SDK surfaces it as an HTTP error.
    with pytest.raises(requests.HTTPError, match="400"):
        client.complete_rollout()
    raw = requests.post(
        f"{emu.endpoint}/complete-rollout",
        data=json.dumps({"JobArn": arn, "TrajectoryId": "rollout-1", "Status": "ready"}),
        headers={"Authorization": f"Bearer {generate_token(REGION)}"},
    )
    assert raw.status_code == 400 and raw.headers[ERROR_TYPE_HEADER] == "ValidationException"
    assert "Cannot transition trajectory" in raw.json()["Message"]
    with pytest.raises(requests.HTTPError, match="400"):
        client.update_reward(0.9)
    assert emu.trajectory(arn, "rollout-1").rewards == (0.7,)


def test_reward_before_completion_is_refused(emu, arn):
    emu.register_job(arn, guess_script())
    with pytest.raises(requests.HTTPError, match="400"):
        feedback_client(emu, arn, "rollout-2").update_reward(0.5)
    assert emu.trajectory(arn, "rollout-2").rewards is None
    (refusal,) = emu.rejections(arn)
    assert refusal.status == 400 and "call CompleteRollout first" in refusal.message


def test_report_error_marks_failed_and_rewards_zero(emu, arn):
    emu.register_job(arn, guess_script())
    feedback_client(emu, arn, "rollout-3").report_error("tool crashed")
    record = emu.trajectory(arn, "rollout-3")
    assert (record.completion_status, record.rewards) == ("failed", (0.0,))


def test_client_token_makes_retries_idempotent(emu, arn):
    emu.register_job(arn, guess_script())
    emu.complete_rollout(arn, "t", "ready", client_token="ct-1")
    emu.complete_rollout(arn, "t", "ready", client_token="ct-1")  # same request retried: fine
    with pytest.raises(JobRuntimeError, match="Cannot transition trajectory"):
        emu.complete_rollout(arn, "t", "ready", client_token="ct-2")
    emu.update_reward(arn, "t", [1.0], client_token="rt-1")
    emu.update_reward(arn, "t", [1.0], client_token="rt-1")
    with pytest.raises(JobRuntimeError, match="already recorded"):
        emu.update_reward(arn, "t", [1.0], client_token="rt-2")
    assert emu.trajectory(arn, "t").rewards == (1.0,)


@pytest.mark.parametrize("rewards", [[], [math.nan], "0.5", [True]], ids=["empty", "nan", "string", "bool"])
def test_rewards_must_be_finite_numbers(emu, arn, rewards):
    emu.register_job(arn, guess_script())
    emu.complete_rollout(arn, "t")
    # json.dumps writes NaN as a bare `NaN` token, exactly what the SDK's client would send.
    body = json.dumps({"JobArn": arn, "TrajectoryId": "t", "Rewards": rewards})
    resp = requests.post(
        f"{emu.endpoint}/update-reward",
        data=body,
        headers={"Authorization": f"Bearer {generate_token(REGION)}"},
    )
    assert resp.status_code == 400 and "finite numbers" in resp.json()["Message"]
    assert emu.trajectory(arn, "t").rewards is None


def test_concurrent_feedback_records_each_reward_exactly_once():
    emulator = JobRuntimeEmulator()
    arn = job_arn("race")
    emulator.register_job(arn, guess_script())
    outcomes: list[str] = []
    barrier = threading.Barrier(16)

    def race(i: int) -> None:
        barrier.wait()
        for op in (
            lambda: emulator.complete_rollout(arn, "t"),
            lambda: emulator.update_reward(arn, "t", [i]),
        ):
            try:
                op()
                outcomes.append("ok")
            except JobRuntimeError:
                outcomes.append("refused")

    threads = [threading.Thread(target=race, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("ok") == 2  # one completion, one reward
    assert len(emulator.trajectory(arn, "t").rewards) == 1


# --- sampling: wrap_model(OpenAIModel) in a real Strands agent ------------------------------------
def run_agent(emu, arn, tid, *, stream: bool, inference_params=None):
    guesses: list[str] = []

    @tool
    def guess_word(guess: str) -> str:
        """Guess the secret five-letter word."""
        guesses.append(guess)
        return f"{guess}: no letters match"

    model = wrap_model(
        OpenAIModel(
            model_id="default",
            client_args={"base_url": f"{emu.endpoint}/v1", "api_key": generate_token(REGION)},
            stream=stream,
        )
    )
    agent = Agent(model=model, tools=[guess_word], callback_handler=None)
    set_rollout_context({"jobArn": arn, "rolloutId": tid}, inference_params)
    try:
        result = agent("Play Wordle.")
    finally:
        clear_rollout_context()
    return guesses, result


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
def test_wrapped_openai_model_plays_through_the_emulator(emu, arn, stream):
    emu.register_job(arn, guess_script("Done guessing."))
    guesses, result = run_agent(
        emu, arn, "rollout-a", stream=stream, inference_params={"temperature": 0.0, "maxTokens": 64}
    )

    assert guesses == list(GUESSES)  # the agent received and executed every scripted tool call
    assert "Done guessing." in str(result)
    # The record sits under the job and trajectory the two headers named.
    record = emu.trajectory(arn, "rollout-a")
    assert record.sample_count == 4 == emu.sample_count(arn, "rollout-a")
    assert [s.turn for s in record.samples] == [0, 1, 2, 3]
    assert all(s.temperature == 0.0 and s.max_tokens == 64 and s.stream is stream for s in record.samples)
    assert [json.loads(s.tool_calls[0]["arguments"])["guess"] for s in record.samples[:3]] == list(GUESSES)
    assert record.samples[3].tool_calls == () and record.samples[3].content == "Done guessing."
    assert [s.policy_trace for s in record.samples] == [{"turn": k} for k in range(4)]
    # Each turn re-sends the history: the tool results of earlier turns are in later requests.
    assert [sum(m["role"] == "tool" for m in s.messages) for s in record.samples] == [0, 1, 2, 3]
    totals = emu.token_totals(arn)
    assert totals.prefill_tokens == record.prompt_tokens > 0
    assert totals.sample_tokens == record.completion_tokens > 0
    assert (totals.sample_requests, totals.trajectories) == (4, 1)
    assert emu.rejections(arn) == []


class EchoParamsPolicy:
    """Answers in one turn and traces the sampling parameters it was handed."""

    def complete(self, request, trajectory):
        params = {"temperature": request["temperature"], "max_tokens": request["max_tokens"]}
        return chat_completion(content="ok", prompt_tokens=5, completion_tokens=1, policy_trace=params)


@pytest.mark.parametrize(
    "inference_params, used",
    [(None, (0.7, 512)), ({"temperature": 0.2, "maxTokens": 128}, (0.2, 128))],
    ids=["job-defaults", "from-rollout-context"],
)
def test_policy_and_record_see_the_sampling_parameters_used(emu, arn, inference_params, used):
    emu.register_job(arn, EchoParamsPolicy(), default_temperature=0.7, default_max_tokens=512)
    run_agent(emu, arn, "t", stream=False, inference_params=inference_params)
    (sample,) = emu.trajectory(arn, "t").samples
    assert (sample.temperature, sample.max_tokens) == used
    assert sample.policy_trace == {"temperature": used[0], "max_tokens": used[1]}


def test_service_sample_paths(emu, arn):
    emu.register_job(arn, ScriptedPolicy(["one", "two", "three"]))
    plain = post_sample(emu, arn, "t", path="/sample")
    assert plain.status_code == 200 and plain.json()["choices"][0]["message"]["content"] == "one"
    streamed = post_sample(emu, arn, "t", path="/sample-with-response-stream")
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [line[len("data: ") :] for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert "".join(json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1]) == "two"
    assert [s.path for s in emu.trajectory(arn, "t").samples] == [
        "/sample",
        "/sample-with-response-stream",
    ]


def test_openai_client_reads_tool_calls_and_usage_from_both_shapes(emu, arn):
    emu.register_job(arn, guess_script())
    client = openai.OpenAI(
        base_url=f"{emu.endpoint}/v1",
        api_key=generate_token(REGION),
        default_headers={"X-Amzn-SageMaker-Job-Arn": arn, "X-Amzn-SageMaker-Trajectory-Id": "t"},
    )
    messages = [{"role": "user", "content": "play"}]
    chunks = list(
        client.chat.completions.create(
            model="default", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    calls = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert calls[0].function.name == "guess_word" and calls[0].id == "call_t0_0"
    assert json.loads("".join(c.function.arguments for c in calls)) == {"guess": "CRANE"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    whole = client.chat.completions.create(model="default", messages=messages)
    assert json.loads(whole.choices[0].message.tool_calls[0].function.arguments) == {"guess": "SLATE"}
    first, second = emu.trajectory(arn, "t").samples
    assert chunks[-1].usage.prompt_tokens == first.prompt_tokens
    assert chunks[-1].usage.completion_tokens == first.completion_tokens
    assert whole.usage.completion_tokens == second.completion_tokens
    # Without include_usage there is no usage chunk, as with OpenAI's own servers.
    plain = list(client.chat.completions.create(model="default", messages=messages, stream=True))
    assert all(c.usage is None for c in plain)


# --- errors as the service gives them -------------------------------------------------------------
def test_unknown_job_is_400_could_not_find_job(emu, arn):
    resp = post_sample(emu, arn, "t")
    assert resp.status_code == 400 and resp.headers[ERROR_TYPE_HEADER] == "ValidationException"
    assert resp.json()["Message"].startswith(JOB_NOT_FOUND_MESSAGE)
    with pytest.raises(requests.HTTPError, match="400"):
        feedback_client(emu, arn, "t").complete_rollout()


def test_another_accounts_job_is_403_even_if_it_does_not_exist(emu, arn):
    theirs, ghost = (
        arn.replace(ACCOUNT, OTHER_ACCOUNT),
        arn.replace(ACCOUNT, OTHER_ACCOUNT) + "-ghost",
    )
    emu.register_job(theirs, guess_script())
    for other in (theirs, ghost):
        resp = post_sample(emu, other, "t")
        assert resp.status_code == 403 and resp.headers[ERROR_TYPE_HEADER] == "AccessDeniedException"
        assert "not authorized to access this resource" in resp.json()["Message"]
    assert emu.trajectories(theirs) == []


def test_rotated_credentials_fail_and_the_replacement_works(own_emu, arn):
    emu = own_emu
    emu.register_job(arn, ScriptedPolicy(["hi"] * 3))
    stale = generate_token(REGION)
    assert post_sample(emu, arn, "t1", token=stale).status_code == 200
    emu.rotate_credentials(ACCESS_KEY, NEW_ACCESS_KEY, NEW_SECRET)
    resp = post_sample(emu, arn, "t2", token=stale)
    assert resp.status_code == 403 and resp.json()["Message"] == AUTH_FAILED_MESSAGE
    fresh = generate_token(REGION, aws_credentials_provider=StaticProvider(NEW_ACCESS_KEY, NEW_SECRET))
    assert post_sample(emu, arn, "t2", token=fresh).status_code == 200


def test_expired_token_is_403(emu, arn, clock):
    emu.register_job(arn, ScriptedPolicy(["hi"] * 3))
    token = generate_token(REGION, expiry=timedelta(seconds=60))
    assert post_sample(emu, arn, "t", token=token).status_code == 200
    clock.offset = 61.0
    resp = post_sample(emu, arn, "t", token=token)
    assert resp.status_code == 403 and resp.json()["Message"] == AUTH_FAILED_MESSAGE
    assert "expired" in resp.json()["Detail"]
    assert emu.sample_count(arn, "t") == 1


@pytest.mark.parametrize("authorization", ["Bearer garbage", "Bearer " + TOKEN_PREFIX + "AAAA", None])
def test_garbage_or_missing_token_is_403(emu, arn, authorization):
    emu.register_job(arn, guess_script())
    hdrs = {"X-Amzn-SageMaker-Job-Arn": arn, "X-Amzn-SageMaker-Trajectory-Id": "t"}
    if authorization:
        hdrs["Authorization"] = authorization
    resp = httpx.post(
        f"{emu.endpoint}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}]},
        headers=hdrs,
    )
    assert resp.status_code == 403 and resp.json()["Message"] == AUTH_FAILED_MESSAGE
    assert emu.trajectories(arn) == []


@pytest.mark.parametrize("missing", ["job", "trajectory"])
def test_missing_sampling_headers_are_400(emu, arn, missing):
    emu.register_job(arn, guess_script())
    resp = post_sample(emu, None if missing == "job" else arn, None if missing == "trajectory" else "t")
    assert resp.status_code == 400 and "X-Amzn-SageMaker-Trajectory-Id" in resp.json()["Message"]


def test_sampling_after_completion_is_refused(emu, arn):
    emu.register_job(arn, ScriptedPolicy(["hi"] * 3))
    assert post_sample(emu, arn, "t").status_code == 200
    feedback_client(emu, arn, "t").complete_rollout()
    resp = post_sample(emu, arn, "t")
    assert resp.status_code == 400 and "sealed" in resp.json()["Message"]
    assert emu.sample_count(arn, "t") == 1


def test_an_ended_session_refuses_every_later_call_and_keeps_an_earlier_reward(emu, arn):
    """end_session: what a runtime restart does to the trajectories it cut off."""
    emu.register_job(arn, ScriptedPolicy(["hi"] * 3))
    assert post_sample(emu, arn, "cut").status_code == 200
    record = emu.end_session(arn, "cut", "the agent runtime was restarted")
    assert (record.sample_count, record.rewards) == (1, None)
    resp = post_sample(emu, arn, "cut")
    assert resp.status_code == 400 and "agent session ended (the agent runtime was restarted)" in resp.json()["Message"]
    with pytest.raises(requests.HTTPError):
        feedback_client(emu, arn, "cut").complete_rollout()
    with pytest.raises(JobRuntimeError, match="session ended"):
        emu.update_reward(arn, "cut", [1.0])
    assert emu.trajectory(arn, "cut").rewards is None and emu.sample_count(arn, "cut") == 1
    # A reward reported before the cut stays, and the record says so.
    feedback_client(emu, arn, "done").report_complete(0.5)
    assert emu.end_session(arn, "done", "restarted").rewards == (0.5,)
    with pytest.raises(KeyError):
        emu.end_session(job_arn("never-registered"), "t", "restarted")


def test_fail_auth_for_makes_the_agents_model_calls_fail(emu, arn):
    emu.register_job(arn, guess_script())
    emu.fail_auth_for(arn)
    with pytest.raises(openai.PermissionDeniedError, match=AUTH_FAILED_MESSAGE):
        run_agent(emu, arn, "t", stream=True)
    assert emu.sample_count(arn, "t") == 0
    assert all(r.message == AUTH_FAILED_MESSAGE for r in emu.rejections(arn))
    emu.fail_auth_for(arn, enabled=False)
    guesses, _ = run_agent(emu, arn, "t", stream=True)
    assert guesses == list(GUESSES)


def test_injected_throttling_then_recovery(emu, arn):
    emu.register_job(arn, ScriptedPolicy(["hi"] * 3))
    emu.inject_sampling_errors(arn, 2)
    codes = [post_sample(emu, arn, "t").status_code for _ in range(3)]
    assert codes == [429, 429, 200]


def test_closed_job_refuses_calls(emu, arn):
    emu.register_job(arn, guess_script())
    emu.close_job(arn, "Stopped")
    resp = post_sample(emu, arn, "t")
    assert resp.status_code == 400 and "Stopped" in resp.json()["Message"]


class BrokenPolicy:
    def __init__(self, response=None):
        self.response = response

    def complete(self, request, trajectory):
        if self.response is None:
            raise RuntimeError("policy bug")
        return self.response


@pytest.mark.parametrize(
    "policy, detail",
    [
        (BrokenPolicy(), "policy bug"),
        (BrokenPolicy({"choices": []}), "usage"),
        (BrokenPolicy("not a dict"), "choices"),
    ],
    ids=["raises", "no-usage", "not-a-dict"],
)
def test_policy_failures_are_500(emu, arn, policy, detail):
    emu.register_job(arn, policy)
    resp = post_sample(emu, arn, "t")
    assert resp.status_code == 500 and resp.headers[ERROR_TYPE_HEADER] == "InternalServiceError"
    assert detail in resp.json()["Detail"]
    assert emu.sample_count(arn, "t") == 0


def test_policy_trace_is_recorded_but_never_sent(emu, arn):
    class TracingPolicy:
        def complete(self, request, trajectory):
            return chat_completion(
                content="ok",
                prompt_tokens=10,
                completion_tokens=2,
                policy_trace={"features": [1.0, 2.0], "action": 3},
            )

    emu.register_job(arn, TracingPolicy())
    for stream in (False, True):
        resp = post_sample(emu, arn, "t", body={"messages": [{"role": "user", "content": "x"}], "stream": stream})
        assert resp.status_code == 200 and "policy_trace" not in resp.text and "features" not in resp.text
    assert [s.policy_trace["action"] for s in emu.trajectory(arn, "t").samples] == [3, 3]


def test_service_side_hooks_open_trajectories_and_swap_policies(emu, arn):
    emu.register_job(arn, ScriptedPolicy(["old"]))
    opened = emu.start_trajectory(arn, "t", step=3, prompt_index=7)
    assert (opened.state, dict(opened.info), opened.sample_count) == (
        "in_progress",
        {"step": 3, "prompt_index": 7},
        0,
    )
    with pytest.raises(ValueError, match="already exists"):
        emu.start_trajectory(arn, "t")
    assert post_sample(emu, arn, "t").json()["choices"][0]["message"]["content"] == "old"
    emu.set_policy(arn, ScriptedPolicy(["new", "new"]))
    assert post_sample(emu, arn, "t").json()["choices"][0]["message"]["content"] == "new"
    assert arn in emu.jobs() and emu.trajectory(arn, "t").info["step"] == 3


def test_register_job_validates_its_inputs():
    emulator = JobRuntimeEmulator()
    with pytest.raises(ValueError, match="not a SageMaker job ARN"):
        emulator.register_job("arn:aws:sagemaker:us-east-1:111122223333:training-job/x", guess_script())
    with pytest.raises(ValueError, match="does not own"):
        emulator.register_job(job_arn("x"), guess_script(), account=OTHER_ACCOUNT)
    with pytest.raises(TypeError, match="complete"):
        emulator.register_job(job_arn("x"), object())
    with pytest.raises(RuntimeError, match="serve"):
        emulator.endpoint


# --- the full path: AgentCore app + @sagemaker_rft_handler under concurrency ----------------------
def build_agent_app() -> BedrockAgentCoreApp:
    app = BedrockAgentCoreApp()

    @app.entrypoint
    @sagemaker_rft_handler
    def handle_rollout(payload):
        task = json.loads(payload["prompt"])
        guesses: list[str] = []

        @tool
        def guess_word(guess: str) -> str:
            """Guess the secret five-letter word."""
            guesses.append(guess)
            return f"{guess}: no letters match"

        model = wrap_model(
            OpenAIModel(
                model_id="default",
                client_args={
                    "base_url": payload["metadata"]["endpoint"] + "/v1",
                    "api_key": generate_token(REGION),
                },
            )
        )
        Agent(model=model, tools=[guess_word], callback_handler=None)(task["prompt"])
        # A distinct reward per rollout, so a reward landing on the wrong trajectory would show.
        return {"reward": task["reward"] if guesses == ["CRANE"] else -1.5}

    return app


@pytest.mark.slow
def test_concurrent_rollouts_through_agentcore_app_record_every_reward_once(emu, arn):
    emu.register_job(arn, ScriptedPolicy([{"name": "guess_word", "arguments": {"guess": "CRANE"}}], "Solved."))
    expected = {f"rollout-{i:03d}": round(i / 100, 2) for i in range(CONCURRENT_ROLLOUTS)}
    server = LoopbackServer(build_agent_app(), name="agentcore-app")
    server.start()
    try:
        with httpx.Client(timeout=120, limits=httpx.Limits(max_connections=CONCURRENT_ROLLOUTS)) as http:

            def invoke(tid: str) -> dict:
                payload = {
                    "prompt": json.dumps({"prompt": "Play Wordle.", "reward": expected[tid]}),
                    "metadata": {
                        "jobArn": arn,
                        "rolloutId": tid,
                        "endpoint": emu.endpoint,
                        "region": REGION,
                    },
                    "inferenceParams": {"temperature": 1.0, "maxTokens": 32},
                }
                resp = http.post(f"{server.url}/invocations", json=payload)
                assert resp.status_code == 200, resp.text
                return resp.json()

            with ThreadPoolExecutor(max_workers=CONCURRENT_ROLLOUTS) as pool:
                results = dict(zip(expected, pool.map(invoke, expected)))
    finally:
        server.stop()

    assert results == {tid: {"reward": r} for tid, r in expected.items()}
    records = {r.trajectory_id: r for r in emu.trajectories(arn)}
    assert set(records) == set(expected)  # none lost, none invented
    for tid, reward in expected.items():
        rec = records[tid]
        assert (rec.state, rec.completion_status, rec.rewards) == (
            "reward_received",
            "ready",
            (reward,),
        )
        assert rec.sample_count == 2 and {s.temperature for s in rec.samples} == {1.0}
    assert emu.rejections(arn) == []
    assert emu.token_totals(arn).sample_requests == 2 * CONCURRENT_ROLLOUTS


# --- the SDK reads "404" anywhere in a failure's text, the URL's port included ---------------------
def test_the_sdk_takes_a_400_on_a_port_with_404_in_it_for_a_missing_trajectory(monkeypatch, caplog):
    """Why the loopback servers avoid such ports: the SDK's feedback client swallows the failure.
    (If this starts failing, the SDK no longer matches the digits in the URL, and
    job_runtime_emulator.PORT_DIGITS_TO_AVOID can go.)"""
    from sagemaker.train.rft import feedback

    def refuse(port: int):
        def post(self, path, body):
            raise requests.HTTPError(f"400 Client Error: Bad Request for url: http://127.0.0.1:{port}{path}")

        return post

    client = feedback.RolloutFeedbackClient({"jobArn": "arn:job", "rolloutId": "r1", "endpoint": "http://x"})
    monkeypatch.setattr(feedback.RolloutFeedbackClient, "_bearer_post", refuse(40412))
    with caplog.at_level(logging.WARNING, logger=feedback.__name__):
        client.complete_rollout()  # swallowed
    assert "CompleteRollout 404: trajectory r1 not found" in caplog.text
    monkeypatch.setattr(feedback.RolloutFeedbackClient, "_bearer_post", refuse(41213))
    with pytest.raises(requests.HTTPError, match="400 Client Error"):
        client.complete_rollout()


class _FakeSocket:
    def __init__(self, port: int) -> None:
        self.port, self.closed = port, False

    def setsockopt(self, *args) -> None:
        pass

    def bind(self, address) -> None:
        pass

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def close(self) -> None:
        self.closed = True


def test_loopback_ports_never_carry_the_digits_the_sdk_reads_as_a_status():
    from mtrl_course.local.job_runtime_emulator import bind_loopback

    made = [_FakeSocket(port) for port in (40412, 34045, 51234)]
    handed = iter(made)
    chosen = bind_loopback(lambda: next(handed))
    assert chosen is made[2] and not chosen.closed
    assert made[0].closed and made[1].closed  # held until a good one was bound, then released
    with pytest.raises(RuntimeError, match="no free loopback port"):
        bind_loopback(lambda: _FakeSocket(40404))
    server = LoopbackServer(BedrockAgentCoreApp(), name="port-check")
    server.start()
    try:
        assert "404" not in server.url.rsplit(":", 1)[1]
    finally:
        server.stop()
