"""The batched in-process player (learner.play) follows the agent's rules: with greedy decoding
both it and the real handler (fast lane, LearnerPolicy) see the same prompts, so they must play
the same games. Also: the committed base and its provenance agree."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mtrl_course.learner import model as lm
from mtrl_course.learner import play
from mtrl_course.local import fastlane
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator
from mtrl_course.local.learner_policy import BASE_DIR, LearnerPolicy, load_base
from wordle_agent import rollout

pytestmark = pytest.mark.floats

ARN = "arn:aws:sagemaker:us-east-1:123456789012:job/AgentRFT/learner-play-test"
WORDS = ["BOUGH", "CHICK", "PLANT", "SHEEP"]


@pytest.fixture(scope="module")
def base():
    return load_base()


def agent_games(base, effort):
    emulator = JobRuntimeEmulator()
    emulator.register_job(ARN, LearnerPolicy(seed=0, base=base, batching=False))
    games = []
    for i, word in enumerate(WORDS):
        tid = f"t{effort}{i}"
        emulator.start_trajectory(ARN, tid)
        task = json.dumps({"prompt": play.TASK_TEXT, "answer": word.lower(), "id": tid})
        env = {rollout.REASONING_EFFORT_ENV: effort}
        from mtrl_course import config

        with config.environment(env):
            fastlane.play_episode(
                emulator,
                ARN,
                tid,
                task,
                temperature=0.0,
                max_tokens=64,
                observer=lambda task_id, game: games.append(game),
            )
    return games


@pytest.mark.parametrize("effort", ["low", "medium"])
def test_greedy_games_are_the_same_through_the_agent_and_the_batched_player(base, effort):
    params, config, _ = base
    batched = play.play_games(params, config, WORDS, temperature=0.0, effort=effort, seed=0)
    through_agent = agent_games(base, effort)
    assert [g.game.guesses for g in batched] == [g.guesses for g in through_agent]
    assert [g.reward for g in batched] == pytest.approx([g.final_reward() for g in through_agent])


def test_the_committed_base_matches_its_provenance(base):
    params, config, base_id = base
    provenance = json.loads((BASE_DIR / "base.json").read_text())
    assert provenance["base_id"] == base_id
    assert provenance["config"] == config.to_dict()
    assert provenance["parameters"] == lm.count_parameters(params)
    assert (BASE_DIR / provenance["weights_file"]).stat().st_size <= 10_000_000
    rates = provenance["held_out"]["rates"]
    assert {"t1_low", "t0_low", "t1_medium"} <= set(rates)
    assert all(np.isfinite(r["solve_rate"]) for r in rates.values())


PRIORS = [["CRANE", "SLOTH"], [], ["AUDIO"], ["STOMP", "PRIDE"]]


@pytest.mark.parametrize("recovery", [True, False])
def test_a_curriculum_game_is_the_same_through_the_agent_and_the_batched_player(base, recovery):
    """Prior guesses (a curriculum's) and raw-text recovery switched off, as the handler plays them."""
    from mtrl_course import config

    params, model_config, _ = base
    batched = play.play_games(
        params, model_config, WORDS, temperature=0.0, effort="low", seed=0, priors=PRIORS, recovery=recovery
    )
    emulator = JobRuntimeEmulator()
    emulator.register_job(ARN, LearnerPolicy(seed=0, base=base, batching=False))
    games: list = []
    env = {rollout.REASONING_EFFORT_ENV: "low", rollout.RAW_TEXT_RECOVERY_ENV: "on" if recovery else "off"}
    with config.environment(env):
        for i, (word, priors) in enumerate(zip(WORDS, PRIORS)):
            tid = f"c{recovery}{i}"
            emulator.start_trajectory(ARN, tid)
            task = {"prompt": play.TASK_TEXT, "answer": word.lower(), "id": tid}
            if priors:
                task[rollout.PRIOR_GUESSES_KEY] = priors
            fastlane.play_episode(
                emulator,
                ARN,
                tid,
                json.dumps(task),
                temperature=0.0,
                max_tokens=64,
                observer=lambda task_id, game: games.append(game),
            )
    assert [g.game.guesses[: len(p)] for g, p in zip(batched, PRIORS)] == PRIORS
    assert [g.game.guesses for g in batched] == [g.guesses for g in games]
    assert [g.reward for g in batched] == pytest.approx([g.final_reward() for g in games])


def test_priors_must_match_the_answers(base):
    params, model_config, _ = base
    with pytest.raises(ValueError, match="priors has 1 entries for 4 answers"):
        play.play_games(params, model_config, WORDS, temperature=0.0, effort="low", seed=0, priors=[[]])


def test_threads_and_the_kept_cache_play_the_same_games(base, monkeypatch):
    """Two groups played at once sample the same tokens as one batch (each game has its own
    generator), and each round's cache continuation samples what a cache-free prefill would."""
    from mtrl_course.learner import sampler

    params, model_config, _ = base
    words = [w for w in WORDS for _ in range(3)]
    kwargs = dict(temperature=1.0, effort="low", seed=3, max_tokens=64)
    one = play.play_games(params, model_config, words, **kwargs)
    two = play.play_games(params, model_config, words, threads=2, **kwargs)

    class NoReuse(sampler.PromptCache):
        def select(self, rows):  # forget every row: each round prefills whole prompts, as before
            super().select(rows)
            self.tokens = [[] for _ in rows]

    monkeypatch.setattr(sampler, "PromptCache", NoReuse)
    prefilled = play.play_games(params, model_config, words, **kwargs)
    for other in (two, prefilled):
        assert [[t["tokens"] for t in g.turns] for g in one] == [[t["tokens"] for t in g.turns] for g in other]
        assert [g.solved for g in one] == [g.solved for g in other]
        for a, b in zip(one, other):
            for ta, tb in zip(a.turns, b.turns):
                np.testing.assert_allclose(ta["logprobs"], tb["logprobs"], rtol=1e-4, atol=1e-4)
    assert sum(len(g.turns) for g in one) > len(words)  # several rounds were played
