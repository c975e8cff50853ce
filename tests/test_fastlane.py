"""The fast lane: the real rollout handler in-process against the Job Runtime emulator.

Throughput is measured by the benchmark, not asserted here."""

from __future__ import annotations

import json
import threading

import pytest

from mtrl_course.local import fastlane
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator, ScriptedPolicy
from mtrl_course.local.stand_in_policy import StandInPolicy
from wordle_agent import rollout
from wordle_agent.reward import NO_PLAY_REWARD
from wordle_agent.rollout import SYSTEM_PROMPT

ACCOUNT = "123456789012"
TASK = json.dumps({"prompt": "Guess the hidden 5-letter word.", "answer": "paste", "id": "row-1"})


def job_arn(name: str) -> str:
    return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:job/AgentRFT/{name}"


@pytest.fixture
def emulator() -> JobRuntimeEmulator:
    return JobRuntimeEmulator()


def test_an_episode_records_every_sample_and_exactly_one_reward(emulator):
    arn = job_arn("one-episode")
    emulator.register_job(arn, StandInPolicy())
    emulator.start_trajectory(arn, "t-0", rng_key=[1, 0, 0, 0, 0, 0])
    episode = fastlane.play_episode(emulator, arn, "t-0", TASK, temperature=1.0, max_tokens=512)
    record = emulator.trajectory(arn, "t-0")
    assert episode.reported == "ready" and episode.error is None
    assert (record.state, record.completion_status) == ("reward_received", "ready")
    assert record.rewards == (episode.result["reward"],)
    assert 1 <= record.sample_count <= 12
    first = record.samples[0]
    # The policy saw the OpenAI request OpenAIModel would send: system prompt, task, tools, params.
    assert first.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert first.request["tools"][0]["function"]["name"] == "guess_word"
    assert (first.temperature, first.max_tokens, first.stream) == (1.0, 512, False)
    assert all(s.policy_trace and s.policy_trace["kind"] for s in record.samples)
    # Every guess the trace chose reached the game: the next request carries its tool answer.
    for earlier, later in zip(record.samples, record.samples[1:]):
        assert earlier.policy_trace["word"] in later.messages[-1]["content"]
    totals = emulator.token_totals(arn)
    assert totals.prefill_tokens == record.prompt_tokens > 0 and totals.sample_requests == record.sample_count


def test_the_same_slot_replays_the_same_game(emulator):
    arn = job_arn("replay")
    emulator.register_job(arn, StandInPolicy())
    games = []
    for tid in ("a", "b"):
        emulator.start_trajectory(arn, tid, rng_key=[5, 0, 3, 9, 1, 0])
        fastlane.play_episode(emulator, arn, tid, TASK, temperature=1.0)
        games.append([s.tool_calls for s in emulator.trajectory(arn, tid).samples])
    assert games[0] == games[1]


def test_refused_sampling_calls_leave_no_samples_and_the_floor_reward(emulator):
    arn = job_arn("refused")
    emulator.register_job(arn, StandInPolicy())
    emulator.fail_auth_for(arn)
    emulator.start_trajectory(arn, "t-0")
    episode = fastlane.play_episode(emulator, arn, "t-0", TASK, temperature=1.0)
    record = emulator.trajectory(arn, "t-0")
    assert record.sample_count == 0 and record.rewards == (NO_PLAY_REWARD,)
    # The handler re-signed and retried after each 403, and the lane kept every refusal.
    assert len(episode.refusals) >= 2 and all(r.startswith("403 Authentication failed") for r in episode.refusals)


@pytest.mark.parametrize(
    ("result", "reported", "state", "rewards"),
    [
        ({"reward": 1.25}, "ready", "reward_received", (1.25,)),
        ({"reward": [0.1, 0.9]}, "ready", "reward_received", (0.1, 0.9)),
        ({"status": "error", "error": "boom"}, "failed", "reward_received", (0.0,)),
        ({"status": "done"}, "complete-only", "ready", None),
        ({"status": "skipped"}, "nothing", "in_progress", None),
        ("not a dict", "nothing", "in_progress", None),
    ],
)
def test_results_are_reported_as_the_sdk_decorator_reports_them(emulator, result, reported, state, rewards):
    arn = job_arn("report")
    emulator.register_job(arn, ScriptedPolicy(["hi"]))
    emulator.start_trajectory(arn, "t")
    assert fastlane.report_result(emulator, arn, "t", result) == reported
    record = emulator.trajectory(arn, "t")
    assert (record.state, record.rewards) == (state, rewards)


def test_a_handler_exception_is_reported_as_a_failed_rollout(emulator):
    arn = job_arn("raises")
    emulator.register_job(arn, StandInPolicy())
    emulator.start_trajectory(arn, "t")

    def broken(payload: dict, model: object, observer: object = None) -> dict:
        raise RuntimeError("the agent crashed")

    episode = fastlane.play_episode(emulator, arn, "t", TASK, temperature=1.0, handler=broken)
    assert episode.reported == "failed" and "the agent crashed" in episode.error
    assert emulator.trajectory(arn, "t").completion_status == "failed"


def test_an_episode_hands_its_rollout_its_own_model_and_the_callers_observer(emulator):
    seen: dict[str, object] = {}

    def handler(payload: dict, model: object, observer: object = None) -> dict:
        seen["model"] = model("http://ignored", {"temperature": 1.0})  # type: ignore[operator]
        seen["observer"] = observer
        return {"reward": 1.0}

    def observer(task_id: str, game: object) -> None:
        pass

    arn = job_arn("handed")
    emulator.register_job(arn, StandInPolicy())
    emulator.start_trajectory(arn, "t")
    with fastlane.installed():  # kept for old callers: installs nothing
        episode = fastlane.play_episode(emulator, arn, "t", TASK, temperature=1.0, handler=handler, observer=observer)
    assert episode.reported == "ready" and seen["observer"] is observer
    assert isinstance(seen["model"], fastlane.FastLaneModel) and seen["model"].binding.trajectory_id == "t"


def test_concurrent_episodes_play_their_own_trajectories_and_games(emulator):
    # Two episodes of two jobs in flight at once, through the real run_rollout: each rollout's
    # model samples its own trajectory, and each observer is handed its own game only.
    barrier = threading.Barrier(2, timeout=30)
    games: dict[str, list] = {"a": [], "b": []}
    words = {"a": ["SLATE", "PASTE"], "b": ["CRONY", "MIGHT", "PASTE"]}
    episodes = {}

    def inner(payload: dict, model: object, observer: object = None) -> dict:
        barrier.wait()  # both rollouts have started before either plays
        return rollout.run_rollout(payload, model=model, observer=observer)  # type: ignore[arg-type]

    def episode(name: str) -> None:
        arn = job_arn(f"concurrent-{name}")
        script = [{"name": "guess_word", "arguments": json.dumps({"guess": word})} for word in words[name]]
        emulator.register_job(arn, ScriptedPolicy(script))
        emulator.start_trajectory(arn, name)
        episodes[name] = (
            arn,
            fastlane.play_episode(
                emulator,
                arn,
                name,
                TASK,
                temperature=1.0,
                handler=inner,
                observer=lambda task_id, game: games[name].append(game),
            ),
        )

    threads = [threading.Thread(target=episode, args=(name,)) for name in games]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not barrier.broken
    for name, (arn, played) in episodes.items():
        record = emulator.trajectory(arn, name)
        assert played.reported == "ready" and len(games[name]) == 1
        # Each game holds the words of its own job's policy, sampled on its own trajectory.
        assert games[name][0].guesses == words[name] and record.sample_count == len(words[name])
        assert record.rewards == (games[name][0].final_reward(),)


def test_streamed_events_carry_text_tool_calls_and_usage():
    response = {
        "choices": [
            {
                "message": {
                    "content": "Going with CRANE.",
                    "tool_calls": [{"id": "c1", "function": {"name": "guess_word", "arguments": '{"guess": "CRANE"}'}}],
                }
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 7},
    }
    events = fastlane.completion_events(response)
    assert events[0] == {"messageStart": {"role": "assistant"}}
    assert {"contentBlockDelta": {"delta": {"text": "Going with CRANE."}}} in events
    assert {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"guess": "CRANE"}'}}}} in events
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    assert events[-1]["metadata"]["usage"] == {"inputTokens": 10, "outputTokens": 7, "totalTokens": 17}


@pytest.mark.parametrize(("finish", "stop"), [("length", "max_tokens"), ("stop", "end_turn"), (None, "end_turn")])
def test_a_reply_without_a_call_stops_as_openai_model_maps_its_finish_reason(finish, stop):
    response = {
        "choices": [{"message": {"content": "Wait, CRANE also fits."}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }
    assert fastlane.completion_events(response)[-2] == {"messageStop": {"stopReason": stop}}
