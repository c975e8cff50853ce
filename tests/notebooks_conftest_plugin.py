"""pytest plugin for the nbval run over notebooks/ (loaded with `-p notebooks_conftest_plugin`).

- Every item collected from a .ipynb file gets the `notebooks` marker, so
  `pytest -m "not notebooks"` (make test-fast) deselects them before any kernel starts.
- nbval's kernels inherit this process's environment: force offline mode, mark the run as a
  batch run (no progress bars) and fix the hash seed, as `mtrl notebooks run` does when it
  stores the outputs being compared.
- stderr is not compared: a new third-party warning must not fail the suite. The hygiene tests
  keep stderr out of the stored outputs instead (unless a cell is tagged stderr-ok).
- Defaults, so `--nbval` alone is enough: the kernel runs this interpreter (not whatever a
  `python3` kernelspec points at) and the sanitizer is `nbval_sanitize.cfg` next to this file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MARKER = "notebooks"
NOTEBOOK_SUFFIX = ".ipynb"
NOT_COMPARED = ("stderr",)
SANITIZE_FILE = Path(__file__).with_name("nbval_sanitize.cfg")


def _nbval_active(config: pytest.Config) -> bool:
    option = config.option
    return bool(getattr(option, "nbval", False) or getattr(option, "nbval_lax", False))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a cell of a notebook, checked by nbval (deselect with -m 'not {MARKER}')")
    if _nbval_active(config):
        # The environment `mtrl notebooks run` gives the kernels whose outputs nbval compares.
        from mtrl_course.notebooks_run import KERNEL_ENV, KERNEL_ENV_DROP

        os.environ.update(KERNEL_ENV)
        for name in KERNEL_ENV_DROP:  # MPLBACKEND: ipykernel picks inline only when it is unset
            os.environ.pop(name, None)
        option = config.option
        if not option.nbval_kernel_name:
            option.nbval_current_env = True
        if option.nbval_sanitize_with is None:
            option.nbval_sanitize_with = str(SANITIZE_FILE)


def pytest_collectstart(collector: pytest.Collector) -> None:
    if getattr(collector, "path", None) is not None and collector.path.suffix == NOTEBOOK_SUFFIX:
        if hasattr(collector, "skip_compare"):
            collector.skip_compare = tuple(collector.skip_compare) + NOT_COMPARED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == NOTEBOOK_SUFFIX:
            item.add_marker(MARKER)
