"""experiments/learner_recipe.py: its pass@k estimator, its word pools, its arms, and that an arm's
estimator reaches both the group advantages and the update.

Marked `floats` because pass@1 is compared with c / n within a tolerance (1 - (n - c) / n can
differ from c / n in its last bit); nothing here passes through a BLAS product or a vectorised
exp or log (the training run below never samples: its games are scripted, its update recorded).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import experiment_scripts
from hypothesis import given
from hypothesis import strategies as st

from mtrl_course import rewards
from mtrl_course.learner import grpo as learner_grpo_module
from mtrl_course.learner.play import PlayedGame
from mtrl_course.local import metrics
from mtrl_course.rl.advantages import DR_GRPO, ESTIMATORS, GRPO, group_advantages
from mtrl_course.service_spec import TrainingHyperparameters
from wordle_agent.game import WordleGame
from wordle_agent.words import ANSWERS

pytestmark = pytest.mark.floats

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def recipe():
    learner_recipe = experiment_scripts.load("learner_recipe")
    return learner_recipe


# --- pass@k ----------------------------------------------------------------------------------------


def test_pass_at_k_on_hand_computed_values(recipe):
    assert recipe.pass_at_k is metrics.pass_at_k  # the service's estimator, not a second one
    assert recipe.pass_at_k(8, 0, 1) == recipe.pass_at_k(8, 0, 8) == 0.0
    assert recipe.pass_at_k(8, 8, 1) == recipe.pass_at_k(8, 8, 8) == 1.0
    assert recipe.pass_at_k(8, 1, 4) == 0.5  # 1 - C(7, 4) / C(8, 4) = 1 - 35 / 70
    assert recipe.pass_at_k(8, 1, 8) == 1.0  # eight draws of eight always include the one solve
    assert recipe.pass_at_k(8, 2, 4) == 1 - 15 / 70  # 1 - C(6, 4) / C(8, 4)
    assert recipe.pass_at_k(4, 2, 2) == 1 - 1 / 6  # 1 - C(2, 2) / C(4, 2)
    with pytest.raises(ValueError, match="k <= n"):
        recipe.pass_at_k(2, 1, 4)


@given(n=st.integers(1, 16), data=st.data())
def test_pass_at_k_is_a_probability_monotone_in_k_and_in_c(recipe, n, data):
    c = data.draw(st.integers(0, n))
    values = [recipe.pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values[0] == pytest.approx(c / n, abs=1e-15)  # pass@1 is the solve rate
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)  # more draws never lower it
    if c < n:
        assert all(recipe.pass_at_k(n, c, k) <= recipe.pass_at_k(n, c + 1, k) for k in range(1, n + 1))


def test_pass_rates_average_over_words_and_skip_k_above_n(recipe):
    rates = recipe.pass_rates([0, 1, 8, 8], 8)
    assert set(rates) == {"1", "4", "8"}
    assert rates["1"]["mean"] == pytest.approx(np.mean([0, 1 / 8, 1, 1]), abs=1e-15)
    assert rates["4"]["mean"] == pytest.approx(np.mean([0, 0.5, 1, 1]), abs=1e-15)
    assert set(recipe.pass_rates([0, 2], 2)) == {"1"}


# --- Word pools and arms ---------------------------------------------------------------------------


def test_the_all_pool_is_every_answer_but_the_validation_words(recipe):
    held_out = set(recipe.learner_grpo.validation_words())
    pool = recipe.learner_grpo.word_pool("all")
    assert len(held_out) == 128 and held_out <= {w.lower() for w in ANSWERS}
    assert not held_out & set(pool)
    assert set(pool) | held_out == {w.lower() for w in ANSWERS} and len(pool) == len(set(pool)) == 1788
    assert (
        set(recipe.learner_grpo.word_pool("training")) <= set(pool)
        and len(recipe.learner_grpo.word_pool("training")) == 640
    )
    with pytest.raises(ValueError, match="unknown word pool"):
        recipe.learner_grpo.word_pool("everything")


def test_every_arm_names_a_registry_reward_a_known_estimator_and_a_pool(recipe):
    fields = set(TrainingHyperparameters.__dataclass_fields__)
    for name, arm in recipe.ARMS.items():
        assert set(arm) == {"overrides", "estimator", "reward", "pool"}, name
        assert (
            arm["reward"] in rewards.REWARDS
            and arm["estimator"] in ESTIMATORS
            and arm["pool"] in recipe.learner_grpo.POOLS
        )
        assert set(arm["overrides"]) <= fields, name
        hp = TrainingHyperparameters.unbounded(
            {**recipe.failure_experiments.DEFAULT_RUN, **recipe.arm_overrides(name, 160)}
        )
        assert hp.global_batch_size * hp.group_size == 256, name  # every arm plays 256 games a step
        # The epochs never cut the run: train_batch runs min(max_steps, max_epochs x steps an epoch).
        per_epoch = len(recipe.learner_grpo.word_pool(arm["pool"])) // hp.global_batch_size
        assert min(hp.max_steps, hp.max_epochs * per_epoch) == 160, name
    assert recipe.ARMS["all_dr"]["estimator"] == DR_GRPO.name


# --- The arm's estimator reaches the advantages and the update --------------------------------------


def _scripted(answers, **_):
    """Stands in for the batched player: in each group of two, a first-guess solve and a loss."""
    games = []
    for i, answer in enumerate(answers):
        game = WordleGame(answer)
        game.guess(answer if i % 2 == 0 else ("CRANE" if answer.upper() != "CRANE" else "SLATE"))
        turn = {"prompt": [1, 2, 3], "tokens": [4, 5], "logprobs": [-0.5, -0.25]}
        games.append(PlayedGame(answer.upper(), game, turns=[turn]))
    return games


@pytest.mark.parametrize(("arm", "expected"), [("all_dr", DR_GRPO), ("base640", GRPO)])
def test_the_arms_estimator_reaches_the_update_with_its_advantages(recipe, monkeypatch, arm, expected):
    seen = []

    def update(params, config, adapter, batch, optimizer, step, hyperparameters=None, estimator=GRPO, **objective):
        seen.append((estimator, [s.advantage for s in batch]))
        return adapter, learner_grpo_module.StepStats(games=len(batch))

    monkeypatch.setattr(
        recipe.learner_grpo.batch_play, "play_games", lambda params, config, answers, **kw: _scripted(answers)
    )
    monkeypatch.setattr(learner_grpo_module, "update", update)
    tiny = {"global_batch_size": 2, "group_size": 2}
    _, curves, _ = recipe.train_arm(arm, seed=1, steps=1, val_every=None, hp_overrides=tiny)
    [(estimator, advantages)] = seen
    assert estimator is expected
    solve, loss = (rewards.score(recipe.ARMS[arm]["reward"], g.game) for g in _scripted(["PASTE", "PASTE"]))
    group = group_advantages([solve, loss], scale_by_std=expected.scale_by_std)
    assert advantages == [float(a) for a in np.concatenate([group, group])]
    centred = [(solve - loss) / 2, (loss - solve) / 2]
    if expected is DR_GRPO:  # unscaled: the centred rewards themselves
        assert advantages[:2] == centred
    else:  # divided by the group's std (plus its eps)
        assert advantages[:2] != centred and abs(advantages[0]) < 1 < abs(centred[0])
    assert curves["rollout/solve_rate"][1] == 0.5


def test_step_advantages_scale_by_std_only_for_grpo(recipe):
    rewards_ = np.array([1.55, -0.5, -0.5, -0.5, 1.05, 1.05, 1.05, 1.05])
    unscaled = recipe.learner_grpo.step_advantages(rewards_, 4, DR_GRPO)
    scaled = recipe.learner_grpo.step_advantages(rewards_, 4, GRPO)
    assert list(unscaled[:4]) == list(rewards_[:4] - rewards_[:4].mean())
    assert list(scaled[:4]) == list(group_advantages(rewards_[:4], scale_by_std=True))
    assert list(unscaled[4:]) == list(scaled[4:]) == [0.0] * 4  # a tied group teaches nothing
