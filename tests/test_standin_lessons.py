"""The stored stand-in lessons (experiments/results/standin_lessons.json) still hold: one seed of
every measurement is re-run (with the cheaper `--budget quick` evaluation) and each statistic
the stored run found to hold must come out in the same direction; a stored null must stay within
the stored spread. Slow (several training runs): `pytest -m slow tests/test_standin_lessons.py`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import experiment_scripts

from mtrl_course import verdicts

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "standin_lessons.json"
# How far outside the stored seeds' range a null statistic may land on the cheaper re-run.
NULL_SLACK = 0.1


@pytest.fixture(scope="module")
def stored() -> dict:
    assert RESULTS.is_file(), f"{RESULTS} is missing: run python experiments/standin_lessons.py"
    return json.loads(RESULTS.read_text())


@pytest.fixture(scope="module")
def lessons():
    standin_lessons = experiment_scripts.load("standin_lessons")
    return standin_lessons


def test_the_stored_results_say_how_they_were_made(stored):
    assert stored["command"].startswith("python experiments/standin_lessons.py")
    assert len(stored["seeds"]) >= 3 and len(stored["git_commit"]) == 40 and stored["budget"] == "full"
    assert "stand-in" in stored["label"]
    for key, stat in stored["statistics"].items():
        assert stat["n"] == len(stored["seeds"]) and math.isfinite(stat["mean"]), key
        judged = verdicts.verdict(stat["values"])  # the course's one rule, for this many seeds
        assert stat["cutoff_se"] == judged.cutoff, key
        assert (stat["holds"], stat["opposite"]) == (judged.label == verdicts.GAIN, judged.label == verdicts.LOSS), key


@pytest.mark.slow
@pytest.mark.experiments
def test_one_seed_rerun_keeps_every_stored_direction(stored, lessons):
    from tqdm import tqdm

    seed = stored["seeds"][0]
    with tqdm(total=lessons.STEPS_PER_SEED, disable=True) as progress:
        rerun = lessons.run_seed(seed, "quick", lessons.Lab(), progress)
    fresh = lessons.statistics([rerun])
    assert fresh.keys() == stored["statistics"].keys()
    for key, stat in stored["statistics"].items():
        value = fresh[key]["mean"]
        if stat["holds"]:
            assert value > 0, (key, value, stat["mean"])
        else:
            low, high = min(stat["values"]) - NULL_SLACK, max(stat["values"]) + NULL_SLACK
            assert low <= value <= high, (key, value, stat["values"])
