"""pytest plugin for the nbval run over notebooks/ (loaded with `-p notebooks_conftest_plugin`).

- Every item collected from a .ipynb file gets the `notebooks` marker, so
  `pytest -m "not notebooks"` (make test-fast) deselects them before any kernel starts.
- nbval's kernels inherit this process's environment: force offline mode, mark the run as a
  batch run (no progress bars) and fix the hash seed, as `mtrl notebooks run` does when it
  stores the outputs being compared.
- stderr is not compared: a new third-party warning must not fail the suite. The hygiene tests
  keep stderr out of the stored outputs instead (unless a cell is tagged stderr-ok).
- Cells tagged `numbers-within:rel=R,abs=A` (outputs downstream of training or sampling, whose
  last digits depend on the CPU) compare their text exactly and their numbers within that
  tolerance (tests/numbers_within.py; docs/DESIGN.md, "Comparing numbers across machines").
- Cells tagged `stored-rerun` re-run a step or a seed of a stored experiment (seconds each, to
  show a reader that the stored numbers come back). They belong to the second test tier: a run
  whose `-m` expression leaves out `experiments` (`make test`) skips them and says so; any other
  run executes them, `make test-experiments` through tests/test_perturbed_arithmetic.py. Nothing
  a later cell reads may be defined in one (tests/test_notebooks_hygiene.py checks).
- Defaults, so `--nbval` alone is enough: the kernel runs this interpreter (not whatever a
  `python3` kernelspec points at) and the sanitizer is `nbval_sanitize.cfg` next to this file.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _pytest.nodes import coerce_node_id  # see pytest_collection_modifyitems

# Before nbval (loaded after this -p plugin) imports jsonschema: defers its IRI grammar in the
# controller and every worker, as the package does in every course process (deferred_imports.py).
# The package's __init__ reads no setting, so the state folder below is still chosen first.
import mtrl_course  # noqa: F401,E402
from numbers_within import Tolerance, differences, tolerance_from_tags

# Offline state never comes from, or goes to, the learner's `.state/`. The unit tests get a folder
# emptied at the start (set at import: this plugin loads before anything imports
# mtrl_course.config, which reads the variable once). The notebooks' kernels, which inherit the
# environment when they start, get others: the chain 00 to 08 the same folder `mtrl notebooks run`
# uses when it stores the outputs, and each independent notebook one of its own (see
# NOTEBOOK_GROUP below), each emptied before its first notebook: so nothing the unit tests trained
# leaks into a notebook, and the paths notebooks print match the stored outputs.
STATE_ENV_VAR = "MTRL_STATE_DIR"
# MTRL_TEST_STATE_ROOT moves all of it (tests/test_perturbed_arithmetic.py runs a second suite
# beside this one and must not share its folders).
STATE_ROOT = Path(os.environ.get("MTRL_TEST_STATE_ROOT") or Path(__file__).resolve().parents[1] / ".state")
# Under pytest-xdist every worker is its own process with its own offline backend, so each gets
# its own folder (emptying a shared one at import would pull it from under the other worker).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TESTS_STATE_DIR = STATE_ROOT / ("test-run" + (f"-{_WORKER}" if _WORKER else ""))
BATCH_STATE_DIR = STATE_ROOT / "batch"  # = mtrl_course.config.BATCH_STATE_DIR
# Set when this plugin chose the folder, so xdist workers (started with the controller's
# environment) know the folder is ours to replace with their own, not a developer's choice.
OURS_ENV_VAR = "MTRL_STATE_DIR_FROM_TESTS"
_SET_BY_US = not os.environ.get(STATE_ENV_VAR) or os.environ.get(OURS_ENV_VAR) == "1"
_NOTEBOOK_STATE_READY: set[Path] = set()  # folders emptied by this process


def _fresh(path: Path) -> str:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


if _SET_BY_US:
    os.environ[STATE_ENV_VAR] = _fresh(TESTS_STATE_DIR)
    os.environ[OURS_ENV_VAR] = "1"

MARKER = "notebooks"
NOTEBOOK_SUFFIX = ".ipynb"
NOT_COMPARED = ("stderr",)
SANITIZE_FILE = Path(__file__).with_name("nbval_sanitize.cfg")


def _nbval_active(config: pytest.Config) -> bool:
    option = config.option
    return bool(getattr(option, "nbval", False) or getattr(option, "nbval_lax", False))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a cell of a notebook, checked by nbval (deselect with -m 'not {MARKER}')"
    )
    if _nbval_active(config):
        # The environment `mtrl notebooks run` gives the kernels whose outputs nbval compares.
        from mtrl_course.curriculum.executor import KERNEL_ENV, KERNEL_ENV_DROP

        os.environ.update(KERNEL_ENV)
        for name in KERNEL_ENV_DROP:  # MPLBACKEND: ipykernel picks inline only when it is unset
            os.environ.pop(name, None)
        option = config.option
        if not option.nbval_kernel_name:
            option.nbval_current_env = True
        if option.nbval_sanitize_with is None:
            option.nbval_sanitize_with = str(SANITIZE_FILE)
    if getattr(config.option, "dist", None) == "loadgroup":
        # xdist would hand out groups largest-count first; the order below is by time instead.
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a notebook's kernel starts (nbval starts it in its first cell's setup), switch folders.

    Each notebook group's folder is emptied once, before its first notebook (a group runs whole on
    one worker); the switch is undone after every notebook cell, so a unit test that runs later on
    the same worker (and starts a subprocess) still gets the tests' folder. A kernel keeps the
    environment it started with.
    """
    if _SET_BY_US and item.path.suffix == NOTEBOOK_SUFFIX:
        folder = notebook_state_dir(item.path)
        if folder not in _NOTEBOOK_STATE_READY:
            _fresh(folder)
            _NOTEBOOK_STATE_READY.add(folder)
        os.environ[STATE_ENV_VAR] = str(folder)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    if _SET_BY_US and item.path.suffix == NOTEBOOK_SUFFIX:
        os.environ[STATE_ENV_VAR] = str(TESTS_STATE_DIR)


def pytest_collectstart(collector: pytest.Collector) -> None:
    if getattr(collector, "path", None) is not None and collector.path.suffix == NOTEBOOK_SUFFIX:
        if hasattr(collector, "skip_compare"):
            collector.skip_compare = tuple(collector.skip_compare) + NOT_COMPARED


# `make test` runs under pytest-xdist with --dist loadgroup: every test of one module stays on
# one worker (module-scoped fixtures such as a trained job are built once), and the notebooks that
# build on each other run on one worker in file order, in one state folder, as they do when a
# learner runs them in turn: 00 to 08 (06 and 07 read the job 05 trained, and 07 lists the
# evaluations 06 ran; 08 cleans up after them, the file 07's evaluator leaves in notebooks/
# included; 04 and 06 print paths inside that folder, the one `mtrl notebooks run` uses).
NOTEBOOK_GROUP = "notebooks"
# These read nothing an earlier notebook left (09 trains in a temporary folder, 10 and 11 in
# sub-folders of their own, the template only draws a figure) and none reads what they leave: each
# is a group of its own with a state folder of its own, so they run beside the chain on another
# worker. Their stored outputs, taken in the chain's folder after 08, are the same (nbval
# compares every cell), and none prints a path inside the folder.
INDEPENDENT_NOTEBOOKS = ("09", "10", "11", "_template")
# Groups handed out first, longest first (summed --durations of `make test` on 2 cores, measured
# for issue 23): a long group that starts last keeps one worker busy after the other has
# finished. The rest follow in collection order.
LONGEST_FIRST = (
    NOTEBOOK_GROUP,
    "notebooks-11",
    "notebooks-09",
    "test_site",
    "test_sandbox",
    "test_evaluation",
    "test_notebooks_hygiene",
    "test_local_service",
    "test_runner",
    "test_scripts",
    "test_offline_aws",
    "test_coding_tasks",
    "notebooks-10",
    "test_agent_server",
    "test_stand_in_policy",
    "test_cleanup",
    "test_job_runtime_emulator",
    "test_cli",
)


def _independent_notebook(path: Path) -> str | None:
    return next((key for key in INDEPENDENT_NOTEBOOKS if path.stem.startswith(key)), None)


def notebook_state_dir(path: Path) -> Path:
    """The offline state folder the kernel of notebook `path` gets (see NOTEBOOK_GROUP)."""
    key = _independent_notebook(path)
    return BATCH_STATE_DIR if key is None else STATE_ROOT / f"batch-{key.strip('_')}"


STORED_RERUN_TAG = "stored-rerun"
SECOND_TIER_MARKER = "experiments"
STORED_RERUN_SKIP = (
    "a re-run of a stored experiment: second tier (make test-experiments runs it, in "
    "tests/test_perturbed_arithmetic.py)"
)


def leaves_out_stored_reruns(config: pytest.Config) -> bool:
    """True when this run's `-m` expression would deselect a notebook cell of the second tier."""
    expression = getattr(config.option, "markexpr", "") or ""
    if not expression.strip():
        return False
    from _pytest.mark.expression import Expression

    carried = {MARKER, SECOND_TIER_MARKER}
    return not Expression.compile(expression).evaluate(lambda name, *_, **__: name in carried)


def _is_stored_rerun(item: pytest.Item) -> bool:
    cell = getattr(item, "cell", None)
    return cell is not None and STORED_RERUN_TAG in cell.get("metadata", {}).get("tags", [])


@pytest.hookimpl(tryfirst=True)  # before xdist reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    grouping = bool(getattr(config.option, "loadgroup", False))  # set by xdist for --dist loadgroup
    skip_reruns = leaves_out_stored_reruns(config)
    for item in items:
        group = _group_of(item)
        if item.path.suffix == NOTEBOOK_SUFFIX:
            item.add_marker(MARKER)
            _allow_number_tolerance(item)
            if skip_reruns and _is_stored_rerun(item):
                item.add_marker(pytest.mark.skip(reason=STORED_RERUN_SKIP))
        item.add_marker(pytest.mark.xdist_group(group))
        if grouping and "@" not in item.nodeid:
            # xdist's scheduler reads the group from an "@group" suffix of the node id. xdist
            # 3.8 adds it by setting `item._nodeid`, which pytest 9.2 no longer reads (the id
            # lives in `item._id`), so loadgroup silently became per-test: set it here instead.
            item._id = coerce_node_id(f"{item.nodeid}@{group}")
    if grouping:
        rank = {group: index for index, group in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(_group_of(item), len(rank)))  # stable: order kept within


# Runs every notebook a second time in this checkout (their working folder is notebooks/, where
# notebook 07's evaluator leaves a file that 08 cleans up): in the chain's group, one run after
# the other, never beside 07 and 08 (the independent notebooks leave nothing in notebooks/).
RUNS_THE_NOTEBOOKS = {"test_perturbed_arithmetic"}


def _group_of(item: pytest.Item) -> str:
    if item.path.suffix == NOTEBOOK_SUFFIX:
        key = _independent_notebook(item.path)
        return NOTEBOOK_GROUP if key is None else f"{NOTEBOOK_GROUP}-{key.strip('_')}"
    if item.path.stem in RUNS_THE_NOTEBOOKS:
        return NOTEBOOK_GROUP
    return item.path.stem


# Set by tests/test_perturbed_arithmetic.py: a file that lists every cell whose output differed
# from the stored one and passed only within its tolerance (proof that the tolerance was needed).
TOLERANCE_REPORT_ENV_VAR = "MTRL_TOLERANCE_REPORT"


def _allow_number_tolerance(item: pytest.Item) -> None:
    """Give a cell tagged `numbers-within:...` a comparison that admits its tolerance."""
    cell = getattr(item, "cell", None)
    if cell is None or not hasattr(item, "compare_outputs"):
        return
    try:
        tolerance = tolerance_from_tags(cell.get("metadata", {}).get("tags", []))
    except ValueError as bad:
        raise pytest.UsageError(f"{item.nodeid}: {bad}") from None
    if tolerance is not None:
        item.compare_outputs = _within(item, item.compare_outputs, tolerance)  # type: ignore[attr-defined]


def _within(item: Any, exact: Callable[..., bool], tolerance: Tolerance) -> Callable[..., bool]:
    from nbval.plugin import transform_streams_for_comparison

    def flatten(outputs: list, skip: tuple) -> dict[str, list]:
        # The same flattening nbval's own comparison does: one list per output field or MIME type.
        flat: dict[str, list] = defaultdict(list)
        for output in transform_streams_for_comparison(outputs):
            for key, value in output.items():
                if key in skip:
                    continue
                if key == "data":
                    for mime, data in value.items():
                        if mime not in skip:
                            flat[mime].append(item.sanitize(data))
                else:
                    flat[key].append(item.sanitize(value))
        return flat

    def compare(test: list, ref: list, skip_compare: tuple | None = None) -> bool:
        if exact(test, ref, skip_compare):
            return True
        skip = skip_compare or item.parent.skip_compare
        fresh, stored = flatten(test, skip), flatten(ref, skip)
        found: list[str] = []
        if fresh.keys() != stored.keys() or any(len(fresh[k]) != len(stored[k]) for k in stored):
            return False  # nbval's own traceback already says which fields differ
        for key, values in stored.items():
            for old, new in zip(values, fresh[key]):
                if old == new:
                    continue
                if isinstance(old, str) and isinstance(new, str):
                    found += [f"{key}: {problem}" for problem in differences(old, new, tolerance)]
                else:
                    found.append(f"{key}: differs and is not text")
        if found:
            item.comparison_traceback.append(f"Not within the cell's tolerance ({tolerance}):")
            item.comparison_traceback.extend(found[:20])
            return False
        item.comparison_traceback = []
        if report := os.environ.get(TOLERANCE_REPORT_ENV_VAR):
            with open(report, "a", encoding="utf-8") as out:
                out.write(f"{item.nodeid}\n")
        return True

    return compare
