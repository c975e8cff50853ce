"""`wordle_agent.main`: the deployed handler hands `run_rollout` the Job Runtime client, and every
in-process caller gets the same decorated handler with a model of its own (nothing swapped)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from sagemaker.train.rft import sagemaker_rft_handler

from mtrl_course.local.solver_model import solver_model_factory
from mtrl_course.solver import handler_payload, play, quiet_missing_metadata
from wordle_agent import main, rollout


def wrapper_codes(handler: Any) -> list[Any]:
    """The code of every layer of a decorated handler, outermost first (`functools.wraps` chain)."""
    codes = []
    while True:
        codes.append(handler.__code__)
        if not hasattr(handler, "__wrapped__"):
            return codes
        handler = handler.__wrapped__


def test_the_deployed_handler_is_handed_the_job_runtime_client() -> None:
    played = inspect.unwrap(main.handle_rollout)
    assert inspect.getclosurevars(played).nonlocals["model"] is rollout.openai_policy_model
    assert inspect.getclosurevars(played).nonlocals["observer"] is None
    assert main.app.handlers["main"] is main.handle_rollout


def test_a_handler_for_another_model_is_composed_as_the_deployed_one() -> None:
    def factory(endpoint: str, params: dict) -> None:
        return None

    handler = main.rollout_handler(factory)
    # guard, then the SDK's own wrapper (the real sagemaker_rft_handler), then the rollout
    sdk_wrapper = sagemaker_rft_handler(lambda payload: payload).__code__
    assert wrapper_codes(handler) == wrapper_codes(main.handle_rollout)
    assert wrapper_codes(handler)[:2] == [main._guarded(lambda payload: payload).__code__, sdk_wrapper]
    assert list(inspect.signature(handler).parameters) == ["payload"]
    assert inspect.getclosurevars(inspect.unwrap(handler)).nonlocals["model"] is factory
    # ... and the deployed handler still plays with the Job Runtime client.
    assert inspect.getclosurevars(inspect.unwrap(main.handle_rollout)).nonlocals["model"] is rollout.openai_policy_model


def test_build_app_registers_its_own_handler_and_leaves_the_deployed_app_alone() -> None:
    app = main.build_app(rollout.openai_policy_model)
    assert app is not main.app and app.handlers["main"] is not main.handle_rollout
    assert wrapper_codes(app.handlers["main"]) == wrapper_codes(main.handle_rollout)


@pytest.mark.parametrize("answer", ["CRANE", "ABBEY"])
def test_a_handler_plays_with_its_model_and_hands_its_observer_the_game(answer: str) -> None:
    factory = solver_model_factory()
    games: list[Any] = []
    handler = main.rollout_handler(factory, observer=lambda task_id, game: games.append(game))
    with quiet_missing_metadata():
        result = handler(handler_payload(answer))
    bare = play(answer)
    assert result["reward"] == pytest.approx(bare.reward)
    assert [tuple(game.guesses) for game in games] == [bare.guesses]
    assert tuple(factory.played_guesses()) == bare.guesses
