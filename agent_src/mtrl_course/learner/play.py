"""Many games of the learner at once, in-process, for measuring a model quickly.

The real path is the agent: `wordle_agent.rollout.run_rollout` with the Strands agent asking the
Job Runtime (or the fast lane) for each turn. That path serves one conversation per request.
To measure a model on hundreds of words in seconds, this module plays every game of a batch in
lock step instead: each round, every unfinished game's conversation is rendered with the same
chat template, all of them are sampled in one batch, and each reply is parsed and played on a
real `WordleGame`, following the agent's own rules (`wordle_agent.rollout`):

- a well-formed call plays its word and the tool's answer is appended; the loop stops when the
  game is over or the tool-call cap is reached;
- a reply without a well-formed call ends the attempt (Strands' loop ends on a text reply);
- an attempt that made no guess is retried once with a fresh conversation and the agent's
  "call the tool now" prompt;
- afterwards, guesses written as raw text are recovered (`wordle_agent.recovery`) with the
  game's formatting penalty (unless `recovery=False`, the agent's `RAW_TEXT_RECOVERY=off`);
- a curriculum's prior guesses (`priors`) are played for the policy before its first turn and
  shown after the instruction, as the handler does with a task's `prior_guesses`.

tests/test_learner_play.py checks that this loop and the real handler play the same game for the
same sampled replies. The reward is the game's own `final_reward()`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mtrl_course.learner import model as lm
from mtrl_course.learner import sampler, template
from mtrl_course.learner.threads import parallel_map
from wordle_agent.game import WordleGame
from wordle_agent.recovery import extract_guesses
from wordle_agent.rollout import CALL_TOOL_NOW_PROMPT, MAX_AGENT_TURNS, SYSTEM_PROMPT, build_system_prompt

TASK_TEXT = "Guess the hidden 5-letter word."


@dataclass
class PlayedGame:
    answer: str
    game: WordleGame
    turns: list[dict[str, Any]] = field(default_factory=list)  # prompt ids, sampled ids, logprobs
    attempts: int = 1
    texts: list[str] = field(default_factory=list)

    @property
    def reward(self) -> float:
        return self.game.final_reward()

    @property
    def solved(self) -> bool:
        return bool(self.game.solved)


@dataclass
class _State:
    played: PlayedGame
    messages: list[dict[str, Any]]
    rng: np.random.Generator
    instruction: str = TASK_TEXT
    agent_turns: int = 0
    active: bool = True
    made_guess: bool = False
    retried: bool = False


def _fresh_messages(effort: str, hint: bool, retry: bool, instruction: str = TASK_TEXT) -> list[dict[str, Any]]:
    system = build_system_prompt(effort) if hint else SYSTEM_PROMPT
    # The agent's retry is a fresh conversation with the nudge after the instruction.
    task = instruction + ("\n\n" + CALL_TOOL_NOW_PROMPT if retry else "")
    return [{"role": "system", "content": system}, {"role": "user", "content": [{"type": "text", "text": task}]}]


def play_games(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    answers: Sequence[str],
    *,
    temperature: float,
    effort: str,
    seed: int,
    adapter: Any = None,
    top_p: float = 1.0,
    max_tokens: int = 64,
    batch: int = 128,
    tool_call_grammar: bool = False,
    priors: Sequence[Sequence[str]] | None = None,
    recovery: bool = True,
    threads: int = 1,
) -> list[PlayedGame]:
    """Play one game per answer (in chunks of `batch` games sampled together).

    `priors[i]` are answer i's prior guesses (a curriculum's; empty for none); `recovery=False`
    leaves guesses written as raw text unplayed. `threads` > 1 splits each chunk into that many
    groups played at once (faster only on otherwise idle cores): each game draws from its own
    generator, so it samples the same tokens (up to the float rounding of a smaller batch).
    """
    if priors is not None and len(priors) != len(answers):
        raise ValueError(f"priors has {len(priors)} entries for {len(answers)} answers; give one per answer")
    out: list[PlayedGame] = []
    for start in range(0, len(answers), batch):
        chunk = answers[start : start + batch]
        states = []
        for i, a in enumerate(chunk):
            game = WordleGame(a.upper(), prior_guesses=priors[start + i] if priors is not None else ())
            instruction = TASK_TEXT + ("\n\n" + game.prior_guesses_text() if game.seeded else "")
            states.append(
                _State(
                    PlayedGame(a.upper(), game),
                    _fresh_messages(effort, False, False, instruction),
                    np.random.default_rng([seed, start + i]),
                    instruction=instruction,
                )
            )
        params_sampling = sampler.SamplingParams(temperature, top_p, max_tokens, tool_call_grammar=tool_call_grammar)
        # With threads, the chunk's games are split into that many groups sampled at once.
        share = -(-len(states) // max(1, threads))
        groups = [states[i : i + share] for i in range(0, len(states), share)]
        play_group = functools.partial(
            _play_rounds, params, config, sampling=params_sampling, effort=effort, adapter=adapter
        )
        parallel_map(play_group, groups, threads)
        for state in states:
            if recovery:
                _recover(state)
            out.append(state.played)
    return out


def _play_rounds(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    states: list[_State],
    sampling: sampler.SamplingParams,
    effort: str,
    adapter: Any,
) -> None:
    """Play `states` to the end, all unfinished games sampled together each round."""
    # One row per game, kept across rounds: each round reads only a game's new tokens.
    cache = sampler.PromptCache(config, len(states), dtype=params["wte"].dtype)
    cached = list(states)
    while True:
        live = [s for s in states if s.active]
        if not live:
            return
        position = {id(s): i for i, s in enumerate(cached)}
        cache.select([position[id(s)] for s in live])
        cached = live
        prompts = [template.generation_prompt(s.messages, effort) for s in live]
        gens = sampler.generate(params, config, prompts, [sampling] * len(live), [s.rng for s in live], adapter, cache)
        for state, prompt, gen in zip(live, prompts, gens):
            _advance(state, prompt, gen, effort)


def _advance(state: _State, prompt: list[int], gen: sampler.Generation, effort: str) -> None:
    played, game = state.played, state.played.game
    parsed = template.parse_completion(gen.tokens, gen.stopped)
    played.turns.append({"prompt": prompt, "tokens": list(gen.tokens), "logprobs": list(gen.logprobs)})
    state.agent_turns += 1
    message: dict[str, Any] = {"role": "assistant"}
    if parsed.content:
        message["content"] = [{"type": "text", "text": parsed.content}]
        played.texts.append(parsed.content)
    if parsed.guess is not None:
        call_id = f"call_{state.agent_turns}"
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": template.TOOL_NAME,
                    "arguments": json.dumps({template.TOOL_ARGUMENT: parsed.guess}),
                },
            }
        ]
        state.messages.append(message)
        answer = game.guess(parsed.guess)
        state.messages.append({"role": "tool", "tool_call_id": call_id, "content": answer})
        state.made_guess = state.made_guess or bool(game.policy_guesses)
        if game.over or game.limit_reached or state.agent_turns >= MAX_AGENT_TURNS:
            state.active = False
        return
    state.messages.append(message)
    # A text reply ends the attempt; one that made no guess is retried once, afresh.
    if not game.policy_guesses and not state.retried:
        state.retried = True
        played.attempts += 1
        state.messages = _fresh_messages(effort, False, True, state.instruction)
        state.agent_turns = 0
        return
    state.active = False


def _recover(state: _State) -> None:
    game = state.played.game
    for text in state.played.texts:
        for word in extract_guesses(text):
            if game.over or game.limit_reached:
                return
            if word in game.guesses:
                continue
            game.guess_from_text(word)


def solve_rate(games: Sequence[PlayedGame]) -> tuple[float, float]:
    """(solve rate, its standard error) over `games`."""
    solved = np.array([g.solved for g in games], dtype=float)
    if len(solved) == 0:
        return float("nan"), float("nan")
    return float(solved.mean()), float(solved.std(ddof=1) / np.sqrt(len(solved))) if len(solved) > 1 else 0.0
