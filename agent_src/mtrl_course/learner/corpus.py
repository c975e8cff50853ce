"""The base model's training text: games the project's own players play, rendered as chat.

Each game is played on a real `WordleGame` by one of `PLAYERS`, then written out as the
OpenAI-format conversation the Strands agent would send (system, task, one assistant tool call
per guess, the tool's real answer after each), and rendered with the learner's chat template.
Only the assistant turns are trained on (a mask), as in supervised fine-tuning of a chat model:
the model learns to write calls, not to predict the tool's answers.

Players, from strong to weak (all read only the clues, never the answer):
- "solver": the reference entropy solver (`mtrl_course.solver.EntropySolver`);
- "plausible": one of the best openers, then a uniformly random answer word still consistent
  with every clue (a human-like player who respects clues but does not optimise);
- "greens": keeps every known green letter in place, otherwise a random answer word (it
  ignores yellows and grays: the clue-breaking habit the reward's shaping charges for);
- "random": a random answer word each turn, clues ignored.

Slips (`slip_rate`, per turn): now and then a player's word comes out misspelt (one letter
changed, so that it is outside the dictionary). The game charges it a turn and the tool answers it
with the outside-dictionary mark (`c-r?a-n-e+!`); the player then goes on as before (the answer
itself is never slipped: a slip is noise in the context, not a lost game). The slipped
turn itself is masked out of training (the model should not learn to misspell), but its answer
stays in the context. Without slips every turn of a low-effort game has the same length, the
model can learn "close the call at position 3 + 20k + 7" instead of "after five letters", and the
first outside-dictionary guess it makes at run time shifts every later position by one: measured
on the stage-5 base, 123 of 128 held-out games ended with a four-letter call, each right after
its own outside-dictionary guess.

At medium effort the assistant first writes a short scratchpad of what the clues prove, in the
same compact marks as the tool results: `=__a_e ?s -cnr` (greens in place, letters known to be
present, letters known absent), then the call. At low effort it calls at once. The scratchpad is
always true of the clues, whatever the player then guesses: a weak player with a correct
scratchpad is the data's way of saying "knowing is not the same as using".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import json

import numpy as np

from mtrl_course.learner import template
from mtrl_course.learner import tokenizer as tok
from mtrl_course.solver import EntropySolver
from wordle_agent.game import WordleGame
from wordle_agent.words import ALLOWED
from wordle_agent.rollout import SYSTEM_PROMPT
from wordle_agent.words import ANSWERS, ENTROPY

PLAYERS = ("solver", "plausible", "greens", "random")
EFFORTS = ("low", "medium")
TASK_TEXT = "Guess the hidden 5-letter word."
OPENERS = 20  # "plausible" opens with one of the best openers by entropy


@dataclass(frozen=True)
class Example:
    """One rendered game: its tokens and which of them are trained on (the assistant's)."""

    tokens: tuple[int, ...]
    mask: tuple[bool, ...]
    player: str
    effort: str
    solved: bool
    guesses: int


def scratchpad(game: WordleGame) -> str:
    """What the clues so far prove, compactly: greens in place, present letters, absent letters."""
    if not game.guesses:
        return ""
    k = game.knowledge
    out = "=" + "".join((c or "_").lower() for c in k.greens)
    if k.yellow:
        out += " ?" + "".join(sorted(c.lower() for c in k.yellow))
    if k.grays:
        out += " -" + "".join(sorted(c.lower() for c in k.grays))
    return out


class Players:
    """The players of `PLAYERS`, sharing one solver (its pattern matrix is built once)."""

    def __init__(self, solver: EntropySolver | None = None, answers: Sequence[str] = ANSWERS) -> None:
        self.solver = solver or EntropySolver()
        self.answers = [w.upper() for w in answers]
        self.openers = sorted((w for w in ANSWERS if w in ENTROPY), key=lambda w: (-ENTROPY[w], w))[:OPENERS]

    def guess(self, player: str, game: WordleGame, rng: np.random.Generator) -> str:
        guessed = set(game.guesses)
        if player == "solver":
            clues = [(e.word, _marks(e.word, game.answer)) for e in game.events if e.kind in ("guess", "solve")]
            return self.solver.next_guess(clues)
        if player == "plausible":
            if not game.guesses:
                return self.openers[int(rng.integers(len(self.openers)))]
            left = [w for w in game.possibilities() if w not in guessed]
            return left[int(rng.integers(len(left)))] if left else self._any(rng, guessed)
        if player == "greens":
            greens = game.knowledge.greens
            fits = [
                w
                for w in self.answers
                if w not in guessed and all(g is None or w[i] == g for i, g in enumerate(greens))
            ]
            return fits[int(rng.integers(len(fits)))] if fits else self._any(rng, guessed)
        if player == "random":
            return self._any(rng, guessed)
        raise ValueError(f"unknown player {player!r}; choose from {PLAYERS}")

    def _any(self, rng: np.random.Generator, guessed: set[str]) -> str:
        while True:
            word = self.answers[int(rng.integers(len(self.answers)))]
            if word not in guessed:
                return word


def slip(word: str, guessed: set[str], rng: np.random.Generator) -> str:
    """`word` with one letter changed so that it is outside the dictionary and not yet guessed."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    while True:
        at = int(rng.integers(len(word)))
        changed = word[:at] + letters[int(rng.integers(len(letters)))] + word[at + 1 :]
        if changed not in ALLOWED and changed not in guessed:
            return changed


# A message key the chat template ignores: this assistant turn is context, not a training target.
UNTRAINED = "_untrained"


def _marks(word: str, answer: str) -> list[str]:
    from wordle_agent.game import score_guess

    return score_guess(word, answer)


def conversation(
    game_answer: str,
    player: str,
    effort: str,
    players: Players,
    rng: np.random.Generator,
    slip_rate: float = 0.0,
) -> tuple[list[dict[str, Any]], WordleGame]:
    """Play one game and return the OpenAI-format messages the agent would have sent, and the game.

    A turn that slipped (see the module docstring) carries `UNTRAINED`: `render_example` masks it.
    """
    game = WordleGame(game_answer)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": [{"type": "text", "text": TASK_TEXT}]},
    ]
    turn = 0
    while not game.over:
        note = scratchpad(game) if effort != "low" else ""
        word = players.guess(player, game, rng)
        slipped = slip_rate > 0 and word != game.answer and rng.random() < slip_rate
        if slipped:
            word = slip(word, set(game.guesses), rng)
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": template.TOOL_NAME, "arguments": json.dumps({template.TOOL_ARGUMENT: word.lower()})},
        }
        message: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
        if note:
            message["content"] = [{"type": "text", "text": note}]
        if slipped:
            message[UNTRAINED] = True
        messages.append(message)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": game.guess(word)})
        turn += 1
    return messages, game


def render_example(messages: Sequence[Mapping[str, Any]], effort: str) -> tuple[list[int], list[bool]]:
    """Tokens of a whole conversation and the mask of the assistant's own tokens (after `<asst>`)."""
    ids = template.render([], effort)
    mask = [False] * len(ids)
    for message in messages:
        part = template.render_message(message)
        ids += part
        trained = message.get("role") == "assistant" and not message.get(UNTRAINED)
        # `<asst>` itself is the template's (the generation prompt ends with it); the rest is the model's.
        mask += [False] + [trained] * (len(part) - 1) if part else []
    return ids, mask


def build(
    answers: Sequence[str],
    mix: Mapping[str, float],
    efforts: Mapping[str, float],
    games: int,
    seed: int,
    players: Players | None = None,
    slip_rate: float = 0.0,
) -> list[Example]:
    """`games` games: each picks an answer, a player (by `mix`) and an effort (by `efforts`)."""
    rng = np.random.default_rng(seed)
    players = players or Players()
    names, weights = list(mix), np.array([mix[n] for n in mix], dtype=float)
    levels, level_weights = list(efforts), np.array([efforts[e] for e in efforts], dtype=float)
    out = []
    for _ in range(games):
        answer = answers[int(rng.integers(len(answers)))].upper()
        player = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        effort = levels[int(rng.choice(len(levels), p=level_weights / level_weights.sum()))]
        messages, game = conversation(answer, player, effort, players, rng, slip_rate)
        ids, mask = render_example(messages, effort)
        out.append(Example(tuple(ids), tuple(mask), player, effort, game.solved, len(game.guesses)))
    return out


def assistant_text(example: Example) -> str:
    """The trained part of an example, for reading."""
    return tok.show([t for t, m in zip(example.tokens, example.mask) if m])
