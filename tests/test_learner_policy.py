"""The learner behind the Job Runtime's policy contract, through the real agent (fast lane):
real token counts, the trace GRPO needs, batching across threads, seeded determinism."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from mtrl_course.learner import model as lm
from mtrl_course.learner import template
from mtrl_course.learner.tokenizer import VOCAB_SIZE
from mtrl_course.local import fastlane
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator
from mtrl_course.local.learner_policy import LearnerPolicy
from wordle_agent import rollout

CONFIG = lm.ModelConfig(vocab=VOCAB_SIZE, context=96, d_model=16, layers=1, heads=2, mlp_ratio=2)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:job/AgentRFT/learner-test"
TASK = json.dumps({"prompt": "Guess the hidden 5-letter word.", "answer": "slate", "id": "t"})


@pytest.fixture(autouse=True)
def no_deployed_effort(monkeypatch):
    # The agent reads REASONING_EFFORT on every rollout, and the offline runtime sets it for the
    # whole process when an earlier test deploys (resources.prepare): these games must not depend
    # on which tests ran before them on the same worker. Unset, the template reads medium.
    monkeypatch.delenv(rollout.REASONING_EFFORT_ENV, raising=False)


@pytest.fixture(scope="module")
def base():
    return lm.init_params(CONFIG, np.random.default_rng(0)), CONFIG, "tiny-test-base"


def play(policy, tid="traj-1", temperature=1.0):
    emulator = JobRuntimeEmulator()
    emulator.register_job(ARN, policy)
    emulator.start_trajectory(ARN, tid, rng_key=[1, 0, 1, 0, 0, 0])
    episode = fastlane.play_episode(emulator, ARN, tid, TASK, temperature=temperature, max_tokens=12)
    return episode, emulator.trajectory(ARN, tid)


def test_a_rollout_through_the_real_agent_records_real_tokens_and_the_trace(base):
    episode, trajectory = play(LearnerPolicy(seed=3, base=base))
    assert episode.reported == "ready" and trajectory.rewards is not None
    assert trajectory.sample_count >= 1
    for sample in trajectory.samples:
        trace = sample.policy_trace
        assert trace["kind"] == "lm" and trace["effort"] == "medium"
        assert sample.prompt_tokens == len(trace["prompt"]) == len(template.generation_prompt(sample.messages))
        assert sample.completion_tokens == len(trace["tokens"]) == len(trace["logprobs"]) <= 12
        assert all(lp <= 0 for lp in trace["logprobs"])


def test_same_trajectory_slot_same_replies_and_batching_changes_nothing(base):
    _, first = play(LearnerPolicy(seed=3, base=base))
    _, again = play(LearnerPolicy(seed=3, base=base, batching=False))
    assert [s.policy_trace["tokens"] for s in first.samples] == [s.policy_trace["tokens"] for s in again.samples]


def test_concurrent_requests_share_batches(base):
    policy = LearnerPolicy(seed=3, base=base)
    request = {"messages": [{"role": "user", "content": "go"}], "temperature": 1.0, "max_tokens": 8}
    out = []
    threads = [threading.Thread(target=lambda: out.append(policy.complete(dict(request)))) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 12 and all(r["usage"]["completion_tokens"] <= 8 for r in out)
    assert policy.engine.requests == 12 and policy.engine.batches < 12


def test_greedy_replies_do_not_depend_on_the_seed(base):
    request = {"messages": [{"role": "user", "content": "go"}], "temperature": 0.0, "max_tokens": 10}
    a = LearnerPolicy(seed=1, base=base, batching=False).complete(dict(request))
    b = LearnerPolicy(seed=2, base=base, batching=False).complete(dict(request))
    assert a["choices"][0]["message"] == b["choices"][0]["message"]
