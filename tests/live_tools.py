"""The real external tools the live path runs, installed for the offline tests, and an AWS stub.

tests/test_live_commands.py runs every command of `mtrl_course.commands` through these tools with
no terminal attached, up to the tool's first network call: that call goes to `StubEndpoint`, a
loopback HTTP server that records it (AWS_ENDPOINT_URL points every AWS SDK there; the
credentials are fake) and answers so the tool stops.

- The AgentCore CLI: `npm install @aws/agentcore@<deploy.CLI_VERSION>` (what the README and the
  instructor guide tell a user to run, with a local prefix instead of -g) into the git-ignored
  build/npm/. If the registry lacks `@aws/agent-inspector` (the npm registry this project is
  developed against answers 404 for it), the install is repeated with that one package replaced by
  an empty local one through npm `overrides`: it only holds the inspector web UI's files, which the
  CLI's own tarball ships too (dist/agent-inspector, the first place its bundle looks), and no
  command tested here opens the inspector. `installed.json` records which way it went.
- The course's CDK app (agent_src/agentcore/cdk) with its npm dependencies, compiled with its own
  tsc: `cdk` for notebook 11's commands and the synthesis test of the runtime role. The
  `@aws/agentcore-cdk` version the CLI expects (deploy.CLI_TESTED_CDK_VERSION) is used when the
  registry has it, else CDK_CONSTRUCT_FALLBACK, recorded in `installed.json`.
- The AWS CLI: v2 is not on PyPI; v1 (`awscli`, whose `s3 cp` and `s3 rm` take the same
  arguments) is installed with pip into build/pip/ and run with this interpreter's botocore.

Without node or npm the tests that need them skip, saying so; under CI (CI=...) they fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from mtrl_course import deploy
from mtrl_course.config import REPO_ROOT
from mtrl_course.netguard import GUARD_ENV_VAR

BUILD_DIR = REPO_ROOT / "build"
NPM_DIR = BUILD_DIR / "npm"
PIP_DIR = BUILD_DIR / "pip"
CLI_DIR = NPM_DIR / f"agentcore-cli-{deploy.CLI_VERSION}"
INSTALL_RECORD = "installed.json"
# @aws/agentcore 0.30.0's package.json: "engines": {"node": ">=20"}.
MIN_NODE_MAJOR = 20
INSPECTOR_PACKAGE = "@aws/agent-inspector"
# The newest @aws/agentcore-cdk this project's npm registry served on 2026-12-07 (the CLI's own
# template pins 0.1.0-alpha.53, which it does not have).
CDK_CONSTRUCT_FALLBACK = "0.1.0-alpha.45"
AWSCLI_REQUIREMENTS = ("awscli==1.46.3", "docutils==0.19", "rsa==4.7.2", "colorama==0.4.6", "pyasn1==0.6.5")
NPM_INSTALL_TIMEOUT_S = 900.0
COMPILE_TIMEOUT_S = 300.0
NPM_QUIET = {**deploy.NPM_QUIET_ENV, "npm_config_progress": "false"}


# ------------------------------------------------------------------------------------ tools
def require_node_and_npm() -> None:
    """Skip (fail under CI) unless node >= 20 and npm are on PATH."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    reason = None
    if missing:
        reason = f"{' and '.join(missing)} not on PATH: these tests run the real AgentCore CLI (install Node.js 20+ with npm)"
    else:
        version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
        match = re.match(r"v(\d+)", version)
        if not match or int(match.group(1)) < MIN_NODE_MAJOR:
            reason = f"node {version or '?'} is older than {MIN_NODE_MAJOR}, which @aws/agentcore {deploy.CLI_VERSION} requires"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


@contextlib.contextmanager
def _install_lock(folder: Path) -> Iterator[None]:
    """One installer at a time (pytest-xdist workers share build/)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(args: list[str], cwd: Path, timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **NPM_QUIET, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _tail(completed: subprocess.CompletedProcess, lines: int = 12) -> str:
    text = (completed.stderr or "") + (completed.stdout or "")
    return "\n".join([line for line in text.strip().splitlines() if " at " not in line][-lines:])


def _read_record(folder: Path) -> dict | None:
    try:
        return json.loads((folder / INSTALL_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _replace(staging: Path, final: Path) -> None:
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)


def _npm_install(folder: Path, package: dict) -> dict:
    """`npm install` of `package` (a package.json) in folder; retried once without agent-inspector."""
    (folder / "package.json").write_text(json.dumps(package, indent=2) + "\n", encoding="utf-8")
    completed = _run(["npm", "install", "--no-audit", "--no-fund"], folder, NPM_INSTALL_TIMEOUT_S)
    replaced = []
    output = (completed.stderr or "") + (completed.stdout or "")
    missing_inspector = INSPECTOR_PACKAGE in output or INSPECTOR_PACKAGE.replace("/", "%2f") in output
    if completed.returncode != 0 and "E404" in output and missing_inspector:
        stub = folder / "agent-inspector-empty"
        stub.mkdir(exist_ok=True)
        (stub / "package.json").write_text(
            json.dumps(
                {
                    "name": INSPECTOR_PACKAGE,
                    "version": "0.0.0-empty",
                    "description": "empty stand-in: the registry has no @aws/agent-inspector (tests/live_tools.py)",
                }
            ),
            encoding="utf-8",
        )
        package = {**package, "overrides": {INSPECTOR_PACKAGE: "file:./agent-inspector-empty"}}
        (folder / "package.json").write_text(json.dumps(package, indent=2) + "\n", encoding="utf-8")
        completed = _run(["npm", "install", "--no-audit", "--no-fund"], folder, NPM_INSTALL_TIMEOUT_S)
        replaced = [INSPECTOR_PACKAGE]
    if completed.returncode != 0:
        raise RuntimeError(f"`npm install` in {folder} failed (exit {completed.returncode}):\n{_tail(completed)}")
    return {"replaced_by_empty_packages": replaced}


def _versions() -> dict:
    def version(tool: str) -> str:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, check=False).stdout.strip()

    return {"node": version("node"), "npm": version("npm")}


def install_agentcore_cli() -> Path:
    """The `node_modules/.bin` folder holding `agentcore` at deploy.CLI_VERSION (installed once)."""
    require_node_and_npm()
    bin_dir = CLI_DIR / "node_modules" / ".bin"
    with _install_lock(NPM_DIR):
        if _read_record(CLI_DIR) and (bin_dir / "agentcore").exists():
            return bin_dir
        staging = NPM_DIR / f".staging-cli-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        package = {"private": True, "dependencies": {deploy.CLI_NPM_PACKAGE: deploy.CLI_VERSION}}
        how = _npm_install(staging, package)
        installed = json.loads(
            (staging / "node_modules" / "@aws" / "agentcore" / "package.json").read_text(encoding="utf-8")
        )["version"]
        if installed != deploy.CLI_VERSION:
            raise RuntimeError(f"npm installed @aws/agentcore {installed}, not {deploy.CLI_VERSION}")
        record = {"package": f"{deploy.CLI_NPM_PACKAGE}@{installed}", **how, **_versions()}
        (staging / INSTALL_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        _replace(staging, CLI_DIR)
    return bin_dir


def cli_install_record() -> dict:
    return _read_record(CLI_DIR) or {}


CDK_APP_SOURCE = deploy.AGENTCORE_DIR / "cdk"
CDK_APP_FILES = ("package.json", "tsconfig.json", "cdk.json")
CDK_APP_TREES = ("bin", "lib")


def _cdk_sources_digest() -> str:
    digest = hashlib.sha256()
    for name in CDK_APP_FILES:
        digest.update((CDK_APP_SOURCE / name).read_bytes())
    for tree in CDK_APP_TREES:
        for path in sorted((CDK_APP_SOURCE / tree).rglob("*.ts")):
            digest.update(path.relative_to(CDK_APP_SOURCE).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _construct_version_available(version: str) -> bool:
    completed = _run(["npm", "view", f"{deploy.CDK_NPM_PACKAGE}@{version}", "version"], NPM_DIR, 120.0)
    return completed.returncode == 0 and version in completed.stdout


def install_cdk_app() -> Path:
    """A compiled copy of the course's CDK app: `<root>/agentcore/cdk/`, with node_modules.

    Laid out as in the project (agentcore.json one level up, where the app reads it), under
    build/npm/cdk-app-<digest of the app's sources>/, so an edit to the app rebuilds it.
    """
    require_node_and_npm()
    root = NPM_DIR / f"cdk-app-{_cdk_sources_digest()}"
    app = root / "agentcore" / "cdk"
    with _install_lock(NPM_DIR):
        if _read_record(root) and (app / "dist" / "bin" / "cdk.js").is_file():
            return app
        staging = NPM_DIR / f".staging-cdk-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staged_app = staging / "agentcore" / "cdk"
        staged_app.mkdir(parents=True)
        for name in CDK_APP_FILES:
            shutil.copyfile(CDK_APP_SOURCE / name, staged_app / name)
        for tree in CDK_APP_TREES:
            shutil.copytree(CDK_APP_SOURCE / tree, staged_app / tree)
        package = json.loads((staged_app / "package.json").read_text(encoding="utf-8"))
        pinned = package["dependencies"][deploy.CDK_NPM_PACKAGE]
        construct = pinned if _construct_version_available(pinned) else CDK_CONSTRUCT_FALLBACK
        package["dependencies"][deploy.CDK_NPM_PACKAGE] = construct
        how = _npm_install(staged_app, package)
        compiled = _run([str(staged_app / "node_modules" / ".bin" / "tsc")], staged_app, COMPILE_TIMEOUT_S)
        if compiled.returncode != 0:
            raise RuntimeError(f"tsc failed on the course's CDK app (construct {construct}):\n{_tail(compiled)}")
        aws_cdk = json.loads((staged_app / "node_modules" / "aws-cdk" / "package.json").read_text(encoding="utf-8"))
        record = {
            "construct": f"{deploy.CDK_NPM_PACKAGE}@{construct}",
            "construct_pinned": pinned,
            "aws_cdk": aws_cdk["version"],
            **how,
            **_versions(),
        }
        (staging / INSTALL_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        _replace(staging, root)
    return app


def cdk_install_record(app: Path) -> dict:
    return _read_record(app.parent.parent) or {}


def install_aws_cli() -> Path:
    """A folder holding an `aws` program: AWS CLI v1 from PyPI, run by this interpreter."""
    target = PIP_DIR / ("awscli-" + AWSCLI_REQUIREMENTS[0].split("==")[1])
    bin_dir = target / "course-bin"
    with _install_lock(PIP_DIR):
        if _read_record(target) and (bin_dir / "aws").exists():
            return bin_dir
        staging = PIP_DIR / f".staging-awscli-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        completed = _run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--target",
                str(staging / "site"),
                *AWSCLI_REQUIREMENTS,
            ],
            staging,
            NPM_INSTALL_TIMEOUT_S,
            # pip fetches from the package registry, as npm does for the AgentCore CLI: the suite's
            # network guard (which a Python child installs through its sitecustomize) is off for
            # this one install, and only for it.
            env={GUARD_ENV_VAR: "0"},
        )
        if completed.returncode != 0:
            raise RuntimeError(f"pip could not install the AWS CLI v1:\n{_tail(completed)}")
        (staging / "course-bin").mkdir()
        program = staging / "course-bin" / "aws"
        site = target / "site"
        program.write_text(
            f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" -m awscli "$@"\n',
            encoding="utf-8",
        )
        program.chmod(0o755)
        (staging / INSTALL_RECORD).write_text(
            json.dumps({"requirements": AWSCLI_REQUIREMENTS}) + "\n", encoding="utf-8"
        )
        _replace(staging, target)
    return bin_dir


def fake_uv(folder: Path) -> Path:
    """A `uv` that installs nothing: the construct packs the runtime's code with uv during
    synthesis; the dependency download is not what these tests look at."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "uv"
    program.write_text("#!/bin/sh\n# offline stand-in: installs nothing\nexit 0\n", encoding="utf-8")
    program.chmod(0o755)
    return folder


def cdk_project(cdk_app: Path, where: Path) -> Path:
    """A project around the installed CDK app, in `where`: agentcore.json and aws-targets.json one
    level above the app (where it reads them), the code bundle at codeLocation, and the app's
    folder with links to the installed node_modules and compiled dist/. Returns the app folder."""
    agentcore_dir = where / "agentcore"
    app = agentcore_dir / "cdk"
    app.mkdir(parents=True)
    for name in (deploy.PROJECT_FILE.name, deploy.TARGETS_FILE.name):
        shutil.copyfile(deploy.AGENTCORE_DIR / name, agentcore_dir / name)
    for name in ("cdk.json", "package.json"):
        shutil.copyfile(cdk_app / name, app / name)
    for name in ("node_modules", "dist"):
        (app / name).symlink_to(cdk_app / name, target_is_directory=True)
    project_file = agentcore_dir / deploy.PROJECT_FILE.name
    deploy.build_bundle(deploy.bundle_dir(project_file), project_file=project_file)
    return app


# ------------------------------------------------------------------------------ the AWS stub
STUB_ACCOUNT = "0" * 12  # never the project's account: the AgentCore CLI stops at the check


@dataclass
class StubRequest:
    method: str
    path: str
    action: str  # the Query protocol's Action, or the JSON protocol's X-Amz-Target, or ""


@dataclass
class StubEndpoint:
    """A loopback AWS endpoint: records every request; STS GetCallerIdentity answers `account`,
    everything else 403 AccessDenied, so a tool stops at its first real AWS call."""

    account: str = STUB_ACCOUNT
    requests: list[StubRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                action = (parse_qs(body).get("Action") or [self.headers.get("x-amz-target") or ""])[0]
                stub.requests.append(StubRequest(self.command, self.path, action))
                if action == "GetCallerIdentity":
                    status, payload = (
                        200,
                        (
                            '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                            f"<GetCallerIdentityResult><Arn>arn:aws:iam::{stub.account}:user/stub</Arn>"
                            f"<UserId>AIDASTUB</UserId><Account>{stub.account}</Account></GetCallerIdentityResult>"
                            "<ResponseMetadata><RequestId>stub</RequestId></ResponseMetadata></GetCallerIdentityResponse>"
                        ),
                    )
                else:
                    status, payload = (
                        403,
                        (
                            "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                            "<Message>the offline test's stub endpoint refuses every call</Message></Error>"
                            "<RequestId>stub</RequestId></ErrorResponse>"
                        ),
                    )
                data = payload.encode()
                self.send_response(status)
                self.send_header("content-type", "text/xml")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> StubEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def actions(self) -> list[str]:
        return [request.action or f"{request.method} {request.path.split('?')[0]}" for request in self.requests]


def tool_environment(stub: StubEndpoint, home: Path, *bin_dirs: Path, region: str = "us-east-1") -> dict[str, str]:
    """A clean environment for a tool: fake credentials, every AWS endpoint at the stub, a scratch
    home, the given tool folders first on PATH; nothing of the developer's own AWS setup."""
    config_dir = home / ".agentcore"
    config_dir.mkdir(parents=True, exist_ok=True)
    # The CLI checks the registry for a newer version at start unless it did so within a day
    # (update-check.json): recorded as just done, so the only network call is the one under test.
    (config_dir / "update-check.json").write_text(
        json.dumps({"lastCheck": int(time.time() * 1000), "latestVersion": deploy.CLI_VERSION}), encoding="utf-8"
    )
    path = os.pathsep.join([*(str(b) for b in bin_dirs), os.environ.get("PATH", "")])
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "AGENTCORE_CONFIG_DIR": str(config_dir),
        "AGENTCORE_TELEMETRY_DISABLED": "1",
        "CDK_DISABLE_VERSION_CHECK": "1",
        "NO_COLOR": "1",
        "AWS_ACCESS_KEY_ID": "offline-test-stub-key",
        "AWS_SECRET_ACCESS_KEY": "offline-test-stub-secret",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_ENDPOINT_URL": stub.url,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(home / "aws-config-none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-credentials-none"),
        **{k: v for k, v in NPM_QUIET.items()},
    }
