"""How long the sandbox takes per submission, fresh and cached, and what isolation costs.

    python experiments/bench_sandbox.py

Prints medians over a few runs; no assertion (the machine is shared, so timings are context,
not a test).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent_src"))

from coding_agent import sandbox, tasks  # noqa: E402

RUNS = 15


def median_seconds(fn) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    task = tasks.all_tasks()[0]
    layers = sandbox.isolation()
    counter = iter(range(10**9))

    def fresh() -> None:  # a new comment makes a new cache key, so the code really runs
        verdict = sandbox.run_tests(task.reference + f"# {next(counter)}\n", task.entry_point, task.tests)
        assert verdict.correctness == 1.0, verdict

    def cached() -> None:
        sandbox.run_tests(task.reference, task.entry_point, task.tests)

    cached()
    fresh_s, cached_s = median_seconds(fresh), median_seconds(cached)
    print("sandbox isolation:", layers.summary())
    print(
        f"sandbox fresh submission: median {fresh_s * 1000:.0f} ms; cached: median {cached_s * 1e6:.0f} us; "
        f"ratio {fresh_s / cached_s:.0f}x"
    )
    if sandbox._jailed(layers):
        # What the jail costs: the same submissions without it (rlimits, uid and group kill only).
        real = sandbox._jailed
        sandbox._jailed = lambda layers: False  # type: ignore[assignment]
        try:
            plain_s = median_seconds(fresh)
        finally:
            sandbox._jailed = real  # type: ignore[assignment]
        print(
            f"sandbox without the jail (no namespaces, no root of its own): median {plain_s * 1000:.0f} ms; "
            f"the jail adds {(fresh_s - plain_s) * 1000:.0f} ms per fresh submission"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
