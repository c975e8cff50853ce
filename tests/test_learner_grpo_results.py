"""The learner's long GRPO result (experiments/results/learner_grpo_outcome_only_long.json) says how
it was made, its summary is computed from its own seeds, and its first steps re-run.

The re-run (second tier) trains seed 1 for two steps with the same command's trainer and compares
the temperature-0 validation before training and the mean training reward of steps 1 and 2 with
the stored curve. Tolerance: one game. The learner samples in float32 through BLAS, so another
CPU's kernels can move a log-probability in its last bit and, rarely, flip one sampled token,
which replays one game differently (DESIGN.md, "Comparing numbers across machines"); one game
moves a validation rate by 1/128 and a step's mean reward by at most the reward's whole range
(never played -1.5 to the fastest solve 1.55) over the step's 256 games.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import experiment_scripts
from numbers_within import LEARNER_VALIDATION_WORDS as VALIDATION_WORDS
from numbers_within import ONE_GAME_OF_A_STEP

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "learner_grpo_outcome_only_long.json"


@pytest.fixture(scope="module")
def stored() -> dict:
    assert RESULTS.is_file(), f"{RESULTS} is missing: see experiments/learner_grpo.py for its command"
    return json.loads(RESULTS.read_text())


@pytest.fixture(scope="module")
def experiment():
    learner_grpo = experiment_scripts.load("learner_grpo")
    return learner_grpo


def test_the_stored_result_says_how_it_was_made(stored):
    assert len(stored["seeds"]) >= 3
    assert stored["trainer"] == "batch" and stored["reward"] == "outcome_only" and stored["eval_seeds"] >= 4
    for command, commit in zip(stored["command"], stored["git_commit"]):
        assert command.startswith("python experiments/learner_grpo.py --trainer batch")
        assert len(commit) == 40
    for row in stored["seeds"].values():
        assert row["t1_low"]["base"]["games"] == VALIDATION_WORDS * stored["eval_seeds"]


def test_the_summary_is_computed_from_the_seeds(stored, experiment):
    fresh = experiment.summarize(stored["seeds"])
    for name, values in stored["summary"].items():
        for key, value in values.items():
            if isinstance(value, list):
                assert value == pytest.approx(fresh[name][key], abs=1e-12), (name, key)
            else:
                assert math.isclose(value, fresh[name][key], abs_tol=1e-12), (name, key)


@pytest.mark.slow
@pytest.mark.experiments
def test_the_first_two_steps_of_seed_one_rerun(stored, experiment):
    overrides = {"max_steps": 2, "max_epochs": 1}
    _, curves, _ = experiment.train_batch(1, overrides, stored["reward"], val_every=1000)
    stored_curves = stored["seeds"]["1"]["curves"]
    assert abs(curves["val/reward/pass_at_1"][0] - stored_curves["val/reward/pass_at_1"]["0"]) <= 1 / VALIDATION_WORDS
    for step in (1, 2):
        fresh, old = curves["rollout/reward/mean"][step], stored_curves["rollout/reward/mean"][str(step)]
        assert abs(fresh - old) <= ONE_GAME_OF_A_STEP, (step, fresh, old)
