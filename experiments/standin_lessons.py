"""Does the stand-in policy show the walkthrough's lessons? Measured over seeds, with spreads.

Every number here is the offline stand-in policy's (`mtrl_course.local.stand_in_policy`), never a real
model's; the walkthrough's own figures are cited in BRIEF.md and only its *directions* are
checked here. Five points (issue 8), each a statistic per seed, then mean, standard deviation and
standard error across seeds; a point "holds" when its statistic's mean is above twice its
standard error in the expected direction:

1. Greedy can fail: solve rate at temperature 1 minus temperature 0, for the base and the
   trained policy at low and medium effort (four differences, each must hold).
2. Effort helps: solve-rate gain from low to medium effort at temperature 1 for the base; the
   base's gain minus the trained policy's; and medium's extra completion tokens per game.
3. The plateau: the default offline run (notebook 05's settings: 32 prompts x 8 rollouts, 10
   steps, validation on the 128 held-out words at temperature 0 every 2 steps, learning rate
   1e-5, deployed effort low). Rise = final validation - step 0; headroom = 1 - final
   validation; served gap = evaluation at temperature 1 (deployed effort) - final validation.
4. Learning the wrong thing: the default run's adapter trained on for 10 more steps with the
   legacy summed reward against the tiered reward (same seed; from the base every reward first
   teaches "solve", and they part ways once the policy solves): share of games solved within
   three guesses (tiered - legacy) and mean guesses per solve (legacy - tiered), evaluated at
   temperature 1 with REWARD_ROLLOUTS rollouts per word; and the adapter's information weight
   (tiered - legacy), the parameter the two gradients pull in opposite directions.
5. Group size and curriculum: at an equal episode budget (global_batch_size x group_size = 256
   rollouts a step, 10 steps), group_size 16 and 32 against 8; and a curriculum in which half
   of the training rows are seeded with two `prior_guesses`. Statistic: evaluation solve rate
   at temperature 1 minus the default run's. Reported as measured, null or not.

Training goes through the real offline runner (`mtrl_course.local.runner.train`: fast lane,
real rollout handler, game, reward, GRPO) with an in-memory job; evaluation plays the validation
words through the same fast lane. Run:

    python experiments/standin_lessons.py --seeds 1 2 3            # writes results/standin_lessons.json
    python experiments/standin_lessons.py --seeds 1 --budget quick --no-write   # the test's run

`--budget quick` halves the evaluation (64 words, one rollout each) and is what the test uses;
the stored results come from `--budget full`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The offline state (MLflow store, adapters) goes to a scratch folder: the experiment must never
# read or write the learner's .state.
if "MTRL_STATE_DIR" not in os.environ:
    os.environ["MTRL_STATE_DIR"] = tempfile.mkdtemp(prefix="standin-lessons-")

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from mtrl_course import rewards  # noqa: E402
from mtrl_course.verdicts import GAIN, LOSS, verdict  # noqa: E402
from mtrl_course.local import fastlane, hub, mlflow_store, runner, standin_lane  # noqa: E402
from mtrl_course.local.failure_experiments import MemoryJob  # noqa: E402
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator  # noqa: E402
from mtrl_course.local.stand_in_policy import BASE_WEIGHTS, FEATURE_NAMES, Adapter, StandInPolicy  # noqa: E402
from mtrl_course.training import OFFLINE_HYPERPARAMETERS, WALKTHROUGH_OVERRIDES  # noqa: E402
from wordle_agent import rollout  # noqa: E402
from wordle_agent.words import ALLOWED, ENTROPY  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "standin_lessons.json"
DATA = ROOT / "data"
DEPLOYED_EFFORT = "low"  # resources.DEFAULT_REASONING_EFFORT, what the walkthrough deployed
EFFORTS = ("low", "medium")
TEMPERATURES = (0.0, 1.0)
INSTRUCTION = "Guess the hidden 5-letter word."
REGION = "us-east-1"
# Evaluation size per budget: (words, rollouts per word).
BUDGETS = {"full": (128, 2), "quick": (64, 1)}
# Point 4's evaluations use this many times the budget's rollouts per word (a smaller effect).
REWARD_ROLLOUTS = 2
# Curriculum: this share of training rows is seeded with CURRICULUM_PRIORS prior guesses.
CURRICULUM_SHARE = 0.5
CURRICULUM_PRIORS = 2
OPENER_POOL = 50
GROUP_SIZES = (8, 16, 32)
EPISODES_PER_STEP = 256


# --- an in-memory training job for the real runner ---------------------------------------------


def _rows(split: str) -> list[str]:
    path = DATA / f"{split}-data.jsonl"
    return [json.loads(line)["prompt"] for line in path.read_text().splitlines() if line.strip()]


def _answer(task: str) -> str:
    return json.loads(task)["answer"].upper()


def curriculum_rows(rows: Sequence[str], seed: int) -> list[str]:
    """`rows` with CURRICULUM_SHARE of them seeded with CURRICULUM_PRIORS prior guesses.

    The first prior is one of the OPENER_POOL best openers, the next ones random dictionary
    words; none is the answer (the game refuses that). Drawn from `seed`, so reproducible.
    """
    rng = np.random.default_rng([seed, 5])
    openers = sorted(ENTROPY, key=lambda w: -ENTROPY[w])[:OPENER_POOL]
    allowed = sorted(ALLOWED)
    seeded = set(rng.choice(len(rows), size=int(len(rows) * CURRICULUM_SHARE), replace=False).tolist())
    out = []
    for i, task in enumerate(rows):
        if i not in seeded:
            out.append(task)
            continue
        answer, priors = _answer(task), []
        while len(priors) < CURRICULUM_PRIORS:
            pool = openers if not priors else allowed
            word = pool[int(rng.integers(len(pool)))]
            if word != answer and word not in priors:
                priors.append(word)
        data = json.loads(task)
        data[rollout.PRIOR_GUESSES_KEY] = priors
        out.append(json.dumps(data))
    return out


@dataclass
class Lab:
    """Process-wide pieces: the offline backend's account, one MLflow store, the effort env."""

    account: str = ""
    tracking_uri: str = ""
    runs: int = 0

    def __post_init__(self) -> None:
        from mtrl_course.aws import offline_backend

        self.account = offline_backend().account
        state = Path(os.environ["MTRL_STATE_DIR"])
        state.mkdir(parents=True, exist_ok=True)
        self.tracking_uri = mlflow_store.ensure_store(state / "lessons-mlflow.db")
        self.adapter_dir = state / "adapters"

    def train(
        self,
        seed: int,
        *,
        reward: str = rewards.TIERED,
        train_rows: list[str] | None = None,
        start: Adapter | None = None,
        observer: Callable[[str, Any], None] | None = None,
        **overrides: Any,
    ) -> tuple[Adapter, MemoryJob, float]:
        """One training run through the real runner; (adapter, job, seconds).

        `start` continues from an adapter, as a job given an input model package does;
        `observer(task_id, game)` is handed every finished game of the run.
        """
        hp = {name: entry["default"] for name, entry in hub.TRAINING_SPEC.items()}
        hp.update(WALKTHROUGH_OVERRIDES)
        hp.update(OFFLINE_HYPERPARAMETERS)
        hp.update(overrides)
        self.runs += 1
        # Job names allow no underscore ("outcome_only"): the ARN check refuses them.
        name = f"lessons-{self.runs:03d}-s{seed}-{reward.replace('_', '-')}"
        prompts = {"train": train_rows or _rows("training"), "validation": _rows("validation")}
        job = MemoryJob(name, hp, prompts, self.tracking_uri, experiment="standin-lessons")
        if start is not None:
            package = f"arn:aws:sagemaker:{REGION}:{self.account}:model-package/lessons/{self.runs}"
            standin_lane.register_adapter(
                self.adapter_dir, package, start.save(self.adapter_dir / f"start-{name}.json")
            )
            job.config.input_model_package_arn = package
        os.environ[rollout.REASONING_EFFORT_ENV] = DEPLOYED_EFFORT
        started = time.monotonic()
        options = runner.RunnerOptions(seed=seed, adapter_dir=self.adapter_dir, reward=reward, observer=observer)
        runner.train(job, options)
        seconds = time.monotonic() - started
        if job.failure:
            raise RuntimeError(f"training run {name} failed: {job.failure}")
        return Adapter.load(self.adapter_dir / f"{name}.json"), job, seconds


# --- evaluation through the fast lane ------------------------------------------------------------


@dataclass
class Evaluation:
    solve_rate: float
    mean_reward: float
    obscure_prob: float
    solved_within_3: float
    guesses_per_solve: float
    loop_games: float
    completion_tokens_per_game: float
    games: int
    per_game: list[dict] = field(default_factory=list, repr=False)


_EVAL_COUNTER = [0]


def evaluate(adapter: Adapter, seed: int, *, temperature: float, effort: str, words: int, rollouts: int) -> Evaluation:
    """Play the first `words` validation words `rollouts` times each, as an evaluation job would."""
    _EVAL_COUNTER[0] += 1
    tasks = _rows("validation")[:words]
    emulator = JobRuntimeEmulator()
    from mtrl_course.aws import offline_backend

    arn = (
        f"arn:aws:sagemaker:{REGION}:{offline_backend().account}:job/AgentRFTEvaluation/lessons-eval-{_EVAL_COUNTER[0]}"
    )
    emulator.register_job(arn, StandInPolicy(adapter, seed=seed))
    weights = BASE_WEIGHTS + adapter.weights
    os.environ[rollout.REASONING_EFFORT_ENV] = effort
    games: dict[str, Any] = {}

    def observe(task_id: str, game: Any) -> None:
        games[task_id] = game

    per_game = []
    for i, task in enumerate(tasks):
        task_id = json.loads(task)["id"]
        for r in range(rollouts):
            tid = f"e{i:04d}-r{r:02d}"
            emulator.start_trajectory(arn, tid, rng_key=[runner.PHASE_CODES["eval"], 0, i, r, 0])
            fastlane.play_episode(emulator, arn, tid, task, temperature=temperature, max_tokens=8192, observer=observe)
            game = games.pop(task_id)
            samples = emulator.trajectory(arn, tid).samples
            # The policy's own probability (temperature 1) of an obscure clean word (fits
            # every clue, not an answer-list word): the legacy reward's way to farm shaping.
            obscure = []
            for sample in samples:
                trace = sample.policy_trace
                if isinstance(trace, dict) and trace.get("kind") in ("guess", "loop"):
                    phi = np.asarray(trace["features"])
                    logits = phi @ weights + np.asarray(trace["offsets"])
                    prob = np.exp(logits - logits.max())
                    prob /= prob.sum()
                    mask = (phi[:, FEATURE_NAMES.index("consistent")] == 1) & (
                        phi[:, FEATURE_NAMES.index("common_word")] == 0
                    )
                    obscure.append(float(prob[mask].sum()))
            per_game.append(
                {
                    "obscure_prob": float(np.mean(obscure)) if obscure else 0.0,
                    "reward": float(game.final_reward()),
                    "solved": bool(game.solved),
                    "guesses": len(game.guesses),
                    "loop": any(
                        isinstance(s.policy_trace, dict) and s.policy_trace.get("kind") == "loop" for s in samples
                    ),
                    "completion_tokens": sum(s.completion_tokens for s in samples),
                }
            )
    emulator.close_job(arn)
    solved = [g for g in per_game if g["solved"]]
    return Evaluation(
        solve_rate=float(np.mean([g["solved"] for g in per_game])),
        mean_reward=float(np.mean([g["reward"] for g in per_game])),
        obscure_prob=float(np.mean([g["obscure_prob"] for g in per_game])),
        solved_within_3=float(np.mean([g["solved"] and g["guesses"] <= 3 for g in per_game])),
        guesses_per_solve=float(np.mean([g["guesses"] for g in solved])) if solved else float("nan"),
        loop_games=float(np.mean([g["loop"] for g in per_game])),
        completion_tokens_per_game=float(np.mean([g["completion_tokens"] for g in per_game])),
        games=len(per_game),
        per_game=per_game,
    )


# --- one seed --------------------------------------------------------------------------------------


def run_seed(seed: int, budget: str, lab: Lab, progress: tqdm) -> dict[str, Any]:
    """Every measurement of one seed (see the module docstring)."""
    words, rollouts = BUDGETS[budget]
    out: dict[str, Any] = {"seed": seed}

    def step(label: str) -> None:
        progress.set_postfix_str(f"seed {seed}: {label}")
        progress.update(1)

    def ev(adapter: Adapter, temperature: float, effort: str = DEPLOYED_EFFORT) -> Evaluation:
        return evaluate(adapter, seed, temperature=temperature, effort=effort, words=words, rollouts=rollouts)

    # 3. the default run (its adapter is "trained" for points 1, 2, 4 and 5)
    trained, job, seconds = lab.train(seed)
    step("default run")
    val = job.metric("val/reward/pass_at_1")
    reward = job.metric("rollout/reward/mean")
    out["default_run"] = {
        "seconds": seconds,
        "val_pass_at_1": {str(k): v for k, v in sorted(val.items())},
        "train_reward_mean": {str(k): v for k, v in sorted(reward.items())},
        "adapter_norm": float(np.linalg.norm(trained.weights)),
    }

    # 1 and 2: the four-setting grid, base and trained
    grid = {}
    for model, adapter in (("base", Adapter(seed=seed)), ("trained", trained)):
        for effort in EFFORTS:
            for temperature in TEMPERATURES:
                e = ev(adapter, temperature, effort)
                grid[f"{model}/{effort}/T{temperature:g}"] = {
                    "solve_rate": e.solve_rate,
                    "loop_games": e.loop_games,
                    "completion_tokens_per_game": e.completion_tokens_per_game,
                    "games": e.games,
                }
                step(f"{model} {effort} T{temperature:g}")
    out["grid"] = grid

    # 4. legacy against tiered: both continue the default run's adapter for as many steps again
    # (from the base, every reward first teaches "solve"; they part ways once it solves)
    served_eval = ev(trained, 1.0)
    out["served"] = served_eval.solve_rate
    design = {}
    for variant in (rewards.TIERED, rewards.LEGACY):
        adapter, _, _ = lab.train(seed, reward=variant, start=trained, val_every=0)
        e = evaluate(
            adapter, seed, temperature=1.0, effort=DEPLOYED_EFFORT, words=words, rollouts=rollouts * REWARD_ROLLOUTS
        )
        design[variant] = {
            "solve_rate": e.solve_rate,
            "solved_within_3": e.solved_within_3,
            "guesses_per_solve": e.guesses_per_solve,
            "mean_reward": e.mean_reward,
            "obscure_prob": e.obscure_prob,
            "mean_guesses": float(np.mean([g["guesses"] for g in e.per_game])),
            "adapter": adapter.weights.round(3).tolist(),
        }
        step(f"{variant} continued")
    design["start"] = {
        "solve_rate": served_eval.solve_rate,
        "solved_within_3": served_eval.solved_within_3,
        "obscure_prob": served_eval.obscure_prob,
        "guesses_per_solve": served_eval.guesses_per_solve,
        "adapter": trained.weights.round(3).tolist(),
    }
    out["reward_design"] = design

    # 5. group size at an equal episode budget, and the curriculum (validation at 0 and 10 only)
    final_val = val[max(val)]
    groups = {
        "8": {
            "eval_T1_solve": served_eval.solve_rate,
            "eval_T1_reward": served_eval.mean_reward,
            "final_val": final_val,
        }
    }
    for group in GROUP_SIZES[1:]:
        adapter, gjob, _ = lab.train(seed, group_size=group, global_batch_size=EPISODES_PER_STEP // group, val_every=10)
        gval = gjob.metric("val/reward/pass_at_1")
        e = ev(adapter, 1.0)
        groups[str(group)] = {
            "eval_T1_solve": e.solve_rate,
            "eval_T1_reward": e.mean_reward,
            "final_val": gval[max(gval)],
            # Why a null can happen: Adam's update barely depends on the batch.
            "adapter_distance_to_group_8": float(np.linalg.norm(adapter.vector() - trained.vector())),
        }
        step(f"group {group}")
    out["group_size"] = groups
    cadapter, cjob, _ = lab.train(seed, train_rows=curriculum_rows(_rows("training"), seed), val_every=10)
    cval = cjob.metric("val/reward/pass_at_1")
    e = ev(cadapter, 1.0)
    out["curriculum"] = {
        "eval_T1_solve": e.solve_rate,
        "eval_T1_reward": e.mean_reward,
        "final_val": cval[max(cval)],
        "adapter_distance_to_default": float(np.linalg.norm(cadapter.vector() - trained.vector())),
    }
    step("curriculum")
    return out


STEPS_PER_SEED = 1 + 2 * len(EFFORTS) * len(TEMPERATURES) + 2 + (len(GROUP_SIZES) - 1) + 1


# --- statistics ------------------------------------------------------------------------------------


def summary(values: Sequence[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
    return {
        "mean": float(v.mean()),
        "sd": sd,
        "se": sd / np.sqrt(len(v)) if len(v) > 1 else float("nan"),
        "n": int(len(v)),
        "values": [float(x) for x in v],
    }


def judge(stat: dict[str, Any]) -> None:
    """Label `stat` in place by the course's one rule (mtrl_course.verdicts: Student's t cutoff
    for its seed count): "holds" when it is beyond noise in the expected (positive) direction,
    "opposite" when beyond noise the other way."""
    judged = verdict(stat["values"])
    stat["cutoff_se"] = judged.cutoff
    stat["holds"] = judged.label == GAIN
    stat["opposite"] = judged.label == LOSS


def statistics(seeds: list[dict]) -> dict[str, dict[str, Any]]:
    """Each point's statistics across seeds (positive = the expected direction)."""

    def grid(s: dict, model: str, effort: str, t: float, key: str = "solve_rate") -> float:
        return s["grid"][f"{model}/{effort}/T{t:g}"][key]

    stats: dict[str, dict[str, Any]] = {}
    for model in ("base", "trained"):
        for effort in EFFORTS:
            stats[f"1 greedy fails: {model} {effort}, T1 - T0"] = summary(
                [grid(s, model, effort, 1.0) - grid(s, model, effort, 0.0) for s in seeds]
            )
    stats["2 effort helps: base medium - low (T1)"] = summary(
        [grid(s, "base", "medium", 1.0) - grid(s, "base", "low", 1.0) for s in seeds]
    )
    stats["2 effort helps the base more: base gain - trained gain (T1)"] = summary(
        [
            (grid(s, "base", "medium", 1.0) - grid(s, "base", "low", 1.0))
            - (grid(s, "trained", "medium", 1.0) - grid(s, "trained", "low", 1.0))
            for s in seeds
        ]
    )
    stats["2 effort costs tokens: medium - low completion tokens/game (trained, T1)"] = summary(
        [
            grid(s, "trained", "medium", 1.0, "completion_tokens_per_game")
            - grid(s, "trained", "low", 1.0, "completion_tokens_per_game")
            for s in seeds
        ]
    )

    def val(s: dict) -> dict[int, float]:
        return {int(k): v for k, v in s["default_run"]["val_pass_at_1"].items()}

    stats["3 plateau: validation rise, final - step 0"] = summary([val(s)[max(val(s))] - val(s)[0] for s in seeds])
    stats["3 plateau: headroom, 1 - final validation"] = summary([1 - val(s)[max(val(s))] for s in seeds])
    stats["3 plateau: served (T1, low) - final validation"] = summary(
        [s["served"] - val(s)[max(val(s))] for s in seeds]
    )
    info = FEATURE_NAMES.index("information")
    stats["4 reward design: information weight, tiered - legacy (continued)"] = summary(
        [s["reward_design"]["tiered"]["adapter"][info] - s["reward_design"]["legacy"]["adapter"][info] for s in seeds]
    )
    stats["4 reward design: solved within 3, tiered - legacy (continued, T1)"] = summary(
        [
            s["reward_design"]["tiered"]["solved_within_3"] - s["reward_design"]["legacy"]["solved_within_3"]
            for s in seeds
        ]
    )
    stats["4 reward design: guesses per solve, legacy - tiered (continued, T1)"] = summary(
        [
            s["reward_design"]["legacy"]["guesses_per_solve"] - s["reward_design"]["tiered"]["guesses_per_solve"]
            for s in seeds
        ]
    )
    for group in GROUP_SIZES[1:]:
        stats[f"5 group {group} - 8: eval T1 mean reward (equal episodes)"] = summary(
            [s["group_size"][str(group)]["eval_T1_reward"] - s["group_size"]["8"]["eval_T1_reward"] for s in seeds]
        )
        stats[f"5 group {group} - 8: final validation (equal episodes)"] = summary(
            [s["group_size"][str(group)]["final_val"] - s["group_size"]["8"]["final_val"] for s in seeds]
        )
    stats["5 curriculum - default: eval T1 mean reward"] = summary(
        [s["curriculum"]["eval_T1_reward"] - s["group_size"]["8"]["eval_T1_reward"] for s in seeds]
    )
    stats["5 curriculum - default: final validation"] = summary(
        [s["curriculum"]["final_val"] - s["group_size"]["8"]["final_val"] for s in seeds]
    )
    for stat in stats.values():
        judge(stat)
    return stats


def levels(seeds: list[dict]) -> dict[str, dict[str, float]]:
    """Means and spreads of the levels behind the statistics (for the report and notebooks)."""
    out: dict[str, dict[str, float]] = {}
    for key in seeds[0]["grid"]:
        out[f"grid {key} solve rate"] = summary([s["grid"][key]["solve_rate"] for s in seeds])
        out[f"grid {key} loop games"] = summary([s["grid"][key]["loop_games"] for s in seeds])
        out[f"grid {key} completion tokens/game"] = summary(
            [s["grid"][key]["completion_tokens_per_game"] for s in seeds]
        )
    for step in seeds[0]["default_run"]["val_pass_at_1"]:
        out[f"default run val pass@1 step {step}"] = summary([s["default_run"]["val_pass_at_1"][step] for s in seeds])
    for step in seeds[0]["default_run"]["train_reward_mean"]:
        out[f"default run train reward step {step}"] = summary(
            [s["default_run"]["train_reward_mean"][step] for s in seeds]
        )
    out["default run seconds"] = summary([s["default_run"]["seconds"] for s in seeds])
    out["served (T1, low)"] = summary([s["served"] for s in seeds])
    for variant in ("start", "tiered", "legacy"):
        for key in ("solve_rate", "solved_within_3", "guesses_per_solve", "obscure_prob"):
            out[f"reward {variant} {key}"] = summary([s["reward_design"][variant][key] for s in seeds])
    for group in GROUP_SIZES:
        for key in ("eval_T1_solve", "eval_T1_reward", "final_val"):
            out[f"group {group} {key}"] = summary([s["group_size"][str(group)][key] for s in seeds])
    for key in ("eval_T1_solve", "eval_T1_reward", "final_val"):
        out[f"curriculum {key}"] = summary([s["curriculum"][key] for s in seeds])
    for group in GROUP_SIZES[1:]:
        out[f"group {group} adapter distance to group 8"] = summary(
            [s["group_size"][str(group)]["adapter_distance_to_group_8"] for s in seeds]
        )
    out["curriculum adapter distance to default"] = summary(
        [s["curriculum"]["adapter_distance_to_default"] for s in seeds]
    )
    out["default adapter norm"] = summary([s["default_run"]["adapter_norm"] for s in seeds])
    return out


def table(stats: dict[str, dict[str, Any]]) -> str:
    width = max(len(k) for k in stats)
    lines = [f"{'statistic (stand-in policy)':<{width}}  {'mean':>8} {'sd':>7} {'se':>7}  verdict", "-" * (width + 40)]
    for key, s in stats.items():
        cut = f"{s['cutoff_se']:.2f} se"
        label = (
            f"holds (> {cut})" if s["holds"] else (f"opposite (> {cut})" if s["opposite"] else f"null (within {cut})")
        )
        lines.append(f"{key:<{width}}  {s['mean']:>8.3f} {s['sd']:>7.3f} {s['se']:>7.3f}  {label}")
    return "\n".join(lines)


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="full")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--resume", action="store_true", help="reuse the seeds an interrupted run finished")
    args = parser.parse_args(argv)
    if args.budget == "full" and len(args.seeds) < 3 and not args.no_write:
        parser.error("the stored results need at least 3 seeds")
    lab = Lab()
    started = time.monotonic()
    # Each finished seed is kept next to the output, so an interrupted run resumes (--resume).
    partial = args.output.with_suffix(".partial.json")
    done: dict[int, dict] = {}
    if args.resume and partial.is_file():
        stored = json.loads(partial.read_text())
        if stored.get("budget") == args.budget:
            done = {int(s["seed"]): s for s in stored["per_seed"] if int(s["seed"]) in args.seeds}
    per_seed = []
    with tqdm(total=STEPS_PER_SEED * len(args.seeds), desc="stand-in lessons", file=sys.stderr) as progress:
        for seed in args.seeds:
            if seed in done:
                per_seed.append(done[seed])
                progress.update(STEPS_PER_SEED)
                continue
            per_seed.append(run_seed(seed, args.budget, lab, progress))
            if not args.no_write:
                partial.parent.mkdir(parents=True, exist_ok=True)
                partial.write_text(json.dumps({"budget": args.budget, "per_seed": per_seed}) + "\n")
    stats = statistics(per_seed)
    print(table(stats))
    result = {
        "label": "stand-in policy (offline); not a real model's numbers",
        "command": "python experiments/standin_lessons.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "seeds": list(args.seeds),
        "budget": args.budget,
        "evaluation": {"words": BUDGETS[args.budget][0], "rollouts_per_word": BUDGETS[args.budget][1]},
        "git_commit": _git_commit(),
        "seconds": time.monotonic() - started,
        "statistics": stats,
        "levels": levels(per_seed),
        "per_seed": per_seed,
    }
    if not args.no_write:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
        print(f"wrote {args.output}")
        partial.unlink(missing_ok=True)
    return result


if __name__ == "__main__":
    main()
