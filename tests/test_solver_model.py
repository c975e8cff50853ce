"""The solver behind a Strands model: a real agent, a real tool, and the real rollout path."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from mtrl_course.local.solver_model import (
    DONE_TEXT,
    NO_FEEDBACK_TEXT,
    NO_TOOL_TEXT,
    SolverPolicyModel,
    solver_model_factory,
)
from mtrl_course.solver import default_solver, handler_payload, play
from strands import Agent, tool
from wordle_agent.game import WordleGame
from wordle_agent.words import ANSWERS

pytestmark = pytest.mark.floats

AGENT_WORDS = ["CRANE", "BLOKE", "ABBEY"]
HANDLER_SAMPLE = 10
HANDLER_SEED = 11
GUESS_SPEC = {
    "name": "guess_word",
    "description": "Play one guess.",
    "inputSchema": {"json": {"type": "object", "properties": {"guess": {"type": "string"}}}},
}


def _agent_for(game: WordleGame) -> Agent:
    @tool
    def guess_word(guess: str) -> str:
        """Play one Wordle guess.

        Args:
            guess: a five-letter word.
        """
        return game.guess(guess)

    return Agent(model=SolverPolicyModel(), tools=[guess_word], callback_handler=None)


@pytest.mark.parametrize("answer", AGENT_WORDS)
def test_a_strands_agent_with_the_solver_solves_like_the_bare_loop(answer):
    game = WordleGame(answer)
    agent = _agent_for(game)
    result = agent("Play Wordle.")
    bare = play(answer)
    assert game.solved
    assert tuple(game.guesses) == bare.guesses
    assert game.final_reward() == pytest.approx(bare.reward)
    assert result.stop_reason == "end_turn"
    assert str(result).strip() == DONE_TEXT
    # The model never saw the answer, only the conversation: its clues are the game's feedback.
    assert [w for w, _ in agent.model.clues_seen()] == game.guesses
    assert agent.model.emitted == game.guesses


def _collect(model: SolverPolicyModel, messages, specs) -> list[dict]:
    async def run():
        # The extra keywords are ones Strands 1.62 passes; stream() must accept them.
        stream = model.stream(messages, specs, None, tool_choice=None, invocation_state={})
        return [event async for event in stream]

    return asyncio.run(run())


def test_the_tool_call_uses_the_documented_event_sequence():
    opening = [{"role": "user", "content": [{"text": "go"}]}]
    events = _collect(SolverPolicyModel(), opening, [GUESS_SPEC])
    assert [next(iter(e)) for e in events] == [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    start = events[1]["contentBlockStart"]["start"]["toolUse"]
    assert start["name"] == "guess_word" and start["toolUseId"]
    raw = events[2]["contentBlockDelta"]["delta"]["toolUse"]["input"]
    assert isinstance(raw, str)
    assert json.loads(raw) == {"guess": default_solver().opener}
    assert events[4] == {"messageStop": {"stopReason": "tool_use"}}


def _result(text: str) -> dict:
    result = {"toolUseId": "t", "status": "success", "content": [{"text": text}]}
    return {"role": "user", "content": [{"toolResult": result}]}


def test_it_ends_the_turn_when_the_game_is_over_or_useless():
    model = SolverPolicyModel()
    game = WordleGame("CRANE")
    solved = [_result(game.guess("CRANE"))]
    events, guess = model.decide(solved, [GUESS_SPEC])
    assert guess is None and events[-1] == {"messageStop": {"stopReason": "end_turn"}}
    assert events[1]["contentBlockDelta"]["delta"]["text"] == DONE_TEXT
    events, guess = model.decide([_result("Invalid guess 'x': no guess was used.")], [GUESS_SPEC])
    assert guess is None and events[1]["contentBlockDelta"]["delta"]["text"] == NO_FEEDBACK_TEXT
    events, guess = model.decide([], [])
    assert guess is None and events[1]["contentBlockDelta"]["delta"]["text"] == NO_TOOL_TEXT


def test_it_follows_the_tool_spec_it_is_given():
    spec = {"name": "play", "inputSchema": {"json": {"properties": {"word": {"type": "string"}}}}}
    events, guess = SolverPolicyModel().decide([], [spec])
    assert events[0]["contentBlockStart"]["start"]["toolUse"]["name"] == "play"
    arguments = events[1]["contentBlockDelta"]["delta"]["toolUse"]["input"]
    assert json.loads(arguments) == {"word": guess}


def test_the_second_guess_comes_from_the_conversation_alone():
    game = WordleGame("BLOKE")
    model = SolverPolicyModel()
    first = model.decide([], [GUESS_SPEC])[1]
    second = model.decide([_result(game.guess(first))], [GUESS_SPEC])[1]
    assert second == play("BLOKE").guesses[1]


def test_config_and_structured_output():
    model = SolverPolicyModel()
    model.update_config(params={"temperature": 0.0})
    assert model.get_config()["params"] == {"temperature": 0.0}

    async def ask():
        async for _ in model.structured_output(dict, []):
            pass

    with pytest.raises(NotImplementedError):
        asyncio.run(ask())


def test_the_real_rollout_plays_the_same_game_as_the_bare_loop():
    rollout = pytest.importorskip("wordle_agent.rollout")
    for answer in AGENT_WORDS:
        factory = solver_model_factory()
        result = rollout.run_rollout(handler_payload(answer), model=factory)
        bare = play(answer)
        assert tuple(factory.played_guesses()) == bare.guesses
        assert result["reward"] == pytest.approx(bare.reward)


@pytest.mark.slow
def test_play_through_handler_matches_the_bare_loop():
    pytest.importorskip("wordle_agent.main")
    from mtrl_course.local import play_through_handler
    from mtrl_course.solver import play_many

    words = random.Random(HANDLER_SEED).sample(ANSWERS, HANDLER_SAMPLE)
    through = play_through_handler(words)
    bare = play_many(words)
    assert through["guesses"].tolist() == bare["guesses"].tolist()
    assert through["reward"].tolist() == pytest.approx(bare["reward"].tolist())
    assert through["solved"].tolist() == bare["solved"].tolist()
