"""Speed of the offline backend: the fast lane, and the full HTTP path against stock settings.

    python benchmarks/bench_backend.py [--runs 3] [--fast-episodes 256] [--http-episodes 64]
                                     [--concurrency 8] [--stock-episodes 16] [--workers 2]
                                     [--profile-episodes 16] [--profile-only]

Every episode is a real Wordle game played by the stand-in policy (base weights, temperature 1)
through the real rollout handler, game and reward; the paths differ only in transport and in the
agent's model-client settings:

- fast lane: the handler in-process with the Strands custom model provider (`local.fastlane`),
  on one thread, as the local training runner uses it (`rollout_session.FAST_LANE_WORKERS`);
- full HTTP path: the local AgentCore runtime (the real `BedrockAgentCoreApp` of
  `wordle_agent.main`, served by uvicorn on loopback in a process of its own, or `--workers`, as
  AgentCore runs the agent apart from the service) invoked `--concurrency`
  at a time; inside it `sagemaker_rft_handler` and `wrap_model` around the agent's own
  OpenAIModel (one shared SSL context for every request), talking to the Job Runtime emulator
  (in this process) over loopback HTTP with bearer tokens;
- stock settings: the same runtime, app, handler and transport with a stock `OpenAIModel` (new
  client and SSL context per request, as Strands builds it by default; the child serves
  `bench_backend:stock_app`, see `stock_factory`), invoked `--concurrency` at a time too: the
  comparison that counts, like with like. Also run one at a time (`--stock-episodes`), the setup
  the SDK reference measured at about 2.2 episodes per second on its two cores, for reference: a
  ratio against it mixes in concurrency;
- for information, the full HTTP path with the app in this process (thread mode, what the
  notebooks use): one interpreter lock for agent, emulator and policy.

Each run measures them side by side (the two compared paths in alternating order). Printed: per
path the medians over the runs of whole-run throughput (episodes, model calls and game guesses per
second of wall-clock time) and of CPU per episode (this process plus the runtime's processes);
the target ratio is the median of the runs' side-by-side ratios; the CPU-per-episode ratio beside
it hardly depends on what else the machine runs (the machine's load average is printed too).
Then a profile of one rollout at a time on each path (`stack_profile.py`: where the CPU goes, by
component). Targets (ARCHITECTURE.md §4): fast lane at least 40 episodes/s; full HTTP path at
least 3x the stock settings at the same concurrency.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_RUNS = 3
DEFAULT_FAST_EPISODES = 256
DEFAULT_HTTP_EPISODES = 64
DEFAULT_STOCK_EPISODES = 16
DEFAULT_CONCURRENCY = 8
DEFAULT_PROFILE_EPISODES = 16
CHILD_START_TIMEOUT_S = 120.0
# App processes per runtime, the same for both paths (like with like): two, one per core, as
# AgentCore serves concurrent sessions in parallel, not behind one interpreter lock. With one
# process the full HTTP path could not use the second core (8 concurrent rollouts queued on the
# app's GIL: 16 episodes/s using 1.2 of 2 cores) while the stock settings kept both busy, so the
# wall-clock ratio measured the lock, not the settings. Measured side by side on 2 cores: one
# process 2.4x wall, 3.9x CPU per episode; two processes 3.25x wall, 3.6x CPU (load 2 to 3.6).
DEFAULT_WORKERS = 2
TEMPERATURE = 1.0
SEED = 7
TARGET_FAST_EPISODES_PER_S = 40.0
TARGET_HTTP_RATIO = 3.0
ACCOUNT = "123456789012"  # moto's: the offline backend's account
REGION = "us-east-1"
SESSION_ID_MIN = 33


@dataclass(frozen=True)
class Measure:
    """One path's whole-run throughput in one run."""

    episodes: int
    seconds: float
    model_calls: int
    guesses: int
    cpu_s: float = float("nan")  # CPU of this process and the runtime's processes over the run

    @property
    def cpu_ms_per_episode(self) -> float:
        return 1000 * self.cpu_s / self.episodes

    @property
    def episodes_per_s(self) -> float:
        return self.episodes / self.seconds

    @property
    def calls_per_s(self) -> float:
        return self.model_calls / self.seconds

    @property
    def guesses_per_s(self) -> float:
        return self.guesses / self.seconds


def _prompts() -> list[str]:
    from mtrl_course import config

    lines = config.VALIDATION_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["prompt"] for line in lines if line.strip()]


def _job_arn(label: str) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:job/AgentRFT/bench-{label}-{uuid.uuid4().hex[:8]}"


def _count(emulator, arn: str, expected: int) -> tuple[int, int]:
    """(model calls, guesses) of a job's trajectories; fails unless each got exactly one reward."""
    records = emulator.trajectories(arn)
    rewarded = [r for r in records if r.rewards is not None and len(r.rewards) == 1]
    if len(records) != expected or len(rewarded) != expected:
        raise RuntimeError(
            f"{arn}: {len(rewarded)} of {expected} episodes reported exactly one reward ({len(records)} trajectories)"
        )
    calls = sum(r.sample_count for r in records)
    guesses = sum(
        1
        for r in records
        for s in r.samples
        if isinstance(s.policy_trace, dict) and s.policy_trace.get("kind") == "guess"
    )
    return calls, guesses


def _emulator():
    from mtrl_course.local import runner

    return runner.job_runtime()


def fast_lane(emulator, prompts: list[str], episodes: int, run: int) -> Measure:
    from mtrl_course.local import fastlane
    from mtrl_course.local.stand_in_policy import StandInPolicy
    from mtrl_course.local.rollout_session import FAST_LANE_WORKERS  # as the training runner plays

    arn = _job_arn("fast")
    emulator.register_job(arn, StandInPolicy(seed=SEED))
    tids = [f"fast-{run}-{i:05d}" for i in range(episodes)]
    for i, tid in enumerate(tids):
        emulator.start_trajectory(arn, tid, rng_key=[SEED, 0, run, i, 0, 0])

    def play(i: int) -> None:
        episode = fastlane.play_episode(emulator, arn, tids[i], prompts[i % len(prompts)], temperature=TEMPERATURE)
        if episode.reported != "ready":
            raise RuntimeError(f"fast-lane episode {tids[i]} reported {episode.reported}: {episode.error}")

    cpu = time.process_time()
    started = time.perf_counter()
    with fastlane.installed(), ThreadPoolExecutor(FAST_LANE_WORKERS) as pool:
        list(pool.map(play, range(episodes)))
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    calls, guesses = _count(emulator, arn, episodes)
    emulator.close_job(arn)
    return Measure(episodes, seconds, calls, guesses, cpu)


def _group_cpu_s(runtime) -> float:
    """CPU seconds used so far by this process and, in subprocess mode, the runtime's processes.

    Measured alongside the wall clock because it hardly depends on what else the machine runs:
    the ratio of CPU per episode stays put when other work slows both paths' throughput.
    """
    total = time.process_time()
    process = getattr(runtime, "_process", None)
    if process is None:
        return total
    ticks = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # The runtime's process, and its workers (the runtime is a process group of its own).
        if int(fields[2]) == process.pid or (stat.parent.name == str(process.pid)):
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def over_http(runtime, emulator, prompts: list[str], episodes: int, concurrency: int, run: int, label: str) -> Measure:
    from mtrl_course.local import fastlane
    from mtrl_course.local.stand_in_policy import StandInPolicy

    arn = _job_arn(label)
    emulator.register_job(arn, StandInPolicy(seed=SEED))
    tids = [f"{label}-{run}-{i:05d}" for i in range(episodes)]
    for i, tid in enumerate(tids):
        emulator.start_trajectory(arn, tid, rng_key=[SEED, 0, run, i, 0, 0])

    def invoke(i: int) -> None:
        payload = fastlane.payload_for(
            prompts[i % len(prompts)], arn, tids[i], temperature=TEMPERATURE, top_p=None, max_tokens=None
        )
        payload["metadata"].update(endpoint=emulator.endpoint, region=REGION)
        session_id = f"{tids[i]}-{uuid.uuid4().hex}"
        assert len(session_id) >= SESSION_ID_MIN
        status, _, body = runtime.invoke_http(json.dumps(payload).encode(), session_id)
        if status != 200 or "reward" not in json.loads(body):
            raise RuntimeError(f"invocation {tids[i]} answered {status}: {body[:200]!r}")

    cpu = _group_cpu_s(runtime)
    started = time.perf_counter()
    if concurrency == 1:
        for i in range(episodes):
            invoke(i)
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(invoke, range(episodes)))
    seconds = time.perf_counter() - started
    cpu = _group_cpu_s(runtime) - cpu
    calls, guesses = _count(emulator, arn, episodes)
    emulator.close_job(arn)
    return Measure(episodes, seconds, calls, guesses, cpu)


def stock_factory(endpoint: str, params: dict) -> Any:
    """The policy model as the SDK's documentation builds it: a stock OpenAIModel inside wrap_model.

    Unlike the agent's own `SharedSSLOpenAIModel`, every model call builds a new AsyncOpenAI, HTTP
    client and SSL context (Strands' default).
    """
    from sagemaker.train.rft.adapters.strands import wrap_model
    from strands.models.openai import OpenAIModel

    from wordle_agent import rollout
    from wordle_agent.auth import TOKENS, default_region

    return wrap_model(
        OpenAIModel(
            model_id=rollout.POLICY_MODEL_ID,
            client_args={
                "base_url": endpoint.rstrip("/") + rollout.OPENAI_API_PATH,
                "api_key": TOKENS.get(default_region()),
            },
            params=dict(params),
        )
    )


STOCK_APP = "stock_app"
_stock_app: Any = None


def __getattr__(name: str) -> Any:
    """`bench_backend:stock_app` (what the stock runtime's child process serves): the agent's app as
    `wordle_agent.main.build_app` builds it, handed `stock_factory`. Only the child asks for it."""
    global _stock_app
    if name != STOCK_APP:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from wordle_agent.main import build_app

    if _stock_app is None:
        _stock_app = build_app(stock_factory)
    return _stock_app


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Child processes started inside inherit `path` as their stderr (their log lines go there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _process_runtime(app_import: str, name: str, env: dict[str, str], log: Path, workers: int = 1):
    """The agent app served in its own process (uvicorn), registered with the offline backend.

    The agent logs a line now and then (a guess recovered from raw text, say); the child's
    stderr goes to `log`, which is printed if the runtime fails to start.
    """
    from mtrl_course.local.agent_server import LocalAgentRuntime

    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    # A child imports the agent (about 10 s); on a loaded machine more than AgentCore's 30 s.
    extra = {"workers": workers} if workers != 1 else {}  # (older runtimes had one process only)
    runtime = LocalAgentRuntime(
        app_import,
        name=name,
        mode="subprocess",
        env={**env, "PYTHONPATH": path},
        init_timeout=CHILD_START_TIMEOUT_S,
        **extra,
    )
    try:
        with _stderr_to(log):
            return runtime.start()
    except RuntimeError:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise


def profile_paths(runtime, emulator, prompts: list[str], episodes: int) -> list[str]:
    """One rollout at a time through an app in this process, sampled: ours (`runtime`), then stock
    settings (a second thread-mode runtime serving `main.build_app(stock_factory)`)."""
    from stack_profile import Sampler

    from mtrl_course.local.agent_server import LocalAgentRuntime
    from wordle_agent.main import build_app

    stock = LocalAgentRuntime(name="BenchStockInProcess", env=runtime.env, app=build_app(stock_factory)).start()
    lines = []
    try:
        for label, served in (("full HTTP path", runtime), ("stock settings", stock)):
            with Sampler() as sampler:
                over_http(served, emulator, prompts, episodes, 1, 0, f"profile-{label.split()[0]}")
            lines += sampler.profile(episodes).summary(f"{label}, one rollout at a time, app in this process")
            if os.environ.get("BENCH_PROFILE_DETAIL"):
                lines += sampler.profile(episodes).details()
    finally:
        stock.close()
    return lines


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _row(name: str, measures: list[Measure], note: str = "") -> str:
    eps = _median([m.episodes_per_s for m in measures])
    calls = _median([m.calls_per_s for m in measures])
    guesses = _median([m.guesses_per_s for m in measures])
    cpu = _median([m.cpu_ms_per_episode for m in measures])
    per_run = ", ".join(f"{m.episodes_per_s:.1f}" for m in measures)
    return f"  {name:<38} {eps:>10.1f} {calls:>13.1f} {guesses:>10.1f} {cpu:>15.0f}   runs: {per_run}{note}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--fast-episodes", type=int, default=DEFAULT_FAST_EPISODES)
    parser.add_argument("--http-episodes", type=int, default=DEFAULT_HTTP_EPISODES)
    parser.add_argument("--stock-episodes", type=int, default=DEFAULT_STOCK_EPISODES)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--profile-episodes", type=int, default=DEFAULT_PROFILE_EPISODES)
    parser.add_argument("--profile-only", action="store_true", help="skip the throughput runs")
    parser.add_argument(
        "--workers", type=int, default=DEFAULT_WORKERS, help="app processes of each runtime (the same for both paths)"
    )
    args = parser.parse_args(argv)
    for name in (
        "runs",
        "fast_episodes",
        "http_episodes",
        "stock_episodes",
        "concurrency",
        "workers",
        "profile_episodes",
    ):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    from mtrl_course import aws, smoke
    from mtrl_course.curriculum import course_run as course

    course.quiet()
    logging.getLogger("wordle_agent").setLevel(logging.ERROR)  # a raw-text recovery now and then is expected
    with tempfile.TemporaryDirectory(prefix="bench-backend-") as state:
        aws.reset_offline(Path(state))  # nothing of this lands in the course's own offline state
        in_process = smoke.local_runtime()  # thread mode; also serves the emulator and trusts the credentials
        emulator = _emulator()
        env = dict(in_process.env)
        runtimes = [in_process]
        prompts = _prompts()
        fast, http, stock, stock_seq, threaded = [], [], [], [], []
        load_before = load_after = os.getloadavg()
        try:
            log = Path(state) / "runtimes.log"
            if not args.profile_only:
                http_runtime = _process_runtime("wordle_agent.main:app", "BenchAgent", env, log, args.workers)
                runtimes.append(http_runtime)
                stock_runtime = _process_runtime(
                    f"bench_backend:{STOCK_APP}", "BenchStockAgent", env, log, args.workers
                )
                runtimes.append(stock_runtime)
                # A warm-up on each path: imports and first connections are not throughput.
                fast_lane(emulator, prompts, 4, -1)
                for label, runtime in (("warm-http", http_runtime), ("warm-stock", stock_runtime)):
                    over_http(runtime, emulator, prompts, 2, 1, -1, label)
            over_http(in_process, emulator, prompts, 2, 1, -1, "warm-thread")
            load_before = os.getloadavg()
            for run in range(0 if args.profile_only else args.runs):
                fast.append(fast_lane(emulator, prompts, args.fast_episodes, run))
                # Side by side, in alternating order, so a change in the machine's load between
                # the two measurements does not favour one path run after run.
                pair = [("http", http_runtime, http), ("stock", stock_runtime, stock)]
                for label, runtime, into in pair if run % 2 == 0 else pair[::-1]:
                    into.append(over_http(runtime, emulator, prompts, args.http_episodes, args.concurrency, run, label))
                stock_seq.append(over_http(stock_runtime, emulator, prompts, args.stock_episodes, 1, run, "stockseq"))
                threaded.append(
                    over_http(in_process, emulator, prompts, args.http_episodes, args.concurrency, run, "thread")
                )
                print(
                    f"run {run + 1}/{args.runs}: fast {fast[-1].episodes_per_s:.1f}, http {http[-1].episodes_per_s:.1f}, "
                    f"stock {stock[-1].episodes_per_s:.1f} ({http[-1].episodes_per_s / stock[-1].episodes_per_s:.2f}x), "
                    f"stock sequential {stock_seq[-1].episodes_per_s:.1f}, http in-process {threaded[-1].episodes_per_s:.1f} "
                    f"episodes/s; load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
            load_after = os.getloadavg()
            profile = profile_paths(in_process, emulator, prompts, args.profile_episodes)
        finally:
            for runtime in runtimes:
                runtime.close()
            aws.reset_offline(Path(state))
    print()
    print("Where the time goes (stack samples of every thread; see stack_profile.py)")
    for line in profile:
        print("  " + line)
    if args.profile_only:
        return 0

    def eps(measures: list[Measure]) -> float:
        return _median([m.episodes_per_s for m in measures])

    fast_eps = eps(fast)
    per_run = [h.episodes_per_s / s.episodes_per_s for h, s in zip(http, stock)]
    ratio = _median(per_run)
    cpu_ratio = _median([s.cpu_ms_per_episode / h.cpu_ms_per_episode for h, s in zip(http, stock)])
    print()
    print(
        f"Offline backend, stand-in policy at temperature {TEMPERATURE:g}, medians of {args.runs} runs (wall clock); "
        f"runtimes with {args.workers} app process(es) each"
    )
    print(
        f"  machine load (1-minute average, {os.cpu_count()} cores): {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print(f"  {'path':<38} {'episodes/s':>10} {'model calls/s':>13} {'guesses/s':>10} {'CPU ms/episode':>15}")
    from mtrl_course.local.rollout_session import FAST_LANE_WORKERS

    print(_row(f"fast lane ({FAST_LANE_WORKERS} thread(s))", fast))
    print(_row(f"full HTTP path ({args.concurrency} concurrent)", http))
    print(_row(f"stock settings ({args.concurrency} concurrent)", stock))
    print(_row("stock settings (sequential)", stock_seq))
    print(_row("full HTTP path, app in this process", threaded, "  (information)"))
    print()
    fast_ok = fast_eps >= TARGET_FAST_EPISODES_PER_S
    ratio_ok = ratio >= TARGET_HTTP_RATIO
    print(
        f"  fast lane: {fast_eps:.1f} episodes/s (target >= {TARGET_FAST_EPISODES_PER_S:g}): {'OK' if fast_ok else 'BELOW TARGET'}"
    )
    print(
        f"  full HTTP path / stock settings, both {args.concurrency} concurrent: {ratio:.2f}x, median of the runs' "
        f"side-by-side ratios ({', '.join(f'{r:.2f}' for r in per_run)}; ratio of the medians {eps(http) / eps(stock):.2f}x) "
        f"(target >= {TARGET_HTTP_RATIO:g}x): {'OK' if ratio_ok else 'BELOW TARGET'}"
    )
    print(f"  the same in CPU per episode (hardly moved by other load): {cpu_ratio:.2f}x")
    print(
        f"  for reference, against stock settings run one at a time (mixes in concurrency): {eps(http) / eps(stock_seq):.2f}x"
    )
    return 0 if fast_ok and ratio_ok else 1


if __name__ == "__main__":
    sys.exit(main())
