"""The rollout handler: task parsing, whole games against a fake policy, retries and the seams."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.policy_server import (
    Delay,
    FakePolicyServer,
    Garbage,
    HttpError,
    Text,
    ToolCall,
    always,
    guesses,
    reject_param,
    scripted,
)
from strands.models.model import Model

from wordle_agent import main, rollout
from wordle_agent.auth import TokenCache
from wordle_agent.game import WordleGame
from wordle_agent.reward import NO_PLAY_REWARD
from wordle_agent.rollout import (
    SYSTEM_PROMPT,
    TaskError,
    build_system_prompt,
    parse_task,
    run_rollout,
    sanitize_payload,
)

# What the deployed main.py hands every rollout: the Job Runtime's OpenAI-compatible client.
JOB_RUNTIME = rollout.openai_policy_model

# Calling run_rollout outside the SDK's handler (as these tests do) leaves wrap_model without a
# rollout context, which it reports with a UserWarning; test_app.py covers the wrapped path.
pytestmark = [pytest.mark.floats, pytest.mark.filterwarnings("ignore:get_inference_headers:UserWarning")]

ANSWER = "CRANE"
INSTRUCTION = "Play Wordle: guess the secret five-letter word."
JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:job/wordle-test"
SETTINGS_ENV = ("REASONING_EFFORT", "REASONING_PROMPT_HINT", "ROLLOUT_BUDGET_SECONDS")


def task(answer: str = ANSWER, **extra: Any) -> str:
    return json.dumps({"prompt": INSTRUCTION, "answer": answer, "id": "row-1", **extra})


def payload(server: FakePolicyServer, answer: str = ANSWER, rollout_id: str = "r-1") -> dict:
    return {
        "prompt": task(answer),
        "metadata": {"jobArn": JOB_ARN, "rolloutId": rollout_id, "endpoint": server.url},
    }


def tool_call_reward(*words: str, answer: str = ANSWER) -> float:
    game = WordleGame(answer)
    for word in words:
        game.guess(word)
    return game.final_reward()


class CountingSigner:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, region: str) -> str:
        self.calls += 1
        return f"fake-token-{self.calls}"


@pytest.fixture(autouse=True)
def isolated_rollout_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingSigner]:
    """Fresh token cache (fake signer), settings from scratch, reasoning_effort allowed again."""
    signer = CountingSigner()
    monkeypatch.setattr(rollout, "TOKENS", TokenCache(mint=signer))
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    rollout._EFFORT_REJECTED.clear()
    yield signer
    rollout._EFFORT_REJECTED.clear()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePolicyServer]:
    with FakePolicyServer(guesses("SLATE", ANSWER)) as fake:
        # Payloads without an endpoint must reach the fake too, never a real Region.
        monkeypatch.setenv("RFT_RUNTIME_ENDPOINT", fake.url)
        yield fake


# --- parse_task ---------------------------------------------------------------------------------


def test_parse_task_returns_instruction_and_uppercase_answer() -> None:
    assert parse_task(task("crane")) == (INSTRUCTION, "CRANE")
    assert parse_task(task("Pious", extra_field=[1, 2])) == (INSTRUCTION, "PIOUS")


@pytest.mark.parametrize(
    "raw, problem",
    [
        (None, "must be a JSON string, got NoneType"),
        (42, "must be a JSON string, got int"),
        ({"prompt": "x", "answer": "crane"}, "must be a JSON string, got dict"),
        ("", "not valid JSON"),
        ("{not json", "not valid JSON"),
        ("[" * 5000 + "]" * 5000, "not valid JSON"),  # nesting deep enough to blow the parser
        ('["crane"]', "must be an object"),
        ('"crane"', "must be an object"),
        ('{"answer": "crane"}', "'prompt' must be a non-empty string, got nothing"),
        ('{"prompt": 7, "answer": "crane"}', "'prompt' must be a non-empty string, got int"),
        ('{"prompt": "  ", "answer": "crane"}', "'prompt' must be a non-empty string"),
        ('{"prompt": "play"}', "'answer' must be a string, got nothing"),
        ('{"prompt": "play", "answer": 12345}', "'answer' must be a string, got int"),
        ('{"prompt": "play", "answer": "cranes"}', "exactly 5 letters a-z, got 'cranes'"),
        ('{"prompt": "play", "answer": "cr4ne"}', "exactly 5 letters"),
        ('{"prompt": "play", "answer": "cran\\u00e9"}', "exactly 5 letters"),
        ('{"prompt": "play", "answer": " crane"}', "exactly 5 letters"),
        (json.dumps({"prompt": "x" * 30_000, "answer": "crane"}), "over the limit"),
    ],
)
def test_parse_task_names_the_problem(raw: object, problem: str) -> None:
    with pytest.raises(TaskError, match=problem.replace("(", r"\(").replace("[", r"\[")):
        parse_task(raw)  # type: ignore[arg-type]


def test_task_error_is_a_value_error() -> None:
    assert issubclass(TaskError, ValueError)


# --- sanitize_payload ----------------------------------------------------------------------------


def test_sanitize_keeps_only_well_formed_fields() -> None:
    clean = sanitize_payload(
        {
            "prompt": "p",
            "unknown": {"x": 1},
            "metadata": {"jobArn": JOB_ARN, "rolloutId": 5, "endpoint": "ftp://x", "region": "mars"},
            "inferenceParams": {"temperature": "hot", "topP": 0.9, "maxTokens": 256.0},
        }
    )
    assert clean == {
        "prompt": "p",
        # The malformed Region is dropped; the job ARN's own Region is written in for the SDK.
        "metadata": {"jobArn": JOB_ARN, "region": JOB_ARN.split(":")[3]},
        "inferenceParams": {"top_p": 0.9, "max_tokens": 256},
    }


@pytest.mark.parametrize("hostile", [None, [], "text", 3, [{"prompt": "x"}], True])
def test_sanitize_turns_any_non_object_into_an_empty_task(hostile: object) -> None:
    assert sanitize_payload(hostile) == {"prompt": None}


# --- whole games against the fake policy --------------------------------------------------------


def test_tool_calls_that_solve_pay_a_solve_reward(server: FakePolicyServer) -> None:
    result = run_rollout(payload(server), model=JOB_RUNTIME)
    assert result == {"reward": pytest.approx(tool_call_reward("SLATE", ANSWER))}
    assert result["reward"] >= 1.01
    first = server.chat_requests[0]
    assert first.body["model"] == "default"
    assert first.headers["authorization"] == "Bearer fake-token-1"
    assert [t["function"]["name"] for t in first.body["tools"]] == ["guess_word"]
    assert ANSWER not in json.dumps(first.body["messages"]).upper()  # the secret stays secret
    # The game ended on the solve, so no closing model turn is paid for.
    assert len(server.chat_requests) == 2


def test_non_streaming_responses_play_the_same_game(server: FakePolicyServer) -> None:
    def non_streaming(endpoint: str, params: dict) -> Any:
        return rollout.SharedSSLOpenAIModel(
            model_id="default",
            client_args={"base_url": endpoint + "/v1", "api_key": "k"},
            params=params,
            stream=False,
        )

    result = run_rollout(payload(server), model=non_streaming)
    assert result["reward"] == pytest.approx(tool_call_reward("SLATE", ANSWER))
    assert server.chat_requests[0].body.get("stream") is False


def test_a_policy_that_never_calls_the_tool_is_nudged_once_then_scores_no_play(
    server: FakePolicyServer,
) -> None:
    server.reset(always(Text("Let me think about good openers first.")))
    assert run_rollout(payload(server), model=JOB_RUNTIME) == {"reward": NO_PLAY_REWARD}
    requests = server.chat_requests
    assert len(requests) == 2
    retry = requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user"]  # a fresh conversation
    assert "Call the guess_word tool now" in json.dumps(retry[1])


def test_raw_text_guesses_are_recovered_with_the_penalty(
    server: FakePolicyServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reset(always(Text('First guess_word("slate"), then <__parameter=guess>CRANE</__parameter>')))
    with caplog.at_level(logging.WARNING, logger="wordle_agent.rollout"):
        result = run_rollout(payload(server), model=JOB_RUNTIME)
    expected = WordleGame(ANSWER)
    expected.guess_from_text("SLATE")
    expected.guess_from_text(ANSWER)
    assert result["reward"] == pytest.approx(expected.final_reward())
    assert 1.01 <= result["reward"] < tool_call_reward("SLATE", ANSWER)
    assert "recovered 2 guess" in caplog.text


@pytest.mark.parametrize("value", ["off", "0", "False", " no "])
def test_raw_text_recovery_can_be_switched_off_for_experiments(
    server: FakePolicyServer, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # Notebook 10's experiment: without recovery a policy that writes its calls as text plays no
    # valid guess and every such rollout scores the floor.
    monkeypatch.setenv(rollout.RAW_TEXT_RECOVERY_ENV, value)
    assert rollout.read_settings().recover_raw_text is False
    server.reset(always(Text('First guess_word("slate"), then <__parameter=guess>CRANE</__parameter>')))
    assert run_rollout(payload(server), model=JOB_RUNTIME) == {"reward": NO_PLAY_REWARD}


@pytest.mark.parametrize("value", [None, "", "on", "1", "yes", "anything else"])
def test_raw_text_recovery_is_on_unless_switched_off(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(rollout.RAW_TEXT_RECOVERY_ENV, raising=False)
    else:
        monkeypatch.setenv(rollout.RAW_TEXT_RECOVERY_ENV, value)
    assert rollout.read_settings().recover_raw_text is True


def test_recovery_skips_words_already_played_by_tool_calls(server: FakePolicyServer) -> None:
    server.reset(guesses("SLATE", then=Text('Next: {"guess": "slate"} and {"guess": "crane"}')))
    result = run_rollout(payload(server), model=JOB_RUNTIME)
    expected = WordleGame(ANSWER)
    expected.guess("SLATE")
    expected.guess_from_text(ANSWER)
    assert result["reward"] == pytest.approx(expected.final_reward())


def test_a_403_drops_the_token_and_the_retry_is_signed_again(
    server: FakePolicyServer, isolated_rollout_state: CountingSigner
) -> None:
    server.reset(scripted(HttpError(403, "Authentication failed"), then=guesses("SLATE", ANSWER)))
    result = run_rollout(payload(server), model=JOB_RUNTIME)
    assert result["reward"] == pytest.approx(tool_call_reward("SLATE", ANSWER))
    assert isolated_rollout_state.calls == 2
    auth = [r.headers["authorization"] for r in server.chat_requests]
    assert auth == ["Bearer fake-token-1", "Bearer fake-token-2", "Bearer fake-token-2"]
    # the retry continued the same conversation rather than starting over
    assert [m["role"] for m in server.chat_requests[1].body["messages"]] == ["system", "user"]


def test_persistent_403s_stop_after_bounded_retries(server: FakePolicyServer) -> None:
    server.reset(always(HttpError(403, "Authentication failed")))
    assert run_rollout(payload(server), model=JOB_RUNTIME) == {"reward": NO_PLAY_REWARD}
    # first attempt + two re-signed retries + the one fresh-conversation retry
    assert len(server.chat_requests) == 1 + rollout.MAX_AUTH_RETRIES + 1


def test_rejected_reasoning_effort_is_dropped_for_the_whole_process(
    server: FakePolicyServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REASONING_EFFORT", "low")
    server.reset(reject_param("reasoning_effort", guesses("SLATE", ANSWER)))
    with caplog.at_level(logging.WARNING, logger="wordle_agent.rollout"):
        result = run_rollout(payload(server), model=JOB_RUNTIME)
    assert result["reward"] == pytest.approx(tool_call_reward("SLATE", ANSWER))
    sent = ["reasoning_effort" in r.body for r in server.chat_requests]
    assert sent == [True, False, False]
    assert "rejected reasoning_effort" in caplog.text
    server.reset()
    run_rollout(payload(server, rollout_id="r-2"), model=JOB_RUNTIME)
    assert not any("reasoning_effort" in r.body for r in server.chat_requests)


def test_the_wall_clock_budget_is_respected(server: FakePolicyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLOUT_BUDGET_SECONDS", "1.5")
    server.reset(always(Delay(30, Text("too late"))))
    started = time.monotonic()
    assert run_rollout(payload(server), model=JOB_RUNTIME) == {"reward": NO_PLAY_REWARD}
    # Far below the 30 s reply it would otherwise wait for, with room for a loaded machine.
    assert time.monotonic() - started < 10
    assert len(server.chat_requests) == 1  # no retry once the budget is gone


@pytest.fixture
def no_http_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI client's backoff on 5xx and refused connections only slows these tests down."""
    monkeypatch.setattr(rollout, "POLICY_HTTP_RETRIES", 0)


@pytest.mark.usefixtures("no_http_retries")
@pytest.mark.parametrize(
    "reply",
    [
        Garbage(),
        Garbage(b'{"choices": "nope"}'),
        HttpError(500, "internal error"),
        HttpError(400, "Could not find job"),
    ],
    ids=["html", "wrong-shape", "500", "400-no-job"],
)
def test_a_broken_policy_endpoint_still_yields_a_reward(server: FakePolicyServer, reply: Any) -> None:
    server.reset(always(reply))
    result = run_rollout(payload(server), model=JOB_RUNTIME)
    assert result == {"reward": NO_PLAY_REWARD}
    assert server.chat_requests, "the rollout must reach the policy"


@pytest.mark.usefixtures("no_http_retries")
def test_an_unreachable_endpoint_still_yields_a_reward() -> None:
    bad = {"prompt": task(), "metadata": {"endpoint": "http://127.0.0.1:9"}}
    assert run_rollout(bad, model=JOB_RUNTIME) == {"reward": NO_PLAY_REWARD}


# --- malformed tasks and hostile payloads ----------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    ["not json", '{"prompt": "play", "answer": "toolong"}', None, 17, ["x"], "x" * 50_000],
)
def test_a_malformed_task_reaches_the_policy_once_and_scores_no_play(
    server: FakePolicyServer, prompt: object, caplog: pytest.LogCaptureFixture
) -> None:
    server.reset(always(Text("OK")))
    with caplog.at_level(logging.ERROR, logger="wordle_agent.rollout"):
        result = run_rollout({"prompt": prompt, "metadata": {"endpoint": server.url}}, model=JOB_RUNTIME)
    assert result == {"reward": NO_PLAY_REWARD}
    assert len(server.chat_requests) == 1
    assert "malformed task" in caplog.text


@pytest.mark.usefixtures("no_http_retries")
def test_a_malformed_task_whose_request_fails_still_scores_no_play(server: FakePolicyServer) -> None:
    server.reset(always(HttpError(500, "down")))
    assert run_rollout({"prompt": "nope", "metadata": {"endpoint": server.url}}, model=JOB_RUNTIME) == {
        "reward": NO_PLAY_REWARD
    }


@pytest.mark.parametrize(
    "hostile",
    [
        None,
        "a string",
        [1, 2, 3],
        {},
        {"prompt": {"answer": "crane"}},
        {"prompt": task(), "metadata": "not a dict"},
        {"prompt": task(), "metadata": {"endpoint": 12, "rolloutId": ["x"], "jobArn": None}},
        {"prompt": task(), "inferenceParams": "garbage"},
        {"prompt": task(), "inferenceParams": {"temperature": float("nan"), "maxTokens": -5}},
        {"prompt": task(), "extra": "x" * 1_000_000},
    ],
)
def test_hostile_payloads_never_raise(server: FakePolicyServer, hostile: object) -> None:
    result = run_rollout(hostile, model=JOB_RUNTIME)
    assert set(result) == {"reward"}
    assert isinstance(result["reward"], float) and math.isfinite(result["reward"])


def test_an_exploding_factory_is_contained(server: FakePolicyServer) -> None:
    def broken(endpoint: str, params: dict) -> Any:
        raise RuntimeError("factory exploded")

    assert run_rollout(payload(server), model=broken) == {"reward": NO_PLAY_REWARD}


# --- the model-factory seam ---------------------------------------------------------------------


USAGE_EVENT = {
    "metadata": {
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 0},
    }
}


class ScriptedGuesser(Model):
    """A tiny in-process Strands model: guesses its words in order, one per turn."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.config: dict[str, Any] = {}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kw: Any):
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kw: Any):
        played = sum(1 for m in messages for b in m["content"] if "toolResult" in b)
        yield {"messageStart": {"role": "assistant"}}
        if played < len(self.words):
            call = {"name": "guess_word", "toolUseId": f"t{played}"}
            yield {"contentBlockStart": {"start": {"toolUse": call}}}
            arguments = json.dumps({"guess": self.words[played]})
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "done"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        yield USAGE_EVENT


def test_run_rollout_plays_with_the_model_it_is_handed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONING_EFFORT", "high")
    calls: list[tuple[str, dict]] = []

    def factory(endpoint: str, params: dict) -> Model:
        calls.append((endpoint, params))
        return ScriptedGuesser(["SLATE", "PIOUS", ANSWER])

    result = run_rollout({"prompt": task(), "metadata": {"endpoint": "http://policy.invalid"}}, model=factory)
    assert result["reward"] == pytest.approx(tool_call_reward("SLATE", "PIOUS", ANSWER))
    assert calls == [("http://policy.invalid", {"reasoning_effort": "high"})]


def test_run_rollout_works_from_inside_a_running_event_loop() -> None:
    # A notebook cell runs inside an event loop; the handler must not trip over it.
    async def cell() -> dict:
        return run_rollout({"prompt": task()}, model=lambda endpoint, params: ScriptedGuesser(["SLATE", ANSWER]))

    assert asyncio.run(cell())["reward"] == pytest.approx(tool_call_reward("SLATE", ANSWER))


def test_run_rollout_has_no_default_model() -> None:
    # Every caller hands the rollout its model; there is no process default to fall back on.
    assert inspect.signature(run_rollout).parameters["model"].default is inspect.Parameter.empty
    with pytest.raises(TypeError):
        run_rollout({"prompt": task()})  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="model factory"):
        run_rollout({"prompt": task()}, model=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("module", [rollout, main], ids=["rollout", "main"])
def test_no_process_wide_model_or_observer_can_be_swapped(module: Any) -> None:
    # The agent's modules rebind no module-level name at run time (the removed
    # `use_model_factory` did, with `global _model_factory`), and offer no swap of the model or of
    # the game observers.
    tree = ast.parse(inspect.getsource(module))
    rebound = [name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names]
    assert rebound == []
    removed = {"use_model_factory", "current_model_factory", "use_game_observer", "_model_factory", "_observers"}
    assert removed.isdisjoint(vars(module))


def test_concurrent_rollouts_each_play_with_their_own_model_and_observer() -> None:
    # Both rollouts are in flight at once (each factory waits for the other at the barrier): each
    # plays the words of its own model, and each observer is handed only its own game.
    barrier = threading.Barrier(2, timeout=30)
    words = {"a": ["SLATE", ANSWER], "b": ["SLATE", "PIOUS", "MOUND", ANSWER]}
    games: dict[str, list[WordleGame]] = {"a": [], "b": []}
    results: dict[str, dict] = {}

    def play(name: str) -> None:
        def factory(endpoint: str, params: dict) -> Model:
            barrier.wait()
            return ScriptedGuesser(words[name])

        def observer(task_id: str, game: WordleGame) -> None:
            games[name].append(game)

        results[name] = run_rollout({"prompt": task()}, model=factory, observer=observer)

    threads = [threading.Thread(target=play, args=(name,)) for name in words]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not barrier.broken
    for name, played in words.items():
        assert results[name]["reward"] == pytest.approx(tool_call_reward(*played))
        assert [game.guesses for game in games[name]] == [played]


def test_an_observer_that_raises_leaves_the_reward_alone() -> None:
    def broken(task_id: str, game: WordleGame) -> None:
        raise RuntimeError("observer exploded")

    model = lambda endpoint, params: ScriptedGuesser(["SLATE", ANSWER])  # noqa: E731
    assert run_rollout({"prompt": task()}, model=model, observer=broken)["reward"] == pytest.approx(
        tool_call_reward("SLATE", ANSWER)
    )


class BurstGuesser(ScriptedGuesser):
    """Puts all its guesses into ONE assistant message (parallel tool calls)."""

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kw: Any):
        yield {"messageStart": {"role": "assistant"}}
        for i, word in enumerate(self.words):
            yield {"contentBlockStart": {"start": {"toolUse": {"name": "guess_word", "toolUseId": f"b{i}"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"guess": word})}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}
        yield USAGE_EVENT


def test_parallel_tool_calls_in_one_turn_are_played_in_order() -> None:
    words = ["SLATE", "PIOUS", "MOUND", "CHILD", "FROCK", "BUMPY", ANSWER, "WORDY"]
    models: list[BurstGuesser] = []

    def factory(endpoint: str, params: dict) -> Model:
        models.append(BurstGuesser(words))
        return models[-1]

    result = run_rollout({"prompt": task()}, model=factory)
    # Six guesses in message order, then "game over": the seventh word (the answer) comes too late.
    assert result["reward"] == pytest.approx(tool_call_reward(*words[:6]))
    assert len(models) == 1  # the game ended inside the first turn; no further attempt


def test_a_policy_stuck_on_one_word_is_cut_off_by_the_game(server: FakePolicyServer) -> None:
    server.reset(always(ToolCall("SLATE")))
    result = run_rollout(payload(server), model=JOB_RUNTIME)
    assert -0.65 <= result["reward"] <= -0.35  # six guesses, lost (repeats)
    assert len(server.chat_requests) <= rollout.MAX_AGENT_TURNS


# --- reasoning settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "effort, hint, sent, first_line",
    [
        ("low", "", "low", None),
        ("MEDIUM", "true", "medium", "Reasoning: medium"),
        ("high", "1", "high", "Reasoning: high"),
        ("off", "true", None, None),
        ("bogus", "", None, None),
        ("", "true", None, None),
    ],
)
def test_reasoning_settings_shape_the_request(
    server: FakePolicyServer,
    monkeypatch: pytest.MonkeyPatch,
    effort: str,
    hint: str,
    sent: str | None,
    first_line: str | None,
) -> None:
    monkeypatch.setenv("REASONING_EFFORT", effort)
    monkeypatch.setenv("REASONING_PROMPT_HINT", hint)
    run_rollout(payload(server), model=JOB_RUNTIME)
    body = server.chat_requests[0].body
    assert body.get("reasoning_effort") == sent
    system = body["messages"][0]
    assert system["role"] == "system"
    text = system["content"] if isinstance(system["content"], str) else system["content"][0]["text"]
    if first_line:
        assert text.splitlines()[0] == first_line
    else:
        assert text == SYSTEM_PROMPT


def test_the_system_prompt_covers_rules_tool_and_strategy() -> None:
    prompt = build_system_prompt().lower()
    for needle in ("six", "guess_word", "green", "yellow", "gray", "never repeat", "right away"):
        assert needle in prompt
    assert build_system_prompt("low").startswith("Reasoning: low\n")


# --- the shared SSL context -----------------------------------------------------------------------


def test_every_request_gets_a_new_client_on_the_one_shared_ssl_context(
    server: FakePolicyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Any] = []
    original = rollout.openai.DefaultAsyncHttpxClient

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs.get("verify"))
            super().__init__(**kwargs)

    monkeypatch.setattr(rollout.openai, "DefaultAsyncHttpxClient", Recording)
    run_rollout(payload(server), model=JOB_RUNTIME)
    assert len(built) == len(server.chat_requests) == 2
    assert all(v is rollout.shared_ssl_context() for v in built)


# --- curriculum: prior guesses ---------------------------------------------------------------------


def test_parse_prior_guesses_returns_uppercase_words_and_defaults_to_none() -> None:
    assert rollout.parse_prior_guesses(task()) == []
    assert rollout.parse_prior_guesses(task(prior_guesses=["slate", "Moist"])) == ["SLATE", "MOIST"]


@pytest.mark.parametrize(
    ("priors", "problem"),
    [
        ("SLATE", "must be a list"),
        (["SLATE", "SLATE"], "appears twice"),
        (["CRANE"], "is the answer"),
        (["ZZZZZ"], "not a five-letter dictionary word"),
        ([7], "not a five-letter dictionary word"),
        (["SLATE", "MOIST", "BUNDY", "PLUMB", "FIGHT", "WORDY"], "at most 5"),
    ],
)
def test_prior_guesses_that_cannot_seed_a_game_make_the_task_malformed(priors: Any, problem: str) -> None:
    with pytest.raises(TaskError, match=problem):
        rollout.parse_prior_guesses(task(prior_guesses=priors))


def test_a_seeded_task_shows_the_prior_guesses_and_scores_them_as_turns(server: FakePolicyServer) -> None:
    server.reset(guesses("CRANE"))
    seeded = dict(payload(server), prompt=task(prior_guesses=["SLATE", "MOIST"]))
    result = run_rollout(seeded, model=JOB_RUNTIME)
    expected = WordleGame(ANSWER, prior_guesses=["SLATE", "MOIST"])
    expected.guess("CRANE")
    assert expected.guesses == ["SLATE", "MOIST", "CRANE"] and expected.solved
    assert result == {"reward": pytest.approx(expected.final_reward())}
    # A solve on the policy's first guess after two seeded ones pays the guess-3 tier.
    # Seeded guesses add no shaping: only the solving guess's time term is in the score.
    assert result["reward"] == pytest.approx(1.05 + 0.5 * 3 / 5 + 0.04 * (-1.0 / 150))
    user = json.dumps(server.chat_requests[0].body["messages"])
    assert "These guesses were already played for you:" in user and "Guess 2/6: MOIST ->" in user


def test_a_seeded_game_where_the_policy_never_guesses_is_nudged_and_pays_no_play(server: FakePolicyServer) -> None:
    server.reset(always(Text("Still thinking about it.")))
    seeded = dict(payload(server), prompt=task(prior_guesses=["SLATE"]))
    assert run_rollout(seeded, model=JOB_RUNTIME) == {"reward": NO_PLAY_REWARD}
    assert len(server.chat_requests) == 2  # the nudge still comes: the seeded guess is not the policy's
