"""The stored reward ablation (experiments/results/reward_ablation.json) says how it was made, and
one cheap configuration re-runs to the same numbers: the first seed's outcome-only arm for its
first steps (training is deterministic per seed, so the prefix must match the stored run's).
Slow-ish (one short training run): `pytest -m slow tests/test_reward_ablation.py`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import experiment_scripts
from mtrl_course import numerics

pytestmark = pytest.mark.floats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "reward_ablation.json"
RERUN_STEPS = 2


@pytest.fixture(scope="module")
def stored() -> dict:
    assert RESULTS.is_file(), f"{RESULTS} is missing: run python experiments/reward_ablation.py"
    return json.loads(RESULTS.read_text())


@pytest.fixture(scope="module")
def ablation():
    reward_ablation = experiment_scripts.load("reward_ablation")
    return reward_ablation


def test_the_stored_results_say_how_they_were_made(stored):
    assert stored["command"].startswith("python experiments/reward_ablation.py")
    assert len(stored["seeds"]) >= 3 and len(stored["git_commit"]) == 40
    assert "stand-in" in stored["label"]
    assert set(stored["config"]["rewards"]) == {"outcome_only", "tiered", "legacy"}
    for seed in map(str, stored["seeds"]):
        for reward in stored["config"]["rewards"]:
            arm = stored["per_seed"][seed][reward]
            assert len(arm["steps"]) == stored["config"]["steps"] == len(arm["train_reward_mean"])
            assert arm["eval"]["games"] > 0 and 0 <= arm["eval"]["solve_rate"] <= 1


def test_the_summary_is_the_mean_of_the_seeds(stored):
    for reward, table in stored["summary"].items():
        values = [stored["per_seed"][str(s)][reward]["eval"]["solve_rate"] for s in stored["seeds"]]
        assert table["eval solve_rate"]["mean"] == pytest.approx(sum(values) / len(values))
        assert table["eval solve_rate"]["n"] == len(values) and math.isfinite(table["eval solve_rate"]["sd"])


@pytest.mark.slow
@pytest.mark.experiments
def test_one_cheap_arm_reruns_to_the_stored_numbers(stored, ablation, tmp_path, monkeypatch):
    monkeypatch.setenv("MTRL_STATE_DIR", str(tmp_path))
    seed = stored["seeds"][0]
    arm, _ = ablation.train_arm(ablation.lessons.Lab(), seed, "outcome_only", steps=RERUN_STEPS)
    expected = stored["per_seed"][str(seed)]["outcome_only"]
    for fresh, old in zip(arm["steps"], expected["steps"][:RERUN_STEPS]):
        assert fresh.keys() == old.keys()
        for key, value in fresh.items():
            assert numerics.rerun_matches(value, old[key]), (fresh["step"], key, value, old[key])
    for fresh_mean, old_mean in zip(arm["train_reward_mean"], expected["train_reward_mean"][:RERUN_STEPS], strict=True):
        assert numerics.rerun_matches(fresh_mean, old_mean), (fresh_mean, old_mean)
