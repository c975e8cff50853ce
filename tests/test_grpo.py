"""GRPO for the stand-in: group advantages, the analytic gradient, one update step, clipping and
determinism."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mtrl_course import numerics, service_spec
from mtrl_course.errors import ServiceError
from mtrl_course.local import grpo
from mtrl_course.local.stand_in_policy import (
    BASE_WEIGHTS,
    FORMAT_ROBUST_RADIUS,
    N_FEATURES,
    NO_CALL,
    RAW_TEXT,
    TOOL_CALL,
    Adapter,
    format_logits_for,
    softmax,
)

pytestmark = pytest.mark.floats

CANDIDATES = 6


def make_trace(vector: np.ndarray, chosen: int, fmt: int = TOOL_CALL, temperature: float = 1.0, seed: int = 0) -> dict:
    """A policy trace as the policy records it, sampled under adapter `vector`."""
    features = np.random.default_rng(seed).normal(size=(CANDIDATES, N_FEATURES))
    probs = softmax(features @ (BASE_WEIGHTS + vector[:N_FEATURES]), temperature)
    fprobs = softmax(format_logits_for(vector), temperature)
    logp = math.log(fprobs[fmt]) + (math.log(probs[chosen]) if fmt != NO_CALL else 0.0)
    return {
        "kind": "guess",
        "features": features,
        "chosen": chosen,
        "format": fmt,
        "temperature": temperature,
        "logp": logp,
    }


def logp(vector: np.ndarray, trace: dict) -> float:
    _, value = grpo._turn_gradient(vector, trace)
    return value


def test_group_advantages_are_relative_to_the_group():
    advantages = grpo.group_advantages([1.5, -0.5, -0.5, 1.5])
    assert np.allclose(advantages, [1, -1, -1, 1], atol=1e-5)
    assert grpo.group_advantages([1.2, 0.2, 0.7]).sum() == pytest.approx(0.0, abs=1e-12)
    # Dr. GRPO: only the mean is subtracted.
    assert np.allclose(grpo.group_advantages([1.5, -0.5], scale_by_std=False), [1.0, -1.0])
    # Leave-one-out: each rollout against the mean of the others.
    assert np.allclose(grpo.group_advantages([3.0, 0.0, 0.0], method="rloo", scale_by_std=False), [3.0, -1.5, -1.5])


@pytest.mark.parametrize("rewards", [[1.3, 1.3, 1.3, 1.3], [-0.5, -0.5], [0.7]])
def test_a_group_whose_rewards_tie_has_zero_advantage(rewards):
    assert np.array_equal(grpo.group_advantages(rewards), np.zeros(len(rewards)))


def test_the_analytic_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    # Outside the format radius, so the drift term's gradient is exercised too.
    vector = np.concatenate([rng.normal(size=N_FEATURES) * 5, rng.normal(size=3)])
    assert np.linalg.norm(vector[:N_FEATURES]) > FORMAT_ROBUST_RADIUS
    for fmt in (TOOL_CALL, RAW_TEXT, NO_CALL):
        trace = make_trace(vector, chosen=2, fmt=fmt, temperature=0.7, seed=fmt)
        grad, _ = grpo._turn_gradient(vector, trace)
        numeric = np.zeros_like(vector)
        for i in range(vector.size):
            step = np.zeros_like(vector)
            step[i] = 1e-6
            numeric[i] = (logp(vector + step, trace) - logp(vector - step, trace)) / 2e-6
        assert np.allclose(grad, numeric, atol=1e-5), (fmt, grad, numeric)


@pytest.mark.parametrize("advantage", [1.0, -1.0])
def test_an_update_moves_the_log_probability_with_the_advantage(advantage):
    adapter = Adapter()
    trace = make_trace(adapter.vector(), chosen=4)
    before = logp(adapter.vector(), trace)
    optimizer = grpo.optimizer(grpo.GRPOConfig())
    result = grpo.update(adapter, [grpo.TrajectorySample(advantage, [trace])], optimizer, 1, grpo.GRPOConfig())
    after = logp(result.adapter.vector(), trace)
    assert (after - before) * advantage > 0
    assert result.adapter.step == 1 and result.stats.trajectories_used == 1


def test_zero_advantage_batches_change_nothing():
    adapter = Adapter()
    trace = make_trace(adapter.vector(), chosen=1)
    optimizer = grpo.optimizer(grpo.GRPOConfig())
    result = grpo.update(adapter, [grpo.TrajectorySample(0.0, [trace])] * 4, optimizer, 1, grpo.GRPOConfig())
    assert np.array_equal(result.adapter.vector(), adapter.vector())
    assert optimizer.t == 0 and result.stats.trajectories_used == 0


def test_greedy_and_closing_turns_carry_no_gradient():
    adapter = Adapter()
    greedy = dict(make_trace(adapter.vector(), chosen=1), logp=None)
    closing = {"kind": "closing", "temperature": 1.0}
    grad, stats = grpo.policy_gradient(
        adapter.vector(), [grpo.TrajectorySample(1.0, [greedy, closing])], grpo.GRPOConfig()
    )
    assert not grad.any() and stats.turns == 0


def test_ppo_clipping_drops_turns_whose_ratio_is_past_the_bound():
    adapter = Adapter()
    trace = make_trace(adapter.vector(), chosen=3)
    stale = dict(trace, logp=trace["logp"] - 1.0)  # sampled when the action was e times less likely
    batch = [grpo.TrajectorySample(1.0, [stale])]
    _, ppo = grpo.policy_gradient(adapter.vector(), batch, grpo.GRPOConfig(loss_fn="ppo"))
    assert ppo.clipped_turns == 1
    grad, plain = grpo.policy_gradient(adapter.vector(), batch, grpo.GRPOConfig(loss_fn="importance_sampling"))
    assert plain.clipped_turns == 0 and grad.any()
    fresh, _ = grpo.policy_gradient(adapter.vector(), [grpo.TrajectorySample(1.0, [trace])], grpo.GRPOConfig())
    # Importance sampling weights the stale turn by its ratio, e^1.
    assert np.allclose(grad, math.e * fresh)


def test_the_step_size_follows_learning_rate_and_alpha_over_rank():
    base = grpo.GRPOConfig(learning_rate=1e-5, lora_alpha=64, lora_rank=32)
    assert grpo.GRPOConfig(learning_rate=2e-5, lora_alpha=64, lora_rank=32).step_size == pytest.approx(
        2 * base.step_size
    )
    assert grpo.GRPOConfig(learning_rate=1e-5, lora_alpha=64, lora_rank=64).step_size == pytest.approx(
        base.step_size / 2
    )
    hp = service_spec.TrainingHyperparameters.resolve({"learning_rate": "3e-5", "loss_fn": "cispo", "group_size": "8"})
    config = grpo.GRPOConfig.from_training(hp)
    assert (config.learning_rate, config.loss_fn, config.lora_rank) == (3e-5, "cispo", hp.lora_rank)
    with pytest.raises(ValueError, match="loss_fn"):
        grpo.GRPOConfig(loss_fn="sgd")


def test_updates_are_deterministic():
    rng = np.random.default_rng(11)
    adapter = Adapter()
    batch = []
    for i, advantage in enumerate(rng.normal(size=12)):
        traces = [make_trace(adapter.vector(), chosen=int(rng.integers(CANDIDATES)), seed=i * 10 + t) for t in range(3)]
        batch.append(grpo.TrajectorySample(float(advantage), traces))
    results = []
    for _ in range(2):
        optimizer, current = grpo.optimizer(grpo.GRPOConfig()), adapter
        for step in range(1, 4):
            current = grpo.update(current, batch, optimizer, step, grpo.GRPOConfig()).adapter
        results.append(current.vector())
    assert results[0].tobytes() == results[1].tobytes()
    assert not np.array_equal(results[0], adapter.vector())


def test_verification_offsets_enter_the_softmax_and_the_gradient_still_matches():
    rng = np.random.default_rng(5)
    vector = np.concatenate([rng.normal(size=N_FEATURES), rng.normal(size=3)])
    trace = make_trace(vector, chosen=1, temperature=0.8, seed=4)
    # Small features keep every proposal's probability moderate, so the offsets visibly matter.
    trace["features"] = trace["features"] * 0.05
    plain_grad, plain_logp = grpo._turn_gradient(vector, trace)
    offsets = np.zeros(CANDIDATES)
    offsets[[1, 3]] = -6.0  # the chosen proposal was among those the reasoning rejected
    checked = {**trace, "offsets": offsets}
    grad, value = grpo._turn_gradient(vector, checked)
    assert value < plain_logp and not np.allclose(grad, plain_grad)
    numeric = np.zeros_like(vector)
    for i in range(vector.size):
        step = np.zeros_like(vector)
        step[i] = 1e-6
        numeric[i] = (logp(vector + step, checked) - logp(vector - step, checked)) / 2e-6
    assert np.allclose(grad, numeric, atol=1e-5)


# --- the typed hyperparameters every GRPO receives ------------------------------------------------------


def test_the_typed_hyperparameters_are_the_service_table_and_its_defaults():
    fields = [f.name for f in dataclasses.fields(service_spec.TrainingHyperparameters)]
    assert fields == list(service_spec.TRAINING_SPEC)  # one table, one type, in the table's order
    assert service_spec.TrainingHyperparameters.resolve().as_dict() == service_spec.training_defaults()


def test_an_unknown_hyperparameter_is_refused_in_the_services_words():
    with pytest.raises(ServiceError, match="Member must be one of the supported hyperparameters") as refused:
        service_spec.TrainingHyperparameters.resolve({"learning_rat": "1e-5"})
    assert refused.value.code == "ValidationException" and "learning_rat" in str(refused.value)
    hp = service_spec.TrainingHyperparameters.resolve()
    with pytest.raises(ServiceError, match="greater than 0"):
        hp.replace(learning_rate=0.0)
    assert hp.replace(learning_rate=1e-3).learning_rate == 1e-3
    # In-memory lab runs may go below the service's ranges, never outside its names.
    assert service_spec.TrainingHyperparameters.unbounded({"global_batch_size": 4}).global_batch_size == 4
    with pytest.raises(ServiceError, match="Member must be one of the supported hyperparameters"):
        service_spec.TrainingHyperparameters.unbounded({"lr": 1e-3})


def test_the_update_defaults_to_the_service_table_and_takes_every_service_knob_from_a_job():
    defaults = service_spec.training_defaults()
    config = grpo.GRPOConfig()
    service_named = [f.name for f in dataclasses.fields(config) if f.name in defaults]
    assert len(service_named) == 12
    assert all(getattr(config, name) == defaults[name] for name in service_named)
    changed = {
        name: value
        for name, value in (("learning_rate", 2e-3), ("lora_rank", 16), ("loss_fn", "cispo"), ("adam_eps", 1e-6))
    }
    hp = service_spec.TrainingHyperparameters.resolve().replace(**changed)
    taken = grpo.GRPOConfig.from_training(hp)
    assert all(getattr(taken, name) == getattr(hp, name) for name in service_named)


def test_adam_reads_the_jobs_hyperparameters_as_they_are_and_steps_as_from_a_config():
    # The runner builds Adam from the job's typed hyperparameters (no GRPOConfig between them and
    # the learning rate); the step is the one a config with the same values takes, bit for bit.
    hp = service_spec.TrainingHyperparameters.resolve({"learning_rate": "3e-5", "adam_grad_clip_norm": "0.5"})
    from_hp, from_config = grpo.optimizer(hp), grpo.optimizer(grpo.GRPOConfig.from_training(hp))
    assert from_hp.learning_rate == grpo.adam_step_size(hp) == grpo.GRPOConfig.from_training(hp).step_size
    assert from_hp.grad_clip_norm == 0.5
    rng = np.random.default_rng(3)
    vector = rng.normal(size=12)
    for _ in range(3):
        grad = {"adapter": rng.normal(size=12)}
        stepped, _ = from_hp.step({"adapter": vector}, grad)
        assert np.array_equal(stepped["adapter"], from_config.step({"adapter": vector}, grad)[0]["adapter"])
        vector = stepped["adapter"]


def test_the_one_adam_steps_as_the_stand_ins_own_ascent_did_bit_for_bit():
    # Before the RL core had one optimizer, the stand-in's Adam ascended with this arithmetic; the
    # shared AdamW, handed -grad, must give the same bits (the stored results were made with it).
    config = grpo.GRPOConfig(adam_grad_clip_norm=0.5, adam_weight_decay=0.01)
    lr, b1, b2, eps = grpo.adam_step_size(config), config.adam_beta1, config.adam_beta2, config.adam_eps
    rng = np.random.default_rng(5)
    vector, m, v = rng.normal(size=20), np.zeros(20), np.zeros(20)
    shared, ours = grpo.optimizer(config), vector.copy()
    for t in range(1, 6):
        grad = rng.normal(size=20) * (3.0 if t % 2 else 0.1)  # clipped on odd steps
        length = numerics.norm(grad)
        clipped = grad * (config.adam_grad_clip_norm / length) if length > config.adam_grad_clip_norm else grad
        m = b1 * m + (1 - b1) * clipped
        v = b2 * v + (1 - b2) * clipped**2
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        vector = vector * (1 - lr * config.adam_weight_decay) + lr * m_hat / (np.sqrt(v_hat) + eps)
        ours = shared.step({"adapter": ours}, {"adapter": -grad})[0]["adapter"]
        assert ours.tobytes() == vector.tobytes(), t


def test_dr_grpos_estimator_is_one_switch_for_the_stand_in():
    # Mean-only advantages (no std scaling) and the turns summed instead of averaged.
    from mtrl_course.rl.advantages import DR_GRPO, GRPO

    rewards = [1.5, -0.5, 0.2]
    assert np.allclose(grpo.group_advantages(rewards, scale_by_std=DR_GRPO.scale_by_std), np.subtract(rewards, 0.4))
    adapter = Adapter()
    traces = [make_trace(adapter.vector(), chosen=c, seed=c) for c in (1, 2, 3)]
    batch = [grpo.TrajectorySample(0.7, traces)]
    summed, _ = grpo.policy_gradient(adapter.vector(), batch, grpo.GRPOConfig(estimator=DR_GRPO))
    averaged, _ = grpo.policy_gradient(adapter.vector(), batch, grpo.GRPOConfig(estimator=GRPO))
    assert np.allclose(summed, 3 * averaged)
