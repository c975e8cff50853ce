"""The committed outputs and stored results hold on another CPU: proved with perturbed arithmetic.

Another machine's numpy and OpenBLAS kernels round the policy's dot products differently in the
last bit; a training run then takes a different draw somewhere and prints different last digits
(docs/DESIGN.md, "Comparing numbers across machines"). This test (in `make test-experiments`)
runs what the suite compares against committed outputs and stored results (every notebook under
nbval, the cells tagged `stored-rerun` that `make test` skips included, and the re-runs of the
stored experiments) a second time, with `MTRL_PERTURB_ARITHMETIC=1`:
the same sums in reverse order. Everything must still pass, and at least one notebook cell must have needed its tolerance
(otherwise the perturbation perturbed nothing and the test proves nothing). A second test runs
the first-tier tests of every module marked `floats` the same way.

It is one long test (the notebooks take minutes), run in its own pytest process with its own
state folders (.state/perturbed/) and figures folder. It shares the notebooks' working folder, so
under xdist it runs on the notebooks' worker, before or after them, never beside them (run beside
them, notebook 08 found the file notebook 07's evaluator had just left in notebooks/).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from notebooks_conftest_plugin import STORED_RERUN_SKIP

ROOT = Path(__file__).resolve().parents[1]
# The stored-result comparisons re-run in the suite.
STORED_RERUNS = [
    "tests/test_reward_ablation.py::test_one_cheap_arm_reruns_to_the_stored_numbers",
    "tests/test_failure_experiments.py::test_one_cheap_configuration_reproduces_the_stored_steps",
    "tests/test_base_rebuild.py::test_stage_one_short_run_reruns_to_the_stored_numbers",
]


def run_perturbed(args: list[str], state: Path, figures: Path, **extra: str) -> tuple[str, dict[str, int]]:
    """`pytest -n 0 <args>` in a child with the switch on and its own state and figures folders;
    its output's tail (asserted to have passed) and its closing counts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MTRL_STATE_DIR"))}
    env.update(MTRL_PERTURB_ARITHMETIC="1", MTRL_TEST_STATE_ROOT=str(state), MTRL_FIGURES_DIR=str(figures), **extra)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "-q", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    tail = ran.stdout[-6000:]
    assert ran.returncode == 0, tail
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|error)", ran.stdout.splitlines()[-1])}
    return ran.stdout, counts


@pytest.mark.slow
@pytest.mark.experiments
def test_every_committed_comparison_holds_under_perturbed_arithmetic(tmp_path: Path) -> None:
    state = ROOT / ".state" / "perturbed"
    shutil.rmtree(state, ignore_errors=True)
    report = tmp_path / "passed-within-tolerance.txt"
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    # The committed figures stay as they are: the child draws into tmp_path.
    out, counts = run_perturbed(
        [*notebooks, *STORED_RERUNS], state, tmp_path / "figures", MTRL_TOLERANCE_REPORT=str(report)
    )
    # The notebook cells that re-run a stored experiment (skipped by `make test`) ran here.
    assert STORED_RERUN_SKIP not in out, out[-6000:]
    assert counts.get("passed", 0) > 100, out[-6000:]
    needed = report.read_text().split() if report.exists() else []
    assert needed, "no cell needed its tolerance: MTRL_PERTURB_ARITHMETIC changed nothing that is compared"
    shutil.rmtree(state, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.experiments
def test_every_first_tier_module_that_compares_floats_passes_under_perturbed_arithmetic(tmp_path: Path) -> None:
    """The first-tier tests of every module marked `floats` (tests/test_float_paths.py says which
    modules must carry the mark), run again with the switch on: their tolerances must hold."""
    out, counts = run_perturbed(["-m", "floats and not experiments", "tests"], tmp_path / "state", tmp_path / "figures")
    assert counts.get("passed", 0) > 200 and not counts.get("failed"), out[-6000:]
