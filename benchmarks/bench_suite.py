"""How long the test suite takes, against the suite issue 7 measured.

    python benchmarks/bench_suite.py [--baseline 20dfe1e] [--old] [--all] [--repeats 1]

Issue 7 measured `make test` at 7 min 46 s on 2 cores at BASELINE, the last commit of the first
stage, and asked for half of that (at most 4 minutes). The suite has grown since: later stages added test files,
notebooks 09-11 and the one-seed re-runs of the stored experiments. So this script times the
same scope on both sides:

- **now, baseline scope**: this tree's pytest, run as `make test` runs it (workers, loadgroup),
  on the test files and notebooks that existed at BASELINE. The files hold more tests now than
  they did then; both counts are printed.
- **then** (`--old`): BASELINE's own suite in a temporary git worktree, with its own command
  (`python -m pytest`, one process, as its Makefile had it) and this environment (the lock only
  gained packages since, none changed version). Its modules come first on PYTHONPATH.
- **now, everything** (`--all`): this tree's whole suite, `make test`'s pytest.

Each run prints pytest's own time, the wall time and the CPU time of the run (user + system of
pytest and everything it started); with `--repeats` the medians, then the ratio of the old
suite's time to the baseline scope's. Lint and the type check (`make lint`, about 20 s cold) come
on top of pytest in `make test` and are not timed here.

A run takes minutes (on 2 cores: the old suite about 6.5, the whole suite about 6, the baseline
scope about 3.5). The notebooks' state folder (`.state/batch`) is fixed, so do not run this while
another pytest runs in the same checkout. Exits non-zero if any run has a failing test.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "20dfe1e"  # issue 7: "`make test` takes 7 min 46 s on 2 cores" on this tree
# make test's pytest options (Makefile, PYTEST_WORKERS=auto).
WORKER_OPTIONS = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadgroup"]
# pytest's last line, with or without -q's missing "=" bars: "1,316 passed, 4 skipped in 195.06s".
SUMMARY = re.compile(r"^=*\s*(?P<counts>\d[\d,]* \w+(?:, \d[\d,]* \w+)*) in (?P<seconds>[\d.]+)s\b", re.MULTILINE)


@dataclass
class Run:
    label: str
    pytest_s: float
    wall_s: float
    cpu_s: float
    counts: dict[str, int]

    @property
    def ok(self) -> bool:
        failures = sum(n for kind, n in self.counts.items() if kind in ("failed", "error", "errors"))
        return failures == 0 and self.counts.get("passed", 0) > 0


def clean_env() -> dict[str, str]:
    """This environment without a chosen state folder or an enclosing xdist run's settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MTRL_STATE_DIR", "PYTEST_XDIST"))}


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:  # e.g. a shallow clone without the baseline commit
        sys.exit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def baseline_paths(rev: str) -> list[str]:
    """The test files and notebooks at `rev` that still exist here."""
    names = git("ls-tree", "--name-only", rev, "tests/", "notebooks/").split()
    wanted = [n for n in names if re.fullmatch(r"tests/test_\w+\.py|notebooks/\d\d_\w+\.ipynb", n)]
    missing = [n for n in wanted if not (ROOT / n).exists()]
    if missing:
        print(f"not here any more (left out): {', '.join(missing)}")
    return [n for n in wanted if (ROOT / n).exists()]


def parse_summary(output: str) -> tuple[float, dict[str, int]] | None:
    """pytest's last summary line as (seconds, {"passed": n, "skipped": n, ...}); None if none."""
    found = SUMMARY.findall(output)
    if not found:
        return None
    counts, seconds = found[-1]
    parsed = {}
    for part in counts.split(", "):
        number, _, kind = part.partition(" ")
        parsed[kind] = int(number.replace(",", ""))
    return float(seconds), parsed


def run_pytest(label: str, args: list[str], cwd: Path, env: dict[str, str]) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = parse_summary(done.stdout)
    if summary is None:
        sys.exit(
            f"{label}: pytest printed no summary (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    seconds, counts = summary
    run = Run(label, seconds, wall, cpu, counts)
    print(
        f"{label:<24} pytest {run.pytest_s:6.1f} s   wall {run.wall_s:6.1f} s   CPU {run.cpu_s:6.1f} s   "
        + ", ".join(f"{n:,} {k}" for k, n in counts.items()),
        flush=True,
    )
    if not run.ok:
        print(done.stdout[-3000:])
    return run


def run_old(rev: str) -> Run:
    folder = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    tree = folder / "tree"
    try:
        git("worktree", "add", "--detach", str(tree), rev)
        env = clean_env()
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "agent_src"), str(tree / "tests")])
        return run_pytest(f"then ({rev})", [], tree, env)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True, check=False)


def median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="the commit whose suite is the scope")
    parser.add_argument("--old", action="store_true", help="also run the baseline commit's own suite")
    parser.add_argument("--all", action="store_true", help="also run this tree's whole suite")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    paths = baseline_paths(args.baseline)
    env = clean_env()
    results: dict[str, list[Run]] = {}
    for _ in range(args.repeats):
        if args.old:
            results.setdefault("then", []).append(run_old(args.baseline))
        results.setdefault("scope", []).append(run_pytest("now, baseline scope", WORKER_OPTIONS + paths, ROOT, env))
        if args.all:
            results.setdefault("all", []).append(run_pytest("now, everything", WORKER_OPTIONS, ROOT, env))
    print(f"\nmedians over {args.repeats} repeat(s), {os.cpu_count()} CPUs:")
    for key, runs in results.items():
        print(f"  {runs[0].label:<24} pytest {median(runs, 'pytest_s'):6.1f} s   CPU {median(runs, 'cpu_s'):6.1f} s")
    if "then" in results:
        ratio = median(results["then"], "pytest_s") / median(results["scope"], "pytest_s")
        print(f"  the baseline's suite now takes 1/{ratio:.2f} of its time then")
    if not all(r.ok for runs in results.values() for r in runs):
        sys.exit("a run had failing tests")


if __name__ == "__main__":
    main()
