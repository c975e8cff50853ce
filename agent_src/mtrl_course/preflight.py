"""Preflight: is this environment ready for the course, and what stands in for AWS offline?

`run_preflight()` returns one table (check, status, detail, fix). It gathers facts first
(`gather_facts`: the only part that calls AWS or the system) and judges them with pure
functions (`judge`), so every verdict can be tested with made-up facts and no network.

Live it checks what the walkthrough's prerequisites need: credentials, who you are (account
masked), whether the SageMaker API serves the AgentRFT job category to this account (a read-only
ListJobSchemaVersions, before anything bills), a Region where the base model is offered, a
botocore that knows the `CreateJob` operation,
the default job quotas (one training and one evaluation job at a time) against the jobs already
running, and the tools `agentcore deploy` needs. Offline it runs the same AWS calls against the
offline backend and lists what stands in for what.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course import config, lockfile
from mtrl_course.iam import mask_account

# --- what the checks compare against -------------------------------------------------------------

# The base models and Regions documented for multi-turn RL (aws-docs.md §1.2, "Supported
# models, pricing, and regions").
MODEL_REGIONS: dict[str, tuple[str, ...]] = {
    "Nova Lite 2.0": ("us-east-1", "us-west-2"),
    "GPT-OSS-20B": ("us-east-1", "us-west-2"),
    "Gemma-4-31B-it": ("us-west-2",),
    "Qwen 3.6 27B": ("us-west-2",),
}
COURSE_MODEL = "GPT-OSS-20B"
# First botocore with the SageMaker CreateJob operation: absent in 1.43.19, present in 1.43.20.
# Measured for the course by bisecting botocore's published wheels (a third-party note says
# 1.43.37, which is wrong). To repeat it for one version V: `pip download --no-deps botocore==V`,
# unzip the wheel and look for "CreateJob" in botocore/data/sagemaker/*/service-2.json.
# At 1.43.20 the JobCategory enum holds only AgentRFT and AgentRFTEvaluation.
MIN_BOTOCORE = (1, 43, 20)
JOB_OPERATION = "CreateJob"
# Default quotas, adjustable (aws-docs.md §1.9, dg/model-customize-mtrl-quotas.html).
JOB_QUOTAS: dict[str, tuple[str, int]] = {
    "AgentRFT": ("training jobs", 1),
    "AgentRFTEvaluation": ("evaluation jobs", 1),
}
RUNNING_STATUS = "InProgress"
# Account enablement. A third-party Wordle sample reports that an account not enabled for AgentRFT
# gets a bare AccessDenied on CreateJob; no AWS document we have says enablement is needed or how
# it shows. The earliest read-only, free call that involves the job category is
# ListJobSchemaVersions(JobCategory="AgentRFT") (in botocore's sagemaker model beside CreateJob;
# errors: ResourceNotFound). What it answers for a not-enabled account is not confirmed: see
# check_agentrft_enabled and docs/LIVE_CHECKLIST.md.
ENABLEMENT_CATEGORY = "AgentRFT"
ENABLEMENT_OPERATION = "ListJobSchemaVersions"
DENIED_CODES = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")
NOT_OFFERED_CODES = ("ResourceNotFound", "ValidationException")
# The AgentCore CLI needs Node 20 or later (aws-docs.md §3.3).
MIN_NODE_MAJOR = 20
NODE_TIMEOUT_S = 10.0
CLI_VERSION_TIMEOUT_S = 60.0  # node starting an 8 MB bundle on a busy machine
# SageMaker Studio spaces carry this file; elsewhere it does not exist.
STUDIO_METADATA_FILE = Path("/opt/ml/metadata/resource-metadata.json")

OK, WARN, FAIL, INFO, STAND_IN = "ok", "warn", "fail", "info", "stand-in"
COLUMNS = ("check", "status", "detail", "fix")


@dataclass(frozen=True)
class Check:
    """One row of the preflight table."""

    check: str
    status: str
    detail: str
    fix: str = ""


@dataclass
class Facts:
    """Everything the verdicts depend on; `gather_facts` fills it, tests build it by hand."""

    live: bool
    region: str | None = None
    credential_source: str | None = None
    identity_arn: str | None = None
    identity_error: str | None = None
    botocore_version: str = "0"
    knows_create_job: bool = False
    running_jobs: dict[str, int | None] = field(default_factory=dict)
    jobs_error: str | None = None
    schema_versions: list[str] | None = None  # ListJobSchemaVersions(AgentRFT); None: not asked or failed
    schema_error_code: str | None = None
    schema_error: str | None = None
    node_version: str | None = None
    agentcore_cli: str | None = None
    agentcore_cli_version: str | None = None  # what `agentcore --version` printed; None: not run
    uv: str | None = None
    versions: dict[str, str] = field(default_factory=dict)


# --- pure verdicts ----------------------------------------------------------------------------------


def version_tuple(version: str) -> tuple[int, ...]:
    """(1, 44, 8) for "1.44.8"; stops at the first part that is not a number ("1.43.20rc1" -> 1, 43)."""
    parts = []
    for part in version.strip().lstrip("v").split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def models_in_region(region: str | None) -> list[str]:
    """The documented MTRL base models offered in `region`, in the documentation's order."""
    return [model for model, regions in MODEL_REGIONS.items() if region in regions]


def check_credentials(source: str | None) -> Check:
    if source is None:
        return Check(
            "credentials",
            FAIL,
            "no AWS credentials found",
            "run `aws configure` or `aws sso login`, or open the course in a SageMaker Studio space",
        )
    return Check("credentials", OK, f"found ({source})")


def check_identity(arn: str | None, error: str | None) -> Check:
    if arn is None:
        return Check(
            "caller identity",
            FAIL,
            f"sts:GetCallerIdentity failed: {mask_account(error or 'no answer')}",
            "refresh your credentials (expired SSO sessions are the usual cause)",
        )
    return Check("caller identity", OK, mask_account(arn))


def check_region(region: str | None, model: str = COURSE_MODEL) -> Check:
    if not region:
        return Check("Region", FAIL, "no Region set", config.REGION_ADVICE)
    offered = models_in_region(region)
    if model in offered:
        return Check("Region", OK, f"{region} offers {model}")
    if offered:
        return Check(
            "Region",
            WARN,
            f"{region} offers {', '.join(offered)} but not {model}, the course's model",
            f"use one of {', '.join(MODEL_REGIONS[model])}",
        )
    return Check(
        "Region",
        FAIL,
        f"{region} offers no multi-turn RL base model",
        f"use one of {', '.join(MODEL_REGIONS[model])} (agent, data and job must share it)",
    )


def check_models(region: str | None) -> Check:
    offered = models_in_region(region)
    if not offered:
        return Check(
            "base models in Region", FAIL, f"none documented for {region or 'no Region'}", "use us-east-1 or us-west-2"
        )
    return Check("base models in Region", OK, ", ".join(offered) + " (documented matrix)")


def check_botocore(version: str, knows_create_job: bool) -> Check:
    floor = ".".join(map(str, MIN_BOTOCORE))
    if knows_create_job and version_tuple(version) >= MIN_BOTOCORE:
        return Check("botocore knows CreateJob", OK, f"botocore {version} (needs {floor} or later)")
    reason = "has no CreateJob operation" if not knows_create_job else f"is older than {floor}"
    return Check(
        "botocore knows CreateJob",
        FAIL,
        f"botocore {version} {reason}",
        "reinstall from requirements.lock (`make venv`, or the install cell of this notebook in Studio)",
    )


def check_agentrft_enabled(versions: list[str] | None, code: str | None = None, error: str | None = None) -> Check:
    """Does the SageMaker API serve the AgentRFT job category to this account? (read-only, free)

    An answer with schema versions means the category exists here for you; it does not prove that
    CreateJob will be allowed. A refusal is either your IAM (sagemaker:ListJobSchemaVersions,
    which notebook 01's caller policy grants) or an account not enabled: the call cannot tell
    which, so the fix says what to check first.
    """
    name = "AgentRFT available to this account"
    call = f"{ENABLEMENT_OPERATION}(JobCategory={ENABLEMENT_CATEGORY})"
    if versions:
        return Check(
            name,
            OK,
            f"{call} lists schema {', '.join(versions)}; whether CreateJob is allowed shows only when a job starts",
        )
    if code in DENIED_CODES:
        return Check(
            name,
            WARN,
            f"{call} was refused: {mask_account(error or code)}",
            "if your IAM allows sagemaker:ListJobSchemaVersions (notebook 01's caller policy does), the account "
            "may not be enabled for AgentRFT: ask your AWS account team or AWS Support before launching any job",
        )
    if versions is not None or code in NOT_OFFERED_CODES:
        return Check(
            name,
            FAIL,
            f"{call} found no AgentRFT job schemas{': ' + mask_account(error) if error else ''}",
            "AgentRFT is not offered to this account in this Region: use us-east-1 or us-west-2, or ask your AWS "
            "account team to enable it",
        )
    return Check(
        name,
        WARN,
        f"{call} could not be asked: {mask_account(error or 'unknown error')}",
        "check credentials and network",
    )


def check_quota(category: str, running: int | None, error: str | None = None) -> Check:
    label, limit = JOB_QUOTAS[category]
    name = f"quota: {label} at a time"
    if running is None:
        return Check(
            name,
            WARN,
            f"could not list {category} jobs: {mask_account(error or 'unknown error')}",
            "check that your account can call sagemaker:ListJobs (and is enabled for AgentRFT)",
        )
    detail = f"default quota {limit} (adjustable); {running} running now"
    if running >= limit:
        return Check(
            name,
            WARN,
            detail,
            "a new job fails with ResourceLimitExceeded until the running one ends; wait, or request an increase in Service Quotas",
        )
    return Check(name, OK, detail)


def check_node(version: str | None) -> Check:
    if version is None:
        return Check("Node.js (AgentCore CLI)", WARN, "node not found", "install Node.js 20+ before notebook 02")
    major = version_tuple(version)[:1]
    if major and major[0] >= MIN_NODE_MAJOR:
        return Check("Node.js (AgentCore CLI)", OK, f"node {version}")
    return Check(
        "Node.js (AgentCore CLI)",
        WARN,
        f"node {version} is older than {MIN_NODE_MAJOR}",
        f"install Node.js {MIN_NODE_MAJOR}+ before notebook 02",
    )


def check_agentcore_cli(path: str | None, version: str | None) -> Check:
    """The CLI on PATH, at the version whose flags and terminal checks the course was tested with.

    Another version may name its flags differently or prompt where 0.30.0 does not; the deploy
    cell would then stop at once (docs/LIVE_CHECKLIST.md, External commands).
    """
    from mtrl_course import deploy

    name = "AgentCore CLI"
    install = f"npm install -g {deploy.CLI_NPM_PACKAGE}@{deploy.CLI_VERSION}"
    if path is None:
        return Check(name, WARN, "not on PATH", f"{install} (needed in notebook 02)")
    if version == deploy.CLI_VERSION:
        return Check(name, OK, f"{version} on PATH")
    shown = version or "unknown (`agentcore --version` failed)"
    return Check(
        name,
        WARN,
        f"version {shown}; the course was tested with {deploy.CLI_VERSION}",
        f"{install} (another version may take other flags)",
    )


def check_tool(name: str, path: str | None, install: str) -> Check:
    if path is None:
        return Check(name, WARN, "not on PATH", f"{install} (needed in notebook 02)")
    return Check(name, OK, "on PATH")


def stand_ins(versions: Mapping[str, str]) -> list[Check]:
    """Offline: what plays the part of each AWS service, and in which version."""

    def v(name: str) -> str:
        return versions.get(name, "?")

    return [
        Check(
            "mode",
            INFO,
            "offline: no AWS account, no network beyond loopback",
            "set MTRL_MODE=live to use your AWS account",
        ),
        Check("credentials", STAND_IN, "fake keys that only moto and the local stand-ins accept"),
        Check(
            "AWS control plane",
            STAND_IN,
            f"moto {v('moto')}: IAM, STS, S3, CloudFormation, CloudWatch Logs, model packages",
        ),
        Check(
            "SageMaker MTRL service",
            STAND_IN,
            "local service (mtrl_course.local.service): CreateJob/DescribeJob/ListJobs/StopJob with the service's checks and quotas",
        ),
        Check(
            "SageMaker Job Runtime",
            STAND_IN,
            "loopback emulator (mtrl_course.local.job_runtime_emulator): OpenAI-compatible sampling, bearer tokens, rewards",
        ),
        Check("AgentCore runtime", STAND_IN, "the real agent app served on 127.0.0.1 (mtrl_course.local.agent_server)"),
        Check(
            "policy model",
            STAND_IN,
            "a small learnable stand-in policy (mtrl_course.local.stand_in_policy), not gpt-oss: its numbers are its own",
        ),
        Check(
            "AWS managed policies",
            STAND_IN,
            "customer-managed copies of the same name in the moto account (created in notebook 01)",
        ),
        Check("MLflow app", STAND_IN, f"local sqlite store, MLflow {v('mlflow')}"),
    ]


def judge(facts: Facts) -> list[Check]:
    """The preflight rows for these facts, in reading order."""
    rows: list[Check] = []
    if facts.live:
        rows.append(check_credentials(facts.credential_source))
    else:
        rows += stand_ins(facts.versions)
    rows.append(check_identity(facts.identity_arn, facts.identity_error))
    if facts.identity_arn and facts.knows_create_job:
        rows.append(check_agentrft_enabled(facts.schema_versions, facts.schema_error_code, facts.schema_error))
    rows.append(check_region(facts.region))
    rows.append(check_models(facts.region))
    rows.append(check_botocore(facts.botocore_version, facts.knows_create_job))
    for category in JOB_QUOTAS:
        rows.append(check_quota(category, facts.running_jobs.get(category), facts.jobs_error))
    if facts.live:
        rows.append(check_node(facts.node_version))
        rows.append(check_agentcore_cli(facts.agentcore_cli, facts.agentcore_cli_version))
        rows.append(check_tool("uv", facts.uv, "install uv (https://docs.astral.sh/uv/)"))
    return rows


def summary(rows: Sequence[Check]) -> str:
    """One line: how many checks passed, and whether anything blocks the live path."""
    failed = [r.check for r in rows if r.status == FAIL]
    warned = [r.check for r in rows if r.status == WARN]
    if failed:
        return f"preflight: {len(failed)} failed ({', '.join(failed)}); fix these before running live cells"
    if warned:
        return f"preflight: passed with {len(warned)} warning(s) ({', '.join(warned)})"
    return "preflight: all checks passed"


# --- gathering facts (the only part with side effects) ------------------------------------------------


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def _short_error(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"{code}: {text}" if code else text


def _node_version() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\d+(?:\.\d+)*", out.stdout)
    return match.group(0) if match else None


def agentcore_cli_version() -> str | None:
    """The version `agentcore --version` prints (commands.AGENTCORE_VERSION), or None if it fails."""
    from mtrl_course import commands

    try:
        output = commands.run(commands.AGENTCORE_VERSION, echo=None, timeout=CLI_VERSION_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError, commands.CommandFailed):
        return None
    # The first run also prints a telemetry notice (to stderr, merged here): take the version line.
    match = re.search(r"^\s*(\d+\.\d+\.\d+\S*)\s*$", output, re.MULTILINE)
    return match.group(1) if match else None


def running_jobs(session: Any) -> dict[str, int | None]:
    """How many training and evaluation jobs run right now, by job category (ListJobs).

    Notebook 02 checks this before a deploy: redeploying the agent while a job runs restarts
    the runtime, and the service then fails the whole job.
    """
    sagemaker = session.client("sagemaker")
    counts: dict[str, int | None] = {}
    for category in JOB_QUOTAS:
        found = sagemaker.list_jobs(JobCategory=category, StatusEquals=RUNNING_STATUS, MaxResults=100)
        counts[category] = len(found.get("JobSummaries", []))
    return counts


def _session(live: bool) -> Any:
    if live:
        import boto3

        # A plain Session, not aws.session(): that one raises on the first missing piece, and a
        # preflight should report every missing piece at once.
        return boto3.Session()
    from mtrl_course import aws

    return aws.session()


def gather_facts(session: Any | None = None, *, live: bool | None = None) -> Facts:
    """Ask the environment (and AWS, or the offline backend) what the checks need."""
    import botocore
    import botocore.session

    live = config.is_live() if live is None else live
    session = session if session is not None else _session(live)
    facts = Facts(live=live, region=session.region_name, botocore_version=botocore.__version__)
    facts.versions = {name: _version(name) for name in ("boto3", "botocore", "moto", "mlflow")}
    credentials = session.get_credentials()
    facts.credential_source = getattr(credentials, "method", None) or ("set" if credentials else None)
    model = botocore.session.get_session().get_service_model("sagemaker")
    facts.knows_create_job = JOB_OPERATION in model.operation_names
    if credentials is not None and facts.region:
        try:
            facts.identity_arn = session.client("sts").get_caller_identity()["Arn"]
        except Exception as error:  # expired tokens, no network: reported, not raised
            facts.identity_error = _short_error(error)
        if facts.knows_create_job and facts.identity_arn:
            try:
                answer = session.client("sagemaker").list_job_schema_versions(JobCategory=ENABLEMENT_CATEGORY)
                facts.schema_versions = [s["JobConfigSchemaVersion"] for s in answer.get("JobConfigSchemas", [])]
            except Exception as error:  # reported as a row, never raised
                facts.schema_error_code = str(((getattr(error, "response", None) or {}).get("Error") or {}).get("Code"))
                facts.schema_error = _short_error(error)
            try:
                facts.running_jobs = running_jobs(session)
            except Exception as error:  # no permission, or an account not enabled for AgentRFT
                facts.jobs_error = _short_error(error)
    else:
        facts.identity_error = "no credentials or no Region"
    if live:
        facts.node_version = _node_version()
        facts.agentcore_cli = shutil.which("agentcore")
        if facts.agentcore_cli:
            facts.agentcore_cli_version = agentcore_cli_version()
        facts.uv = shutil.which("uv")
    return facts


def run_preflight(session: Any | None = None, *, live: bool | None = None) -> Any:
    """The preflight table (pandas DataFrame: check, status, detail, fix) for the current mode."""
    import pandas as pd

    rows = judge(gather_facts(session, live=live))
    return pd.DataFrame([r.__dict__ for r in rows], columns=list(COLUMNS))


def in_sagemaker_studio() -> bool:
    """True inside a SageMaker Studio space (where notebook 00's install cell applies)."""
    return STUDIO_METADATA_FILE.is_file()


# --- notebook 00's install cell: standard library only ---------------------------------------------
# In a fresh Studio kernel the bootstrap stops on the first package the image lacks (moto, for
# offline mode), so the install must work without anything the bootstrap imports: no pandas,
# boto3 or moto here, only importlib.metadata, subprocess and the lock file. The cell runs this
# module as a program (`python -m mtrl_course.preflight studio-install`, from agent_src/, with the
# kernel's own interpreter), so the kernel imports nothing of the course before the install and
# its sys.path is never edited.
# The program's exit status after it installed something: the kernel that ran it must restart to
# load the new versions (0 means nothing was installed). Notebook 00's cell compares against it.
RESTART_EXIT_STATUS = 3


def lock_pins(lock_file: Path | None = None) -> dict[str, str]:
    """`name -> version` for every `name==version` line of requirements.lock (names normalised).

    Lines with an environment marker are left to pip (`lockfile.tested_versions`).
    """
    return lockfile.tested_versions(lock_file or lockfile.LOCK_FILE, unconditional_only=True)


def packages_to_install(lock_file: Path | None = None) -> list[str]:
    """Pinned packages this kernel lacks or has at another version ("name: have X, tested Y")."""
    found = []
    for name, version in sorted(lock_pins(lock_file).items()):
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = "missing"
        if installed != version:
            found.append(f"{name}: have {installed}, tested {version}")
    return found


def install_commands(root: Path, python: str | None = None) -> list[list[str]]:
    """The two pip runs that install the course into this kernel: the lock, then the repo itself."""
    import sys

    python = python or sys.executable
    return [
        [python, "-m", "pip", "install", "--quiet", "-r", str(Path(root) / lockfile.LOCK_FILE.name)],
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(Path(root))],
    ]


def studio_install(root: Path | None = None, *, run: Callable[..., Any] = subprocess.run) -> int:
    """Notebook 00's install step: in a Studio space, install the lock and the course if a pin differs.

    Prints what it found and did, and returns RESTART_EXIT_STATUS after installing, else 0.
    Outside Studio it installs nothing (`make venv` did). `run` runs each pip command (tests pass
    a recorder).
    """
    if not in_sagemaker_studio():
        print("skipped: not a SageMaker Studio space (on your own machine, `make venv` installed the course)")
        return 0
    differing = packages_to_install()
    if not differing:
        print("this kernel already has every package of requirements.lock at the tested version")
        return 0
    # flush: the cell shows this program's output line by line, through a pipe.
    print(f"installing the course's pinned packages ({len(differing)} differ, e.g. {differing[0]}) ...", flush=True)
    for command in install_commands(root or config.REPO_ROOT):
        run(command, check=True)
    print("installed: the kernel restarts now to load them; then run the bootstrap cell again", flush=True)
    return RESTART_EXIT_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m mtrl_course.preflight studio-install`: notebook 00's install step, as a program."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mtrl_course.preflight",
        description="Install the course's pinned packages into this interpreter, in a SageMaker Studio space only.",
    )
    parser.add_argument("action", choices=["studio-install"])
    parser.parse_args(argv)
    return studio_install()


if __name__ == "__main__":
    raise SystemExit(main())
