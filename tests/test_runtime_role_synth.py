"""The runtime role `agentcore deploy` creates carries AmazonSageMakerJobRuntimeAccess: synthesized.

The course attaches the policy only through `additionalPolicies` in agentcore.json. How that list
becomes IAM is the CDK construct's business (`@aws/agentcore-cdk`,
dist/cdk/constructs/components/shared/load-additional-policies.js): an entry starting with `arn:`
is attached to the runtime's execution role as a managed policy, anything else is read as a JSON
policy file next to the code and attached inline; a runtime with `executionRoleArn` gets no role
from the stack, so nothing is attached. Here the course's own CDK app (agent_src/agentcore/cdk,
the one `agentcore deploy` synthesizes) runs for real on the committed agentcore.json, and the
template it writes must give the runtime's role exactly that managed policy.

The construct version the CLI expects (0.1.0-alpha.53) is not on this project's npm registry;
tests/live_tools.py then installs the newest one it has and records which (printed on failure).
`uv` is replaced by a program that installs nothing: the construct packs the runtime's code during
synthesis, and the downloaded dependencies do not change the IAM part of the template.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import live_tools
from live_tools import StubEndpoint
from mtrl_course import deploy

SYNTH_TIMEOUT_S = 300.0
RUNTIME_SERVICE = "bedrock-agentcore.amazonaws.com"
LOADER = Path("dist") / "cdk" / "constructs" / "components" / "shared" / "load-additional-policies.js"


@pytest.fixture(scope="module")
def cdk_app() -> Path:
    return live_tools.install_cdk_app()


def _synthesize(
    cdk_app: Path, where: Path, project: dict | None = None
) -> tuple[subprocess.CompletedProcess, Path, list]:
    app = live_tools.cdk_project(cdk_app, where)
    if project is not None:
        (app.parent / deploy.PROJECT_FILE.name).write_text(json.dumps(project), encoding="utf-8")
    out = where / "cdk.out"
    with StubEndpoint() as stub:
        env = live_tools.tool_environment(stub, where / "home", live_tools.fake_uv(where / "bin"))
        completed = subprocess.run(
            ["node", str(Path("dist") / "bin" / "cdk.js")],
            cwd=app,
            env={**env, "CDK_OUTDIR": str(out)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SYNTH_TIMEOUT_S,
            check=False,
        )
    return completed, out, stub.requests


def _runtime_roles(template: dict) -> list[dict]:
    """The IAM roles the template's AgentCore runtimes run as."""
    resources = template["Resources"]
    role_ids = [
        resource["Properties"]["RoleArn"]["Fn::GetAtt"][0]
        for resource in resources.values()
        if resource["Type"] == "AWS::BedrockAgentCore::Runtime"
    ]
    return [resources[role_id] for role_id in role_ids]


def test_the_synthesized_runtime_role_has_exactly_the_job_runtime_policy(cdk_app: Path, tmp_path: Path) -> None:
    record = live_tools.cdk_install_record(cdk_app)
    completed, out, requests = _synthesize(cdk_app, tmp_path / "project")
    assert completed.returncode == 0, (record, completed.stderr[-3000:])
    assert requests == [], "synthesis makes no AWS call"
    stack = f"AgentCore-{deploy.load_project()['name']}-{deploy.TARGET_NAME}"
    template = json.loads((out / f"{stack}.template.json").read_text(encoding="utf-8"))
    roles = _runtime_roles(template)
    assert len(roles) == 1, record
    role = roles[0]["Properties"]
    assert role["ManagedPolicyArns"] == [deploy.JOB_RUNTIME_POLICY_ARN], record
    principals = [s["Principal"]["Service"] for s in role["AssumeRolePolicyDocument"]["Statement"]]
    assert principals == [RUNTIME_SERVICE]


def test_the_construct_attaches_arn_entries_as_managed_policies(cdk_app: Path) -> None:
    """The contract the course relies on, read from the installed construct's source."""
    loader = (cdk_app / "node_modules" / "@aws" / "agentcore-cdk" / LOADER).read_text(encoding="utf-8")
    assert "if (entry.startsWith('arn:')) {" in loader
    assert "role.addManagedPolicy(aws_cdk_lib_1.aws_iam.ManagedPolicy.fromManagedPolicyArn(" in loader
    runtime = deploy.agent_runtime(deploy.load_project())
    assert runtime["additionalPolicies"] == [deploy.JOB_RUNTIME_POLICY_ARN]
    assert "executionRoleArn" not in runtime, "an imported role gets nothing from additionalPolicies"


def test_the_course_s_app_refuses_a_project_without_the_policy(cdk_app: Path, tmp_path: Path) -> None:
    """agent_src/agentcore/cdk/lib/wordle-stack.ts checks the spec before synthesizing."""
    project = deploy.load_project()
    project["runtimes"][0].pop("additionalPolicies")
    completed, out, _ = _synthesize(cdk_app, tmp_path / "project", project)
    assert completed.returncode == 1
    assert f'has no "{deploy.JOB_RUNTIME_POLICY_ARN}" in additionalPolicies' in completed.stderr
    assert not list(out.glob("*.template.json"))
