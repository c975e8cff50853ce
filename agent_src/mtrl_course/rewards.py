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
  (`first_fix_reward`), rebuilt from the walkthrough's description.

A new design is one entry in `REWARDS` and one test (tests/test_rewards.py); the runner, the
bench and the experiments then offer it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wordle_agent import reward as R
from wordle_agent.game import MAX_GUESSES

TIERED, OUTCOME_ONLY, LEGACY, FIRST_FIX = "tiered", "outcome_only", "legacy", "first_fix"
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
}
DESIGNS = tuple(REWARDS)


def score(design: str, game: Any) -> float:
    """The reward `design` pays for a finished game."""
    scorer = REWARDS.get(design)
    if scorer is None:
        raise ValueError(f"unknown reward design {design!r}; choose one of {DESIGNS}")
    return float(scorer(game))
