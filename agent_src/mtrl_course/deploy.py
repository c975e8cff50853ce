"""Deploying the agent: the AgentCore project's settings, the code bundle, and their offline check.

The AgentCore CLI's project root is `agent_src/`; its configuration sits in `agent_src/agentcore/`.
On `agentcore deploy` the CLI takes the directory named by the runtime's `codeLocation` (resolved
against the project root), installs the dependencies listed in that directory's `pyproject.toml`
next to the code (Linux ARM64 wheels, with uv), zips the result and runs the runtime's entrypoint
from the zip root. `build_bundle()` writes that directory from `wordle_agent` alone, so nothing of
the course toolkit ships and the agent imports nothing it would not have in the runtime.

`check_config_files()` checks `agentcore.json` and `aws-targets.json` with the CLI's own zod
schemas. The CLI cannot be installed here (some of its npm dependencies are unpublished), so the
check fetches only the CLI's tarball and zod into a git-ignored cache and runs a small Node script.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from mtrl_course import config
from mtrl_course.config import REPO_ROOT
from mtrl_course.lockfile import LOCK_FILE, requirement_name, tested_versions

# ------------------------------------------------------------------------------ the project
AGENT_SRC_DIR = REPO_ROOT / "agent_src"
AGENTCORE_DIR = AGENT_SRC_DIR / "agentcore"
PROJECT_FILE = AGENTCORE_DIR / "agentcore.json"
TARGETS_FILE = AGENTCORE_DIR / "aws-targets.json"
AGENT_PACKAGE = "wordle_agent"
AGENT_PACKAGE_DIR = AGENT_SRC_DIR / AGENT_PACKAGE
REQUIREMENTS_NAME = "requirements.txt"
CDK_PACKAGE_FILE = AGENTCORE_DIR / "cdk" / "package.json"
CDK_NPM_PACKAGE = "@aws/agentcore-cdk"
# The version the CLI's own CDK project template (dist/assets/cdk/package.json of
# @aws/agentcore 0.30.0) pins exactly; a range would let a deploy take a newer alpha.
CLI_TESTED_CDK_VERSION = "0.1.0-alpha.53"

# Without this policy on the runtime's execution role every rollout fails with AccessDenied on
# the Job Runtime (sampling, CompleteRollout, UpdateReward). agentcore.json attaches it through
# the runtime's `additionalPolicies`.
JOB_RUNTIME_POLICY_ARN = "arn:aws:iam::aws:policy/AmazonSageMakerJobRuntimeAccess"

# ------------------------------------------------------------------------------- the bundle
BUNDLE_MANIFEST_NAME = "pyproject.toml"
# The CLI searches upward from codeLocation for pyproject.toml: without one in the bundle it
# would find the course's own (numpy, pandas, mlflow, jupyter...) and ship all of it.
BUNDLE_PROJECT_NAME = "wordle-agent-runtime"
BUNDLE_PROJECT_VERSION = "0.1.0"
BUNDLE_REQUIRES_PYTHON = ">=3.10"
# With instrumentation.enableOtel (the CLI's default) the runtime starts the entrypoint through
# `opentelemetry-instrument`; without the distro installed that command does not exist and the
# runtime never becomes healthy. Same range as the CLI's own Python templates.
OTEL_DISTRO_REQUIREMENT = "aws-opentelemetry-distro ~= 0.18.0"
ENTRYPOINT_SHIM = '''\
"""AgentCore entrypoint, written by mtrl_course.deploy: runs wordle_agent.main as the program.

The CodeZip runtime executes this file from the bundle root, where wordle_agent and its installed
dependencies sit. Running the module as __main__ (instead of importing it and calling app.run())
keeps its start-up code, which sends rollout progress to the runtime's logs.
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("wordle_agent.main", run_name="__main__", alter_sys=True)
else:
    # Imported by a check rather than run by the runtime: expose the app it would serve.
    from wordle_agent.main import app  # noqa: F401
'''
# Never copied from the agent package: caches, editor and notebook leftovers, tests.
SKIPPED_DIR_NAMES = frozenset({"__pycache__", "tests", "test"})
SKIPPED_FILE_SUFFIXES = (".pyc", ".pyo", ".ipynb")
SKIPPED_FILE_PATTERN = re.compile(r"^(test_.*\.py|.*_test\.py|conftest\.py)$")
# What the CLI itself leaves out of the zip; the manifest mirrors it so it lists what ships.
CLI_EXCLUDED_NAMES = frozenset({".git", ".venv", "__pycache__", ".pytest_cache", ".DS_Store", "node_modules"})

# ------------------------------------------------------------------ the offline schema check
CLI_NPM_PACKAGE = "@aws/agentcore"
CLI_VERSION = "0.30.0"
# Integrity strings as the npm registry publishes them; a fetched tarball that differs is refused.
CLI_TARBALL_INTEGRITY = (
    "sha512-V094GyPZsT0fowb5QNPvnOvWLKBjmKK56sZSEAqbKtpZUxq3jmyCS4efouI2/Ei1sYR79Tp/rQVjbXGeASqJwg=="
)
# The CLI's schemas are written for zod 4; 4.4.3 is the version its npm-shrinkwrap.json locks.
ZOD_NPM_PACKAGE = "zod"
ZOD_VERSION = "4.4.3"
ZOD_TARBALL_INTEGRITY = (
    "sha512-ytENFjIJFl2UwYglde2jchW2Hwm4GJFLDiSXWdTrJQBIN9Fcyp7n4DhxJEiWNAJMV1/BqWfW/kkg71UDcHJyTQ=="
)
SCHEMA_CACHE_DIR = REPO_ROOT / ".cache" / f"agentcore-cli-{CLI_VERSION}"
SCHEMA_RUNNER = Path(__file__).with_name("agentcore_schema_check.mjs")
# Only the schema module (and its licence) is unpacked from the 2.6 MB CLI tarball.
CLI_MEMBERS_KEPT = (
    "package/dist/schema/",
    "package/package.json",
    "package/LICENSE",
    "package/dist/assets/cdk/package.json",
)
SCHEMA_ENTRY = Path("dist") / "schema" / "index.js"
CONFIG_KINDS = ("project", "targets")
NPM_TIMEOUT_SECONDS = 180.0
NODE_TIMEOUT_SECONDS = 60.0
NPM_ERROR_LINES = 4
# npm's update notice, funding and audit messages need the network and clutter errors.
NPM_QUIET_ENV = {
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "npm_config_loglevel": "error",
}


# ================================================================================ project
def load_project(project_file: Path = PROJECT_FILE) -> dict:
    """agentcore.json as a dict."""
    try:
        return json.loads(Path(project_file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no AgentCore project file at {project_file}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{project_file} is not valid JSON: {error}") from None


def agent_runtime(project: dict) -> dict:
    """The project's one runtime entry (the course deploys exactly one agent)."""
    runtimes = project.get("runtimes") or []
    if len(runtimes) != 1:
        names = [runtime.get("name") for runtime in runtimes]
        raise ValueError(f"agentcore.json must define exactly one runtime, found {names}")
    return runtimes[0]


def bundle_dir(project_file: Path = PROJECT_FILE) -> Path:
    """Where the CLI reads the runtime's code: codeLocation, relative to the project root.

    The project root is the parent of the `agentcore/` directory holding agentcore.json (the CLI
    resolves codeLocation the same way; an absolute codeLocation is taken as is).
    """
    project_file = Path(project_file).resolve()
    code_location = Path(agent_runtime(load_project(project_file))["codeLocation"])
    if code_location.is_absolute():
        return code_location
    return (project_file.parent.parent / code_location).resolve()


def deployed_runtime_name(project_file: Path = PROJECT_FILE) -> str:
    """The runtime's name in AgentCore: `<project>_<runtime>`; its ARN ends `runtime/<name>-<id>`.

    IAM policies for the training job should match `runtime/<name>-*` so they survive a redeploy.
    """
    project = load_project(project_file)
    return f"{project['name']}_{agent_runtime(project)['name']}"


# ================================================================================= targets
TARGET_NAME = "default"
TARGET_DESCRIPTION = "Your account and Region; the training job must run in the same Region"


def write_targets(account: str, region: str, targets_file: Path = TARGETS_FILE, *, name: str = TARGET_NAME) -> dict:
    """Write `aws-targets.json` with one target for `account` in `region`; returns the target.

    The file ships with the placeholder account; `agentcore deploy` would otherwise deploy to the
    account it names (or refuse), and CreateJob rejects a runtime in another Region than the job.
    """
    if not re.fullmatch(r"\d{12}", str(account)):
        raise ValueError(f"account must be a 12-digit AWS account ID, got {account!r}")
    if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", str(region)):
        raise ValueError(f"region must be an AWS Region such as us-west-2, got {region!r}")
    target = {"name": name, "description": TARGET_DESCRIPTION, "account": str(account), "region": str(region)}
    Path(targets_file).write_text(json.dumps([target], indent=2) + "\n", encoding="utf-8")
    return target


def configure_targets(session: Any | None = None, targets_file: Path = TARGETS_FILE) -> dict:
    """Put the caller's account and the session's Region into `aws-targets.json` (live: before deploy)."""
    if session is None:
        from mtrl_course import aws

        session = aws.session()
    account = session.client("sts").get_caller_identity()["Account"]
    region = session.region_name
    if not region:
        raise ValueError(f"no AWS Region is configured: {config.REGION_ADVICE}, then deploy again")
    return write_targets(account, region, targets_file)


# ================================================================================= bundle
def read_requirements(requirements_file: Path) -> list[str]:
    """Requirement lines of a requirements.txt, comments and blanks dropped, order kept."""
    requirements: list[str] = []
    lines = Path(requirements_file).read_text(encoding="utf-8").splitlines()
    for number, raw in enumerate(lines, start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith("-"):
            # pyproject.toml dependencies cannot carry pip options (-r, -e, --index-url ...).
            raise ValueError(
                f"{requirements_file}:{number}: {line!r} is a pip option; list plain "
                "requirements only, the AgentCore build reads them into pyproject.toml"
            )
        if line not in requirements:
            requirements.append(line)
    return requirements


def pin_requirement(requirement: str, versions: Mapping[str, str]) -> str:
    """`name[extras]==<tested version>` when the lock has it (the range is checked), else unchanged."""
    from packaging.requirements import Requirement

    parsed = Requirement(requirement)
    version = versions.get(requirement_name(parsed.name))
    if version is None:
        return requirement
    if parsed.specifier and not parsed.specifier.contains(version, prereleases=True):
        raise ValueError(f"{requirement!r} does not admit the tested version {version} (requirements.lock)")
    extras = f"[{','.join(sorted(parsed.extras))}]" if parsed.extras else ""
    marker = f"; {parsed.marker}" if parsed.marker else ""
    return f"{parsed.name}{extras}=={version}{marker}"


def bundle_requirements(requirements_file: Path, *, with_otel: bool, lock_file: Path | None = LOCK_FILE) -> list[str]:
    """The bundle's dependency list: the agent's requirements pinned to the tested versions
    (requirements.lock), plus the OTel distro when needed.

    A deploy resolves the bundle afresh for Linux ARM64; with the ranges alone it would pick up
    whatever was released since the course was tested. Transitive dependencies still float (the
    lock is for this machine's platform): docs/LIVE_CHECKLIST.md says how to see what was built.
    """
    requirements = read_requirements(requirements_file)
    if lock_file is not None and Path(lock_file).is_file():
        versions = tested_versions(lock_file)
        requirements = [pin_requirement(r, versions) for r in requirements]
    otel_name = requirement_name(OTEL_DISTRO_REQUIREMENT)
    if with_otel and otel_name not in {requirement_name(r) for r in requirements}:
        requirements.append(OTEL_DISTRO_REQUIREMENT)
    return requirements


def render_pyproject(requirements: Sequence[str]) -> str:
    """The bundle's pyproject.toml: static metadata the CLI's `uv pip install -r` can read."""
    # json.dumps produces valid TOML basic strings for requirement text.
    dependency_lines = "".join(f"    {json.dumps(r)},\n" for r in requirements)
    return (
        "# Written by mtrl_course.deploy.build_bundle from "
        f"agent_src/{AGENT_PACKAGE}/{REQUIREMENTS_NAME}; do not edit.\n"
        "# `agentcore deploy` installs these (Linux ARM64 wheels) next to the code.\n"
        "[project]\n"
        f"name = {json.dumps(BUNDLE_PROJECT_NAME)}\n"
        f"version = {json.dumps(BUNDLE_PROJECT_VERSION)}\n"
        f"requires-python = {json.dumps(BUNDLE_REQUIRES_PYTHON)}\n"
        f"dependencies = [\n{dependency_lines}]\n"
    )


def _is_skipped(path: Path) -> bool:
    if path.name.startswith("."):
        return True
    if path.is_dir():
        return path.name in SKIPPED_DIR_NAMES or path.name.endswith(".egg-info")
    return path.name.endswith(SKIPPED_FILE_SUFFIXES) or bool(SKIPPED_FILE_PATTERN.match(path.name))


def _agent_files(package_dir: Path) -> list[Path]:
    """Files of the agent package to ship, relative to it, sorted."""
    found: list[Path] = []
    pending = [package_dir]
    while pending:
        directory = pending.pop()
        for entry in directory.iterdir():
            if _is_skipped(entry):
                continue
            if entry.is_dir():
                pending.append(entry)
            elif entry.is_file():
                found.append(entry.relative_to(package_dir))
    return sorted(found, key=lambda p: p.as_posix())


def _is_previous_bundle(directory: Path) -> bool:
    manifest = directory / BUNDLE_MANIFEST_NAME
    return manifest.is_file() and f"name = {json.dumps(BUNDLE_PROJECT_NAME)}" in manifest.read_text(encoding="utf-8")


def _clear_output(out_dir: Path) -> None:
    """Empty out_dir, but only if it holds nothing or a bundle written here before."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise NotADirectoryError(f"bundle output {out_dir} exists and is not a directory")
    if any(out_dir.iterdir()) and not _is_previous_bundle(out_dir):
        # Clearing it would delete whatever this is; a stale path is the likely mistake.
        raise FileExistsError(
            f"refusing to overwrite {out_dir}: it is not empty and holds no "
            f"{BUNDLE_MANIFEST_NAME} for {BUNDLE_PROJECT_NAME}; pass an empty or new directory"
        )
    for entry in out_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def build_bundle(
    out_dir: Path | None = None,
    *,
    project_file: Path = PROJECT_FILE,
    package_dir: Path = AGENT_PACKAGE_DIR,
) -> Path:
    """Write the AgentCore code bundle and return its directory.

    Contents: the agent package (code, data files, requirements.txt; no caches or tests), an
    entrypoint shim named after the runtime's entrypoint (run as a script it runs
    `wordle_agent.main` as the program; imported, it exposes `app`), and pyproject.toml with the
    dependencies. `out_dir` defaults to the codeLocation of
    agentcore.json; it is emptied first (only if empty already or a previous bundle), so the
    output is the same for the same sources.
    """
    project_file = Path(project_file)
    package_dir = Path(package_dir)
    runtime = agent_runtime(load_project(project_file))
    out_dir = Path(out_dir) if out_dir is not None else bundle_dir(project_file)
    requirements_file = package_dir / REQUIREMENTS_NAME
    if not (package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"{package_dir} is not a Python package (no __init__.py)")
    if not requirements_file.is_file():
        raise FileNotFoundError(f"the agent has no dependency list at {requirements_file}")
    # "main.py:handler" names a file and a function; the file is what the runtime executes.
    entry_file = runtime["entrypoint"].split(":", 1)[0]
    with_otel = (runtime.get("instrumentation") or {}).get("enableOtel", True) is not False

    _clear_output(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target_package = out_dir / package_dir.name
    for relative in _agent_files(package_dir):
        destination = target_package / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package_dir / relative, destination)
    (out_dir / entry_file).write_text(ENTRYPOINT_SHIM, encoding="utf-8")
    (out_dir / BUNDLE_MANIFEST_NAME).write_text(
        render_pyproject(bundle_requirements(requirements_file, with_otel=with_otel)),
        encoding="utf-8",
    )
    return out_dir


def bundle_manifest(path: Path) -> list[tuple[str, str]]:
    """(relative path, sha256) of every file the CLI would ship from `path`, sorted by path."""
    root = Path(path)
    rows: list[tuple[str, str]] = []
    for file in root.rglob("*"):
        relative = file.relative_to(root)
        if not file.is_file() or CLI_EXCLUDED_NAMES.intersection(relative.parts):
            continue
        if any(part.startswith(".env") for part in relative.parts):
            continue
        rows.append((relative.as_posix(), hashlib.sha256(file.read_bytes()).hexdigest()))
    return sorted(rows)


# ============================================================================ schema check
class SchemaToolsMissing(RuntimeError):
    """node or npm is not installed, so the CLI's schemas cannot run."""


class SchemaFetchError(RuntimeError):
    """The CLI or zod tarball could not be fetched or did not match its published integrity."""


@dataclass(frozen=True)
class SchemaIssue:
    path: str
    message: str
    expected: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchemaResult:
    kind: str
    file: Path
    ok: bool
    issues: tuple[SchemaIssue, ...]

    def messages(self) -> list[str]:
        return [f"{issue.path}: {issue.message}" for issue in self.issues]


def _require_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SchemaToolsMissing(
            f"{name} is not on PATH; install Node.js 20+ with npm to check the AgentCore "
            "configuration against the CLI's schemas"
        )
    return found


def _integrity(tarball: Path) -> str:
    digest = hashlib.sha512(tarball.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode("ascii")


def _npm_pack(spec: str, integrity: str, workdir: Path, timeout: float) -> Path:
    """Download one package tarball with `npm pack` into workdir and verify it."""
    npm = _require_tool("npm")
    env = {**os.environ, **NPM_QUIET_ENV}
    try:
        completed = subprocess.run(
            [npm, "pack", spec],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SchemaFetchError(
            f"`npm pack {spec}` did not finish within {timeout:.0f} s; is the npm registry "
            "reachable? (a finished fetch is cached, later runs need no network)"
        ) from None
    tarballs = sorted(workdir.glob("*.tgz"))
    if completed.returncode != 0 or len(tarballs) != 1:
        # npm names the cause (error code, failing request) first, then a stack trace.
        lines = (completed.stderr or completed.stdout).strip().splitlines()
        cause = "\n".join([line for line in lines if " at " not in line][:NPM_ERROR_LINES])
        raise SchemaFetchError(f"`npm pack {spec}` failed (exit {completed.returncode}):\n{cause}")
    tarball = tarballs[0]
    actual = _integrity(tarball)
    if actual != integrity:
        raise SchemaFetchError(f"{spec} tarball has integrity {actual}, expected the published {integrity}")
    return tarball


def _unpack(tarball: Path, destination: Path, keep: Iterable[str] | None = None) -> None:
    """Extract the tarball's `package/` tree, optionally only members under the `keep` prefixes."""
    keep = tuple(keep) if keep is not None else None
    with tarfile.open(tarball, "r:gz") as archive:
        members = [member for member in archive.getmembers() if keep is None or member.name.startswith(keep)]
        # The "data" filter rejects absolute paths, links out of the tree and device files.
        archive.extractall(destination, members=members, filter="data")


def ensure_cli_schemas(cache_dir: Path = SCHEMA_CACHE_DIR, *, timeout: float = NPM_TIMEOUT_SECONDS) -> Path:
    """The unpacked CLI package holding dist/schema (with zod beside it), fetched once and cached.

    Layout: `<cache_dir>/package/` (from the CLI tarball) and `<cache_dir>/node_modules/zod/`,
    where Node's module lookup from the schema files finds zod. The cache is written in a sibling
    temporary directory and renamed into place, so an interrupted fetch never looks complete.
    """
    cache_dir = Path(cache_dir)
    package_dir = cache_dir / "package"
    if (package_dir / SCHEMA_ENTRY).is_file() and (cache_dir / "node_modules" / "zod").is_dir():
        return package_dir
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir.parent, prefix=".fetch-") as scratch_name:
        scratch = Path(scratch_name)
        staging = scratch / "staged"
        fetches = (
            (f"{CLI_NPM_PACKAGE}@{CLI_VERSION}", CLI_TARBALL_INTEGRITY, staging, CLI_MEMBERS_KEPT),
            (f"{ZOD_NPM_PACKAGE}@{ZOD_VERSION}", ZOD_TARBALL_INTEGRITY, scratch / "zod", None),
        )
        for index, (spec, integrity, unpack_to, keep) in enumerate(fetches):
            # One directory per download: the tarball is found as the only *.tgz in it.
            download = scratch / f"download-{index}"
            download.mkdir()
            _unpack(_npm_pack(spec, integrity, download, timeout), unpack_to, keep)
        (staging / "node_modules").mkdir()
        (scratch / "zod" / "package").rename(staging / "node_modules" / "zod")
        if cache_dir.exists():
            # A partial cache from an older layout; the fresh copy replaces it.
            shutil.rmtree(cache_dir)
        staging.rename(cache_dir)
    return package_dir


def check_config_files(
    files: Sequence[tuple[str, Path]],
    *,
    cache_dir: Path = SCHEMA_CACHE_DIR,
    timeout: float = NODE_TIMEOUT_SECONDS,
) -> list[SchemaResult]:
    """Check (kind, file) pairs with the CLI's schemas; kind is "project" or "targets"."""
    for kind, file in files:
        if kind not in CONFIG_KINDS:
            raise ValueError(f"unknown config kind {kind!r} for {file}; use one of {CONFIG_KINDS}")
    node = _require_tool("node")
    package_dir = ensure_cli_schemas(cache_dir)
    arguments = [f"{kind}={Path(file).resolve()}" for kind, file in files]
    completed = subprocess.run(
        [node, str(SCHEMA_RUNNER), str(package_dir), *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"the schema runner failed (exit {completed.returncode}): {completed.stderr.strip()}")
    return [
        SchemaResult(
            kind=row["kind"],
            file=Path(row["file"]),
            ok=bool(row["ok"]),
            issues=tuple(
                SchemaIssue(
                    path=issue["path"],
                    message=issue["message"],
                    expected=tuple(issue.get("expected", ())),
                )
                for issue in row["issues"]
            ),
        )
        for row in json.loads(completed.stdout)
    ]


def validate_project(project_file: Path = PROJECT_FILE, targets_file: Path = TARGETS_FILE) -> list[SchemaResult]:
    """The offline stand-in for `agentcore validate`: both project files against the CLI schemas."""
    return check_config_files([("project", project_file), ("targets", targets_file)])


def main() -> int:
    """`python -m mtrl_course.deploy`: build the bundle where agentcore.json points, list it."""
    out = build_bundle()
    for relative, digest in bundle_manifest(out):
        print(f"{digest[:12]}  {relative}")
    print(f"bundle written to {out}; deploy with `agentcore deploy` from {AGENT_SRC_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
