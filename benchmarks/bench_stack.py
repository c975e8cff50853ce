"""Speed of the offline stack: the fast lane, and the full HTTP path against stock settings.

    python benchmarks/bench_stack.py [--runs 3] [--fast-episodes 256] [--http-episodes 64]
                                     [--concurrency 8] [--stock-episodes 16]

Every episode is a real Wordle game played by the stand-in policy (base weights, temperature 1)
through the real rollout handler, game and reward; the three paths differ only in transport:

- fast lane: the handler in-process with the Strands custom model provider (`local.fastlane`),
  two worker threads, as the local training runner uses it;
- full HTTP path: the local AgentCore runtime (the real `BedrockAgentCoreApp` of
  `wordle_agent.main`, served by uvicorn on loopback in its own process, as AgentCore runs it
  apart from the service) invoked `--concurrency` at a time; inside it `sagemaker_rft_handler`
  and `wrap_model` around the agent's own OpenAIModel (one shared SSL context for every
  request), talking to the Job Runtime emulator (in this process) over loopback HTTP with
  bearer tokens;
- stock settings: the same app, handler and transport in its own process, with a stock
  `OpenAIModel` (new client and SSL context per request, as Strands builds it by default; the
  child serves `bench_stack:stock_app`, see `stock_factory`), invoked one at a time: the setup
  the SDK reference measured at about 2.2 episodes per second on its two cores;
- for information, the full HTTP path with the app in this process (thread mode, what the
  notebooks use): one interpreter lock for agent, emulator and policy.

Each run measures all four, side by side in the same process; the figures printed are medians
over the runs of each run's whole-run throughput (episodes, model calls and game guesses per
second of wall-clock time), and the ratio of the two HTTP medians. Targets (ARCHITECTURE.md §4):
fast lane at least 40 episodes/s; full HTTP path at least 3x the stock settings.
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
FAST_LANE_WORKERS = 2  # as the training runner's fast lane (more threads only contend for the GIL)
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
        raise RuntimeError(f"{arn}: {len(rewarded)} of {expected} episodes reported exactly one reward ({len(records)} trajectories)")
    calls = sum(r.sample_count for r in records)
    guesses = sum(1 for r in records for s in r.samples if isinstance(s.policy_trace, dict) and s.policy_trace.get("kind") == "guess")
    return calls, guesses


def _emulator():
    from mtrl_course.local import runner

    return runner.job_runtime()


def fast_lane(emulator, prompts: list[str], episodes: int, run: int) -> Measure:
    from mtrl_course.local import fastlane
    from mtrl_course.local.policy import StandInPolicy

    arn = _job_arn("fast")
    emulator.register_job(arn, StandInPolicy(seed=SEED))
    tids = [f"fast-{run}-{i:05d}" for i in range(episodes)]
    for i, tid in enumerate(tids):
        emulator.start_trajectory(arn, tid, rng_key=[SEED, 0, run, i, 0, 0])

    def play(i: int) -> None:
        episode = fastlane.play_episode(emulator, arn, tids[i], prompts[i % len(prompts)], temperature=TEMPERATURE)
        if episode.reported != "ready":
            raise RuntimeError(f"fast-lane episode {tids[i]} reported {episode.reported}: {episode.error}")

    started = time.perf_counter()
    with fastlane.installed(), ThreadPoolExecutor(FAST_LANE_WORKERS) as pool:
        list(pool.map(play, range(episodes)))
    seconds = time.perf_counter() - started
    calls, guesses = _count(emulator, arn, episodes)
    emulator.close_job(arn)
    return Measure(episodes, seconds, calls, guesses)


def over_http(runtime, emulator, prompts: list[str], episodes: int, concurrency: int, run: int, label: str) -> Measure:
    from mtrl_course.local import fastlane
    from mtrl_course.local.policy import StandInPolicy

    arn = _job_arn(label)
    emulator.register_job(arn, StandInPolicy(seed=SEED))
    tids = [f"{label}-{run}-{i:05d}" for i in range(episodes)]
    for i, tid in enumerate(tids):
        emulator.start_trajectory(arn, tid, rng_key=[SEED, 0, run, i, 0, 0])

    def invoke(i: int) -> None:
        payload = fastlane.payload_for(prompts[i % len(prompts)], arn, tids[i], temperature=TEMPERATURE, top_p=None, max_tokens=None)
        payload["metadata"].update(endpoint=emulator.endpoint, region=REGION)
        session_id = f"{tids[i]}-{uuid.uuid4().hex}"
        assert len(session_id) >= SESSION_ID_MIN
        status, _, body = runtime.invoke_http(json.dumps(payload).encode(), session_id)
        if status != 200 or "reward" not in json.loads(body):
            raise RuntimeError(f"invocation {tids[i]} answered {status}: {body[:200]!r}")

    started = time.perf_counter()
    if concurrency == 1:
        for i in range(episodes):
            invoke(i)
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(invoke, range(episodes)))
    seconds = time.perf_counter() - started
    calls, guesses = _count(emulator, arn, episodes)
    emulator.close_job(arn)
    return Measure(episodes, seconds, calls, guesses)


def stock_factory(endpoint: str, params: dict) -> Any:
    """The policy model as the SDK's documentation builds it: a stock OpenAIModel inside wrap_model.

    Unlike the agent's own `SharedSSLOpenAIModel`, every model call builds a new AsyncOpenAI, HTTP
    client and SSL context (Strands' default).
    """
    from sagemaker.train.rft.adapters.strands import wrap_model
    from strands.models.openai import OpenAIModel

    from wordle_agent import rollout
    from wordle_agent.auth import TOKENS, default_region

    return wrap_model(OpenAIModel(
        model_id=rollout.POLICY_MODEL_ID,
        client_args={"base_url": endpoint.rstrip("/") + rollout.OPENAI_API_PATH, "api_key": TOKENS.get(default_region())},
        params=dict(params),
    ))


STOCK_APP = "stock_app"
_stock_block: Any = None


def __getattr__(name: str) -> Any:
    """`bench_stack:stock_app` (what the stock runtime's child process serves): the agent's app, with
    `stock_factory` installed for the life of that process. Only the child asks for it."""
    global _stock_block
    if name != STOCK_APP:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from wordle_agent import rollout
    from wordle_agent.main import app

    if _stock_block is None:
        # Kept in a global: a context manager that is garbage-collected closes its generator,
        # whose `finally` would put the agent's own factory back.
        _stock_block = rollout.use_model_factory(stock_factory)
        _stock_block.__enter__()
    return app


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


def _process_runtime(app_import: str, name: str, env: dict[str, str], log: Path):
    """The agent app served in its own process (uvicorn), registered with the offline backend.

    The agent logs a line now and then (a guess recovered from raw text, say); the child's
    stderr goes to `log`, which is printed if the runtime fails to start.
    """
    from mtrl_course.local.runtime import LocalAgentRuntime

    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    runtime = LocalAgentRuntime(app_import, name=name, mode="subprocess", env={**env, "PYTHONPATH": path})
    try:
        with _stderr_to(log):
            return runtime.start()
    except RuntimeError:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _row(name: str, measures: list[Measure], note: str = "") -> str:
    eps = _median([m.episodes_per_s for m in measures])
    calls = _median([m.calls_per_s for m in measures])
    guesses = _median([m.guesses_per_s for m in measures])
    per_run = ", ".join(f"{m.episodes_per_s:.1f}" for m in measures)
    return f"  {name:<34} {eps:>9.1f} {calls:>12.1f} {guesses:>10.1f}   runs: {per_run}{note}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--fast-episodes", type=int, default=DEFAULT_FAST_EPISODES)
    parser.add_argument("--http-episodes", type=int, default=DEFAULT_HTTP_EPISODES)
    parser.add_argument("--stock-episodes", type=int, default=DEFAULT_STOCK_EPISODES)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    args = parser.parse_args(argv)
    for name in ("runs", "fast_episodes", "http_episodes", "stock_episodes", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    from mtrl_course import aws, course, smoke

    course.quiet()
    logging.getLogger("wordle_agent").setLevel(logging.ERROR)  # a raw-text recovery now and then is expected
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as state:
        aws.reset_offline(Path(state))  # nothing of this lands in the course's own offline state
        in_process = smoke.local_runtime()  # thread mode; also serves the emulator and trusts the credentials
        emulator = _emulator()
        env = dict(in_process.env)
        runtimes = [in_process]
        prompts = _prompts()
        fast, http, stock, stock_seq, threaded = [], [], [], [], []
        try:
            log = Path(state) / "runtimes.log"
            http_runtime = _process_runtime("wordle_agent.main:app", "BenchAgent", env, log)
            runtimes.append(http_runtime)
            stock_runtime = _process_runtime(f"bench_stack:{STOCK_APP}", "BenchStockAgent", env, log)
            runtimes.append(stock_runtime)
            # A warm-up on each path: imports and first connections are not throughput.
            fast_lane(emulator, prompts, 4, -1)
            for label, runtime in (("warm-http", http_runtime), ("warm-stock", stock_runtime), ("warm-thread", in_process)):
                over_http(runtime, emulator, prompts, 2, 1, -1, label)
            for run in range(args.runs):
                fast.append(fast_lane(emulator, prompts, args.fast_episodes, run))
                http.append(over_http(http_runtime, emulator, prompts, args.http_episodes, args.concurrency, run, "http"))
                stock.append(over_http(stock_runtime, emulator, prompts, args.http_episodes, args.concurrency, run, "stock"))
                stock_seq.append(over_http(stock_runtime, emulator, prompts, args.stock_episodes, 1, run, "stockseq"))
                threaded.append(over_http(in_process, emulator, prompts, args.http_episodes, args.concurrency, run, "thread"))
                print(f"run {run + 1}/{args.runs}: fast {fast[-1].episodes_per_s:.1f}, http {http[-1].episodes_per_s:.1f}, "
                      f"stock {stock[-1].episodes_per_s:.1f}, http in-process {threaded[-1].episodes_per_s:.1f} episodes/s",
                      flush=True)
        finally:
            for runtime in runtimes:
                runtime.close()
            aws.reset_offline(Path(state))

    fast_eps = _median([m.episodes_per_s for m in fast])
    ratio = _median([m.episodes_per_s for m in http]) / _median([m.episodes_per_s for m in stock])
    print()
    print(f"Offline stack, stand-in policy at temperature {TEMPERATURE:g}, medians of {args.runs} runs (wall clock)")
    print(f"  {'path':<34} {'episodes/s':>9} {'model calls/s':>12} {'guesses/s':>10}")
    print(_row(f"fast lane ({FAST_LANE_WORKERS} threads)", fast))
    print(_row(f"full HTTP path ({args.concurrency} concurrent)", http))
    print(_row(f"stock settings ({args.concurrency} concurrent)", stock))
    print(_row("stock settings (sequential)", stock_seq))
    print(f"  ratio vs sequential stock: {_median([m.episodes_per_s for m in http]) / _median([m.episodes_per_s for m in stock_seq]):.2f}x")
    print(_row("full HTTP path, app in this process", threaded, "  (information)"))
    print()
    fast_ok = fast_eps >= TARGET_FAST_EPISODES_PER_S
    ratio_ok = ratio >= TARGET_HTTP_RATIO
    print(f"  fast lane: {fast_eps:.1f} episodes/s (target >= {TARGET_FAST_EPISODES_PER_S:g}): {'OK' if fast_ok else 'BELOW TARGET'}")
    print(f"  full HTTP path / stock settings: {ratio:.2f}x (target >= {TARGET_HTTP_RATIO:g}x): {'OK' if ratio_ok else 'BELOW TARGET'}")
    return 0 if fast_ok and ratio_ok else 1


if __name__ == "__main__":
    sys.exit(main())
