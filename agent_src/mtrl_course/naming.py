"""How the course names, tags and prints what it creates: one place for every module.

Every live resource is named `mtrl-wordle-<kind>-<run id>` and tagged (course, run_id,
notebook), so clean-up can find exactly what this run made; every account ID printed is masked
unless it is one of the placeholders that belong to nobody.
"""

from __future__ import annotations

import os
import re
import secrets

from mtrl_course import config

# --- names and tags ------------------------------------------------------------------------------

NAME_PREFIX = "mtrl-wordle"
RUN_ID_ENV_VAR = "MTRL_RUN_ID"
RUN_ID_FILE = config.STATE_DIR / "run_id"
# Offline runs use one fixed id, so names (and the committed outputs showing them) never change.
OFFLINE_RUN_ID = "offline"
RUN_ID_BYTES = 3  # six hex digits: short enough for IAM's 64-character role names
RUN_ID_PATTERN = re.compile(r"^[a-z0-9]{1,12}$")
MAX_ROLE_NAME = 64
TAG_COURSE, TAG_RUN_ID, TAG_NOTEBOOK = "course", "run_id", "notebook"
DEFAULT_NOTEBOOK = "01"  # the notebook a resource is tagged with when none is named

# --- masking ----------------------------------------------------------------------------------------

# Placeholders that belong to nobody; every other 12-digit account is masked before printing.
PLACEHOLDER_ACCOUNTS = frozenset({config.PLACEHOLDER_ACCOUNT, config.MOTO_ACCOUNT})
ACCOUNT_ID = re.compile(r"(?<!\d)\d{12}(?!\d)")
MASK_KEEP = 4


def mask_account(text: str) -> str:
    """`text` with every real-looking 12-digit account ID masked to its last four digits.

    The course placeholders (111122223333, moto's 123456789012) stay readable: they belong to
    nobody, and offline outputs show them on purpose.
    """

    def mask(match: re.Match[str]) -> str:
        account = match.group(0)
        if account in PLACEHOLDER_ACCOUNTS:
            return account
        return "*" * (len(account) - MASK_KEEP) + account[-MASK_KEEP:]

    return ACCOUNT_ID.sub(mask, str(text))


# --- run id, names, tags -----------------------------------------------------------------------------


def run_id() -> str:
    """This learner's run id: short, stable across sessions, part of every resource name.

    `MTRL_RUN_ID` wins if set. Offline it is always "offline". Live it is read from
    `.state/run_id`, created on first use with six random hex digits.
    """
    given = os.environ.get(RUN_ID_ENV_VAR, "").strip().lower()
    if given:
        if not RUN_ID_PATTERN.match(given):
            raise ValueError(f"{RUN_ID_ENV_VAR}={given!r} must be 1 to 12 lowercase letters or digits")
        return given
    if not config.is_live():
        return OFFLINE_RUN_ID
    if RUN_ID_FILE.is_file():
        stored = RUN_ID_FILE.read_text(encoding="utf-8").strip()
        if RUN_ID_PATTERN.match(stored):
            return stored
    fresh = secrets.token_hex(RUN_ID_BYTES)
    RUN_ID_FILE.parent.mkdir(parents=True, exist_ok=True)
    RUN_ID_FILE.write_text(fresh + "\n", encoding="utf-8")
    return fresh


def resource_name(kind: str, run: str | None = None) -> str:
    """`mtrl-wordle-<kind>-<run id>`, e.g. mtrl-wordle-job-role-offline."""
    name = f"{NAME_PREFIX}-{kind}-{run or run_id()}"
    if len(name) > MAX_ROLE_NAME:
        raise ValueError(f"resource name {name!r} is longer than IAM's {MAX_ROLE_NAME} characters")
    return name


def course_tags(notebook: str = DEFAULT_NOTEBOOK, run: str | None = None) -> list[dict[str, str]]:
    """The tags every course resource carries, in the shape IAM, S3 and SageMaker take."""
    return [
        {"Key": TAG_COURSE, "Value": config.COURSE_TAG},
        {"Key": TAG_RUN_ID, "Value": run or run_id()},
        {"Key": TAG_NOTEBOOK, "Value": notebook},
    ]
