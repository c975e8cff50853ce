"""The AgentCore project files: checked with the CLI's own zod schemas, plus the course's rules.

The schema check needs Node.js and npm and, on its first run, the npm registry (to fetch the
pinned CLI tarball and zod into the git-ignored .cache/); later runs are offline. Without node or
npm these tests are skipped, except under CI (CI=...), where they fail: CI installs Node.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mtrl_course import config, deploy

EXPECTED_ENV_VARS = {"REASONING_EFFORT": "low", "REASONING_PROMPT_HINT": "true"}
# Regions offering GPT-OSS-20B for multi-turn RL (the training job must run in the agent's Region).
TRAINING_REGIONS = {"us-east-1", "us-west-2"}
CDK_DIR = deploy.AGENTCORE_DIR / "cdk"
# How the CLI runs the CDK app: `npm run build` in agentcore/cdk/, then `node dist/bin/cdk.js`.
CLI_CDK_APP_COMMAND = "node dist/bin/cdk.js"
ALPHANUMERIC_HYPHEN_MESSAGE = (
    "Must begin with a letter and contain only alphanumeric characters and underscores (max 48 chars)"
)
ACCOUNT_MESSAGE = "AWS account ID must be exactly 12 digits"


def _require_node() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = (
            f"{' and '.join(missing)} not on PATH: the AgentCore schema check runs the CLI's "
            "zod schemas under Node.js 20+ (install nodejs and npm)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _project() -> dict:
    return deploy.load_project()


def _targets() -> list:
    return json.loads(deploy.TARGETS_FILE.read_text(encoding="utf-8"))


def _mutants() -> dict[str, tuple[str, object]]:
    """Broken copies of our files, each with the one mistake its name says."""
    hyphen = _project()
    hyphen["runtimes"][0]["name"] = "Wordle-Agent"
    old_python = _project()
    old_python["runtimes"][0]["runtimeVersion"] = "PYTHON_3_9"
    typo = _project()
    typo["runtime"] = typo.pop("runtimes")
    short_account = _targets()
    short_account[0]["account"] = "11112222333"
    return {
        "hyphen": ("project", hyphen),
        "old_python": ("project", old_python),
        "typo": ("project", typo),
        "short_account": ("targets", short_account),
    }


@pytest.fixture(scope="module")
def schema_results(tmp_path_factory) -> dict[str, deploy.SchemaResult]:
    """Every case checked in one Node run: ours as committed, then each mutant."""
    _require_node()
    work = tmp_path_factory.mktemp("agentcore-config")
    cases: dict[str, tuple[str, Path]] = {
        "project": ("project", deploy.PROJECT_FILE),
        "targets": ("targets", deploy.TARGETS_FILE),
    }
    for name, (kind, document) in _mutants().items():
        path = work / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        cases[name] = (kind, path)
    results = deploy.check_config_files(list(cases.values()))
    return dict(zip(cases, results))


# -------------------------------------------------------------------------- the CLI's schemas
def test_our_files_pass_the_cli_schemas(schema_results) -> None:
    for name in ("project", "targets"):
        result = schema_results[name]
        assert result.ok, f"{result.file}: {result.messages()}"
        assert result.issues == ()


def test_runtime_name_with_hyphen_fails(schema_results) -> None:
    result = schema_results["hyphen"]
    assert not result.ok
    assert [(i.path, i.message) for i in result.issues] == [("runtimes.0.name", ALPHANUMERIC_HYPHEN_MESSAGE)]


def test_unknown_runtime_version_fails_listing_the_supported_ones(schema_results) -> None:
    result = schema_results["old_python"]
    assert not result.ok
    (issue,) = result.issues
    assert issue.path == "runtimes.0.runtimeVersion"
    assert "PYTHON_3_12" in issue.expected and "PYTHON_3_13" in issue.expected
    assert "PYTHON_3_9" not in issue.expected


def test_misspelt_key_fails(schema_results) -> None:
    # The project schema is strict: an unknown key is an error, not silently ignored.
    result = schema_results["typo"]
    assert not result.ok
    assert any('"runtime"' in issue.message for issue in result.issues), result.messages()


def test_account_not_twelve_digits_fails(schema_results) -> None:
    result = schema_results["short_account"]
    assert not result.ok
    assert [(i.path, i.message) for i in result.issues] == [("0.account", ACCOUNT_MESSAGE)]


def test_cached_schemas_need_no_fetch(schema_results, monkeypatch) -> None:
    # After the fixture's run the cache is complete: a second check must not call npm at all.
    def no_fetch(*args, **kwargs):
        raise AssertionError("npm pack was called although the cache is complete")

    monkeypatch.setattr(deploy, "_npm_pack", no_fetch)
    assert all(result.ok for result in deploy.validate_project())


def test_unknown_kind_is_rejected_before_running_node() -> None:
    with pytest.raises(ValueError, match="unknown config kind 'harness'"):
        deploy.check_config_files([("harness", deploy.PROJECT_FILE)])


# --------------------------------------------------------------------- the course's own rules
def test_runtime_environment_sets_low_reasoning_effort() -> None:
    runtime = deploy.agent_runtime(_project())
    env_vars = {item["name"]: item["value"] for item in runtime["envVars"]}
    assert env_vars == EXPECTED_ENV_VARS


def test_runtime_shape() -> None:
    project = _project()
    runtime = deploy.agent_runtime(project)
    assert runtime["build"] == "CodeZip"
    assert runtime["entrypoint"] == "main.py"
    assert runtime["runtimeVersion"] in {"PYTHON_3_12", "PYTHON_3_13"}
    assert (runtime["networkMode"], runtime["protocol"]) == ("PUBLIC", "HTTP")
    assert "-" not in runtime["name"]
    assert project["tags"]["course"] == config.COURSE_TAG
    assert project["tags"]["agentcore:project-name"] == project["name"]
    assert deploy.deployed_runtime_name() == f"{project['name']}_{runtime['name']}"


def test_runtime_role_gets_the_job_runtime_policy() -> None:
    runtime = deploy.agent_runtime(_project())
    assert deploy.JOB_RUNTIME_POLICY_ARN in runtime["additionalPolicies"]
    # An imported role would bypass additionalPolicies (CDK cannot change it).
    assert "executionRoleArn" not in runtime
    # The CDK app's synth-time guard names the same policy.
    stack_source = (CDK_DIR / "lib" / "wordle-stack.ts").read_text(encoding="utf-8")
    assert f"'{deploy.JOB_RUNTIME_POLICY_ARN}'" in stack_source


def test_target_is_the_placeholder_account() -> None:
    (target,) = _targets()
    assert target["account"] == config.PLACEHOLDER_ACCOUNT
    assert target["region"] in TRAINING_REGIONS


def test_code_location_is_where_build_bundle_writes() -> None:
    runtime = deploy.agent_runtime(_project())
    expected = (deploy.AGENT_SRC_DIR / runtime["codeLocation"]).resolve()
    assert deploy.bundle_dir() == expected
    assert expected.parent == (deploy.AGENT_SRC_DIR / "app").resolve()


def test_cdk_project_is_what_the_cli_runs() -> None:
    package = json.loads((CDK_DIR / "package.json").read_text(encoding="utf-8"))
    cdk_json = json.loads((CDK_DIR / "cdk.json").read_text(encoding="utf-8"))
    tsconfig = json.loads((CDK_DIR / "tsconfig.json").read_text(encoding="utf-8"))
    assert package["scripts"]["build"] == "tsc"
    assert cdk_json["app"] == CLI_CDK_APP_COMMAND
    assert tsconfig["compilerOptions"]["outDir"] == "dist"
    assert (CDK_DIR / "bin" / "cdk.ts").is_file()
    assert {"@aws/agentcore-cdk", "aws-cdk-lib", "constructs"} <= set(package["dependencies"])


# ------------------------------------------------------------------ fetching, with a fake npm
def _fake_npm(tmp_path: Path, monkeypatch, script: str) -> None:
    """Put an `npm` on PATH that runs the given shell script (offline stand-in)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def test_registry_error_is_reported_and_nothing_is_cached(tmp_path, monkeypatch) -> None:
    _fake_npm(
        tmp_path,
        monkeypatch,
        'echo "npm error code ECONNREFUSED" >&2\n'
        'echo "npm error     at ClientRequest.<anonymous> (x.js:1:1)" >&2\nexit 1\n',
    )
    cache = tmp_path / "cache" / "agentcore-cli"
    expected = r"(?s)npm pack @aws/agentcore@.*ECONNREFUSED"
    with pytest.raises(deploy.SchemaFetchError, match=expected):
        deploy.ensure_cli_schemas(cache)
    assert not cache.exists()
    assert list((tmp_path / "cache").iterdir()) == []


def test_tarball_with_wrong_integrity_is_refused(tmp_path, monkeypatch) -> None:
    _fake_npm(tmp_path, monkeypatch, 'echo "not the CLI" > aws-agentcore-0.30.0.tgz\n')
    cache = tmp_path / "cache" / "agentcore-cli"
    with pytest.raises(deploy.SchemaFetchError, match="expected the published sha512-"):
        deploy.ensure_cli_schemas(cache)
    assert not cache.exists()


def test_slow_registry_times_out_with_a_clear_error(tmp_path, monkeypatch) -> None:
    _fake_npm(tmp_path, monkeypatch, "exec sleep 5\n")
    with pytest.raises(deploy.SchemaFetchError, match="did not finish within 0 s"):
        deploy.ensure_cli_schemas(tmp_path / "cache" / "agentcore-cli", timeout=0.3)
