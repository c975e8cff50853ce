"""The episode reward: every reward constant, and the functions that turn a game into one float.

One rollout is one game, and the training service sees one number per rollout. The number has two
parts. A dominant *outcome* term says what happened (solved on guess n, lost, never played), in
tiers that can never overlap. A small *shaping* term, clipped and weighted, rewards playing well
within a tier, because GRPO learns only from reward differences inside a group of rollouts: if
every lost game paid exactly -0.5, a group of losses would teach nothing.

The shaping events themselves (what each guess adds to the game's running `score`) are listed
here too, so this file is the one place to read or change any reward number; `game.py` decides
when each event fires.

`legacy_reward` keeps the first, summed design alive for the reward deep dive: it is what paid a
lost game about +0.49 and ranked a first-guess solve below a third-guess solve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

# --- The game rule the tiers are built on --------------------------------------------------------

# Six guesses per game. It lives here, not in game.py, because the outcome tiers are a function of
# it and game.py imports this module (game.MAX_GUESSES re-exports it).
MAX_GUESSES = 6

# The service counts a rollout as a success when its reward is at least this value
# (`success_threshold` in the training job), so every solve must clear it and no loss may.
SUCCESS_THRESHOLD = 1.0

# --- Outcome tiers --------------------------------------------------------------------------------

# A solve on guess n pays SOLVE_BASE + SPEED_BONUS * (6 - n) / 5: 1.55, 1.45, ..., 1.05. Adjacent
# guess counts are SPEED_BONUS / 5 = 0.1 apart, which is what the solve shaping weight must respect.
SOLVE_BASE = 1.05
SPEED_BONUS = 0.5
# Playing all six guesses without solving. Negative, so a loss can never look like progress.
LOSS_REWARD = -0.5
# No valid guess at all (only malformed calls, or no tool call). Below every loss (-0.65 at worst),
# so "do nothing" is never a safe strategy for the policy.
NO_PLAY_REWARD = -1.5

# --- Shaping: how the game's running score enters the reward --------------------------------------

# The running score is divided by this and clipped to +-SHAPING_CLIP before weighting, so a game
# with extreme shaping (many penalties, or many bonuses) cannot leave its tier.
SHAPING_SCALE = 150.0
SHAPING_CLIP = 1.0
# Solves: +-0.04 at most. Twice 0.04 is below the 0.1 between adjacent guess counts, so the worst
# guess-n solve still beats the best guess-(n+1) solve; and 1.05 - 0.04 = 1.01 clears the success
# threshold. (A single weight of 0.15 let a well-shaped guess-3 solve outscore a badly shaped
# guess-2 solve.)
SOLVED_SHAPING_WEIGHT = 0.04
# Losses: +-0.15, so every loss lies in [-0.65, -0.35]: above no-play, below zero and below every
# solve, yet wide enough that clue-consistent losses visibly beat careless ones.
LOST_SHAPING_WEIGHT = 0.15

# --- Shaping events (points added to the game's running score) -----------------------------------

# Every guess that uses a turn, including repeats and the solving guess: dawdling costs.
TIME_PENALTY = -1.0
# Input that is not five letters A-Z. It uses no guess, so without a penalty a policy could
# emit junk for free; it is the largest single penalty.
MALFORMED_PENALTY = -50.0
# Guessing a word again uses a turn and cannot reveal anything.
REPEAT_PENALTY = -40.0
# Every other guess that uses a turn starts from this bonus (the solving guess does not).
VALID_GUESS_BASE = 15.0
# Clue violations, judged against what was known before the guess.
GREEN_NOT_KEPT_PENALTY = -30.0  # per known-green position holding another letter
YELLOW_UNDERUSED_PENALTY = -20.0  # per known-present letter used fewer times than required
GRAY_USED_PENALTY = -20.0  # per distinct known-absent letter used
# Stagnation: small costs for spending letters on what is already known, which nudges the policy
# towards guesses that test new letters.
GREEN_KEPT_PENALTY = -3.0  # per known-green position kept
YELLOW_REUSED_PENALTY = -1.5  # per distinct known-yellow letter used again
# First guess only: points per bit of the opener's expected information (words.ENTROPY).
OPENER_ENTROPY_BONUS = 7.5
# Second guess on: per distinct letter that no earlier guess tried.
NEW_LETTER_BONUS = 2.0
# A five-letter string that is not in the allowed-guess list (it still uses a turn).
NOT_IN_DICTIONARY_PENALTY = -35.0
# Second guess on: this many points times the share of the remaining possible answers that the
# guess ruled out.
ELIMINATION_BONUS = 15.0
# A guess recovered from the assistant's raw text instead of a real tool call (on top of the rest):
# small enough to keep the game's outcome, large enough that the group prefers proper tool calls.
RAW_TEXT_PENALTY = -5.0

# --- The legacy (summed) design, for the reward deep dive only ----------------------------------

# The per-guess scores were added straight into the episode reward, the solving guess added 150,
# never making a valid guess added -200, and the sum was divided by 150: no tiers, no clip.
LEGACY_SOLVE_BONUS = 150.0
LEGACY_NO_PLAY_PENALTY = -200.0
LEGACY_SCALE = 150.0


class _PlayedGame(Protocol):
    """What `legacy_reward` reads from a game (any object with these attributes will do)."""

    score: float
    solved: bool
    guesses: Sequence[str]


def clipped_shaping(score: float) -> float:
    """The running score scaled by SHAPING_SCALE and clipped to [-1, 1].

    The clip is what makes the tier guarantees hold for any game, however many bonuses or
    penalties it collected: the weighted shaping can never move a reward by more than its weight.
    """
    if math.isnan(score):
        raise ValueError("clipped_shaping got score=nan; the shaping score must be a number")
    return max(-SHAPING_CLIP, min(SHAPING_CLIP, score / SHAPING_SCALE))


def outcome_reward(solved: bool, n_guesses: int, score: float) -> float:
    """The episode reward: the outcome tier plus the weighted, clipped shaping.

    `n_guesses` is the number of guesses that used a turn; 0 means no valid guess was ever made,
    which pays NO_PLAY_REWARD whatever the score. A game that stopped early without solving counts
    as a loss (the tier does not care why the game ended).

    Guarantees (proved in tests/test_reward.py for every guess count and any score):
    a solve on guess n beats every solve on guess n+1; every solve is >= 1.01; every loss lies in
    [-0.65, -0.35]; never playing (-1.5) is below every loss.
    """
    if not 0 <= n_guesses <= MAX_GUESSES:
        raise ValueError(f"n_guesses must be between 0 and {MAX_GUESSES}; got {n_guesses!r}")
    if n_guesses == 0:
        return NO_PLAY_REWARD
    shaping = clipped_shaping(score)
    if solved:
        speed = SPEED_BONUS * (MAX_GUESSES - n_guesses) / (MAX_GUESSES - 1)
        return SOLVE_BASE + speed + SOLVED_SHAPING_WEIGHT * shaping
    return LOSS_REWARD + LOST_SHAPING_WEIGHT * shaping


def legacy_reward(game: _PlayedGame) -> float:
    """The first, summed design: (running score + 150 if solved - 200 if never played) / 150.

    Kept only to reproduce its inversions on real games: six turns of per-guess bonuses can make a
    lost game pay about +0.49, and a first-guess solve (about +0.99, having had one turn to collect
    bonuses) scores below a third-guess solve (about +1.6). Never use it for training.
    """
    total = game.score
    if game.solved:
        total += LEGACY_SOLVE_BONUS
    # Guesses seeded by a curriculum (WordleGame.seeded) do not count as playing.
    if len(game.guesses) <= getattr(game, "seeded", 0):
        total += LEGACY_NO_PLAY_PENALTY
    return total / LEGACY_SCALE
