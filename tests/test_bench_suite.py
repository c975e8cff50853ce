"""benchmarks/bench_suite.py reads pytest's summary line and the baseline's scope correctly (its
timings are the benchmark's business, not a test's)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_suite", ROOT / "benchmarks" / "bench_suite.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("....\n50 passed in 1.42s\n", (1.42, {"passed": 50})),
        (
            "x\n=========== 1 failed, 1898 passed, 7 skipped in 371.15s (0:06:11) ===========\n",
            (371.15, {"failed": 1, "passed": 1898, "skipped": 7}),
        ),
        ("1,316 passed, 4 skipped, 2 errors in 195.06s\n", (195.06, {"passed": 1316, "skipped": 4, "errors": 2})),
        # a test's own output that looks like a summary comes before the real one: the last wins
        ("3 passed in 0.10s\nmore\n== 9 passed in 2.00s ==\n", (2.0, {"passed": 9})),
    ],
)
def test_the_last_summary_line_is_parsed(bench, output, expected):
    assert bench.parse_summary(output) == expected


@pytest.mark.parametrize("output", ["", "collected 0 items\n", "ImportError: no module named x\n"])
def test_no_summary_is_none(bench, output):
    assert bench.parse_summary(output) is None


def test_a_run_with_failures_or_nothing_passed_is_not_ok(bench):
    def run(**counts):
        return bench.Run("x", 1.0, 1.0, 1.0, counts)

    assert run(passed=3, skipped=1).ok
    assert not run(passed=3, failed=1).ok and not run(passed=3, errors=1).ok and not run(skipped=2).ok


def test_the_scope_is_the_baselines_test_files_and_numbered_notebooks(bench):
    try:
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", "HEAD", "tests/", "notebooks/"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    expected = {
        name
        for name in listed
        if (name.startswith("tests/test_") and name.endswith(".py"))
        or (name.startswith("notebooks/") and name.endswith(".ipynb") and name[len("notebooks/")].isdigit())
    }
    assert set(bench.baseline_paths("HEAD")) == {name for name in expected if (ROOT / name).exists()}
    assert "notebooks/00_setup.ipynb" in expected


def test_an_unknown_baseline_is_refused_with_its_name(bench):
    with pytest.raises(SystemExit, match="no-such-commit"):
        bench.baseline_paths("no-such-commit")
