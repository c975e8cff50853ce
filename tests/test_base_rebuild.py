"""The committed base model can be rebuilt from the repository alone (`make base`).

First tier: the recipe (experiments/train_base_lm.py `STAGES`) is exactly the six runs the
committed base.json records, every stage starts from the stage before it, no recorded stage was cut
short by its time limit, and the rebuild names only repository paths.

Second tier: a two-stage rebuild of a tiny recipe goes through the real chain (stage 2 continues
stage 1's output, its provenance nests stage 1's, the committed base is left alone); and stage 1's
command, shortened (300 games, 2 epochs: 34 steps), re-runs to the stored short run
experiments/results/base_stage1_short.json.

How the short run is compared (docs/DESIGN.md, "Comparing numbers across machines"): the corpus,
the step count, the configuration and the record's structure exactly (integer logic and strings);
the per-step losses and the held-out numbers within tolerances measured on the recording
machine. The losses pass through float32 BLAS products and numpy's vectorised `exp`, and Adam
turns a last-bit difference in a gradient into a visibly different step, so they drift apart as
training goes on. Measured against the stored run, 34 steps each (losses as recorded, rounded to
4 places):

| arithmetic | largest loss difference | held-out, greedy | held-out, sampled (T=1), summed over 128 games |
|---|---|---|---|
| the same again | 0 | 0 | 0 |
| `MTRL_PERTURB_ARITHMETIC=1` (reversed sums, exp/log one ulp up) | 0.0013 (step 31) | 0 | 3 guesses, 23 tokens, reward 1.9 |
| OpenBLAS's Sandybridge kernels (AVX, no FMA) | 0.0009 | 0 | 2 guesses, 25 tokens, reward 1.9 |
| the same with numpy's SIMD dispatch off (`NPY_DISABLE_CPU_FEATURES=X86_V3`) | 0.0007 | 0 | 2 guesses, 13 tokens, reward 1.9 |
| OpenBLAS's Prescott kernels (SSE3) | 0.0020 (step 31) | 0 | 3 guesses, 20 tokens, reward 2.0 |

(The kernel switches were a one-off measurement on the recording machine, an AVX2 CPU with
OpenBLAS's Haswell kernels; tests never set them: DESIGN.md.) No solve changed. The tolerances
leave three to five times the largest: 0.01 on every step's loss, and per held-out setting 2 games'
solves, 10 guesses, 100 sampled tokens and 10 units of reward summed over the 128 games. They
still catch a real change: 10% more learning rate moved the losses by up to 0.065 and the greedy
low-effort games by 377 guesses, a warm-up of 45 steps instead of 50 the losses by up to 0.070.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import experiment_scripts

# The short run's comparison is within measured tolerances (tests/test_float_paths.py's rule).
pytestmark = pytest.mark.floats

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "experiments" / "results" / "base_stage1_short.json"
LOSS_TOLERANCE = 0.01
WORDS = 128
# Summed over the held-out games of one setting: how far a re-run may move each number.
HELD_OUT_TOLERANCE = {
    "solve_rate": 2 / WORDS,
    "standard_error": 2 / WORDS,
    "guesses_per_game": 10 / WORDS,
    "sampled_tokens_per_game": 100 / WORDS,
    "mean_reward": 10 / WORDS,
}
MACHINE_PATH = re.compile(r"(?<![\w.])(?:/tmp|/root|/home|/Users)/|[A-Za-z]:\\+Users\\+")


@pytest.fixture(scope="module")
def script():
    train_base_lm = experiment_scripts.load("train_base_lm")
    return train_base_lm


@pytest.fixture(scope="module")
def committed(script) -> list[dict]:
    return script.stage_chain(json.loads((script.BASE_DIR / "base.json").read_text()))


def option(command: str, name: str, default: str | None = None) -> str | None:
    words = shlex.split(command)
    return words[words.index(name) + 1] if name in words else default


def test_the_recipe_is_the_six_runs_the_committed_base_records(script, committed):
    assert len(committed) == len(script.STAGES) == 6
    for n, (stage, record) in enumerate(zip(script.STAGES, committed), start=1):
        assert stage.games == record["data"]["games"], n
        assert stage.seed == record["seed"], n
        assert stage.epochs == record["training"]["epochs"], n
        assert stage.batch_tokens == record["training"]["batch_tokens"], n
        assert stage.learning_rate == record["training"]["learning_rate"], n
        assert stage.warmup == int(option(record["command"], "--warmup", str(script.DEFAULT_WARMUP))), n
        assert list(stage.mix.items()) == list(record["mix"].items()), n  # the order draws the players
        assert record["efforts"] == script.DEFAULT_EFFORTS, n
        assert stage.slip_rate == record.get("slip_rate", 0.0), n
        assert stage.mix_note == record["mix_note"], n
        # The arguments the rebuild passes are the ones recorded (the time limit aside).
        args = script.parser().parse_args(stage.argv())
        assert (args.games, args.seed, args.epochs, args.learning_rate, args.mix) == (
            record["data"]["games"],
            record["seed"],
            record["training"]["epochs"],
            record["training"]["learning_rate"],
            record["mix"],
        ), n


def test_the_scripts_defaults_are_stage_ones_recipe(script):
    # The stored short run (below) is stage 1 with fewer games and epochs, its other arguments
    # left at these defaults.
    args, stage = script.parser().parse_args([]), script.STAGES[0]
    assert (args.seed, args.batch_tokens, args.learning_rate, args.warmup, args.slip_rate, args.init) == (
        stage.seed,
        stage.batch_tokens,
        stage.learning_rate,
        stage.warmup,
        stage.slip_rate,
        None,
    )
    assert list(args.mix.items()) == list(stage.mix.items()) and args.efforts == script.DEFAULT_EFFORTS


def test_every_committed_stage_continues_the_one_before_and_names_it(committed):
    for n, record in enumerate(committed, start=1):
        init = option(record["command"], "--init")
        if n == 1:
            assert init is None and record["init"] is None
        else:
            assert init == f"build/base/stage{n - 1}/base.safetensors"
            assert record["init"].startswith(f"stage {n - 1} (build/base/stage{n - 1}/base.safetensors")
        assert option(record["command"], "--out") == f"build/base/stage{n}"


def test_no_committed_stage_was_cut_short_by_its_time_limit(committed):
    # pretrain.train checks the limit against the time since training started, which is never
    # more than the recorded training seconds: a stage that trained for less than its limit ran
    # its epochs' full count of steps.
    for n, record in enumerate(committed, start=1):
        limit = option(record["command"], "--time-limit")
        assert limit is not None and record["training"]["seconds"] < float(limit), n


def test_the_rebuild_names_only_repository_paths(script):
    for n in range(1, len(script.STAGES) + 1):
        argv, command = script.stage_command(n, "build/base")
        assert not MACHINE_PATH.search(command)
        assert shlex.split(command)[2:] == argv
        assert "--time-limit" not in argv
    ignored = subprocess.run(["git", "check-ignore", "-q", "build/base/stage1/base.safetensors"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "build/ must stay git-ignored: the rebuild writes there"


def test_the_rebuild_refuses_the_committed_folder(script):
    with pytest.raises(SystemExit, match="committed base's folder"):
        script.main(["--rebuild", "--out", str(script.BASE_DIR)])


@pytest.mark.slow
@pytest.mark.experiments
def test_a_tiny_two_stage_rebuild_chains_its_stages_and_leaves_the_committed_base(script, tmp_path):
    before = {p.name: p.read_bytes() for p in script.BASE_DIR.iterdir() if p.is_file()}
    tiny = (
        script.Stage(games=12, seed=0, epochs=1.0, learning_rate=3e-3, warmup=1, mix={"solver": 1.0}, mix_note="a"),
        script.Stage(games=12, seed=1, epochs=1.0, learning_rate=1e-3, warmup=1, mix={"random": 1.0}, mix_note="b"),
    )
    assert script.rebuild(tmp_path, stages=tiny) is None
    first = json.loads((tmp_path / "stage1" / "base.json").read_text())
    last = json.loads((tmp_path / "base.json").read_text())
    assert last == json.loads((tmp_path / "stage2" / "base.json").read_text())
    assert last["continued_from"] == first and first["continued_from"] is None
    assert last["init"] == "stage 1 (<out>/stage1/base.safetensors)"
    assert option(last["command"], "--init") == "<out>/stage1/base.safetensors"  # the rebuild folder's place
    assert last["rebuild"]["stage"] == 2
    assert last["training"]["steps"] == last["training"]["planned_steps"] > 0
    assert not MACHINE_PATH.search(json.dumps(last))
    assert {p.name: p.read_bytes() for p in script.BASE_DIR.iterdir() if p.is_file()} == before


def _structure(value):
    """The keys of every mapping, recursively (lists by their length)."""
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [len(value)]
    return type(value).__name__


@pytest.mark.slow
@pytest.mark.experiments
def test_stage_one_short_run_reruns_to_the_stored_numbers(tmp_path):
    stored = json.loads(STORED.read_text())
    argv = shlex.split(stored["command"])
    assert argv[:2] == ["python", "experiments/train_base_lm.py"] and "--init" not in argv
    argv[argv.index("--out") + 1] = str(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    ran = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    fresh = json.loads((tmp_path / "base.json").read_text())

    # Exactly: what integer logic and strings decide.
    assert _structure(fresh) == _structure(stored)
    for key in ("base_id", "seed", "config", "parameters", "mix", "efforts", "mix_note", "slip_rate", "init"):
        assert fresh[key] == stored[key], key
    data = {k: v for k, v in fresh["data"].items() if k != "corpus_seconds"}
    assert data == {k: v for k, v in stored["data"].items() if k != "corpus_seconds"}
    for key in ("epochs", "steps", "planned_steps", "batch_tokens", "learning_rate", "warmup"):
        assert fresh["training"][key] == stored["training"][key], key
    assert fresh["held_out"]["words"] == stored["held_out"]["words"] == WORDS

    # Within the measured tolerances: what passes through float32 BLAS and `exp`.
    losses = zip(fresh["training"]["loss_every_1_steps"], stored["training"]["loss_every_1_steps"], strict=True)
    for step, (new, old) in enumerate(losses):
        assert abs(new - old) <= LOSS_TOLERANCE, (step, new, old)
    assert abs(fresh["training"]["final_loss"] - stored["training"]["final_loss"]) <= LOSS_TOLERANCE
    for setting, old in stored["held_out"]["rates"].items():
        new = fresh["held_out"]["rates"][setting]
        for key, tolerance in HELD_OUT_TOLERANCE.items():
            assert abs(new[key] - old[key]) <= tolerance, (setting, key, new[key], old[key])


def test_the_stored_short_run_says_how_it_was_made():
    stored = json.loads(STORED.read_text())
    assert stored["command"].startswith("python experiments/train_base_lm.py --games 300 --epochs 2 ")
    assert option(stored["command"], "--out") == "build/base-short"
    assert re.fullmatch(r"[0-9a-f]{40}", stored["git_commit"]), "record the short run from a clean checkout"
    assert stored["seed"] == 0 and stored["continued_from"] is None
    assert not MACHINE_PATH.search(STORED.read_text())
