"""The composite reward matches the post's table, and keeps its two principles."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coding_agent import reward
from coding_agent.reward import Turn

Q, C = "question", "code"
MAX = 5


DISTINCT = (
    "Which currency symbol?",
    "def f(x):\n    return x * 2\n",
    "How many decimal places do you want?",
    "Should negative amounts raise?",
    "import math\ndef g(): pass\n",
    "Thousands grouping, yes or no?",
)


def turns(*kinds: str) -> list[Turn]:
    """Turns of the given kinds whose texts are far from each other (no accidental loop)."""
    return [Turn(kind, DISTINCT[i]) for i, kind in enumerate(kinds)]


@pytest.mark.parametrize(
    ("kinds", "correctness", "expected"),
    [
        ((C,), 1.0, {"correctness": 1.0, "asked_before_coding": 0.0, "guessed_immediately": -1.0, "loop_penalty": 0.0}),
        (
            (Q, C),
            0.5,
            {"correctness": 0.5, "asked_before_coding": 1.0, "guessed_immediately": 0.0, "loop_penalty": 0.0},
        ),
        (
            (C, Q),
            0.0,
            {"correctness": 0.0, "asked_before_coding": 0.0, "guessed_immediately": -1.0, "loop_penalty": 0.0},
        ),
        (
            (Q, Q, Q, Q, Q),
            0.0,
            {"correctness": 0.0, "asked_before_coding": 0.0, "guessed_immediately": 0.0, "loop_penalty": 0.0},
        ),
    ],
    ids=["guess", "ask-then-code", "not-committed", "ask-forever"],
)
def test_components_follow_the_table(kinds, correctness, expected) -> None:
    assert reward.components(turns(*kinds), correctness, MAX) == expected


def test_asking_first_earns_the_full_credit() -> None:
    # In this environment code ends the conversation, so every rollout that asks asks on turn 1;
    # the 0.6 "asked later" value applies to environments with other first moves (tool calls).
    assert reward.components(turns(Q, Q, C), 1.0, MAX)["asked_before_coding"] == reward.ASKED_ON_FIRST_TURN
    assert reward.ASKED_LATER == 0.6 and reward.ASKED_ON_FIRST_TURN == 1.0


def test_weights_are_the_posts() -> None:
    assert reward.WEIGHTS == {
        "correctness": 1.0,
        "asked_before_coding": 0.6,
        "guessed_immediately": 0.4,
        "loop_penalty": 0.2,
    }
    assert (reward.GUESS_PENALTY, reward.LOOP_PENALTY, reward.LOOP_SIMILARITY) == (-1.0, -0.5, 0.8)


def test_a_repeated_last_turn_is_a_loop() -> None:
    looped = [Turn(Q, "Which currency symbol should the price start with?")] * 5
    assert reward.components(looped, 0.0, MAX)["loop_penalty"] == -0.5
    assert reward.similarity("abc", "abc") == 1.0


def test_not_gated_on_correctness_but_gated_in_the_old_design() -> None:
    taught = reward.components(turns(Q, C), 0.0, MAX)
    old = reward.components(turns(Q, C), 0.0, MAX, reward.GATED_WITH_EFFICIENCY)
    assert taught["asked_before_coding"] == 1.0 and old["asked_before_coding"] == 0.0
    assert reward.components(turns(Q, C), 1.0, MAX, reward.GATED_WITH_EFFICIENCY)["asked_before_coding"] == 1.0


def test_efficiency_term_is_one_for_a_single_turn_and_zero_for_all_turns() -> None:
    spec = reward.GATED_WITH_EFFICIENCY
    assert reward.components(turns(C), 0.0, MAX, spec)["efficiency"] == 1.0
    assert reward.components(turns(Q, Q, Q, Q, C), 0.0, MAX, spec)["efficiency"] == 0.0


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_guessing_is_strictly_worse_than_asking_at_equal_correctness(c_guess: float, c_ask: float) -> None:
    guess = reward.aggregate(reward.components(turns(C), c_guess, MAX))
    ask = reward.aggregate(reward.components(turns(Q, C), c_guess, MAX))
    assert ask > guess
    assert ask - guess == pytest.approx(0.6 + 0.4)


@given(st.lists(st.sampled_from([Q, C]), min_size=1, max_size=MAX), st.floats(0.0, 1.0))
def test_aggregate_is_the_weighted_sum_and_the_report_lists_every_component(kinds, correctness) -> None:
    values = reward.components(turns(*kinds), correctness, MAX)
    report = reward.byoo_report("sample-1", values, metrics={"turns": len(kinds)})
    assert set(report) == {"id", "aggregate_reward_score", "metrics_list"}
    assert report["aggregate_reward_score"] == pytest.approx(sum(reward.WEIGHTS[k] * v for k, v in values.items()))
    listed = {m["name"]: m for m in report["metrics_list"]}
    assert set(listed) == set(reward.COMPONENTS) | {"turns"}
    assert {m["type"] for m in report["metrics_list"]} <= {"Reward", "Metric"}
    assert listed["turns"]["type"] == "Metric" and listed["correctness"]["type"] == "Reward"


def test_an_ablated_component_is_reported_as_a_metric() -> None:
    spec = reward.TAUGHT.without("loop_penalty")
    report = reward.byoo_report("s", reward.components(turns(Q, C), 1.0, MAX, spec), spec)
    assert {m["name"]: m["type"] for m in report["metrics_list"]}["loop_penalty"] == "Metric"


def test_bad_inputs_name_the_problem() -> None:
    with pytest.raises(ValueError, match="correctness"):
        reward.components(turns(C), 1.5, MAX)
    with pytest.raises(ValueError, match="unknown reward components"):
        reward.RewardSpec(weights={"style": 1.0})
    with pytest.raises(ValueError, match="'question' or 'code'"):
        Turn("shout", "hi")
    with pytest.raises(ValueError, match="sample id"):
        reward.byoo_report("", {})
