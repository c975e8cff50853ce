"""The reference solver behind the Strands model interface, for running the real handler offline.

`SolverPolicyModel` is a Strands custom model provider that never sees the secret word: each time
the agent asks it for a turn, it reads the `guess_word` tool's answers out of the conversation
(`mtrl_course.local.transcript`), asks `EntropySolver` for the next word and answers with a tool
call. It lets `make course` drive the actual rollout handler, agent, tool and reward with a
known-good player, so any gap between it and the bare game loop is a bug in the plumbing.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


from wordle_agent.game import MAX_TOOL_CALLS
from wordle_agent.reward import SUCCESS_THRESHOLD

from mtrl_course.local.provider import InProcessModel
from mtrl_course.local.transcript import clues_from_messages, clues_from_texts, tool_result_texts
from mtrl_course.tool_answers import Clue, is_over, parse_clue
from mtrl_course.solver import (
    EntropySolver,
    default_solver,
    handler_payload,
    quiet_missing_metadata,
    results_frame,
)

# The rollout's tool and argument (wordle_agent.rollout.TOOL_NAME); not imported from there because
# that module pulls in the OpenAI client, which this in-process model never uses.
GUESS_TOOL = "guess_word"
GUESS_PARAMETER = "guess"
MODEL_ID = "reference-entropy-solver"
TOOL_USE_PREFIX = "solver-"
DONE_TEXT = "The game is over."
NO_TOOL_TEXT = "No guess_word tool is available, so I cannot play."
NO_FEEDBACK_TEXT = "The last tool answer carried no feedback; a deterministic solver would only repeat itself."
TOO_LONG_TEXT = "Too many tool calls in this conversation; stopping."


def _text_turn(text: str) -> list[dict]:
    return [
        {"contentBlockStart": {"start": {}}},
        {"contentBlockDelta": {"delta": {"text": text}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


def _tool_turn(name: str, tool_use_id: str, arguments: dict) -> list[dict]:
    return [
        {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": tool_use_id}}}},
        # Strands expects the input as a JSON *string* in the delta, as a streaming API sends it.
        {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


def _pick_tool(tool_specs: Any) -> tuple[str, str] | None:
    """(tool name, argument name) of the guessing tool among the specs offered, if any."""
    specs = [s for s in tool_specs or [] if isinstance(s, dict) and isinstance(s.get("name"), str)]
    chosen = next((s for s in specs if s["name"] == GUESS_TOOL), None)
    if chosen is None and len(specs) == 1:
        chosen = specs[0]
    if chosen is None:
        return None
    schema = chosen.get("inputSchema", {})
    schema = schema.get("json", schema) if isinstance(schema, dict) else {}
    properties = list((schema.get("properties") or {}) if isinstance(schema, dict) else {})
    if GUESS_PARAMETER in properties or len(properties) != 1:
        return chosen["name"], GUESS_PARAMETER
    return chosen["name"], properties[0]


class SolverPolicyModel(InProcessModel):
    """The reference solver (entropy-greedy, not a learned policy) as a Strands model provider.

    It decides from the conversation only: the clues in the tool's answers. It ends the turn with
    a short text when the last answer says the game is over or solved, when there is no guessing
    tool, or when the last answer carried no feedback (repeating a deterministic call is futile).
    """

    STRUCTURED_OUTPUT_REFUSAL = "the reference solver only plays Wordle through its tool"

    def __init__(self, solver: EntropySolver | None = None, **model_config: Any) -> None:
        self.solver = solver or default_solver()
        self.config: dict[str, Any] = {"model_id": MODEL_ID, **model_config}
        # The conversation as of the latest call, and every guess this model sent, in order. The
        # rollout's tool ends the agent loop right after the game's last answer, so that answer
        # never reaches the model: what was played is read from `emitted`, not the transcript.
        self.last_messages: list = []
        self.emitted: list[str] = []

    def decide(self, messages: Any, tool_specs: Any = None) -> tuple[list[dict], str | None]:
        """One assistant turn's events (without messageStart and metadata) and the guess, if any."""
        tool = _pick_tool(tool_specs)
        if tool is None:
            return _text_turn(NO_TOOL_TEXT), None
        results = tool_result_texts(messages)
        if results and is_over(results[-1]):
            return _text_turn(DONE_TEXT), None
        # A conversation past the game's own cap means something upstream is looping.
        if len(results) >= MAX_TOOL_CALLS:
            return _text_turn(TOO_LONG_TEXT), None
        if results and parse_clue(results[-1]) is None:
            return _text_turn(NO_FEEDBACK_TEXT), None
        try:
            guess = self.solver.next_guess(clues_from_texts(results))
        except ValueError as exc:
            return _text_turn(f"The solver could not read the clues: {exc}"), None
        name, argument = tool
        return _tool_turn(name, f"{TOOL_USE_PREFIX}{len(results)}", {argument: guess}), guess

    async def stream(  # type: ignore[override]  # Strands adds keyword-only options; **kwargs takes them
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[dict[str, Any]]:
        self.last_messages = list(messages or [])
        events, guess = self.decide(messages, tool_specs)
        if guess is not None:
            self.emitted.append(guess)
        yield {"messageStart": {"role": "assistant"}}
        for event in events:
            yield event
        # The solver reads no tokens and writes none; the counts are zero, not made up.
        yield {
            "metadata": {
                "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
                "metrics": {"latencyMs": 0},
            }
        }

    def clues_seen(self) -> list[Clue]:
        """The clues in the conversation as of the latest call."""
        return clues_from_messages(self.last_messages)


class SolverModelFactory:
    """A model factory to hand a rollout (`run_rollout(payload, model=factory)`), keeping what it built.

    Called as `factory(endpoint, params)` once per rollout attempt; the endpoint is ignored (the
    solver runs in-process). Use a fresh factory per rollout to read back that rollout's play.
    """

    def __init__(self, solver: EntropySolver | None = None) -> None:
        self.solver = solver or default_solver()
        self.models: list[SolverPolicyModel] = []

    def __call__(self, endpoint: str, params: dict | None = None) -> SolverPolicyModel:
        model = SolverPolicyModel(self.solver, params=dict(params or {}))
        self.models.append(model)
        return model

    def played_guesses(self) -> list[str]:
        """Every guess the models sent, over all attempts, in play order.

        Each one reached the game: Strands runs every tool call of a turn before it stops.
        """
        return [word for model in self.models for word in model.emitted]


def solver_model_factory(solver: EntropySolver | None = None) -> SolverModelFactory:
    """A factory that builds a `SolverPolicyModel` per attempt (shares one solver and its cache)."""
    return SolverModelFactory(solver)


def play_through_handler(words: Iterable[str], solver: EntropySolver | None = None) -> pd.DataFrame:
    """Play each word through the real rollout handler, in-process, with the solver as the policy.

    Same columns as `play_many`. The handler is the deployed one (`wordle_agent.main`'s guard,
    the SDK's `sagemaker_rft_handler` and `run_rollout`), built for each word with that word's
    solver factory and an observer (`main.rollout_handler`): nothing process-wide is swapped. It
    returns only the reward (all the service ever sees); the guesses, outcome and shaping score
    are read from the finished game the observer is handed, and the reward column is the
    handler's own return value.
    """
    # Imported here: the handler pulls in the SageMaker SDK (seconds); the bare loop never needs it.
    from wordle_agent.main import rollout_handler

    solver = solver or default_solver()
    solver.matrix
    finished: list = []
    rows = []
    with quiet_missing_metadata():
        for index, word in enumerate(words):
            factory = solver_model_factory(solver)
            finished.clear()
            handle_rollout = rollout_handler(factory, observer=lambda _task, game: finished.append(game))
            start = time.perf_counter()
            result = handle_rollout(handler_payload(word, index))
            seconds = time.perf_counter() - start
            # The handler promises {"reward": float}; NaN marks a broken promise in the table.
            reward = float(result.get("reward", "nan") if isinstance(result, dict) else "nan")
            game = finished[-1] if finished else None
            guesses = tuple(game.guesses) if game else tuple(factory.played_guesses())
            rows.append(
                {
                    "answer": word.strip().upper(),
                    "guesses": guesses,
                    "solved": bool(game.solved) if game else bool(reward >= SUCCESS_THRESHOLD),
                    "n_guesses": len(guesses),
                    "reward": reward,
                    "score": float(game.score) if game else float("nan"),
                    "seconds": seconds,
                }
            )
    return results_frame(rows)
