"""Course-wide settings: the mode, repository paths, placeholder identities and seeding.

Everything that differs between the offline and live paths is decided here, once. Notebooks and
the CLI never read `MTRL_MODE` themselves; they ask this module.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path

from mtrl_course import telemetry

# Before anything imports MLflow or the SageMaker SDK: both read their switches at use, but a
# client created early would otherwise already have checked in (telemetry.py lists them).
telemetry.switch_off()

MODE_ENV_VAR = "MTRL_MODE"
OFFLINE_REGION = "us-east-1"
# boto3 (botocore's config chain) takes the Region from AWS_DEFAULT_REGION or the profile's
# `region`, never from AWS_REGION, which the AWS SDKs for other languages and the AgentCore and
# Lambda runtimes use. Advice naming AWS_REGION left learners with the same NoRegionError.
REGION_ENV_VAR = "AWS_DEFAULT_REGION"
REGION_ADVICE = (
    f"set {REGION_ENV_VAR} (for example `export {REGION_ENV_VAR}=us-east-1`) or give your AWS profile "
    "a region (`aws configure set region us-east-1`); boto3 does not read AWS_REGION"
)
# The AWS documentation's placeholder account: it appears in the smoke payload, the AgentCore
# targets file and every committed output. moto's own account (123456789012) is the other
# placeholder the offline backend uses; a hygiene test rejects any other 12-digit account.
PLACEHOLDER_ACCOUNT = "111122223333"
MOTO_ACCOUNT = "123456789012"
# Fake credentials offline: moto accepts anything, and "testing" is its convention.
OFFLINE_ACCESS_KEY = "testing"
OFFLINE_SECRET_KEY = "testing"
DEFAULT_SEED = 42
COURSE_TAG = "mtrl-wordle-course"


class Mode(str, Enum):
    OFFLINE = "offline"
    LIVE = "live"


class NotInCheckout(RuntimeError):
    """Neither the current folder nor the installed package lies inside a course checkout."""


def _is_checkout(folder: Path) -> bool:
    return (folder / "pyproject.toml").is_file() and (folder / "agent_src" / "mtrl_course").is_dir()


def _checkout_above(start: Path) -> Path | None:
    return next((p for p in (start, *start.parents) if _is_checkout(p)), None)


def find_repo_root(cwd: Path | None = None, package_dir: Path | None = None) -> Path:
    """The checkout this process works in: the one holding the current folder, if any.

    The current folder wins over where the package was imported from. Several clones may share
    one virtualenv, whose editable install points at the clone that created it; deriving the root
    from the package made `.venv/bin/mtrl` run in a second clone quietly read and write the
    first clone's data, state and notebooks. Outside any checkout (a subprocess started in a
    temporary folder, say), the package's own checkout is the only candidate; a package installed
    without one, run outside one, has no course files to work on and says so.
    """
    cwd = (cwd or Path.cwd()).resolve()
    package_dir = (package_dir or Path(__file__).parent).resolve()
    found = _checkout_above(cwd) or _checkout_above(package_dir)
    if found is None:
        raise NotInCheckout(
            f"No course checkout here: neither the current folder ({cwd}) nor the installed "
            f"package ({package_dir}) lies inside a folder holding pyproject.toml "
            "and agent_src/mtrl_course. Run the course from inside its repository (cd into your clone)."
        )
    return found


REPO_ROOT = find_repo_root()
DATA_DIR = REPO_ROOT / "data"
# Where `nb.save_figure` writes: the committed figures/ unless MTRL_FIGURES_DIR says otherwise. A
# learner running a notebook by hand refreshes figures/ in their own checkout; runs that must
# leave the checkout as they found it move it: the test suite to a temporary folder
# (tests/checkout_unchanged_plugin.py: a fresh clone's `make test` rewrote a committed figure
# whose pixels differ on another CPU), and `mtrl notebooks run --no-store` (`make course`) to
# SCRATCH_FIGURES_DIR, unless asked to store them (`--store-figures`, `make figures`).
FIGURES_ENV_VAR = "MTRL_FIGURES_DIR"
COMMITTED_FIGURES_DIR = REPO_ROOT / "figures"
SCRATCH_FIGURES_DIR = REPO_ROOT / "build" / "figures"  # git-ignored
FIGURES_DIR = Path(os.environ.get(FIGURES_ENV_VAR) or COMMITTED_FIGURES_DIR)
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
# Local, git-ignored state: offline jobs, adapters and MLflow stores that must outlive a kernel.
# MTRL_STATE_DIR moves it: the test suite and `mtrl notebooks run` point it at BATCH_STATE_DIR,
# emptied at their start, so what they produce never depends on what an earlier session left.
STATE_ENV_VAR = "MTRL_STATE_DIR"
# Set (to "1") by the notebook runner and the nbval plugin: nobody is watching a batch run, so no
# progress bars and no servers started for a reader (notebook, progress and monitoring read it).
NOTEBOOK_BATCH_ENV_VAR = "MTRL_NOTEBOOK_BATCH"
STATE_DIR = Path(os.environ.get(STATE_ENV_VAR) or REPO_ROOT / ".state")
BATCH_STATE_DIR = REPO_ROOT / ".state" / "batch"
# Derived data that is the same for everyone (keyed by content hashes): safe to keep across runs.
CACHE_DIR = REPO_ROOT / ".cache"

TRAIN_FILE = DATA_DIR / "training-data.jsonl"
VALIDATION_FILE = DATA_DIR / "validation-data.jsonl"
PAYLOAD_FILE = DATA_DIR / "payload.json"


def _read_mode() -> Mode:
    raw = os.environ.get(MODE_ENV_VAR, Mode.OFFLINE.value).strip().lower() or Mode.OFFLINE.value
    try:
        return Mode(raw)
    except ValueError:
        raise ValueError(f"{MODE_ENV_VAR}={raw!r} is not a mode; set it to 'offline' (the default) or 'live'") from None


MODE: Mode = _read_mode()


def is_live() -> bool:
    return MODE is Mode.LIVE


def seed_everything(seed: int = DEFAULT_SEED) -> int:
    """Seed Python's and numpy's global generators (code that matters uses explicit generators)."""
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # numpy is a course dependency; the guard only keeps this importable alone
        pass
    return seed


# CPython runs its youngest garbage collection every 700 net allocations. The course's work (the
# Strands agent loop copying each conversation, botocore clients, moto's models) makes many
# short-lived objects; at that rate they outlive a few young collections and end in the oldest
# generation, whose collections walk the whole heap (about 0.3 s each for a test process).
# Measured on four client- and job-heavy test modules in one process: the collector took 15.3 of
# 109 CPU-seconds with the default thresholds, 5.8 of 88 with these; an offline training job of
# 256 games: 2.6 to 2.9 of 23 to 26 CPU-seconds, then 0.8, with the same peak memory (511 MB).
# Nothing here relies on when a cycle is collected.
GC_THRESHOLDS = (50_000, 20, 10)


def tune_garbage_collector() -> tuple[int, int, int]:
    """Set CPython's collection thresholds to `GC_THRESHOLDS` (speed only; see above)."""
    gc.set_threshold(*GC_THRESHOLDS)
    return GC_THRESHOLDS


@contextlib.contextmanager
def environment(values: Mapping[str, str], *, unset: Iterable[str] = ()) -> Iterator[None]:
    """Set (and unset) environment variables for a block, restoring every one afterwards.

    The agent reads its runtime settings (REASONING_EFFORT, ...) from the environment, as on
    AgentCore; lessons that compare settings in one process switch them with this.
    """
    names = set(values) | set(unset)
    saved = {name: os.environ.get(name) for name in names}
    for name in unset:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
