"""Transport under load and restarts, with the real Wordle agent: the figures for issue 12.

    python benchmarks/stress_transport.py [--bursts 5] [--concurrency 96 256] [--restart-in-flight 48]
                                          [--mode subprocess] [--invoke-timeout 120]

For each concurrency, `--bursts` bursts of that many rollouts at once through the local AgentCore
runtime (the real `BedrockAgentCoreApp` of `wordle_agent.main`, the real handler, `wrap_model`,
OpenAIModel, the Job Runtime emulator and the stand-in policy over loopback), then one burst in
which the runtime is restarted once `--restart-in-flight` invocations are in flight. Per burst it
prints: rollouts answered, failed (and why), lost (no trajectory), duplicated (a trajectory
rewarded twice is impossible by the emulator's rules, so: more than one trajectory per rollout),
hung (no answer within the invoke timeout), and the slowest answer.

For the restart burst it also checks the rule: a caller told "failed" has no reward recorded,
unless its error message says the agent had already reported one.

Everything listens on 127.0.0.1 and stops at the end. On the 2-core course machine one burst of
256 takes about half a minute.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_backend  # (after the path change) its runtime and emulator helpers

TEMPERATURE = 1.0
SEED = 11


def burst(
    runtime, emulator, prompts: list[str], count: int, label: str, invoke_timeout: float, restart_at: int | None = None
) -> dict:
    from mtrl_course.local import fastlane
    from mtrl_course.local.stand_in_policy import StandInPolicy
    from mtrl_course.local.service import ServiceError

    arn = bench_backend._job_arn(label)
    emulator.register_job(arn, StandInPolicy(seed=SEED))
    tids = [f"{label}-{i:04d}" for i in range(count)]
    outcomes: dict[str, tuple[str, str, float]] = {}

    def invoke(i: int) -> None:
        payload = fastlane.payload_for(
            prompts[i % len(prompts)], arn, tids[i], temperature=TEMPERATURE, top_p=None, max_tokens=None
        )
        payload["metadata"].update(endpoint=emulator.endpoint, region=bench_backend.REGION)
        started = time.monotonic()
        try:
            _, _, body = runtime.invoke_http(json.dumps(payload).encode(), f"{tids[i]}-{uuid.uuid4().hex}")
            outcomes[tids[i]] = ("ok", body.decode()[:100], time.monotonic() - started)
        except ServiceError as error:
            outcomes[tids[i]] = (error.code, error.message, time.monotonic() - started)
        except Exception as error:  # anything else is a transport bug: counted, not raised
            outcomes[tids[i]] = (type(error).__name__, str(error)[:200], time.monotonic() - started)

    started = time.monotonic()
    threads = [threading.Thread(target=invoke, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    restart_seconds = None
    in_flight_at_restart = None
    if restart_at is not None:
        # All connected, and the agents busy: at least half have reached the policy. A rollout
        # that finishes first ends the wait (in flight can only fall from then on): waiting for a
        # count that can no longer be reached would restart after the timeout with nothing in flight.
        def waiting() -> bool:
            if time.monotonic() - started >= invoke_timeout or outcomes:
                return False
            busy = sum(1 for r in emulator.trajectories(arn) if r.sample_count)
            return runtime.in_flight < restart_at or busy < restart_at // 2

        while waiting():
            time.sleep(0.01)
        in_flight_at_restart = runtime.in_flight
        restart_started = time.monotonic()
        runtime.restart()
        restart_seconds = time.monotonic() - restart_started
        cut_at = restart_started
    deadline = started + invoke_timeout + 5
    for thread in threads:
        thread.join(max(0.1, deadline - time.monotonic()))
    seconds = time.monotonic() - started
    time.sleep(1.0)  # cut-off agents (thread mode) may still try to report: give them the chance
    records = emulator.trajectories(arn)
    by_tid = Counter(r.trajectory_id for r in records)
    rewarded = {r.trajectory_id: r.rewards for r in records}
    hung = [t for t in tids if t not in outcomes]
    failed = Counter(code for code, _, _ in outcomes.values() if code != "ok")
    told_failed_but_recorded = [
        t
        for t, (code, message, _) in outcomes.items()
        if code != "ok" and rewarded.get(t) is not None and "already reported" not in message
    ]
    ok_without_reward = [t for t, (code, _, _) in outcomes.items() if code == "ok" and rewarded.get(t) is None]
    result = {
        "label": label,
        "rollouts": count,
        "answered_ok": sum(1 for o in outcomes.values() if o[0] == "ok"),
        "failed": dict(failed),
        "lost": sum(1 for t in tids if t not in by_tid),
        "duplicated": sum(1 for n in by_tid.values() if n > 1),
        "hung": len(hung),
        "told_failed_but_reward_recorded": len(told_failed_but_recorded),
        "ok_without_reward": len(ok_without_reward),
        "seconds": round(seconds, 2),
        "slowest_answer_s": round(max((o[2] for o in outcomes.values()), default=0.0), 2),
    }
    if failed:
        result["failure_messages"] = sorted({m[:160] for c, m, _ in outcomes.values() if c != "ok"})[:3]
    if restart_at is not None:
        cut = [t for t, (code, _, _) in outcomes.items() if code != "ok"]
        result["in_flight_at_restart"] = in_flight_at_restart
        result["restart_s"] = round(restart_seconds, 2)
        result["cut_off"] = len(cut)
        result["told_truth_reward_recorded"] = sum(1 for t in cut if "already reported" in outcomes[t][1])
        ends = [o[2] for t, o in outcomes.items() if t in cut]
        result["slowest_cut_answer_after_restart_s"] = (
            round(max(ends, default=0.0) - (cut_at - started), 2) if ends else None
        )
    emulator.close_job(arn)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=int, default=5)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[96, 256])
    parser.add_argument("--restart-in-flight", type=int, default=48)
    parser.add_argument("--mode", choices=("subprocess", "thread"), default="subprocess")
    parser.add_argument("--invoke-timeout", type=float, default=120.0)
    args = parser.parse_args(argv)

    from mtrl_course import aws, smoke
    from mtrl_course.curriculum import course_run

    course_run.quiet()
    logging.getLogger("wordle_agent").setLevel(logging.ERROR)
    results = []
    with tempfile.TemporaryDirectory(prefix="stress-transport-") as state:
        aws.reset_offline(Path(state))
        in_process = smoke.local_runtime()
        emulator = bench_backend._emulator()
        prompts = bench_backend._prompts()
        runtimes = [in_process]
        try:
            if args.mode == "subprocess":
                runtime = bench_backend._process_runtime(
                    "wordle_agent.main:app", "StressAgent", dict(in_process.env), Path(state) / "runtime.log"
                )
                runtimes.append(runtime)
            else:
                runtime = in_process
            runtime.invoke_timeout = args.invoke_timeout
            burst(runtime, emulator, prompts, 4, "warm", args.invoke_timeout)
            for concurrency in args.concurrency:
                for b in range(args.bursts):
                    results.append(
                        burst(runtime, emulator, prompts, concurrency, f"c{concurrency}-b{b}", args.invoke_timeout)
                    )
                    print(json.dumps(results[-1]), flush=True)
            if args.restart_in_flight:
                count = args.restart_in_flight
                results.append(
                    burst(runtime, emulator, prompts, count, "restart", args.invoke_timeout, restart_at=count)
                )
                print(json.dumps(results[-1]), flush=True)
        finally:
            for item in runtimes:
                item.close()
            aws.reset_offline(Path(state))
    bad = problems(results, restart_expected=bool(args.restart_in_flight))
    print(
        f"\n{len(results)} bursts, {sum(r['rollouts'] for r in results)} rollouts: "
        + ("all clean" if not bad else f"{len(bad)} problems:\n  " + "\n  ".join(bad))
    )
    return 1 if bad else 0


def problems(results: list[dict], restart_expected: bool = True) -> list[str]:
    """What is wrong with a run, one line each; empty when every burst is clean.

    A restart burst that cut nothing off measured nothing: it must not pass as clean (it once
    printed "all clean" with 0 in flight at the restart and 0 cut off).
    """
    found = []
    for r in results:
        label = r["label"]
        if r["failed"] and label != "restart":
            found.append(f"{label}: {sum(r['failed'].values())} failed {r['failed']}")
        for key in ("lost", "duplicated", "hung", "told_failed_but_reward_recorded", "ok_without_reward"):
            if r[key]:
                found.append(f"{label}: {r[key]} {key.replace('_', ' ')}")
        if label == "restart" and not (r.get("in_flight_at_restart") and r.get("cut_off")):
            found.append(
                f"restart: nothing measured ({r.get('in_flight_at_restart')} in flight at the restart, "
                f"{r.get('cut_off')} cut off)"
            )
    if restart_expected and not any(r["label"] == "restart" for r in results):
        found.append("restart: no restart burst ran")
    return found


if __name__ == "__main__":
    sys.exit(main())
