"""The environment, the stand-in's training loop and the instrumentation that watches it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from coding_agent import env, instrumentation, policy, reward, tasks, trainer
from coding_agent.env import ASK_GENERIC, ASK_RELEVANT, COMMIT, REPEAT, CodingEnv, EnvConfig

pytestmark = pytest.mark.floats

RESULTS = Path(__file__).resolve().parents[1] / "experiments" / "results" / "composite_rewards.json"
SMALL_POOL = tasks.all_tasks()[::9]  # 8 tasks from different families: enough for a short run


def play(task: tasks.Task, actions: list[int], config: EnvConfig = EnvConfig()) -> env.Rollout:
    e = CodingEnv(task, config)
    for action in actions:
        if e.done:
            break
        e.step(action)
    return e.rollout


# ------------------------------------------------------------------------------ environment
def test_asking_every_detail_then_committing_passes_every_test() -> None:
    task = next(t for t in tasks.all_tasks() if len(t.hidden) == 2)
    rollout = play(task, [ASK_RELEVANT, ASK_RELEVANT, COMMIT])
    assert rollout.revealed == list(task.hidden) and rollout.verdict.correctness == 1.0
    assert rollout.values["asked_before_coding"] == 1.0 and rollout.values["guessed_immediately"] == 0.0


def test_guessing_on_turn_one_fails_some_tests_and_is_penalised() -> None:
    task = tasks.all_tasks()[0]
    rollout = play(task, [COMMIT])
    assert rollout.verdict.correctness < 1.0 and rollout.values["guessed_immediately"] == -1.0


def test_asking_forever_ends_at_the_turn_limit_without_credit() -> None:
    rollout = play(tasks.all_tasks()[0], [ASK_GENERIC] * 10)
    assert len(rollout.turns) == env.MAX_TURNS and not rollout.committed
    assert rollout.values["asked_before_coding"] == 0.0 and rollout.values["loop_penalty"] == -0.5


def test_repeating_is_a_loop_and_a_generic_question_reveals_nothing() -> None:
    task = tasks.all_tasks()[0]
    rollout = play(task, [ASK_GENERIC, REPEAT, REPEAT, REPEAT, REPEAT])
    assert rollout.revealed == [] and rollout.values["loop_penalty"] == reward.LOOP_PENALTY


def test_a_dead_harness_scores_zero_with_a_clear_metric_and_no_crash() -> None:
    task = tasks.all_tasks()[0]
    rollout = play(task, [ASK_RELEVANT, ASK_RELEVANT, ASK_RELEVANT, COMMIT], EnvConfig(harness_entry_point="solution"))
    assert rollout.verdict.status == "missing_entry_point" and rollout.values["correctness"] == 0.0
    metrics = {m["name"]: m["value"] for m in rollout.report()["metrics_list"]}
    assert metrics["sandbox_ok"] == 0.0 and metrics["correctness"] == 0.0


def test_question_quality_tells_relevant_questions_from_generic_ones() -> None:
    task = next(t for t in tasks.all_tasks() if len(t.hidden) == 2)
    informed = play(task, [ASK_RELEVANT, ASK_RELEVANT, COMMIT])
    half = play(task, [ASK_RELEVANT, COMMIT])
    vague = play(task, [ASK_GENERIC, COMMIT])
    never = play(task, [ASK_GENERIC] * 10)  # asks, never commits: counted among the questions only
    quality = env.question_quality([informed, half, vague, never])
    assert quality["first question about a hidden detail"] == 2 / 4
    assert quality["hidden details heard before committing"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    # Each of the three committed rollouts earned the same full asking credit.
    assert {r.values["asked_before_coding"] for r in (informed, half, vague)} == {1.0}
    assert env.question_quality([]) == {
        "first question about a hidden detail": 0.0,
        "hidden details heard before committing": 0.0,
    }


def test_bad_steps_name_the_problem() -> None:
    e = CodingEnv(tasks.all_tasks()[0])
    with pytest.raises(ValueError, match="action must be one of"):
        e.step(7)
    e.step(COMMIT)
    with pytest.raises(RuntimeError, match="has ended"):
        e.step(COMMIT)
    with pytest.raises(ValueError, match="skill"):
        EnvConfig(skill=1.5)


# ------------------------------------------------------------------------------ policy
def test_the_untrained_policy_asks_first_at_the_chosen_rate() -> None:
    probs = policy.CoderPolicy().probabilities({"turn": 0, "max_turns": 5, "last_reply": "none"})
    assert 1 - probs[COMMIT] == pytest.approx(policy.INITIAL_ASKING_RATE)


def test_log_prob_gradient_matches_finite_differences() -> None:
    p = policy.CoderPolicy(weights=np.random.default_rng(0).normal(size=(4, policy.N_FEATURES)))
    obs = {"turn": 2, "max_turns": 5, "last_reply": "new"}
    _, trace = p.act(obs, random.Random(1))
    grad = policy.log_prob_gradient(trace)
    eps, numeric = 1e-6, np.zeros_like(p.weights)
    for idx in np.ndindex(p.weights.shape):
        w = p.weights.copy()
        w[idx] += eps
        numeric[idx] = (np.log(policy.CoderPolicy(w).probabilities(obs)[trace["action"]]) - trace["logp"]) / eps
    assert np.allclose(grad, numeric, atol=1e-4)


# ------------------------------------------------------------------------------ instrumentation
def test_dead_flags_need_a_full_window_and_skip_unweighted_components() -> None:
    rows = [{"c/within_std": 0.0, "c/weight": 1.0, "u/within_std": 0.0, "u/weight": 0.0}] * 4
    rows += [{"c/within_std": 0.0, "c/weight": 1.0, "u/within_std": 0.0, "u/weight": 0.0}]
    assert instrumentation.dead_flags(rows, ["c", "u"], window=5) == {"c": [False] * 4 + [True], "u": [False] * 5}
    rows[-1] = {"c/within_std": 0.2, "c/weight": 1.0}
    assert instrumentation.dead_components(rows, ["c"], window=5) == []


def test_advantage_shares_sum_to_one_and_sorting_uses_the_component() -> None:
    rng = random.Random(0)
    p = policy.CoderPolicy()
    group = [trainer.play(SMALL_POOL[0], p, EnvConfig(), reward.TAUGHT, rng) for _ in range(8)]
    row = instrumentation.step_stats([group], reward.TAUGHT)
    shares = [row[f"{c}/adv_share"] for c in reward.COMPONENTS]
    assert sum(shares) == pytest.approx(1.0) or sum(shares) == 0.0
    ordered = instrumentation.sort_transcripts(group, "correctness")
    assert [r.values["correctness"] for r in ordered] == sorted((r.values["correctness"] for r in group), reverse=True)
    with pytest.raises(KeyError, match="no component"):
        instrumentation.sort_transcripts(group, "style")


# ------------------------------------------------------------------------------ training
def test_zero_weights_give_zero_advantage_and_no_update() -> None:
    silent = reward.RewardSpec(weights={name: 0.0 for name in reward.COMPONENTS})
    result = trainer.train(trainer.TrainConfig(steps=2, tasks_per_step=4, reward=silent), SMALL_POOL)
    assert np.array_equal(result.weights, policy.initial_weights())
    assert all(row["zero_adv_groups"] == 1.0 and row["grad_norm"] == 0.0 for row in result.history)


@pytest.mark.slow
def test_the_dead_scorer_is_flagged_and_the_fix_revives_its_spread() -> None:
    config = trainer.TrainConfig(
        steps=12, tasks_per_step=8, env=EnvConfig(harness_entry_point=trainer.DEAD_ENTRY_POINT)
    )
    broken = trainer.train(config, SMALL_POOL)
    fixed = trainer.train(trainer.TrainConfig(steps=12, tasks_per_step=8), SMALL_POOL)
    assert "correctness" in broken.dead() and broken.last("correctness/mean") == 0.0
    assert broken.last("asking_rate") > broken.first("asking_rate")  # asking still rises, as in the post
    assert "correctness" not in fixed.dead() and fixed.last("correctness/within_std") > 0.0


@pytest.mark.slow
@pytest.mark.experiments
def test_a_stored_run_reproduces_in_the_same_direction() -> None:
    stored = json.loads(RESULTS.read_text(encoding="utf-8"))
    seed = stored["seeds"][0]
    want = stored["variants"]["gated_efficiency_hard"][str(seed)]["history"]
    got = trainer.train(trainer.with_seed(trainer.variants()["gated_efficiency_hard"], seed))
    for key in ("asking_rate", "zero_adv_groups"):
        stored_change = np.mean(want[key][-5:]) - want[key][0]
        run_change = got.last(key) - got.first(key)
        assert np.sign(run_change) == np.sign(stored_change) != 0, key
        assert abs(got.last(key) - np.mean(want[key][-5:])) < 0.15, key
