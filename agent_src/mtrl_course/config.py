"""Course-wide settings: the mode, repository paths, placeholder identities and seeding.

Everything that differs between the offline and live paths is decided here, once. Notebooks and
the CLI never read `MTRL_MODE` themselves; they ask this module.
"""

from __future__ import annotations

import contextlib
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
# placeholder the offline stack uses; a hygiene test rejects any other 12-digit account.
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


def _find_repo_root() -> Path:
    """The checkout's root: the nearest parent holding pyproject.toml (works installed or not)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "agent_src").is_dir():
            return parent
    return Path.cwd()


REPO_ROOT = _find_repo_root()
DATA_DIR = REPO_ROOT / "data"
FIGURES_DIR = REPO_ROOT / "figures"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
# Local, git-ignored state: offline jobs, adapters and MLflow stores that must outlive a kernel.
# MTRL_STATE_DIR moves it: the test suite and `mtrl notebooks run` point it at BATCH_STATE_DIR,
# emptied at their start, so what they produce never depends on what an earlier session left.
STATE_ENV_VAR = "MTRL_STATE_DIR"
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
