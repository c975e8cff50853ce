"""The learner's lesson runs (experiments/results/learner_lessons.json) say how they were made, their
statistics are computed from their own seeds, the notebooks' tables read them, and their first
steps re-run.

The re-run (second tier) replays seed 1: the base's greedy evaluation, and the first two training
steps of the default arm and of the curriculum arm. Tolerance: one game, as in
tests/test_learner_grpo_results.py (another CPU's float32 kernels can flip one sampled token, which
replays one game differently).
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from numbers_within import LEARNER_VALIDATION_WORDS as VALIDATION_WORDS
from numbers_within import ONE_GAME_OF_A_STEP

from mtrl_course import learner_results, verdicts

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "learner_lessons.json"


@pytest.fixture(scope="module")
def stored() -> dict:
    assert RESULTS.is_file(), f"{RESULTS} is missing: see experiments/learner_lessons.py for its command"
    return json.loads(RESULTS.read_text())


@pytest.fixture(scope="module")
def experiment():
    spec = importlib.util.spec_from_file_location("learner_lessons", ROOT / "experiments" / "learner_lessons.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stored_result_says_how_it_was_made(stored, experiment):
    assert len(stored["seeds"]) >= 3
    assert set(stored["arms"]) == set(experiment.ARMS)
    for command, commit in zip(stored["command"], stored["git_commit"]):
        assert command.startswith("python experiments/learner_lessons.py --seeds ")
        assert len(commit.split()[0]) == 40
    for row in stored["seeds"].values():
        assert row["base"]["t1_low"]["games"] == VALIDATION_WORDS * stored["eval_seeds"]
        assert row["base"]["t0_low"]["games"] == VALIDATION_WORDS
        assert set(row["arms"]) == set(experiment.ARMS)
        for arm in row["arms"].values():
            assert len(arm["curves"]["rollout/reward/mean"]) == stored["steps"]


def test_the_statistics_are_computed_from_the_seeds(stored, experiment):
    fresh = experiment.statistics(stored["seeds"])
    assert set(fresh) == set(stored["statistics"])
    for name, values in stored["statistics"].items():
        for key, value in values.items():
            if isinstance(value, list):
                assert value == pytest.approx(fresh[name][key], abs=1e-12, nan_ok=True), (name, key)
            elif isinstance(value, float):
                assert math.isclose(value, fresh[name][key], abs_tol=1e-12) or (
                    math.isnan(value) and math.isnan(fresh[name][key])
                ), (name, key)
            else:
                assert value == fresh[name][key], (name, key)


def test_the_notebook_tables_read_every_arm(stored):
    assert len(learner_results.headline(stored)) == len(learner_results.REWARD_ARMS) + 1
    assert [r["setting"] for r in learner_results.grid(stored)] == [label for _, label in learner_results.SETTINGS]
    assert len(learner_results.grid_lessons(stored)) == 6
    assert len(learner_results.rewards(stored)) == len(learner_results.REWARD_ARMS) + 1  # the base first
    assert len(learner_results.reward_lessons(stored)) == 4
    assert len(learner_results.drift(stored)) == 3 and len(learner_results.group_and_curriculum(stored)) == 3
    steps = learner_results.checkpoints(stored)
    assert [r["step"] for r in steps][-1] == stored["steps"]
    curve = learner_results.validation_curve(stored)
    assert {r["step"] for r in curve} >= {0, stored["steps"]}
    assert learner_results.provenance(stored).startswith(
        "stored: experiments/results/learner_lessons.json, seeds 1, 2, 3"
    )


def test_a_verdict_is_the_course_rule_for_three_seeds():
    assert learner_results._summary([0.10, 0.12, 0.11])["verdict"] == verdicts.GAIN  # 19 SE
    assert learner_results._summary([0.05, 0.04, 0.09])["verdict"] == verdicts.NULL  # 3.9 SE: within 4.30
    assert learner_results._gain_verdict({"by_seed": [-0.10, -0.12, -0.11]}) == verdicts.LOSS
    assert learner_results._verdict({"by_seed": [0.10, 0.12, 0.11]}) == "higher"


def test_a_missing_results_file_says_which_and_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="learner_lessons.json: run the experiment script"):
        learner_results.lessons(tmp_path)


@pytest.mark.slow
@pytest.mark.experiments
@pytest.mark.parametrize("name", ["learner_lessons.json", "learner_lessons_all_words.json"])
def test_seed_one_reruns_its_base_evaluation_and_first_steps(name, experiment):
    stored = json.loads((RESULTS.parent / name).read_text())
    row = stored["seeds"]["1"]
    greedy = experiment.evaluate(None, temperature=0.0, effort="low", seed=1)
    assert abs(greedy["solve_rate"] - row["base"]["t0_low"]["solve_rate"]) <= 1 / VALIDATION_WORDS
    answers = experiment.learner_grpo.word_pool(stored.get("pool", "training"))
    for arm, priors in (("outcome_only", None), ("curriculum", experiment.curriculum_priors(answers, 1))):
        _, curves, _ = experiment.learner_grpo.train_batch(
            1, {"max_steps": 2, "max_epochs": 1}, "outcome_only", val_every=1000, train_priors=priors, answers=answers
        )
        old = row["arms"][arm]["curves"]
        assert abs(curves["val/reward/pass_at_1"][0] - old["val/reward/pass_at_1"]["0"]) <= 1 / VALIDATION_WORDS
        for step in (1, 2):
            fresh, then = curves["rollout/reward/mean"][step], old["rollout/reward/mean"][str(step)]
            assert abs(fresh - then) <= ONE_GAME_OF_A_STEP, (arm, step, fresh, then)


def test_the_readme_quotes_the_stored_numbers():
    """README's table of the tiny model's lessons is the stored statistics, rounded to 0.1 point."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    results = RESULTS.parent
    ten = json.loads(RESULTS.read_text())["statistics"]
    wide = json.loads((results / learner_results.WIDE_LESSONS_FILE).read_text())["statistics"]
    long_run = json.loads((results / learner_results.LONG_RUN_FILE).read_text())["summary"]["t1_low"]
    recipe = json.loads((results / learner_results.RECIPE_FILE).read_text())["summary"]["all"]["t1_low"]

    def points(values: list[float], sign: float = 1.0) -> str:
        v = verdicts.verdict([sign * 100 * x for x in values])
        return f"{v.mean:+.1f} ± {v.se:.1f}"

    quoted = [
        f"| {points(ten['gain/outcome_only']['by_seed'])} | gain |",
        f"| {points(long_run['gains'])} | gain |",
        f"| {points(recipe['pass@1']['gains'])} | gain |",
        f"pass@8 {points(recipe['pass@8']['gains'])} (no effect shown)",
        f"| {points(wide['gain/outcome_only']['by_seed'])} | gain |",
        f"| {points(wide['gain/tiered']['by_seed'])} | loss |",
        f"| {points(wide['gain/legacy']['by_seed'])} | loss |",
        f"| {points(wide['gain/lr_3e-5_recovery_on']['by_seed'])} | loss |",
        f"| {points(wide['vs_outcome_only/group_16']['by_seed'])} / {points(wide['vs_outcome_only/group_32']['by_seed'])} "
        "| no effect shown |",
        f"curriculum ({points(wide['vs_outcome_only/curriculum']['by_seed'])})",
        f"| {points(wide['sampled_minus_greedy/base/low']['by_seed'], -1.0)} for greedy | higher |",
    ]
    assert verdicts.verdict(recipe["pass@8"]["gains"]).label == verdicts.NULL
    assert [wide[k]["verdict"] for k in ("gain/tiered", "gain/legacy", "gain/lr_3e-5_recovery_on")] == ["loss"] * 3
    missing = [text for text in quoted if text not in readme]
    assert not missing, f"README.md's tiny-model table does not quote {missing}: update it from the stored files"


def test_every_stored_run_is_a_row_with_the_rules_verdict():
    rows = learner_results.every_run()
    expected = len(learner_results.GRPO_FILES) + len(learner_results.lessons()["arms"])
    wide = ROOT / "experiments" / "results" / learner_results.WIDE_LESSONS_FILE
    if wide.is_file():
        expected += len(json.loads(wide.read_text())["arms"])
    for name in (learner_results.RECIPE_FILE, learner_results.RECIPE_SCREEN_FILE):
        expected += len(json.loads((ROOT / "experiments" / "results" / name).read_text())["summary"])
    assert len(rows) == expected
    labels = {verdicts.GAIN, verdicts.LOSS, verdicts.NULL}
    for row in rows:
        for key in ("gain at T=1 low", "gain at T=0 low", "gain at T=1 medium"):
            cell = row[key]
            assert cell == "-" or cell.endswith("(1 seed)") or cell.split(": ", 1)[1] in labels, (row["run"], cell)
    # The 160-step run on the 640 words, re-derived here from its stored per-seed gains.
    long = next(r for r in rows if r["stored in"] == learner_results.LONG_RUN_FILE.removesuffix(".json"))
    gains = json.loads((ROOT / "experiments" / "results" / learner_results.LONG_RUN_FILE).read_text())["summary"]
    assert long["steps"] == 160 and long["gain at T=1 low"] == learner_results.points(gains["t1_low"]["gains"])
    narrow = learner_results.every_run(settings=("t1_low",))
    assert len(narrow) == len(rows) and not any("gain at T=0 low" in r for r in narrow)


def test_memorisation_compares_the_same_steps_on_two_word_pools():
    runs = learner_results.memorisation_runs()
    assert [r["words"] for r in runs] == [640, 1788] and {r["steps"] for r in runs} == {160}
    assert [round(r["epochs"], 1) for r in runs] == [8.0, 2.9]
    for run in runs:
        assert len(run["blocks"]) == 3 and all(len(b) == 160 // learner_results.BLOCK for b in run["blocks"])
    rows = learner_results.memorisation()
    assert [r["training words"] for r in rows] == ["640", "1,788"]
    assert learner_results.training_blocks({"1": 0.0, "2": 1.0, "3": 0.5}, block=2) == [0.5, 0.5]


def test_pass_at_k_reads_the_recipe_search_and_its_headroom():
    rows = learner_results.pass_at_k()
    recipe = json.loads((ROOT / "experiments" / "results" / learner_results.RECIPE_FILE).read_text())
    assert len(rows) == 1 + len(recipe["summary"])
    base = recipe["base"]["t1_low"]["pass_at"]
    assert rows[0]["pass@8"] == f"{base['8']['mean']:.1%}"
    first = recipe["summary"]["all"]["t1_low"]["pass@1"]
    closed = first["gain_mean"] / (base["8"]["mean"] - base["1"]["mean"])
    assert rows[1]["of the pass@1 to pass@8 gap, closed"] == f"{closed:.0%}"
