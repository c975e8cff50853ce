"""Notebook 10's failure experiments: token strategies on real token checks, the SDK's feedback
signatures and the decorator order, training runs with faults, recovery and checkpoints, games at
a token cap, and one cheap configuration of experiments/failure_modes.py re-run against its
stored result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import experiment_scripts
from hypothesis import given, settings
from hypothesis import strategies as st

from mtrl_course import numerics
from mtrl_course.local import failure_experiments, runner
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator
from mtrl_course.local.stand_in_policy import Adapter
from mtrl_course.local.tokens import mint_token

pytestmark = pytest.mark.floats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "failure_modes.json"
TINY = {"global_batch_size": 4, "group_size": 2, "max_steps": 2, "val_every": 0}


@pytest.fixture(scope="module")
def backend():
    from mtrl_course.aws import offline_backend

    return offline_backend()


@pytest.fixture(scope="module")
def stored() -> dict:
    assert RESULTS.is_file(), f"{RESULTS} is missing: run python experiments/failure_modes.py --seeds 1 2 3"
    return json.loads(RESULTS.read_text())


# --- tokens ---------------------------------------------------------------------------------------


def small(strategy: str, **kwargs):
    settings = {"concurrency": 8, "rollouts": 16, "calls_per_rollout": 4, "call_latency_s": 0.001}
    settings.update(kwargs)
    return failure_experiments.token_strategies([strategy], **settings)[0]


def test_the_course_cache_signs_once_per_credential_and_loses_no_rollout_across_a_rotation():
    result = small(failure_experiments.STRATEGY_COURSE, provider={"capacity": 64})
    assert result.failed_rollouts == 0 and result.failed_calls == 0
    # One signature before the rotation, one after the 403 that revealed it; a third at most, when
    # another rollout signed from the session between the token's drop and the session's (the
    # model drops them one after the other; TokenCache.invalidate drops both under one lock).
    assert 2 <= result.signatures <= 3
    assert 1 <= result.rejected_403 <= result.calls


def test_a_one_hour_cache_answers_403_after_the_rotation_and_loses_rollouts():
    result = small(failure_experiments.STRATEGY_HOUR)
    assert result.signatures == 1
    assert result.rejected_403 > 0 and result.failed_rollouts > 0


def test_a_rotation_before_the_first_call_costs_nothing():
    result = small(failure_experiments.STRATEGY_HOUR, rotate_at=0.0)
    # The session resolved the credentials after the rotation: nothing to reject.
    assert result.rejected_403 == 0 and result.failed_rollouts == 0
    assert result.provider_resolutions == 1


def test_nothing_rotates_when_the_rotation_comes_after_the_last_call():
    result = small(failure_experiments.STRATEGY_HOUR, rotate_at=1.0)
    assert result.rejected_403 == 0 and result.failed_rollouts == 0


def test_signing_per_call_resolves_credentials_per_call():
    result = small(failure_experiments.STRATEGY_FRESH, provider={"capacity": 64, "latency_s": 0.0})
    assert result.signatures == result.provider_resolutions == result.calls
    assert result.starved == 0 and result.failed_rollouts == 0


def test_a_capped_provider_starves_callers_that_wait_too_long():
    provider = failure_experiments.CredentialProviderModel(
        JobRuntimeEmulator(), capacity=1, latency_s=0.0, timeout_s=0.01
    )
    provider._slots.acquire()  # another caller holds the only slot
    with pytest.raises(failure_experiments.CredentialStarvation, match="no credential slot within 10 ms"):
        provider.resolve()
    provider._slots.release()
    assert provider.resolve() == provider.current
    assert provider.resolutions == 1 and provider.starved == 1


def test_a_rotation_revokes_the_old_key_at_the_emulator():
    emulator = JobRuntimeEmulator()
    provider = failure_experiments.CredentialProviderModel(emulator)
    old = mint_token(*provider.current, failure_experiments.REGION)
    assert emulator.authenticate(f"Bearer {old}") == provider.account
    provider.rotate()
    with pytest.raises(failure_experiments.JobRuntimeError, match="Authentication failed"):
        emulator.authenticate(f"Bearer {old}")
    assert (
        emulator.authenticate(f"Bearer {mint_token(*provider.current, failure_experiments.REGION)}") == provider.account
    )


def test_the_shared_session_drops_only_the_key_that_was_rejected():
    provider = failure_experiments.CredentialProviderModel(JobRuntimeEmulator(), latency_s=0.0)
    session = failure_experiments.SharedSessionModel(provider)
    held = session.credentials()
    session.drop_if_holding("ASIA-SOMETHING-ELSE")
    assert session.credentials() == held and provider.resolutions == 1
    session.drop_if_holding(held[0])
    session.credentials()
    assert provider.resolutions == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [({"strategies": ["sign twice"]}, "unknown strategies"), ({"rotate_at": 1.5}, "rotate_at")],
)
def test_bad_token_experiment_settings_are_named(kwargs, message):
    strategies = kwargs.pop("strategies", failure_experiments.STRATEGIES)
    with pytest.raises(ValueError, match=message):
        failure_experiments.token_strategies(strategies, **kwargs)


def test_a_provider_model_with_no_capacity_is_refused():
    with pytest.raises(ValueError, match="capacity"):
        failure_experiments.CredentialProviderModel(JobRuntimeEmulator(), capacity=0)


# --- the SDK's feedback client and the decorator order ----------------------------------------------


def test_reversed_decorators_answer_200_but_record_no_reward(backend):
    right, reversed_ = failure_experiments.decorator_order(reward=0.75)
    assert right.http_status == reversed_.http_status == 200
    assert right.answer == reversed_.answer == {"reward": 0.75}
    assert right.rewards_recorded == [0.75] and right.feedback_signatures == 2
    assert reversed_.rewards_recorded is None and reversed_.feedback_signatures == 0


# --- training runs, games, checkpoints ----------------------------------------------------------------


def test_the_lab_default_run_is_the_course_default_run():
    from mtrl_course import resources, training

    expected = {**training.WALKTHROUGH_OVERRIDES, **training.OFFLINE_HYPERPARAMETERS}
    assert {k: expected[k] for k in failure_experiments.DEFAULT_RUN} == failure_experiments.DEFAULT_RUN
    assert set(training.OFFLINE_HYPERPARAMETERS) <= set(failure_experiments.DEFAULT_RUN)
    assert failure_experiments.DEPLOYED_EFFORT == resources.DEFAULT_REASONING_EFFORT


@pytest.mark.parametrize(
    "fault, reason",
    [
        (runner.FAULT_AUTH, runner.NO_SAMPLES),
        (runner.FAULT_AGENT_ERROR, "Always return a reward"),
        (runner.FAULT_MISSING_REWARD, "UpdateReward never did"),
    ],
)
def test_faults_fail_the_in_memory_job_with_the_service_reason(backend, tmp_path, fault, reason):
    run = failure_experiments.run_training(1, state_dir=tmp_path, hyperparameters={**TINY, "max_steps": 1}, fault=fault)
    assert run.job.failure is not None and reason in run.job.failure
    assert run.adapter is None


def test_checkpoints_are_saved_per_step_and_the_last_is_the_output(backend, tmp_path):
    run = failure_experiments.run_training(
        1,
        state_dir=tmp_path,
        hyperparameters=TINY,
        checkpoint_every=1,
        collect_games=True,
        metric_keys=("rollout/reward/mean",),
    )
    assert run.job.failure is None and sorted(run.checkpoints) == [1, 2]
    assert Adapter.load(run.checkpoints[2]).to_dict() == run.adapter.to_dict()
    assert Adapter.load(run.checkpoints[1]).step == 1
    assert sorted(run.metrics["rollout/reward/mean"]) == [1, 2]
    # 2 steps x 4 prompts x 2 rollouts, no validation
    assert len(run.games) == 16 and 0 <= failure_experiments.no_play_count(run.games) <= 16


def test_a_negative_checkpoint_interval_is_refused():
    with pytest.raises(ValueError, match="checkpoint_every"):
        runner.RunnerOptions(checkpoint_every=-1)


def test_a_cap_below_the_effort_leaves_every_game_without_a_guess(backend):
    words = failure_experiments.rows("validation")[:4]
    capped = failure_experiments.summarize(
        failure_experiments.play(None, words, seed=1, effort="medium", max_tokens=10)
    )
    free = failure_experiments.summarize(
        failure_experiments.play(None, words, seed=1, effort="medium", max_tokens=8192)
    )
    assert capped["no_play_share"] == 1.0 and capped["mean_reward"] == failure_experiments.NO_PLAY_REWARD
    assert free["no_play_share"] == 0.0


def test_summaries_need_games():
    with pytest.raises(ValueError, match="no games"):
        failure_experiments.summarize([])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 6)), max_size=30))
def test_no_play_counts_games_without_a_policy_guess(games):
    class FakeGame:
        def __init__(self, guesses: int) -> None:
            self.policy_guesses = ["CRANE"] * guesses

    built = [FakeGame(n) for _, n in games]
    assert failure_experiments.no_play_count(built) == sum(n == 0 for _, n in games)


def test_a_missing_split_names_the_file_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(failure_experiments, "DATA_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="training-data.jsonl.*mtrl dataset build"):
        failure_experiments.rows("training")


# --- the stored experiment ----------------------------------------------------------------------------


def test_the_stored_results_say_how_they_were_made(stored):
    assert stored["command"].startswith("python experiments/failure_modes.py")
    assert len(stored["seeds"]) >= 3 and len(stored["git_commit"]) == 40
    assert "stand-in" in stored["label"] and "model" in stored["label"]
    assert [s["seed"] for s in stored["per_seed"]] == stored["seeds"]


def test_the_stored_directions_hold(stored):
    stats = stored["statistics"]
    off, on, low = "lr_1e-3_recovery_off", "lr_1e-3_recovery_on", "lr_1e-4_recovery_on"
    # Without recovery every rollout sits at the floor and every group has zero advantage.
    assert stats[f"{off}: final training reward"]["values"] == [failure_experiments.NO_PLAY_REWARD] * len(
        stored["seeds"]
    )
    assert stats[f"{off}: final zero-advantage groups (of 32)"]["mean"] == 32
    assert stats[f"{off}: adapter norm change, steps 2 to last"]["mean"] == 0
    # With recovery the signal survives but the format does not fix itself; 1e-4 recovers.
    assert stats[f"{on}: final training reward"]["mean"] > stats[f"{off}: final training reward"]["mean"]
    assert stats[f"{on}: final raw-text rate"]["mean"] > 0.5
    assert stats[f"{low}: final raw-text rate"]["mean"] < 0.05
    tokens = {
        s: {k: stats[f"tokens {s}: {k}"]["mean"] for k in ("signatures", "rejected_403", "failed_rollouts")}
        for s in failure_experiments.STRATEGIES
    }
    assert tokens[failure_experiments.STRATEGY_COURSE]["failed_rollouts"] == 0
    assert tokens[failure_experiments.STRATEGY_HOUR]["failed_rollouts"] > 0
    assert (
        tokens[failure_experiments.STRATEGY_FRESH]["signatures"]
        > 100 * tokens[failure_experiments.STRATEGY_COURSE]["signatures"]
    )


@pytest.mark.experiments
def test_one_cheap_configuration_reproduces_the_stored_steps(backend, stored, tmp_path):
    failure_modes = experiment_scripts.load("failure_modes")
    seed = stored["seeds"][0]
    name = "lr_1e-3_recovery_off"
    rerun = failure_modes.run_lr(name, seed, tmp_path, steps=2, evaluate=False)
    kept = next(s for s in stored["per_seed"] if s["seed"] == seed)["lr"][name]["steps"]
    for key, values in rerun["steps"].items():
        for step, value in values.items():
            assert numerics.rerun_matches(value, kept[key][step]), (key, step, value, kept[key][step])


def test_the_plateau_curves_end_where_the_lessons_experiment_ended(stored):
    # Validation does not change what a run trains: re-run with validation every 2 steps, each
    # run's last validation must equal the one experiments/standin_lessons.py stored.
    lessons = json.loads((ROOT / "experiments" / "results" / "standin_lessons.json").read_text())
    kept = {s["seed"]: s for s in lessons["per_seed"]}
    plateau = stored["plateau"]
    assert plateau["command"].startswith("python experiments/failure_modes.py") and "--plateau" in plateau["command"]
    for run in plateau["per_seed"]:
        before = kept[run["seed"]]
        expected = {
            "group_16": before["group_size"]["16"]["final_val"],
            "group_32": before["group_size"]["32"]["final_val"],
            "curriculum": before["curriculum"]["final_val"],
        }
        for name, value in expected.items():
            curve = run[name]["val/reward/pass_at_1"]
            assert sorted(int(k) for k in curve) == [0, 2, 4, 6, 8, 10], name
            assert curve["10"] == pytest.approx(value, abs=1e-12), (name, run["seed"])
