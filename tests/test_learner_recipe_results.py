"""The learner's recipe search (experiments/learner_recipe.py): its stored files say how they were
made, every summary and pass@k is computed from what they store, and seed 1's first steps re-run.

Two stored files: the screen (every arm, 40 steps, one seed) and the long runs (the chosen arm,
160 steps, three seeds). The re-run (second tier) trains seed 1 of each file's first arm for two
steps and compares the greedy validation before training and the mean training reward of steps 1
and 2 with the stored curves, within one game (the learner samples in float32 through BLAS; another
CPU's kernels can flip one near-tied token: DESIGN.md, "Comparing numbers across machines").
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import experiment_scripts
from numbers_within import LEARNER_VALIDATION_WORDS as VALIDATION_WORDS
from numbers_within import ONE_GAME_OF_A_STEP

pytestmark = pytest.mark.floats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
STORED = {"screen": "learner_recipe/screen_40_s1.json", "long": "learner_recipe.json"}
COMMIT = re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def experiment():
    learner_recipe = experiment_scripts.load("learner_recipe")
    return learner_recipe


def stored(kind: str) -> dict:
    path = RESULTS / STORED[kind]
    assert path.is_file(), f"{path} is missing: see experiments/learner_recipe.py for its command"
    return json.loads(path.read_text())


def listed(value) -> list:
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize("kind", STORED)
def test_the_stored_result_says_how_it_was_made(kind, experiment):
    data = stored(kind)
    for command, commit in zip(listed(data["command"]), listed(data["git_commit"]), strict=True):
        assert command.startswith("python experiments/learner_recipe.py ")
        assert "--out experiments/results/" in command  # a path a reader can re-run, in the repository
        assert COMMIT.match(commit), f"not a clean commit: {commit!r}"
    assert len(data["eval_seeds"]) >= 4  # at least 512 games at temperature 1
    assert data["base"]["t1_low"]["games"] == VALIDATION_WORDS * len(data["eval_seeds"])
    for arm, seeds in data["runs"].items():
        assert data["arms"][arm] == experiment.ARMS[arm], f"arm {arm} is no longer defined as it was run"
        for row in seeds.values():
            assert len(row["curves"]["rollout/reward/mean"]) == data["steps"]
    if kind == "long":  # the recipe the search settled on, over three training seeds at least
        assert len(next(iter(data["runs"].values()))) >= 3


@pytest.mark.parametrize("kind", STORED)
def test_the_summary_and_every_pass_at_k_come_from_the_stored_counts(kind, experiment):
    data = stored(kind)
    evaluations = [data["base"], *(row for seeds in data["runs"].values() for row in seeds.values())]
    for evaluation in evaluations:
        for setting, _ in experiment.SETTINGS:
            result = evaluation[setting]
            solves, n = result["solves_by_word"], len(result["seeds"])
            assert len(solves) == VALIDATION_WORDS and result["games"] == n * VALIDATION_WORDS
            assert result["solve_rate"] == pytest.approx(sum(solves) / result["games"], abs=1e-12)
            fresh = experiment.pass_rates(solves, n)
            for k, value in result["pass_at"].items():
                assert value["mean"] == pytest.approx(fresh[k]["mean"], abs=1e-12), (setting, k)
    summary = experiment.summarize(data["runs"], data["base"])
    for arm, row in data["summary"].items():
        for setting, _ in experiment.SETTINGS:
            for k, value in row[setting].items():
                for key, number in value.items():
                    expected = summary[arm][setting][k][key]
                    if isinstance(number, list):
                        assert number == pytest.approx(expected, abs=1e-12)
                    elif not (math.isnan(number) and math.isnan(expected)):
                        assert math.isclose(number, expected, abs_tol=1e-12), (arm, setting, k, key)


@pytest.mark.slow
@pytest.mark.experiments
@pytest.mark.parametrize("kind", STORED)
def test_the_first_two_steps_of_seed_one_rerun(kind, experiment):
    data = stored(kind)
    arm = next(iter(data["runs"]))
    _, curves, _ = experiment.train_arm(arm, 1, 2, val_every=1000)
    stored_curves = data["runs"][arm]["1"]["curves"]
    assert abs(curves["val/reward/pass_at_1"][0] - stored_curves["val/reward/pass_at_1"]["0"]) <= 1 / VALIDATION_WORDS
    for step in (1, 2):
        fresh, old = curves["rollout/reward/mean"][step], stored_curves["rollout/reward/mean"][str(step)]
        assert abs(fresh - old) <= ONE_GAME_OF_A_STEP, (arm, step, fresh, old)
