"""The real AgentCore app over real HTTP: health, a smoke rollout, and 200+ hostile payloads.

``wordle_agent.main.app`` is served by uvicorn on a free loopback port, with the fake policy
endpoint standing in for the Job Runtime (chat completions and the reward feedback calls).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import logging
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.policy_server import FakePolicyServer, HttpError, always, guesses
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

AGENT_PACKAGE = Path(__file__).resolve().parents[1] / "agent_src" / "wordle_agent"
JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:job/wordle-smoke"
ANSWER = "CRANE"
STARTUP_SECONDS = 30
REQUEST_TIMEOUT = 60
HOSTILE_EXAMPLES = 200
FORBIDDEN_IMPORTS = ("mtrl_course", "numpy", "pandas")


def smoke_payload(endpoint: str, rollout_id: str = "smoke-rollout-0001") -> dict:
    """Shaped like data/payload.json: the task JSON as a string, a fake job ARN, a rollout id."""
    task = {"prompt": "Play Wordle: find the secret five-letter word.", "answer": ANSWER, "id": "smoke-1"}
    return {
        "prompt": json.dumps(task),
        "metadata": {"jobArn": JOB_ARN, "rolloutId": rollout_id, "endpoint": endpoint},
        "inferenceParams": {"temperature": 0.7, "topP": 0.9, "maxTokens": 512},
    }


@pytest.fixture(scope="module")
def policy() -> Iterator[FakePolicyServer]:
    with FakePolicyServer(guesses("SLATE", ANSWER)) as server:
        yield server


@pytest.fixture(scope="module")
def app_url(policy: FakePolicyServer) -> Iterator[str]:
    import uvicorn

    from wordle_agent.main import app

    # The app logs every invocation at INFO through its own handler; 200+ lines of noise here.
    logging.getLogger("bedrock_agentcore.app").setLevel(logging.WARNING)
    with pytest.MonkeyPatch.context() as patch:
        # Rollouts whose metadata names no usable endpoint (and the SDK's feedback client) fall
        # back to this, so nothing ever leaves the loopback interface.
        patch.setenv("RFT_RUNTIME_ENDPOINT", policy.url)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="agentcore-app", daemon=True)
        thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not server.started:
            assert time.monotonic() < deadline, "the app did not start"
            assert thread.is_alive(), "the app's server thread died during startup"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        while httpx.get(url + "/ping", timeout=5).status_code != 200:
            assert time.monotonic() < deadline, "/ping never answered"
            time.sleep(0.05)
        yield url
        server.should_exit = True
        thread.join(timeout=10)
        assert not thread.is_alive(), "the app did not stop"


@pytest.fixture(scope="module")
def client(app_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=app_url, timeout=REQUEST_TIMEOUT) as http:
        yield http


def invoke(client: httpx.Client, body: Any) -> float:
    """POST one payload; assert HTTP 200 and a finite float reward; return it."""
    # Serialized by hand: httpx sends no body at all for json=None, and null is a payload too.
    data = json.dumps(body).encode()
    response = client.post("/invocations", content=data, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text[:300]
    result = response.json()
    assert isinstance(result, dict) and set(result) == {"reward"}, result
    reward = result["reward"]
    assert isinstance(reward, float) and math.isfinite(reward), result
    return reward


# --- the app as AgentCore sees it -------------------------------------------------------------------


def test_ping_is_healthy(client: httpx.Client) -> None:
    response = client.get("/ping")
    assert response.status_code == 200
    assert response.json()["status"] == "Healthy"


def test_the_handler_takes_only_payload() -> None:
    from wordle_agent.main import app, handle_rollout

    assert list(inspect.signature(handle_rollout).parameters) == ["payload"]
    assert app.handlers["main"] is handle_rollout
    assert app._takes_context(handle_rollout) is False


def test_the_agent_package_imports_nothing_from_the_toolkit() -> None:
    for path in sorted(AGENT_PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN_IMPORTS, f"{path.name} imports {name}"


def test_smoke_payload_plays_a_game_and_reports_the_reward(client: httpx.Client, policy: FakePolicyServer) -> None:
    policy.reset(guesses("SLATE", ANSWER))
    reward = invoke(client, smoke_payload(policy.url))
    assert reward >= 1.01
    first = policy.chat_requests[0]
    # wrap_model put the job and trajectory headers and the service's sampling parameters in
    assert first.headers["x-amzn-sagemaker-job-arn"] == JOB_ARN
    assert first.headers["x-amzn-sagemaker-trajectory-id"] == "smoke-rollout-0001"
    assert first.headers["authorization"].startswith("Bearer sagemaker-api-key-")
    assert (first.body["temperature"], first.body["top_p"], first.body["max_tokens"]) == (0.7, 0.9, 512)
    complete, update = policy.feedback
    assert complete.path == "/complete-rollout"
    assert complete.body == {"JobArn": JOB_ARN, "TrajectoryId": "smoke-rollout-0001", "Status": "ready"}
    assert update.path == "/update-reward"
    assert update.body["Rewards"] == [reward]


def test_a_job_the_runtime_cannot_find_still_returns_the_no_play_reward(
    client: httpx.Client, policy: FakePolicyServer
) -> None:
    # The "verify the runtime" step of the walkthrough: a fake job ARN gets 400 "Could not find job".
    policy.reset(always(HttpError(400, "Could not find job")))
    assert invoke(client, smoke_payload(policy.url, "smoke-rollout-0002")) == -1.5
    assert policy.chat_requests, "the rollout must reach the policy"
    assert policy.feedback_for("smoke-rollout-0002") == ["/complete-rollout", "/update-reward"]


# --- hostile payloads --------------------------------------------------------------------------------

_ids = itertools.count()

LISTED_HOSTILE: list[Any] = [
    None,
    0,
    -1.5,
    True,
    "a string, not an object",
    [],
    [1, "two", {"three": 3}],
    {},
    {"prompt": None},
    {"prompt": ""},
    {"prompt": "not json"},
    {"prompt": "[1, 2]"},
    {"prompt": json.dumps({"answer": "crane"})},
    {"prompt": json.dumps({"prompt": "play"})},
    {"prompt": json.dumps({"prompt": "play", "answer": "cranes"})},
    {"prompt": json.dumps({"prompt": "play", "answer": 12345})},
    {"prompt": json.dumps({"prompt": ["play"], "answer": "crane"})},
    {"prompt": {"prompt": "play", "answer": "crane"}},  # a dict where the string should be
    {"prompt": "x" * 2_000_000},
    {"prompt": json.dumps({"prompt": "p" * 500_000, "answer": "crane"})},
    {"prompt": "[" * 100_000},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "metadata": "nope"},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "metadata": [1, 2]},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "metadata": {"endpoint": "ftp://x"}},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "metadata": {"rolloutId": "a\nb"}},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "metadata": {"jobArn": 7, "rolloutId": 8}},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "metadata": {"region": "../../etc"}},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "inferenceParams": "hot"},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "inferenceParams": [0.5]},
    {
        "prompt": json.dumps({"prompt": "play", "answer": "crane"}),
        "inferenceParams": {"temperature": "hot", "maxTokens": -1, "topP": 7},
    },
    {
        "prompt": json.dumps({"prompt": "play", "answer": "crane"}),
        "inferenceParams": {"temperature": 1e308, "maxTokens": 1.5, "topP": None},
    },
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "inference_params": {"max_tokens": True}},
    {"prompt": json.dumps({"prompt": "play", "answer": "crane"}), "unknown": {"deeply": [{"nested": None}]}},
]


def with_metadata(body: Any, policy: FakePolicyServer) -> tuple[Any, str]:
    rollout_id = f"hostile-{next(_ids):05d}"
    metadata = {"jobArn": JOB_ARN, "rolloutId": rollout_id, "endpoint": policy.url}
    return {**body, "metadata": metadata}, rollout_id


def check_feedback(policy: FakePolicyServer, rollout_id: str, reward: float) -> None:
    assert policy.feedback_for(rollout_id) == ["/complete-rollout", "/update-reward"]
    update = [r for r in policy.feedback if r.body.get("TrajectoryId") == rollout_id][-1]
    assert update.body["Rewards"] == [reward]


@pytest.mark.parametrize("body", LISTED_HOSTILE, ids=lambda b: repr(b)[:40])
def test_listed_hostile_payloads_get_a_reward(client: httpx.Client, policy: FakePolicyServer, body: Any) -> None:
    policy.reset(guesses("SLATE", ANSWER))
    invoke(client, body)
    if isinstance(body, dict) and "metadata" not in body:
        tagged, rollout_id = with_metadata(body, policy)
        check_feedback(policy, rollout_id, invoke(client, tagged))


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
ANSWERS = st.sampled_from(["CRANE", "slate", "Pious", "cranes", "cr4ne", "", "ÉCLAT", "abcde"])
TASK_STRINGS = st.builds(
    lambda prompt, answer, extra: json.dumps({"prompt": prompt, "answer": answer, **extra}),
    st.one_of(st.text(max_size=80), JSON_VALUES),
    st.one_of(ANSWERS, JSON_VALUES),
    st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=2),
)
PROMPTS = st.one_of(TASK_STRINGS, st.text(max_size=200), JSON_VALUES, JSON_VALUES.map(json.dumps))
INFERENCE_PARAMS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {},
        optional={
            "temperature": JSON_LEAVES,
            "topP": JSON_LEAVES,
            "maxTokens": JSON_LEAVES,
            "max_tokens": JSON_LEAVES,
        },
    ),
)
PAYLOADS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {"prompt": PROMPTS},
        optional={"inferenceParams": INFERENCE_PARAMS, "junk": JSON_VALUES, "metadata": JSON_VALUES},
    ),
)


class Tally:
    examples = 0
    with_feedback = 0


@settings(
    max_examples=HOSTILE_EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(body=PAYLOADS, tag=st.booleans())
def test_generated_hostile_payloads_get_a_reward(
    client: httpx.Client, policy: FakePolicyServer, body: Any, tag: bool
) -> None:
    Tally.examples += 1
    rollout_id = None
    if tag and isinstance(body, dict):
        body, rollout_id = with_metadata(body, policy)
    reward = invoke(client, body)
    if rollout_id is not None:
        check_feedback(policy, rollout_id, reward)
        Tally.with_feedback += 1


def test_enough_generated_payloads_were_tried() -> None:
    # Runs after the property test in file order; guards against a strategy that collapses.
    assert Tally.examples >= HOSTILE_EXAMPLES
    # 64 of 200 on an idle machine; 47 once at load average 9 (Hypothesis's generation was not
    # the same there), so the bound guards against a collapsed strategy, not against load.
    assert Tally.with_feedback >= HOSTILE_EXAMPLES // 8
