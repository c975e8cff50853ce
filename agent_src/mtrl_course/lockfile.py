"""The tested package versions: requirements.lock, read in one place.

Four readers use it: notebook 00's install check (`preflight.packages_to_install`), the agent's
deployment bundle, pinned to the tested versions (`deploy.bundle_requirements`), the notebooks'
status line, which warns when a key package differs (`notebook.version_mismatches`), and the
catalog's banners and README (`curriculum.catalog.tested_with`). Standard library only.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from mtrl_course import config

LOCK_FILE = config.REPO_ROOT / "requirements.lock"
# The packages a notebook's status line and the README name with their versions.
KEY_PACKAGES = ("boto3", "sagemaker-train", "strands-agents", "bedrock-agentcore", "mlflow")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;]+)")


def requirement_name(requirement: str) -> str:
    """The normalised distribution name of a requirement line (PEP 503): `Strands_Agents[x]>=1` -> `strands-agents`."""
    name = re.split(r"[\s\[<>=!~;@(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def tested_versions(lock_file: Path = LOCK_FILE, *, unconditional_only: bool = False) -> dict[str, str]:
    """name -> version of every `name==version` line of the lock (the tested set), names normalised.

    `unconditional_only` leaves out the lines with an environment marker (`; sys_platform == ...`):
    judging one needs `packaging`, which notebook 00's install check must not import, and pip
    skips the markers that do not apply. Standard library only, for that check.
    """
    versions: dict[str, str] = {}
    for raw in Path(lock_file).read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        match = _PIN.match(line)
        if match and not (unconditional_only and ";" in line):
            versions[requirement_name(match.group(1))] = match.group(3)
    return versions


@cache
def key_versions() -> dict[str, str]:
    """`name -> version` of the key packages the lock pins, in `KEY_PACKAGES`' order.

    The lock, not the running environment, so a banner reads the same on every machine.
    """
    pins = tested_versions()
    return {name: pins[requirement_name(name)] for name in KEY_PACKAGES if requirement_name(name) in pins}
