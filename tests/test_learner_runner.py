"""The learner behind the runner switch: a short training job through the real runner, fast
lane and agent with a tiny base model; the stand-in stays the default."""

from __future__ import annotations

import numpy as np
import pytest

from mtrl_course.learner import model as lm
from mtrl_course.learner import weights
from mtrl_course.learner.tokenizer import VOCAB_SIZE
from mtrl_course.local import failure_experiments, hub, learner_policy, mlflow_store, runner

CONFIG = lm.ModelConfig(vocab=VOCAB_SIZE, context=128, d_model=16, layers=1, heads=2, mlp_ratio=2)


@pytest.fixture
def tiny_base(tmp_path, monkeypatch):
    path = weights.save_model(
        tmp_path / "base.safetensors", lm.init_params(CONFIG, np.random.default_rng(0)), CONFIG, "tiny"
    )
    monkeypatch.setattr(learner_policy, "BASE_FILE", path)
    return path


def test_the_stand_in_stays_the_default_and_the_switch_names_the_learner(monkeypatch):
    monkeypatch.delenv(runner.POLICY_ENV, raising=False)
    assert runner.RunnerOptions().policy == runner.POLICY_STANDIN
    monkeypatch.setenv(runner.POLICY_ENV, "learner")
    assert runner.RunnerOptions().policy == runner.POLICY_LEARNER
    with pytest.raises(ValueError, match="policy"):
        runner.RunnerOptions(policy="gpt-oss")


def test_a_short_learner_job_trains_the_adapter_and_logs_its_metrics(tiny_base, tmp_path):
    from mtrl_course.aws import offline_backend

    offline_backend()
    hp = {name: entry["default"] for name, entry in hub.TRAINING_SPEC.items()}
    hp.update(
        {
            "global_batch_size": 2,
            "group_size": 2,
            "max_steps": 2,
            "max_epochs": 1,
            "val_every": 2,
            "sampling_max_tokens": 24,
            "lora_rank": 4,
            "lora_alpha": 8,
        }
    )
    rows = failure_experiments.rows("training")[:4]
    tracking = mlflow_store.ensure_store(tmp_path / "mlflow.db")
    job = failure_experiments.MemoryJob("learner-test-job", hp, {"train": rows, "validation": rows[:2]}, tracking)
    options = runner.RunnerOptions(seed=1, adapter_dir=tmp_path / "adapters", policy=runner.POLICY_LEARNER, workers=4)
    runner.train(job, options)
    assert job.failure is None, job.failure
    adapter = weights.load_adapter(tmp_path / "adapters" / "learner-test-job.safetensors", "tiny")
    assert (adapter.rank, adapter.alpha, adapter.step) == (4, 8.0, 2)
    assert set(job.metric("val/reward/pass_at_1")) == {0, 2}
    assert set(job.metric("learner/update/sampled_tokens")) == {1, 2}
    assert set(job.metric("rollout/reward/mean")) == {1, 2}
    # The run says which learner trained it (the stand-in's runs say theirs: tests/test_runner.py).
    from mlflow.tracking import MlflowClient

    from mtrl_course.local.learner_lane import TAG_VALUE

    tags = MlflowClient(tracking).get_run(job.run_id).data.tags
    assert tags[runner.POLICY_TAG] == TAG_VALUE and tags["mtrl.offline.learner"] == "learner"
    assert tags["mtrl.offline.estimator"] == "grpo"


def test_an_unknown_policy_in_the_environment_is_refused_by_name(monkeypatch) -> None:
    from mtrl_course.local import runner as offline_runner

    monkeypatch.setenv(offline_runner.POLICY_ENV, "standin")
    assert offline_runner.default_policy() == "standin"
    monkeypatch.setenv(offline_runner.POLICY_ENV, "lerner")
    with pytest.raises(ValueError, match="MTRL_OFFLINE_POLICY='lerner' names no offline policy"):
        offline_runner.default_policy()
