"""The reward designs, in one registry: a name maps to the one function that scores a finished game.

Read by the offline training runner (`RunnerOptions(reward=...)`), by the reward deep dive's bench
(`reward_designs`, notebook 09) and by the experiments (their `--reward`). Each design
scores a game played in the real `wordle_agent.game.WordleGame`:

- `tiered`: the reward the agent itself reports (`game.final_reward()`: the outcome tier plus the
  weighted, clipped shaping; `wordle_agent.reward.outcome_reward`);
- `outcome_only`: the same tiers without the shaping term (only what happened: solved on guess n,
  lost, never played);
- `legacy`: the first, summed design (`wordle_agent.reward.legacy_reward`), kept to reproduce its
  inversions; never train with it on purpose;
- `first_fix`: the walkthrough's first fix, one shaping weight for solves and losses alike
  (`first_fix_reward`), rebuilt from the walkthrough's description;
- `tiered_full_loss`: `tiered`, except that an abandoned game (`abandoned`: the policy played, did
  not solve, and the game ended before its sixth guess, because a reply without a well-formed call
  or the tool-call cap stopped it) is charged as a full loss: each guess it did not play adds
  `MALFORMED_PENALTY` to the shaping score before the clip (`full_loss_score`). Under `tiered` a
  lost game's shaping is the sum of its guesses' scores, so a policy whose guesses mostly cost
  (clue violations, repeats, words outside the dictionary) loses less by stopping early, and
  experiments/learner_grpo.py saw the learner learn exactly that. Here every clean guess (a
  dictionary word that breaks no clue adds at least -1 + 15 less a few points of stagnation) adds
  more than the malformed penalty (-50), so an abandoned game never pays more than the same game
  played out with clean guesses. Solves, six-guess losses and games the policy never played pay
  exactly what `tiered` pays.

A new design is one entry in `REWARDS` and one test (tests/test_rewards.py); the runner, the
bench and the experiments then offer it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wordle_agent import reward as R
from wordle_agent.game import MAX_GUESSES

TIERED, OUTCOME_ONLY, LEGACY, FIRST_FIX = "tiered", "outcome_only", "legacy", "first_fix"
TIERED_FULL_LOSS = "tiered_full_loss"
# The first fix used one shaping weight for solves and losses. The walkthrough gives the weight
# (0.15) and two rewards it produced (+1.45 for a guess-3 solve, +1.25 for a guess-2 solve); both
# fit tiers that start at 1.0 (1.30 + 0.15 and 1.40 - 0.15), so 1.0 is the base we rebuild it
# with. That base is our inference from those two numbers, not a documented constant.
FIRST_FIX_WEIGHT = 0.15
FIRST_FIX_BASE = 1.0


def played(game: Any) -> int:
    """Valid guesses the policy itself made (a curriculum's seeded guesses do not count)."""
    return len(game.guesses) - int(getattr(game, "seeded", 0))


def turns_used(game: Any) -> int:
    """The guesses a design counts: every guess of the game, or 0 if the policy never played."""
    return len(game.guesses) if played(game) > 0 else 0


def abandoned(game: Any) -> bool:
    """The policy played at least one guess, did not solve, and the game ended before its sixth guess.

    The same as `played(game) > 0 and not game.over`: the game itself never stops a player before
    a solve or six guesses, so such a game was ended from outside, by a reply without a well-formed
    tool call (the agent's loop ends on a text reply), by the tool-call cap (`MAX_TOOL_CALLS`, only
    reachable with malformed calls) or by the agent's turn cap. Guesses a curriculum seeded count
    towards the six, as the outcome tier counts them.
    """
    return played(game) > 0 and not game.solved and len(game.guesses) < MAX_GUESSES


def full_loss_score(game: Any) -> float:
    """The game's shaping score, with `MALFORMED_PENALTY` charged for every guess an abandoned game
    did not play (the score unchanged for every other game)."""
    missing = MAX_GUESSES - len(game.guesses) if abandoned(game) else 0
    return game.score + R.MALFORMED_PENALTY * missing


def first_fix_reward(
    solved: bool, n_guesses: int, score: float, *, weight: float = FIRST_FIX_WEIGHT, base: float = FIRST_FIX_BASE
) -> float:
    """The first fix: tiers plus `weight` x clipped shaping for solves and losses alike."""
    if not 0 <= n_guesses <= MAX_GUESSES:
        raise ValueError(f"n_guesses must be between 0 and {MAX_GUESSES}; got {n_guesses!r}")
    if n_guesses == 0:
        return R.NO_PLAY_REWARD
    shaping = weight * R.clipped_shaping(score)
    if solved:
        return base + R.SPEED_BONUS * (MAX_GUESSES - n_guesses) / (MAX_GUESSES - 1) + shaping
    return R.LOSS_REWARD + shaping


REWARDS: dict[str, Callable[[Any], float]] = {
    OUTCOME_ONLY: lambda game: R.outcome_reward(game.solved, turns_used(game), 0.0),
    TIERED: lambda game: R.outcome_reward(game.solved, turns_used(game), game.score),
    LEGACY: R.legacy_reward,
    FIRST_FIX: lambda game: first_fix_reward(game.solved, turns_used(game), game.score),
    TIERED_FULL_LOSS: lambda game: R.outcome_reward(game.solved, turns_used(game), full_loss_score(game)),
}
DESIGNS = tuple(REWARDS)


def score(design: str, game: Any) -> float:
    """The reward `design` pays for a finished game."""
    scorer = REWARDS.get(design)
    if scorer is None:
        raise ValueError(f"unknown reward design {design!r}; choose one of {DESIGNS}")
    return float(scorer(game))
