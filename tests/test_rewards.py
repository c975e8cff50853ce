"""The one reward registry (`mtrl_course.rewards`): every design scores real games, one test each.

A new design is one entry in `rewards.REWARDS` and one row of `EXPECTED` below: the last test
fails until both exist. The runner and the experiments offer a design by name from the registry.
"""

from __future__ import annotations

import pytest
from wordle_agent import reward as R
from wordle_agent.game import WordleGame

from mtrl_course import rewards
from mtrl_course.local import runner


def _game(answer: str, guesses: list[str], prior: list[str] | None = None) -> WordleGame:
    game = WordleGame(answer, prior_guesses=prior or [])
    for word in guesses:
        game.guess(word)
    return game


SOLVED_ON_3 = ["CRANE", "HOIST", "PASTE"]
LOST = ["CRANE", "HOIST", "BLIMP", "DUCKY", "FORGE", "WHELP"]

# Per design: (what a guess-3 solve of PASTE pays, what a six-guess loss pays), computed from the
# documented constants (wordle_agent/reward.py), not from the registry under test.
EXPECTED = {
    rewards.OUTCOME_ONLY: (
        lambda g: R.SOLVE_BASE + R.SPEED_BONUS * 3 / 5,
        lambda g: R.LOSS_REWARD,
    ),
    rewards.TIERED: (lambda g: g.final_reward(), lambda g: g.final_reward()),
    rewards.LEGACY: (lambda g: (g.score + 150) / 150, lambda g: g.score / 150),
    rewards.FIRST_FIX: (
        lambda g: 1.0 + R.SPEED_BONUS * 3 / 5 + 0.15 * R.clipped_shaping(g.score),
        lambda g: R.LOSS_REWARD + 0.15 * R.clipped_shaping(g.score),
    ),
}


@pytest.mark.parametrize("design", rewards.DESIGNS)
def test_each_design_pays_what_its_definition_says(design):
    solved, lost = _game("PASTE", SOLVED_ON_3), _game("PASTE", LOST)
    assert solved.solved and not lost.solved and len(lost.guesses) == 6
    pays_solved, pays_lost = EXPECTED[design]
    assert rewards.score(design, solved) == pytest.approx(pays_solved(solved), abs=1e-12)
    assert rewards.score(design, lost) == pytest.approx(pays_lost(lost), abs=1e-12)


@pytest.mark.parametrize("design", [d for d in rewards.DESIGNS if d != rewards.LEGACY])
def test_a_game_the_policy_never_played_pays_no_play(design):
    seeded_only = _game("PASTE", [], prior=["CRANE"])
    assert rewards.played(seeded_only) == 0
    assert rewards.score(design, seeded_only) == R.NO_PLAY_REWARD


def test_an_unknown_design_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown reward design 'summed'; choose one of"):
        rewards.score("summed", _game("PASTE", SOLVED_ON_3))
    with pytest.raises(ValueError, match="reward 'summed' is not one of"):
        runner.RunnerOptions(reward="summed")


def test_every_design_has_its_test_and_the_runner_offers_it():
    assert set(EXPECTED) == set(rewards.REWARDS), "a design without a row in EXPECTED, or a row without a design"
    for design in rewards.DESIGNS:
        assert runner.RunnerOptions(reward=design).reward == design
