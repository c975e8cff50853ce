"""The reward deep dive's bench: designs, players, GRPO statistics, the independent rescorer."""

from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wordle_agent import reward as R
from wordle_agent.game import WordleGame
from wordle_agent.words import ANSWERS

from mtrl_course import rewards
from mtrl_course import reward_designs as L


def test_legacy_inversions_on_scripted_games():
    first = L.play_scripted("CRANE", ["CRANE"])
    third = L.play_scripted("CRANE", ["SLATE", "TRACE", "CRANE"])
    assert first.solved and len(first.guesses) == 1 and third.solved and len(third.guesses) == 3
    assert rewards.score(L.LEGACY, first) == pytest.approx(149 / 150)
    assert rewards.score(L.LEGACY, third) > rewards.score(L.LEGACY, first)
    assert rewards.score(L.TIERED, first) > rewards.score(L.TIERED, third)


def test_outcome_only_ignores_shaping_and_first_fix_uses_one_weight():
    game = L.play_scripted("CRANE", ["SLATE", "CRANE"])
    assert rewards.score(L.OUTCOME_ONLY, game) == pytest.approx(R.SOLVE_BASE + R.SPEED_BONUS * 4 / 5)
    expected = 1.0 + R.SPEED_BONUS * 4 / 5 + 0.15 * R.clipped_shaping(game.score)
    assert rewards.score(L.FIRST_FIX, game) == pytest.approx(expected)
    # The walkthrough's two numbers: a guess-3 solve at full shaping, a guess-2 solve at the minimum.
    assert L.first_fix_reward(True, 3, 10 * R.SHAPING_SCALE) == pytest.approx(1.45)
    assert L.first_fix_reward(True, 2, -10 * R.SHAPING_SCALE) == pytest.approx(1.25)
    assert L.first_fix_reward(False, 0, 0.0) == R.NO_PLAY_REWARD
    with pytest.raises(ValueError, match="n_guesses"):
        L.first_fix_reward(True, 7, 0.0)
    with pytest.raises(ValueError, match="unknown reward design"):
        rewards.score("summed", game)


def test_reward_table_labels_outcomes():
    games = [L.play_scripted("CRANE", ["CRANE"]), L.play_scripted("CRANE", ["SLATE"] * 6), WordleGame("CRANE")]
    table = L.reward_table(games)
    assert list(table["outcome"]) == ["solved on 1", "lost", "no play"]
    assert list(table.columns[-len(L.COMPARED) :]) == list(L.COMPARED)
    assert set(L.COMPARED) < set(rewards.DESIGNS)  # a subset of the registry, by name
    assert "tiered_full_loss" in L.reward_table(games, designs=rewards.DESIGNS).columns


@pytest.mark.parametrize("k", [0, 1, 2])
def test_stalling_solver_stalls_k_times_after_its_opener(k):
    base = L.play_with_extra_guesses("CRANE", 0)
    game = L.play_with_extra_guesses("CRANE", k)
    assert game.solved and game.guesses[0] == base.guesses[0] and "CRANE" not in game.guesses[1 : k + 1]
    assert len(game.guesses) > k + 1 and len(set(game.guesses)) == len(game.guesses)
    # each stall is the best-paid word on offer, so it collects shaping instead of penalties
    assert all(e.delta > 0 for e in game.events[1 : k + 1])


def test_stalling_past_six_guesses_loses_and_bad_k_is_refused():
    assert not L.play_with_extra_guesses("CRANE", 6).solved
    with pytest.raises(ValueError, match="extra"):
        L.play_with_extra_guesses("CRANE", -1)


def test_extra_guess_games_has_one_block_per_k():
    frame = L.extra_guess_games(["CRANE", "HEDGE"], extras=(0, 2))
    assert list(frame["k"]) == [0, 0, 2, 2]


def test_plausible_games_are_reproducible_and_clue_consistent():
    a, b = L.plausible_games(5, seed=3), L.plausible_games(5, seed=3)
    assert [g.guesses for g in a] == [g.guesses for g in b]
    for game in a:
        assert game.over
        # a consistent player never breaks a clue, so no violation ever fires
        reasons = {name for e in game.events for name, _ in e.reasons}
        assert not reasons & {"green_not_kept", "yellow_underused", "gray_used", "repeat"}
    with pytest.raises(ValueError, match="n >= 1"):
        L.plausible_games(0)


def test_zero_advantage_share():
    assert L.zero_advantage_share([[1.0, 1.0], [1.0, 2.0]]) == 0.5
    assert L.zero_advantage_share([[0.3]]) == 1.0
    with pytest.raises(ValueError, match="empty group"):
        L.zero_advantage_share([[]])
    with pytest.raises(ValueError, match="at least one group"):
        L.zero_advantage_share([])


def test_outcome_only_ties_where_shaping_does_not():
    group = [L.play_scripted("CRANE", ["SLATE", "CRANE"]), L.play_scripted("CRANE", ["ROUND", "CRANE"])]
    shares = L.zero_advantage_by_design([group])
    assert shares[L.OUTCOME_ONLY] == 1.0 and shares[L.TIERED] == 0.0 and shares[L.LEGACY] == 0.0


def test_shaping_terms_flags_the_clip():
    big = L.play_scripted("FUZZY", ["SLATE", "CRONE", "DIGHT", "BAWKS", "PLUMB", "WHACK"])
    frame = L.shaping_terms([big, WordleGame("CRANE")])
    assert len(frame) == 1 and frame.loc[0, "outcome"] == "lost"
    assert frame.loc[0, "on_clip"] == (abs(R.clipped_shaping(big.score)) >= 1.0)


def test_the_walkthroughs_hedge_example():
    game = L.play_scripted("HEDGE", ["EROSE", "VALVE"])
    # the course knows HEDGE has two E (one green, one elsewhere): VALVE's single E is penalised
    assert any(name == "yellow_underused" for name, _ in game.events[-1].reasons)
    assert L.rescore(game, L.COURSE_RULE) == pytest.approx(game.score)
    sample = L.rescore(game, L.SAMPLE_RULE)
    assert sample > game.score  # no under-use penalty once the E is green
    known = L.RuleKnowledge(L.SAMPLE_RULE)
    known.update("EROSE", ["Y", "X", "X", "X", "G"])
    assert "E" not in known.yellow() and known.required()["E"] == 1
    course = L.RuleKnowledge(L.COURSE_RULE)
    course.update("EROSE", ["Y", "X", "X", "X", "G"])
    assert course.yellow() == {"E": 2}


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="knowledge rule"):
        L.RuleKnowledge("other")


def test_course_rule_rescoring_matches_the_game_on_plausible_play():
    frame = L.rule_comparison(L.plausible_games(150, seed=1))
    assert frame["course_rule_matches_game"].all()


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(ANSWERS),
    st.lists(
        st.sampled_from(["SLATE", "EERIE", "GEESE", "LEVEL", "SPEED", "ABIDE", "HEDGE", "xx", "QQQQQ"]), max_size=8
    ),
)
def test_course_rule_rescoring_matches_the_game_on_any_calls(answer, calls):
    # differential test: the independent implementation must agree with the game on every call
    # sequence, including repeats, malformed input and words outside the dictionary
    game = WordleGame(answer)
    for word in calls:
        game.guess(word)
    assert L.rescore(game, L.COURSE_RULE) == pytest.approx(game.score, abs=1e-9)


def test_guarantee_search_finds_the_first_fix_overlap_and_clears_the_final_design():
    assert L.find_violation(L.final_design, "a faster solve beats a slower one", 100) is None
    assert L.find_violation(L.final_design, "every solve clears the 1.0 success threshold", 100) is None
    assert L.find_violation(L.final_design, "every loss is below zero and above no-play", 100) is None
    first_fix = lambda solved, n, score: L.first_fix_reward(solved, n, score)  # noqa: E731
    n, a, b = L.find_violation(first_fix, "a faster solve beats a slower one", 300)
    assert first_fix(True, n, a) <= first_fix(True, n + 1, b)
    n, score = L.find_violation(first_fix, "every solve clears the 1.0 success threshold", 300)
    assert first_fix(True, n, score) < 1.0
    with pytest.raises(ValueError, match="unknown guarantee"):
        L.find_violation(L.final_design, "monotone")


def test_step_stats_splits_steps_and_groups():
    games = [L.play_scripted("CRANE", ["CRANE"]), L.play_scripted("CRANE", ["SLATE", "CRANE"])] * 2
    ids = ["a", "a", "b", "b"]
    rows = L.step_stats(games, ids, per_step=4, group=2)
    assert len(rows) == 1 and rows[0]["solve_rate"] == 1.0 and rows[0]["guesses_per_solve"] == 1.5
    assert rows[0]["zero_adv_outcome_only"] == 0.0 and math.isnan(rows[0]["lost_on_clip"])
    with pytest.raises(ValueError, match="group sizes"):
        L.step_stats(games, ["a", "b", "c", "c"], per_step=4, group=2)
    with pytest.raises(ValueError, match="do not split"):
        L.step_stats(games, ids, per_step=3, group=2)


def test_seed_spread():
    s = L.seed_spread([1.0, 2.0, 3.0])
    assert s["mean"] == 2.0 and s["sd"] == 1.0 and s["n"] == 3
    assert math.isnan(L.seed_spread([1.0])["sd"])


def _lost(score: float) -> SimpleNamespace:
    return SimpleNamespace(score=score, solved=False, guesses=["CRANE"] * R.MAX_GUESSES)


def test_squash_comparison_counts_the_bound_and_the_pairs_each_squash_orders():
    # One step, two prompts: "a" has two losses far below the clip (-300, -450) and a solve;
    # "b" has two ordinary losses (-30, -60) and one tied with them in score (-60).
    solve = SimpleNamespace(score=0.0, solved=True, guesses=["CRANE"])
    games = [_lost(-300.0), _lost(-450.0), solve, _lost(-30.0), _lost(-60.0), _lost(-60.0)]
    frame = L.squash_comparison(games, ["a"] * 3 + ["b"] * 3, per_step=6).set_index("squash")
    course = frame.loc[L.COURSE_SQUASH]
    assert course["lost games on the bound"] == pytest.approx(2 / 5)
    assert course["on the bound, step 1"] == pytest.approx(2 / 5)
    # Pairs: (-300, -450) in a; three in b, one of them tied: the clip orders 2 of 4, the raw score 3 of 4.
    assert course["lost pairs ordered"] == "2 of 4" and course["pairs the raw score orders"] == "3 of 4"
    doubled = frame.loc["clip(score / 300) (scale doubled)"]
    assert doubled["lost games on the bound"] == pytest.approx(2 / 5) and doubled["lost pairs ordered"] == "2 of 4"
    tanh = frame.loc["tanh(score / 150)"]
    assert tanh["lost games on the bound"] == 0.0 and tanh["lost pairs ordered"] == "3 of 4"
    with pytest.raises(ValueError, match="no lost games"):
        L.squash_comparison([solve], ["a"], per_step=1)
    with pytest.raises(ValueError, match="do not split"):
        L.squash_comparison(games, ["a"] * 6, per_step=4)


def test_every_squash_keeps_the_tier_guarantees():
    for name, squash in L.SQUASHES.items():
        assert all(abs(squash(x)) <= 1.0 for x in (-1e9, -151.0, 0.0, 151.0, 1e9)), name
    table = L.squash_guarantees(max_examples=100)
    assert list(table["squash"]) == list(L.SQUASHES) and set(table["guarantees broken"]) == {"0 of 3"}
    broken = L.squash_guarantees({"unbounded": lambda score: score / R.SHAPING_SCALE}, max_examples=100)
    assert broken.loc[0, "guarantees broken"] != "0 of 3"


def test_generated_games_land_in_their_band_and_the_table_says_so():
    played = L.random_call_games(200, seed=3)
    assert len(played) == 200 and all(isinstance(game, WordleGame) for game, _ in played)
    table = L.tier_check(played)
    assert table["in band"].all() and set(table["outcome"]) >= {"lost", "no play", "solved on 1"}
    assert (table["shaping score"].abs() > R.SHAPING_SCALE).any()  # the clip is exercised
    assert L.tier_check(L.random_call_games(5, seed=3)).equals(L.tier_check(L.random_call_games(5, seed=3)))
    assert L.tier_band(L.play_scripted("CRANE", ["SLATE", "CRANE"])) == pytest.approx((1.41, 1.49))


def test_ablation_curves_draw_every_arm_and_the_rerun():
    steps = [{"solve_rate": 0.1 * i, "guesses_per_solve": 4.0, "lost_rate": 1 - 0.1 * i} for i in (1, 2)]
    arm = {"steps": steps, "train_reward_mean": [0.0, 0.5]}
    results = {
        "seeds": [1, 2],
        "config": {"rewards": ["tiered", "legacy"]},
        "per_seed": {"1": {"tiered": arm, "legacy": arm}, "2": {"tiered": arm, "legacy": arm}},
    }
    assert L.ablation_per_step(results, "tiered", "solve_rate").shape == (2, 2)
    rerun = pd.DataFrame(steps).assign(step=[1, 2])
    fig = L.ablation_curves(results, rerun=rerun, seed=1)
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert labels == ["tiered", "legacy", "re-run here (tiered, seed 1)"] and "2 seeds" in fig._suptitle.get_text()
    plt.close(fig)
