"""The one reward registry (`mtrl_course.rewards`): every design scores real games, one test each.

A new design is one entry in `rewards.REWARDS` and one row of `EXPECTED` below: the last test
fails until both exist. The runner and the experiments offer a design by name from the registry.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wordle_agent import reward as R
from wordle_agent.game import MAX_TOOL_CALLS, WordleGame
from wordle_agent.words import ALLOWED, ANSWERS

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
    # A solve and a six-guess loss are not abandoned: they pay what `tiered` pays.
    rewards.TIERED_FULL_LOSS: (lambda g: g.final_reward(), lambda g: g.final_reward()),
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


# --- tiered_full_loss: an abandoned game is charged the guesses it did not play -------------------

LOSS_TIER = (R.LOSS_REWARD - R.LOST_SHAPING_WEIGHT, R.LOSS_REWARD + R.LOST_SHAPING_WEIGHT)  # [-0.65, -0.35]


CLEAN_LOSS = ("WATCH", ["BATCH", "CATCH", "HATCH", "LATCH", "MATCH", "PATCH"])  # six guesses, no clue broken


def test_an_abandoned_game_pays_below_the_same_game_played_out():
    answer, guesses = CLEAN_LOSS
    abandoned, finished = _game(answer, guesses[:2]), _game(answer, guesses)  # stopped by a text reply after 2
    assert rewards.abandoned(abandoned) and not abandoned.over
    assert not rewards.abandoned(finished) and not rewards.abandoned(_game("PASTE", SOLVED_ON_3))
    full_loss = rewards.score(rewards.TIERED_FULL_LOSS, abandoned)
    expected = R.LOSS_REWARD + R.LOST_SHAPING_WEIGHT * R.clipped_shaping(abandoned.score + 4 * R.MALFORMED_PENALTY)
    assert full_loss == expected
    assert full_loss < rewards.score(rewards.TIERED_FULL_LOSS, finished) == finished.final_reward()
    # What the design is for: under `tiered`, stopping after two guesses pays more than playing on
    # with guesses that break clues; charged as a full loss, it no longer does.
    stopped, played_on = _game("PASTE", LOST[:2]), _game("PASTE", LOST)
    assert rewards.score(rewards.TIERED, stopped) > rewards.score(rewards.TIERED, played_on)
    assert rewards.score(rewards.TIERED_FULL_LOSS, stopped) <= rewards.score(rewards.TIERED_FULL_LOSS, played_on)
    # Malformed calls use no guess: a game stopped by the tool-call cap is abandoned too.
    capped = _game("PASTE", ["CRANE"] + ["crane!"] * (MAX_TOOL_CALLS - 1))
    assert capped.limit_reached and rewards.abandoned(capped)
    assert rewards.score(rewards.TIERED_FULL_LOSS, capped) == R.LOSS_REWARD - R.LOST_SHAPING_WEIGHT


ALLOWED_SORTED = sorted(ALLOWED)
MALFORMED_CALLS = ["", "crane!", "QQ", None]
CALL_KINDS = ["clean"] * 3 + ["any", "malformed", "malformed", "answer"]  # the answer rarely: few solves


def _clean(game: WordleGame) -> list[str]:
    """Words consistent with every clue so far, never the answer and never a repeat."""
    return [w for w in game.possibilities() if w != game.answer and w not in game.guesses]


@st.composite
def abandoned_and_played_out(draw: st.DrawFn) -> tuple[WordleGame, WordleGame | None]:
    """A game stopped after up to eight random calls (clean guesses, any dictionary word, malformed
    input, now and then the answer), and the same game played out to six guesses: clean guesses
    while any is left, then repeats of a played word (a repeat adds -41, still above the malformed
    penalty). None if the game cannot be played out (the tool-call cap, or no guess to repeat)."""
    answer = draw(st.sampled_from(ANSWERS))
    calls: list[object] = []
    game = WordleGame(answer)
    for kind in draw(st.lists(st.sampled_from(CALL_KINDS), max_size=8)):
        if kind == "clean" and _clean(game):
            call: object = draw(st.sampled_from(_clean(game)))
        elif kind == "malformed":
            call = draw(st.sampled_from(MALFORMED_CALLS))
        else:
            call = answer if kind == "answer" else draw(st.sampled_from(ALLOWED_SORTED))
        calls.append(call)
        game.guess(call)
    played_out = _game(answer, calls)
    while not played_out.over:
        if played_out.limit_reached or not played_out.policy_guesses:
            return game, None
        played_out.guess(draw(st.sampled_from(_clean(played_out) or played_out.policy_guesses)))
    return game, played_out


@settings(max_examples=300, deadline=None)
@given(abandoned_and_played_out())
def test_tiered_full_loss_is_tiered_except_for_abandoned_games(case):
    game, played_out = case
    full_loss, tiered = rewards.score(rewards.TIERED_FULL_LOSS, game), rewards.score(rewards.TIERED, game)
    if not rewards.abandoned(game):  # a solve, a six-guess loss or no play at all
        assert full_loss == tiered
        return
    assert LOSS_TIER[0] <= full_loss <= tiered <= LOSS_TIER[1]
    if played_out is not None:  # each added guess scores above the malformed penalty it replaces
        assert all(e.delta > R.MALFORMED_PENALTY for e in played_out.events[len(game.events) :])
        assert full_loss <= rewards.score(rewards.TIERED_FULL_LOSS, played_out)
