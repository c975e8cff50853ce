"""Does token-level GRPO on the learner's LoRA adapter beat its base? Measured over seeds.

Each seed trains the learner (`mtrl_course.learner`, behind the `policy="learner"` runner switch)
with the course's default offline run: notebook 05's settings (32 prompts x 8 rollouts a step,
validation on the 128 held-out words at temperature 0 every 2 steps, learning rate 1e-5, which
the learner's GRPO scales by `LR_SCALE`), the deployed reasoning effort "low", through the real
runner, fast lane, rollout handler, game and reward, with an in-memory job
(`local.failure_experiments.MemoryJob`). Then the base and the trained adapter are evaluated on the 128
held-out words at the serving setting (temperature 1, low effort), at temperature 0 and at medium
effort, through the real agent (fast lane, `--eval-path agent`, the default) or with the batched
in-process player (`--eval-path batch`).

    python experiments/learner_grpo.py --seeds 1 2 3 --max-steps 30          # results/learner_grpo.json
    python experiments/learner_grpo.py --seeds 1 2 3 --max-steps 30 --reward outcome_only \
        --out experiments/results/learner_grpo_outcome_only.json

(One epoch of the 640 training prompts is 20 steps, so `--max-steps 30` stops at 20 unless
`--max-epochs 2` is given.) Reported as measured: per seed, base and trained solve rates with
their binomial standard errors (128 words), the gain, and across seeds the mean gain and its
standard error. Each file holds its command, commit and start time.

Stored results on the stage-6 base (17.2% at T=1 low in its own provenance); unless said
otherwise 20 steps through the runner, 6-11 minutes a seed on a shared two-core machine, where
the real agent's rollouts take about 80% of each step (12-24 s of 15-29 s; the update 2-5 s):
- `learner_grpo.json`, the course's tiered reward: every seed collapses. T=1 low 21.1% -> 1.6%
  (gain -19.5 +- 1.8 points, SE over 3 seeds), greedy 32.8% -> 2.9%. The adapters learn to end
  games early (sampled tokens per game 43 -> 22, tool-call share of turns 0.93 -> 0.65), and the
  training reward falls with them (-0.14 -> -0.38 in seed 1). The group's standard deviation
  scales the advantages, so the loss tier's small shaping differences (a shorter lost game is
  charged fewer per-guess penalties) are pushed as hard as a solve, in every group, in the same
  direction; the solves point somewhere different for every word.
- `learner_grpo_outcome_only.json`, the same run with the outcome-only reward: no collapse, and
  no gain: T=1 low 21.1% -> 22.1% (+1.0 +- 4.1 points; +6.2, +3.9, -7.0 by seed), greedy 32.8% ->
  28.1%, T=1 medium 20.3% -> 22.4%.
- `learner_grpo_outcome_only_2epochs.json`, outcome-only for 40 steps (`--max-steps 40
  --max-epochs 2`, one process per seed, combined): still no gain. T=1 low 21.1% -> 22.7%
  (+1.6 +- 2.1 points; +4.7, +2.3, -2.3 by seed), greedy 32.8% -> 29.4%; the greedy
  validation curve stayed between 24% and 35% for all 40 steps.
- `learner_grpo_outcome_only_long.json`, outcome-only for 160 steps (8 epochs of the 640 words,
  41,000 games a seed) with `--trainer batch` (the same GRPO on the batched player; see
  `train_batch`), evaluated over 4 seeds (512 games per setting), one process per seed, combined
  with `--combine`; 28-31 minutes a seed on the shared machine:
      python experiments/learner_grpo.py --trainer batch --seeds N --reward outcome_only \
          --max-steps 160 --max-epochs 8 --eval-path batch --eval-seeds 4 --out <one file per seed>
  A gain, small: T=1 low 17.6% -> 23.2% (+5.6 +- 1.1 points; +6.2, +3.5, +7.0 by seed), while
  the solve rate on the training words, sampled at T=1 during training, went from about 26% to
  50% (means over steps 1-20 and 141-160). Greedy fell (32.8% -> 27.6%, -5.2 +- 1.8) and so did
  medium effort, never trained (18.5% -> 14.1%, -4.4 +- 1.1); the greedy validation curve stayed
  between 22% and 36% for all 160 steps. The held-out words gain a quarter of what the training
  words gain, whose prompts repeat every 20 steps. Whether that gap is memorisation of the 640
  answers is not settled: an exploratory single-seed run (not stored, 40 steps, 128-word
  evaluations) gained about as much on 128 answers outside both sets (16% -> 31%) as on training
  words (22% -> 40%), and less on the validation words (16% -> 23%, two evaluation seeds).
- The base's own T=1 low rate moved between 18.8% and 24.2% with the evaluation seed alone: one
  128-word evaluation has a standard error of about 3.6 points (hence `--eval-seeds`).
- Earlier bases: `learner_grpo_stage2_base.json`, `..._stage3_base.json` and
  `..._stage4_base.json`, all nulls or losses (those bases solved about 1% at T=1, so almost no
  group held a solve), measured with `LR_SCALE` 300.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see experiments/train_base_lm.py
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agent_src"))
os.environ.setdefault("MTRL_MODE", "offline")

from mtrl_course import config  # noqa: E402
from mtrl_course.rewards import DESIGNS, REWARDS, TIERED  # noqa: E402
from mtrl_course.learner import play as batch_play  # noqa: E402
from mtrl_course.learner import weights  # noqa: E402
from mtrl_course.learner.grpo import LR_SCALE  # noqa: E402
from mtrl_course.learner.lora import Adapter  # noqa: E402
from mtrl_course.local import failure_experiments, fastlane, hub, mlflow_store, runner  # noqa: E402
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator  # noqa: E402
from mtrl_course.local.learner_policy import LearnerPolicy, load_base  # noqa: E402
from mtrl_course.rl.advantages import GRPO, Estimator, group_advantages  # noqa: E402
from wordle_agent import rollout  # noqa: E402
from wordle_agent.words import ANSWERS  # noqa: E402

RESULTS = REPO / "experiments" / "results" / "learner_grpo.json"
SETTINGS = (("t1_low", 1.0, "low"), ("t0_low", 0.0, "low"), ("t1_medium", 1.0, "medium"))
ACCOUNT_ARN = "arn:aws:sagemaker:us-east-1:123456789012:job/AgentRFTEvaluation/learner-eval-{}"
_EVALS = iter(range(1, 10**9))


def answer_of(task: str) -> str:
    return json.loads(task)["answer"]


# --- Word pools (the training words a batched run draws its prompts from) ----------------------------

POOLS = ("training", "all")


def validation_words() -> list[str]:
    """Notebook 04's 128 held-out words (lowercase, in row order)."""
    return [answer_of(t) for t in failure_experiments.rows("validation")]


def word_pool(name: str) -> list[str]:
    """The training words of pool `name`: "training" (the 640 training rows' answers, in row order)
    or "all" (every answer of the course's list but the validation words, in the list's order)."""
    if name == "training":
        return [answer_of(t) for t in failure_experiments.rows("training")]
    if name != "all":
        raise ValueError(f"unknown word pool {name!r}; choose one of {POOLS}")
    held_out = set(validation_words())
    pool = [w.lower() for w in ANSWERS if w.lower() not in held_out]
    assert not held_out & set(pool) and len(pool) == len(ANSWERS) - len(held_out), "a validation word in the pool"
    return pool


def eval_agent(adapter, tasks, *, temperature, effort, seed, workers=64):
    """Solve rate of `tasks` played through the real agent (fast lane, learner policy)."""
    emulator = JobRuntimeEmulator()
    arn = ACCOUNT_ARN.format(f"{os.getpid()}-{next(_EVALS)}")
    emulator.register_job(arn, LearnerPolicy(adapter, seed=seed))

    def one(item):
        i, task = item
        tid = f"eval-{i:04d}"
        emulator.start_trajectory(arn, tid, rng_key=[seed, 2, 0, i, 0, 0])
        fastlane.play_episode(emulator, arn, tid, task, temperature=temperature, max_tokens=8192)
        t = emulator.trajectory(arn, tid)
        reward = float(sum(t.rewards)) if t.rewards else float("nan")
        return reward, t.completion_tokens

    with config.environment({rollout.REASONING_EFFORT_ENV: effort}), fastlane.installed():
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(one, enumerate(tasks)))
    solved = np.array([r >= 1.0 for r, _ in results], dtype=float)
    return {
        "solve_rate": float(solved.mean()),
        "standard_error": float(solved.std(ddof=1) / np.sqrt(len(solved))),
        "mean_reward": float(np.nanmean([r for r, _ in results])),
        "completion_tokens_per_game": float(np.mean([c for _, c in results])),
    }


def eval_batch(adapter, tasks, *, temperature, effort, seed):
    params, model_config, _ = load_base()
    games = batch_play.play_games(
        params,
        model_config,
        [answer_of(t) for t in tasks],
        temperature=temperature,
        effort=effort,
        seed=seed,
        adapter=adapter,
    )
    rate, se = batch_play.solve_rate(games)
    return {
        "solve_rate": rate,
        "standard_error": se,
        "mean_reward": float(np.mean([g.reward for g in games])),
        "completion_tokens_per_game": float(np.mean([sum(len(t["tokens"]) for t in g.turns) for g in games])),
    }


def evaluate_seeds(evaluate, adapter, tasks, *, temperature, effort, seeds):
    """`evaluate` once per evaluation seed, pooled: the mean solve rate over every game played.

    The standard error is the binomial one over all games (128 x len(seeds)); games of the same
    word under different seeds are not independent, so it is a little optimistic for word-level
    variation, and exact for the sampling noise it is meant to shrink.
    """
    runs = [evaluate(adapter, tasks, temperature=temperature, effort=effort, seed=s) for s in seeds]
    rate = float(np.mean([r["solve_rate"] for r in runs]))
    n = len(tasks) * len(runs)
    return {
        "solve_rate": rate,
        "standard_error": float(np.sqrt(rate * (1 - rate) / max(n - 1, 1))),
        "games": n,
        "by_seed": [r["solve_rate"] for r in runs],
        "mean_reward": float(np.mean([r["mean_reward"] for r in runs])),
        "completion_tokens_per_game": float(np.mean([r["completion_tokens_per_game"] for r in runs])),
    }


def train_one(seed: int, state: Path, hp_overrides: dict, reward: str = "tiered") -> tuple[Path, dict, float]:
    from mtrl_course.aws import offline_backend

    offline_backend()  # the in-memory job lives in the offline backend's account
    hp = {name: entry["default"] for name, entry in hub.TRAINING_SPEC.items()}
    hp.update(failure_experiments.DEFAULT_RUN)
    hp.update(hp_overrides)
    name = f"learner-grpo-s{seed}-{time.strftime('%Y%m%d%H%M%S')}"
    tracking = mlflow_store.ensure_store(state / "mlflow.db")
    prompts = {"train": failure_experiments.rows("training"), "validation": failure_experiments.rows("validation")}
    job = failure_experiments.MemoryJob(name, hp, prompts, tracking, experiment="learner-grpo")
    options = runner.RunnerOptions(
        seed=seed, adapter_dir=state / "adapters", policy=runner.POLICY_LEARNER, reward=reward
    )
    started = time.monotonic()
    with failure_experiments.reasoning_effort(failure_experiments.DEPLOYED_EFFORT):
        runner.train(job, options)
    seconds = time.monotonic() - started
    if job.failure:
        raise RuntimeError(f"training failed: {job.failure}")
    keys = (
        "val/reward/pass_at_1",
        "rollout/reward/mean",
        "learner/update/grad_norm",
        "learner/format/tool_call_rate",
        "timing_s/step",
        "timing_s/policy_update",
        "timing_s/training",
        "timing_s/eval",
        "learner/update/clipped_share",
    )
    curves = {k: job.metric(k) for k in keys}
    return state / "adapters" / f"{name}.safetensors", curves, seconds


def train_batch(
    seed: int,
    hp_overrides: dict,
    reward: str = "tiered",
    val_every: int | None = 20,
    *,
    train_priors: list[list[str]] | None = None,
    recovery: bool = True,
    checkpoints: dict[int, Adapter] | None = None,
    estimator: Estimator = GRPO,
    answers: list[str] | None = None,
    on_step: Callable[[int, int, dict[str, dict[int, float]]], None] | None = None,
) -> tuple[Adapter, dict, float]:
    """The same GRPO as `train_one`, with the games played by the batched in-process player.

    What is the same: the learner, its base, the job's hyperparameters (the service's defaults
    with `failure_experiments.DEFAULT_RUN` and `hp_overrides`), the fresh adapter (`learner_lane.starting_adapter`),
    the optimizer (`learner.grpo.optimizer`), the reward (by name from the one registry,
    `mtrl_course.rewards`; tiered is the game's own `final_reward()`), the group-relative advantages
    (`local.grpo.group_advantages`) and the update (`learner.grpo.update`), the deployed effort, the
    sampling temperature, top-p and token cap. What differs: the games are played by
    `learner.play.play_games`, which follows the agent's rules (tests/test_learner_play.py plays the
    same game as the real handler for the same replies) without the Strands agent, the HTTP
    emulator and the runner's bookkeeping, about four times faster; prompts are drawn in a fresh
    random order each epoch (seeded), and validation is at temperature 0 on the held-out words.

    `train_priors[i]` seeds training word i with prior guesses (a curriculum; the rows' order);
    `val_every=None` skips validation (a notebook's quick re-run of stored steps); `recovery=False`
    plays without raw-text recovery (the agent's `RAW_TEXT_RECOVERY=off`), in
    training and validation; steps named in `checkpoints` (a dict filled in place) keep a copy of
    the adapter after that step. `estimator` (GRPO by default, or Dr. GRPO's) makes both the group
    advantages and the update's length normalisation; `answers` is the training word pool (by
    default the 640 training rows' answers, in row order); `on_step(step, total, curves)` is called
    after every step instead of printing a line (a progress bar's hook).
    """
    import copy

    from mtrl_course.learner import grpo as learner_grpo
    from mtrl_course.learner.threads import one_blas_thread
    from mtrl_course.local.learner_lane import starting_adapter
    from mtrl_course.service_spec import TrainingHyperparameters

    hp = TrainingHyperparameters.unbounded({**failure_experiments.DEFAULT_RUN, **hp_overrides})
    params, model_config, _ = load_base()
    adapter = starting_adapter(hp, None, seed, Path(tempfile.gettempdir()))
    assert not isinstance(adapter, str)
    optimizer = learner_grpo.optimizer(hp)
    score = REWARDS[reward]
    if answers is None:
        answers = [answer_of(t) for t in failure_experiments.rows("training")]
    held_out = [answer_of(t) for t in failure_experiments.rows("validation")]
    prompts = hp.global_batch_size  # prompts a step (the service counts the batch in prompts)
    steps_per_epoch = len(answers) // prompts
    total = min(hp.max_steps, hp.max_epochs * steps_per_epoch)
    rng = np.random.default_rng([seed, 20])
    curves: dict[str, dict[int, float]] = {
        k: {}
        for k in (
            "val/reward/pass_at_1",
            "rollout/reward/mean",
            "rollout/solve_rate",
            "rollout/tokens_per_game",
            "learner/update/grad_norm",
            "learner/update/clipped_share",
            "rollout/raw_text_share",
            "rollout/no_play_share",
            "timing_s/step",
        )
    }

    def validate(step: int) -> None:
        games = batch_play.play_games(
            params,
            model_config,
            held_out,
            temperature=0.0,
            effort=failure_experiments.DEPLOYED_EFFORT,
            seed=seed,
            adapter=adapter,
            max_tokens=hp.sampling_max_tokens,
            recovery=recovery,
        )
        curves["val/reward/pass_at_1"][step] = float(np.mean([g.solved for g in games]))

    started = time.monotonic()
    if val_every is not None:
        validate(0)
    order = rng.permutation(len(answers))
    with one_blas_thread():
        for step in range(1, total + 1):
            t0 = time.monotonic()
            k = (step - 1) % steps_per_epoch
            if k == 0 and step > 1:
                order = rng.permutation(len(answers))
            chosen = order[k * prompts : (k + 1) * prompts]
            words = [answers[i] for i in chosen]
            games = batch_play.play_games(
                params,
                model_config,
                [w for w in words for _ in range(hp.group_size)],
                priors=None
                if train_priors is None
                else [train_priors[i] for i in chosen for _ in range(hp.group_size)],
                recovery=recovery,
                temperature=hp.temperature,
                top_p=hp.sampling_top_p,
                max_tokens=hp.sampling_max_tokens,
                effort=failure_experiments.DEPLOYED_EFFORT,
                seed=int(rng.integers(1 << 30)),
                adapter=adapter,
                batch=256,
            )
            rewards = np.array([score(g.game) for g in games])
            advantages = step_advantages(rewards, hp.group_size, estimator)
            batch = [
                learner_grpo.Sample(
                    float(a),
                    [learner_grpo.Turn(tuple(t["prompt"]), tuple(t["tokens"]), tuple(t["logprobs"])) for t in g.turns],
                )
                for g, a in zip(games, advantages)
            ]
            adapter, stats = learner_grpo.update(
                params, model_config, adapter, batch, optimizer, step, hyperparameters=hp, estimator=estimator
            )
            curves["rollout/reward/mean"][step] = float(rewards.mean())
            curves["rollout/solve_rate"][step] = float(np.mean([g.solved for g in games]))
            curves["rollout/tokens_per_game"][step] = float(
                np.mean([sum(len(t["tokens"]) for t in g.turns) for g in games])
            )
            curves["rollout/raw_text_share"][step] = raw_text_share(games)
            curves["rollout/no_play_share"][step] = float(np.mean([not g.game.policy_guesses for g in games]))
            curves["learner/update/grad_norm"][step] = stats.grad_norm
            curves["learner/update/clipped_share"][step] = stats.clipped_tokens / max(stats.sampled_tokens, 1)
            curves["timing_s/step"][step] = time.monotonic() - t0
            if checkpoints is not None and step in checkpoints:
                checkpoints[step] = copy.deepcopy(adapter)
            if val_every is not None and (step % val_every == 0 or step == total):
                validate(step)
            if on_step is not None:
                on_step(step, total, curves)
                continue
            print(
                f"  step {step}/{total}: reward {rewards.mean():+.3f}, solved {curves['rollout/solve_rate'][step]:.3f}"
                + (
                    f", val T=0 {curves['val/reward/pass_at_1'][step]:.3f}"
                    if step in curves["val/reward/pass_at_1"]
                    else ""
                ),
                flush=True,
            )
    return adapter, curves, time.monotonic() - started


def step_advantages(rewards: np.ndarray, group_size: int, estimator: Estimator = GRPO) -> np.ndarray:
    """Each game's advantage within its group (a step's rewards hold its groups one after another);
    the estimator decides whether the centred rewards are divided by the group's std."""
    groups = len(rewards) // group_size
    return np.concatenate(
        [
            group_advantages(rewards[i * group_size : (i + 1) * group_size], scale_by_std=estimator.scale_by_std)
            for i in range(groups)
        ]
    )


def raw_text_share(games) -> float:
    """Share of the policy's guesses that were recovered from raw text rather than a tool call."""
    from wordle_agent.game import RAW_TEXT

    events = [e for g in games for e in g.game.events if e.kind != "prior"]
    if not events:
        return 0.0
    return float(np.mean([any(reason == RAW_TEXT for reason, _ in e.reasons) for e in events]))


def summarize(seeds: dict) -> dict:
    """Across seeds, per setting: mean base, mean trained, mean gain and its standard error."""
    summary = {}
    for name, _, _ in SETTINGS:
        gains = np.array([row[name]["gain"] for row in seeds.values()])
        bases = np.array([row[name]["base"]["solve_rate"] for row in seeds.values()])
        trained = np.array([row[name]["trained"]["solve_rate"] for row in seeds.values()])
        se = float(gains.std(ddof=1) / np.sqrt(len(gains))) if len(gains) > 1 else float("nan")
        summary[name] = {
            "base_mean": float(bases.mean()),
            "trained_mean": float(trained.mean()),
            "gain_mean": float(gains.mean()),
            "gain_se_over_seeds": se,
            "gains": [float(g) for g in gains],
        }
        print(
            f"{name}: base {bases.mean():.3f}, trained {trained.mean():.3f}, gain {gains.mean():+.3f} ± {se:.3f} (SE over seeds)"
        )
    return summary


def git_commit() -> str:
    """HEAD, marked when the work tree differs from it (a result's provenance)."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return (git("rev-parse", "HEAD") or "unknown") + (" +uncommitted changes" if git("status", "--porcelain") else "")


def merge_runs(parts: list[Path], keys: tuple[str, ...], script: str, *, table: str = "seeds", depth: int = 1) -> dict:
    """One-seed results files of the same command (run side by side) as one: `keys` must agree;
    the provenance fields become lists, one entry per file, and the seeds are merged.

    `table` names the merged field; with `depth=2` it is a table of tables (arm -> seed -> row),
    merged at the second level, and an entry found in two files is refused."""
    runs = [json.loads(p.read_text()) for p in parts]
    for run in runs[1:]:
        differing = [k for k in keys if run.get(k) != runs[0].get(k)]
        if differing:
            raise SystemExit(f"cannot combine: the runs differ in {', '.join(differing)}")
    combined: dict = {k: runs[0].get(k) for k in keys}
    for field in ("command", "git_commit", "started"):
        combined[field] = [r[field] for r in runs]
    combined["note"] = (
        "one process per file (a file's seeds run in sequence), run side by side on a shared two-core "
        f"machine, combined with `python {script} --combine <files> --out <file>`"
    )
    if depth == 1:
        combined[table] = {k: v for r in runs for k, v in r[table].items()}
        return combined
    merged: dict[str, dict] = {}
    for run in runs:
        for outer, inner in run[table].items():
            for k, v in inner.items():
                if k in merged.setdefault(outer, {}):
                    raise SystemExit(f"cannot combine: {table} {outer}/{k} is in more than one file")
                merged[outer][k] = v
    combined[table] = merged
    return combined


def combine(parts: list[Path], out: Path) -> int:
    """One results file from several one-seed files of the same command (run side by side)."""
    keys = ("base_id", "eval_path", "trainer", "eval_seeds", "overrides", "reward", "lr_scale")
    combined = merge_runs(parts, keys, "experiments/learner_grpo.py")
    combined["summary"] = summarize(combined["seeds"])
    out.write_text(json.dumps(combined, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--eval-path", choices=("agent", "batch"), default="agent")
    ap.add_argument("--learning-rate", type=float, default=None, help="override the run's learning_rate")
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--max-epochs", type=int, default=None, help="passes over the 640 training prompts (20 steps each)")
    ap.add_argument("--reward", choices=DESIGNS, default=TIERED)
    ap.add_argument(
        "--trainer",
        choices=("runner", "batch"),
        default="runner",
        help="runner: the local service's runner and the real agent; batch: the same GRPO on the batched player",
    )
    ap.add_argument("--eval-seeds", type=int, default=1, help="evaluation seeds per setting (128 games each)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS, help="where to write the results")
    ap.add_argument("--combine", type=Path, nargs="+", help="merge one-seed results files into --out, then stop")
    args = ap.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out)
    overrides = {}
    if args.learning_rate is not None:
        overrides["learning_rate"] = args.learning_rate
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    if args.max_epochs is not None:
        overrides["max_epochs"] = args.max_epochs
    tasks = failure_experiments.rows("validation")
    evaluate = eval_agent if args.eval_path == "agent" else eval_batch
    _, _, base_id = load_base()
    out: dict = {
        "command": "python experiments/learner_grpo.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git_commit": git_commit(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lr_scale": LR_SCALE,
        "base_id": base_id,
        "eval_path": args.eval_path,
        "trainer": args.trainer,
        "eval_seeds": args.eval_seeds,
        "overrides": overrides,
        "reward": args.reward,
        "seeds": {},
    }
    for seed in args.seeds:
        if args.trainer == "batch":
            adapter, curves, seconds = train_batch(seed, overrides, args.reward)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                path, curves, seconds = train_one(seed, Path(tmp), overrides, args.reward)
                adapter = weights.load_adapter(path, base_id)
        print(
            f"seed {seed}: trained in {seconds:.0f} s; val pass@1 by step {curves['val/reward/pass_at_1']}", flush=True
        )
        row: dict = {
            "train_seconds": seconds,
            "curves": {k: {str(s): v for s, v in c.items()} for k, c in curves.items()},
        }
        for name, temperature, effort in SETTINGS:
            started = time.monotonic()
            seeds = [1000 + seed + 100 * k for k in range(args.eval_seeds)]
            if args.eval_seeds == 1:
                base = evaluate(None, tasks, temperature=temperature, effort=effort, seed=seeds[0])
                trained = evaluate(adapter, tasks, temperature=temperature, effort=effort, seed=seeds[0])
            else:
                base = evaluate_seeds(evaluate, None, tasks, temperature=temperature, effort=effort, seeds=seeds)
                trained = evaluate_seeds(evaluate, adapter, tasks, temperature=temperature, effort=effort, seeds=seeds)
            row[name] = {
                "base": base,
                "trained": trained,
                "gain": trained["solve_rate"] - base["solve_rate"],
                "seconds": time.monotonic() - started,
            }
            print(
                f"  {name}: base {base['solve_rate']:.3f} ± {base['standard_error']:.3f} -> trained "
                f"{trained['solve_rate']:.3f} ± {trained['standard_error']:.3f}",
                flush=True,
            )
        out["seeds"][str(seed)] = row
    summary = summarize(out["seeds"])
    out["summary"] = summary
    if not args.no_write:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
