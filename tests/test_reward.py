"""The reward's guarantees, proved over every guess count, any shaping and random real games.

The tier ordering is the whole point of the reward design (BRIEF section 6): if a test here fails,
some game can now pay more for a worse outcome, which is exactly the bug the legacy design had.
"""

from __future__ import annotations

import math
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wordle_agent import reward
from wordle_agent.game import MAX_TOOL_CALLS, WordleGame, score_guess
from wordle_agent.reward import (
    MAX_GUESSES,
    NO_PLAY_REWARD,
    SUCCESS_THRESHOLD,
    clipped_shaping,
    legacy_reward,
    outcome_reward,
)
from wordle_agent.words import ALLOWED, ANSWERS

ALLOWED_SORTED = sorted(ALLOWED)
# Far past the clip both ways (the clip starts at +-150), plus the infinities.
EXTREME_SCORES = [
    -math.inf,
    -1e12,
    -1500.0,
    -150.0,
    -75.0,
    0.0,
    75.0,
    150.0,
    1500.0,
    1e12,
    math.inf,
]
ANY_SCORE = st.floats(allow_nan=False)  # includes +-inf and huge magnitudes
WORST_SOLVE = 1.01
LOSS_BAND = (-0.65, -0.35)


def play(answer: str, *words: object) -> WordleGame:
    game = WordleGame(answer)
    for word in words:
        game.guess(word)
    return game


def solve_tier(n: int) -> float:
    return 1.05 + 0.5 * (6 - n) / 5


# --- Constants are the documented ones ------------------------------------------------------------


def test_constants_match_the_agent_spec() -> None:
    expected = {
        "MAX_GUESSES": 6,
        "SUCCESS_THRESHOLD": 1.0,
        "SOLVE_BASE": 1.05,
        "SPEED_BONUS": 0.5,
        "LOSS_REWARD": -0.5,
        "NO_PLAY_REWARD": -1.5,
        "SHAPING_SCALE": 150.0,
        "SHAPING_CLIP": 1.0,
        "SOLVED_SHAPING_WEIGHT": 0.04,
        "LOST_SHAPING_WEIGHT": 0.15,
        "TIME_PENALTY": -1.0,
        "MALFORMED_PENALTY": -50.0,
        "REPEAT_PENALTY": -40.0,
        "VALID_GUESS_BASE": 15.0,
        "GREEN_NOT_KEPT_PENALTY": -30.0,
        "YELLOW_UNDERUSED_PENALTY": -20.0,
        "GRAY_USED_PENALTY": -20.0,
        "GREEN_KEPT_PENALTY": -3.0,
        "YELLOW_REUSED_PENALTY": -1.5,
        "OPENER_ENTROPY_BONUS": 7.5,
        "NEW_LETTER_BONUS": 2.0,
        "NOT_IN_DICTIONARY_PENALTY": -35.0,
        "ELIMINATION_BONUS": 15.0,
        "RAW_TEXT_PENALTY": -5.0,
        "LEGACY_SOLVE_BONUS": 150.0,
        "LEGACY_NO_PLAY_PENALTY": -200.0,
        "LEGACY_SCALE": 150.0,
    }
    assert {name: getattr(reward, name) for name in expected} == expected


# --- Forced states: every guess count, shaping far past the clip ---------------------------------


@pytest.mark.parametrize("n", range(1, MAX_GUESSES))
def test_worst_solve_on_n_beats_best_solve_on_n_plus_1(n: int) -> None:
    worst = min(outcome_reward(True, n, s) for s in EXTREME_SCORES)
    best_slower = max(outcome_reward(True, n + 1, s) for s in EXTREME_SCORES)
    assert worst > best_slower
    # The margin the weight was chosen for: 0.1 between tiers, 2 x 0.04 of shaping.
    assert worst - best_slower == pytest.approx(0.1 - 2 * 0.04)


@pytest.mark.parametrize("n", range(1, MAX_GUESSES + 1))
def test_solve_and_loss_bands_for_every_guess_count(n: int) -> None:
    solves = [outcome_reward(True, n, s) for s in EXTREME_SCORES]
    losses = [outcome_reward(False, n, s) for s in EXTREME_SCORES]
    assert min(solves) >= WORST_SOLVE >= SUCCESS_THRESHOLD
    assert max(solves) <= solve_tier(n) + 0.04 + 1e-12
    assert min(losses) >= LOSS_BAND[0]
    assert max(losses) <= LOSS_BAND[1]
    assert NO_PLAY_REWARD < min(losses)
    assert max(losses) < 0 < SUCCESS_THRESHOLD <= min(solves)
    # The clip really binds: pushing past +-150 changes nothing.
    assert outcome_reward(True, n, 150.0) == outcome_reward(True, n, 1e12)
    assert outcome_reward(False, n, -150.0) == outcome_reward(False, n, -math.inf)


@given(n=st.integers(1, MAX_GUESSES - 1), fast_score=ANY_SCORE, slow_score=ANY_SCORE)
def test_faster_solve_beats_slower_at_any_shaping(n: int, fast_score: float, slow_score: float) -> None:
    assert outcome_reward(True, n, fast_score) > outcome_reward(True, n + 1, slow_score)


@given(
    n=st.integers(1, MAX_GUESSES),
    solve_score=ANY_SCORE,
    loss_score=ANY_SCORE,
    m=st.integers(1, MAX_GUESSES),
)
def test_every_solve_beats_every_loss_beats_no_play(n: int, solve_score: float, loss_score: float, m: int) -> None:
    solve = outcome_reward(True, n, solve_score)
    loss = outcome_reward(False, m, loss_score)
    assert solve >= WORST_SOLVE
    assert LOSS_BAND[0] <= loss <= LOSS_BAND[1]
    assert solve > loss > outcome_reward(False, 0, loss_score) == NO_PLAY_REWARD


def test_no_play_ignores_score_and_bad_inputs_are_named() -> None:
    assert outcome_reward(False, 0, 1e9) == outcome_reward(False, 0, -1e9) == NO_PLAY_REWARD
    with pytest.raises(ValueError, match="n_guesses.*7"):
        outcome_reward(True, 7, 0.0)
    with pytest.raises(ValueError, match="nan"):
        clipped_shaping(math.nan)
    assert clipped_shaping(75.0) == 0.5
    assert clipped_shaping(-1e9) == -1.0


# --- Random real games --------------------------------------------------------------------------


class Repeat:
    """Marker in a generated call list: replay an earlier call's argument."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"Repeat({self.index})"


MALFORMED = ["", "hi", None, 42, 3.5, "x" * 50, "\u00c9CLAT", "CRANE\nSLATE", ["CRANE"], "CRAN3"]


@st.composite
def real_games(draw: st.DrawFn) -> tuple[str, list[tuple[object, bool]]]:
    answer = draw(st.sampled_from(ANSWERS))
    argument = st.one_of(
        st.sampled_from(ALLOWED_SORTED),
        st.just(answer),
        st.text(alphabet=string.ascii_uppercase, min_size=5, max_size=5),  # mostly non-words
        st.sampled_from(MALFORMED),
        st.integers(0, 20).map(Repeat),
    )
    raw = draw(st.lists(st.tuples(argument, st.booleans()), max_size=MAX_TOOL_CALLS + 3))
    calls: list[tuple[object, bool]] = []
    for arg, from_text in raw:
        if isinstance(arg, Repeat):
            if not calls:
                continue
            arg = calls[arg.index % len(calls)][0]
        calls.append((arg, from_text))
    return answer, calls


def play_calls(answer: str, calls: list[tuple[object, bool]]) -> WordleGame:
    game = WordleGame(answer)
    for arg, from_text in calls:
        (game.guess_from_text if from_text else game.guess)(arg)
    return game


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(real_games())
def test_real_games_land_in_their_tier(case: tuple[str, list[tuple[object, bool]]]) -> None:
    game = play_calls(*case)
    r = game.final_reward()
    n = len(game.guesses)
    assert n <= MAX_GUESSES
    assert game.score == pytest.approx(sum(e.delta for e in game.events), abs=1e-9)
    if n == 0:
        assert r == NO_PLAY_REWARD
    elif game.solved:
        assert r >= WORST_SOLVE
        assert solve_tier(n) - 0.04 - 1e-12 <= r <= solve_tier(n) + 0.04 + 1e-12
    else:
        assert LOSS_BAND[0] <= r <= LOSS_BAND[1]


@settings(max_examples=100, deadline=None)
@given(real_games(), real_games())
def test_faster_real_solve_beats_slower(
    a: tuple[str, list[tuple[object, bool]]], b: tuple[str, list[tuple[object, bool]]]
) -> None:
    first, second = play_calls(*a), play_calls(*b)
    ranked = sorted([first, second], key=lambda g: (not g.solved, len(g.guesses)))
    fast, slow = ranked
    if fast.solved and (not slow.solved or len(fast.guesses) < len(slow.guesses)):
        assert fast.final_reward() > slow.final_reward()


# --- Reference cases ----------------------------------------------------------------------------


def test_reference_speed_vs_abide() -> None:
    assert score_guess("SPEED", "ABIDE") == ["X", "X", "Y", "X", "Y"]


def test_a_win_on_the_sixth_guess_is_a_win() -> None:
    game = play("CRANE", "SLATE", "PLATE", "GRATE", "TRACE", "BRAKE")
    text = game.guess("CRANE")
    assert "solved it" in text and "Out of guesses" not in text
    assert game.solved and game.over and len(game.guesses) == 6
    assert WORST_SOLVE <= game.final_reward() <= solve_tier(6) + 0.04


def test_malformed_input_uses_no_guess() -> None:
    game = play("CRANE", "hi")
    assert game.guesses == [] and game.score == -50.0
    assert game.final_reward() == NO_PLAY_REWARD


def test_the_thirteenth_call_is_refused() -> None:
    game = play("CRANE", *["??"] * MAX_TOOL_CALLS)
    assert game.score == MAX_TOOL_CALLS * -50.0
    text = game.guess("CRANE")
    assert "limit" in text
    assert not game.solved and game.guesses == [] and game.score == MAX_TOOL_CALLS * -50.0


def test_repeated_words_use_a_guess() -> None:
    game = play("CRANE", "SLATE", "SLATE")
    assert game.guesses == ["SLATE", "SLATE"]
    assert game.events[-1].delta == -41.0


# --- Shaping varies within a tier (or GRPO has no gradient inside a group) -----------------------


def test_two_solves_in_three_differ() -> None:
    good = play("CIGAR", "SLATE", "CAIRN", "CIGAR")
    weak = play("CIGAR", "FUZZY", "CAIRN", "CIGAR")
    assert good.solved and weak.solved and len(good.guesses) == len(weak.guesses) == 3
    assert good.final_reward() > weak.final_reward()


def test_two_losses_differ() -> None:
    careful = play("WATCH", "SLATE", "PATCH", "LATCH", "BATCH", "HATCH", "CATCH")
    careless = play("WATCH", "SLATE", "SLATE", "FUZZY", "SLATE", "QUEUE", "FUZZY")
    assert not careful.solved and not careless.solved
    assert careful.final_reward() > careless.final_reward()
    assert LOSS_BAND[0] <= careless.final_reward() < careful.final_reward() <= LOSS_BAND[1]


# --- The legacy design reproduces its inversions on real games ---------------------------------


def test_legacy_pays_a_lost_game_positive() -> None:
    # A plausible loss: good opener, then one letter short five times (the _ATCH trap).
    lost = play("WATCH", "SLATE", "PATCH", "LATCH", "BATCH", "HATCH", "CATCH")
    assert not lost.solved and len(lost.guesses) == 6
    assert 0.3 < legacy_reward(lost) < 0.8  # the deep dive saw about +0.49
    assert lost.final_reward() <= -0.35


def test_legacy_ranks_a_first_guess_solve_below_a_third_guess_solve() -> None:
    first = play("CIGAR", "CIGAR")
    third = play("CIGAR", "SLATE", "CAIRN", "CIGAR")
    assert legacy_reward(first) == pytest.approx(149 / 150)  # about +0.99
    assert legacy_reward(third) > 1.4  # the deep dive saw about +1.61
    assert legacy_reward(first) < legacy_reward(third)
    assert first.final_reward() > third.final_reward()  # the tiered reward puts them right


def test_legacy_no_play() -> None:
    game = play("CIGAR", "hi", "")
    assert legacy_reward(game) == (-100.0 - 200.0) / 150.0
