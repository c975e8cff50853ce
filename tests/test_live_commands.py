"""Every external command the live path runs, run offline through the real tool, with no terminal.

A notebook kernel starts a program with pipes, not a terminal, and so does `commands.run`. A tool
that prompts or demands a terminal therefore fails in every live run, and no offline test of the
toolkit's Python would notice: notebook 02 ran `agentcore deploy`, which the AgentCore CLI refuses
without a terminal, and notebook 08 passed `remove all` an option it does not have. So:

- the notebooks' `nb.run_live(...)` calls and `!` lines are read from their code, and each must
  name a command of `mtrl_course.commands` (one source: the cells cannot drift from what is
  tested here);
- each of those commands runs through the real tool (tests/live_tools.py installs them), through
  `commands.run` itself, with fake credentials and every AWS endpoint pointed at a loopback stub,
  up to the tool's first AWS call. The test fails if the tool refuses the invocation (its
  terminal check, an unknown option) or never gets as far as that call.

The first run installs the AgentCore CLI and the course's CDK app with npm into build/npm/ (a few
minutes; later runs reuse them).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

import live_tools
from live_tools import StubEndpoint
from mtrl_course import commands, deploy, preflight
from mtrl_course.commands import Command, CommandFailed
from mtrl_course.config import REPO_ROOT
from mtrl_course.curriculum.executor import TEMPLATE_PATH

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
TOOL_TIMEOUT_S = 180.0
# How the tools say no to an invocation (not to the request it makes).
REFUSALS = (
    "requires an interactive terminal",  # @aws/agentcore 0.30.0, requireTTY
    "unknown option",  # commander, the AgentCore CLI's argument parser
    "unknown command",
    "too many arguments",
    "terminal (TTY) is not attached",  # aws-cdk 2.1126.0, CliIoHost.requestResponse
    "the following arguments are required",  # the AWS CLI's argparse
    "Unknown options",
)
ACCOUNT_MISMATCH = "Your AWS credentials are for account"
SAMPLE_ARCHIVE_NAME = "custom-env.tar.gz"
SAMPLE_BUCKET = "mtrl-offline-test-bucket"
SAMPLE_ENV_ID = "offline-test-env"


# ============================================================ the notebooks name only these
def _code_cells() -> Iterator[tuple[str, str, str]]:
    for path in [*sorted(NOTEBOOK_DIR.glob("*.ipynb")), TEMPLATE_PATH]:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                yield path.stem, cell.get("id", "?"), cell.source


def _python_of(source: str) -> tuple[str, list[str]]:
    """The cell as Python (IPython `!` lines become `pass`) and its `!` shell lines."""
    lines, shell = [], []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("!"):
            shell.append(stripped[1:].strip())
            lines.append(line[: len(line) - len(stripped)] + "pass")
        else:
            lines.append(line)
    return "\n".join(lines), shell


def _is_commands_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "commands"


def _resolve(node: ast.AST, tree: ast.AST) -> list[object]:
    """What `nb.run_live`'s first argument names: Commands of the module, or its builders."""
    if _is_commands_attribute(node):
        value = getattr(commands, node.attr)  # type: ignore[attr-defined]
        return list(value) if isinstance(value, tuple) and all(isinstance(v, Command) for v in value) else [value]
    if isinstance(node, ast.Call) and _is_commands_attribute(node.func):
        return [getattr(commands, node.func.attr)]  # type: ignore[attr-defined]
    if isinstance(node, ast.Name):
        loops = [n for n in ast.walk(tree) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)]
        found = [item for loop in loops if loop.target.id == node.id for item in _resolve(loop.iter, tree)]  # type: ignore[attr-defined]
        if found:
            return found
    raise ValueError(ast.unparse(node))


def notebook_commands() -> tuple[dict[str, list[object]], list[str], list[tuple[str, str, str]]]:
    """(what each notebook cell runs, the cells whose commands are not in the module, `!` lines)."""
    found: dict[str, list[object]] = {}
    unregistered: list[str] = []
    shell_lines: list[tuple[str, str, str]] = []
    for notebook, cell_id, source in _code_cells():
        python, shell = _python_of(source)
        shell_lines.extend((notebook, cell_id, line) for line in shell)
        tree = ast.parse(python)
        for call in ast.walk(tree):
            if not (
                isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "run_live"
            ):
                continue
            try:
                found.setdefault(f"{notebook}:{cell_id}", []).extend(_resolve(call.args[0], tree))
            except ValueError as error:
                unregistered.append(f"{notebook} cell {cell_id}: nb.run_live({error})")
    return found, unregistered, shell_lines


def test_notebooks_run_only_the_commands_module_s_commands() -> None:
    found, unregistered, _ = notebook_commands()
    assert not unregistered, (
        "write these commands in mtrl_course/commands.py and pass that constant, so the offline test of "
        f"the real tool runs exactly what the cell runs: {unregistered}"
    )
    used = [item for items in found.values() for item in items]
    registered = set(commands.FIXED_COMMANDS) | set(commands.COMMAND_BUILDERS)
    assert set(used) <= registered, [u for u in used if u not in registered]
    # The cells this issue is about, read from the notebooks themselves.
    assert commands.AGENTCORE_DEPLOY in found["02_deploy_the_agent:deploy"]
    assert found["08_clean_up:08-19"] == list(commands.AGENTCORE_TEARDOWN)
    assert commands.infra_deploy in found["11_custom_composite_rewards:296ff4f2"]


def test_no_notebook_runs_a_program_through_subprocess_outside_the_cells_checked_here() -> None:
    """A live cell's own subprocess call would dodge the test above; only these are allowed."""
    allowed = {
        # runs offline under nbval too: a child Python reading MTRL_MODE
        ("00_setup", "mode-switch"),
        # Studio only: pip installs of the lock, tested below (test_studio_install_commands...)
        ("00_setup", "studio-install"),
        # offline only: the course's own `mtrl smoke` in a child process (tests/test_first_run.py)
        ("00_setup", "first-run"),
        # runs offline under nbval too: a program without @app.entrypoint
        ("02_deploy_the_agent", "only-rft-handler"),
    }
    calls = {
        (notebook, cell_id)
        for notebook, cell_id, source in _code_cells()
        if re.search(r"\bsubprocess\.(run|Popen|call|check_call|check_output)\b|\bos\.system\(", source)
    }
    assert calls <= allowed, sorted(calls - allowed)


def test_the_only_shell_escape_is_the_template_s_aws_version() -> None:
    _, _, shell_lines = notebook_commands()
    assert shell_lines == [("_template", "live-only", "aws --version")]


# ============================================================ each command through the tool
def _refusal(output: str) -> str | None:
    return next((marker for marker in REFUSALS if marker in output), None)


def _run(command: Command, root: Path, env: dict[str, str]) -> tuple[int, str]:
    """`commands.run` as a notebook runs it (pipes, no terminal); (exit code, output)."""
    try:
        return 0, commands.run(command, root=root, env=env, echo=None, timeout=TOOL_TIMEOUT_S)
    except CommandFailed as failed:
        return failed.returncode, failed.output


def _agentcore_checkout(tmp_path: Path) -> Path:
    """A scratch copy of the course's AgentCore project (the CLI writes logs and edits files)."""
    root = tmp_path / "checkout"
    shutil.copytree(
        deploy.AGENTCORE_DIR,
        root / commands.AGENTCORE_PROJECT_DIR / "agentcore",
        ignore=shutil.ignore_patterns("node_modules", "cdk.out", "dist", ".cli"),
    )
    return root


@pytest.fixture(scope="module")
def agentcore_bin() -> Path:
    return live_tools.install_agentcore_cli()


def test_the_preflight_reads_the_installed_cli_s_version(
    agentcore_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agentcore --version` (commands.AGENTCORE_VERSION) through the preflight's own parser."""
    with StubEndpoint() as stub:
        for name, value in live_tools.tool_environment(stub, tmp_path / "home", agentcore_bin).items():
            monkeypatch.setenv(name, value)
        assert preflight.agentcore_cli_version() == deploy.CLI_VERSION
    assert stub.requests == []


@pytest.mark.parametrize(
    "command",
    [commands.AGENTCORE_VALIDATE, commands.AGENTCORE_STATUS],
    ids=lambda c: c.shown(),
)
def test_local_agentcore_commands_succeed_without_a_terminal(
    command: Command, agentcore_bin: Path, tmp_path: Path
) -> None:
    root = _agentcore_checkout(tmp_path)
    with StubEndpoint() as stub:
        code, output = _run(command, root, live_tools.tool_environment(stub, tmp_path / "home", agentcore_bin))
    assert _refusal(output) is None, output
    assert code in command.ok_exit_codes, output
    assert stub.requests == [], "validate and status of an undeployed project make no AWS call"
    if command is commands.AGENTCORE_VALIDATE:
        assert "Valid" in output
    else:
        assert "WordleAgent" in output


def test_agentcore_deploy_gets_to_its_first_aws_call_without_a_terminal(agentcore_bin: Path, tmp_path: Path) -> None:
    """The deploy cell's command passes the CLI's checks and calls STS, where the stub stops it."""
    root = _agentcore_checkout(tmp_path)
    with StubEndpoint() as stub:
        code, output = _run(
            commands.AGENTCORE_DEPLOY, root, live_tools.tool_environment(stub, tmp_path / "home", agentcore_bin)
        )
    assert _refusal(output) is None, output
    assert stub.actions() == ["GetCallerIdentity"], output
    # The CLI compared the stub's account with aws-targets.json and stopped there, exit 1.
    assert code == 1 and ACCOUNT_MISMATCH in output, output


@pytest.mark.parametrize(
    "args",
    [("agentcore", "deploy"), ("agentcore", "remove", "all", "--force")],
    ids=shlex.join,
)
def test_the_commands_notebooks_02_and_08_used_to_run_are_refused(
    args: tuple[str, ...], agentcore_bin: Path, tmp_path: Path
) -> None:
    """What the cells ran before this fix: the CLI refuses both before any AWS call (exit 1)."""
    root = _agentcore_checkout(tmp_path)
    with StubEndpoint() as stub:
        code, output = _run(
            Command(args, commands.AGENTCORE_PROJECT_DIR),
            root,
            live_tools.tool_environment(stub, tmp_path / "home", agentcore_bin),
        )
    assert code == 1 and _refusal(output) is not None, output
    assert stub.requests == []


def test_notebook_08_teardown_runs_in_order_without_a_terminal(agentcore_bin: Path, tmp_path: Path) -> None:
    """remove all -y empties agentcore.json, the deploy after it is a teardown (STS first), and git
    puts the files back."""
    root = _agentcore_checkout(tmp_path)
    git = ["git", "-c", "user.name=offline", "-c", "user.email=offline@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "project as committed"], cwd=root, check=True)
    project = root / commands.AGENTCORE_PROJECT_DIR / "agentcore" / "agentcore.json"
    committed = project.read_text(encoding="utf-8")
    # What a deploy leaves (untracked, as in a real checkout): the CLI tears down only a project
    # it has deployed; for one it has not, it says there is nothing to deploy.
    state = project.parent / ".cli" / "deployed-state.json"
    state.parent.mkdir()
    state.write_text(json.dumps({"targets": {deploy.TARGET_NAME: {"resources": {}}}}), encoding="utf-8")
    remove, teardown, restore = commands.AGENTCORE_TEARDOWN
    with StubEndpoint() as stub:
        env = live_tools.tool_environment(stub, tmp_path / "home", agentcore_bin)
        code, output = _run(remove, root, env)
        assert code == 0 and _refusal(output) is None, output
        assert json.loads(project.read_text(encoding="utf-8"))["runtimes"] == []
        code, output = _run(teardown, root, env)
        assert _refusal(output) is None, output
        assert stub.actions() == ["GetCallerIdentity"] and ACCOUNT_MISMATCH in output, output
        code, output = _run(restore, root, env)
    assert code == 0, output
    assert project.read_text(encoding="utf-8") == committed


# ------------------------------------------------------------------ notebook 11: cdk and aws
@pytest.fixture(scope="module")
def cdk_app() -> Path:
    return live_tools.install_cdk_app()


@pytest.mark.parametrize("builder", [commands.infra_deploy, commands.infra_destroy], ids=lambda b: b.__name__)
def test_notebook_11_cdk_commands_get_to_their_first_aws_call(builder, cdk_app: Path, tmp_path: Path) -> None:
    """`npx cdk deploy|destroy` with notebook 11's arguments, on the course's own CDK app (the
    Nova infra sample is not in this repository): no refusal, and a first AWS call."""
    app = live_tools.cdk_project(cdk_app, tmp_path / "project")
    command = builder(app, SAMPLE_ENV_ID) if builder is commands.infra_deploy else builder(app)
    with StubEndpoint(account="111122223333") as stub:
        env = live_tools.tool_environment(stub, tmp_path / "home", live_tools.fake_uv(tmp_path / "bin"))
        code, output = _run(command, REPO_ROOT, env)
    assert _refusal(output) is None, output
    # deploy asks STS who it is first; destroy assumes the bootstrap deploy role first.
    assert stub.actions()[0] in ("GetCallerIdentity", "AssumeRole"), (stub.actions(), output)
    assert code != 0  # the stub refused the calls after it


def test_cdk_approval_contract_is_what_the_installed_cdk_does(cdk_app: Path) -> None:
    """The record notebook 11's deploy relies on, read from the installed aws-cdk's own source:
    without a terminal an approval prompt is an error, approval defaults to 'broadening' (a new
    IAM role asks), and `--require-approval never` and `destroy --force` exist."""
    cli = cdk_app / "node_modules" / "aws-cdk"
    version = json.loads((cli / "package.json").read_text(encoding="utf-8"))["version"]
    io_host = (cli / "lib" / "cli" / "io-host" / "cli-io-host.js").read_text(encoding="utf-8")
    assert "but terminal (TTY) is not attached so we are unable to get a confirmation from the user" in io_host, version
    assert "props.requireDeployApproval ?? cloud_assembly_schema_1.RequireApproval.BROADENING" in io_host, version
    help_deploy = subprocess.run(
        [str(cdk_app / "node_modules" / ".bin" / "cdk"), "deploy", "--help"],
        capture_output=True,
        text=True,
        cwd=cdk_app,
        env={**os.environ, "CDK_DISABLE_VERSION_CHECK": "1"},
        check=False,
    ).stdout
    help_destroy = subprocess.run(
        [str(cdk_app / "node_modules" / ".bin" / "cdk"), "destroy", "--help"],
        capture_output=True,
        text=True,
        cwd=cdk_app,
        env={**os.environ, "CDK_DISABLE_VERSION_CHECK": "1"},
        check=False,
    ).stdout
    assert "--require-approval" in help_deploy and "never" in help_deploy
    assert "--force" in help_destroy
    # And the notebook's commands carry the flags the record asks for.
    assert " ".join(commands.CDK_NO_APPROVAL) in commands.infra_deploy(".", SAMPLE_ENV_ID).shown()
    assert commands.CDK_DESTROY_FORCE in commands.infra_destroy(".").args


@pytest.fixture(scope="module")
def aws_bin() -> Path:
    return live_tools.install_aws_cli()


@pytest.mark.parametrize("builder", [commands.custom_env_upload, commands.custom_env_delete], ids=lambda b: b.__name__)
def test_notebook_11_aws_s3_commands_get_to_their_first_aws_call(builder, aws_bin: Path, tmp_path: Path) -> None:
    archive = tmp_path / SAMPLE_ARCHIVE_NAME
    archive.write_bytes(b"offline test archive")
    command = (
        builder(archive, SAMPLE_BUCKET, SAMPLE_ENV_ID)
        if builder is commands.custom_env_upload
        else builder(SAMPLE_BUCKET, SAMPLE_ENV_ID)
    )
    with StubEndpoint() as stub:
        code, output = _run(command, tmp_path, live_tools.tool_environment(stub, tmp_path / "home", aws_bin))
    assert _refusal(output) is None, output
    method = "PUT" if builder is commands.custom_env_upload else "DELETE"
    assert f"{method} /{SAMPLE_BUCKET}/custom-envs/{SAMPLE_ENV_ID}.tar.gz" in stub.actions(), (stub.actions(), output)
    assert code != 0  # the stub said AccessDenied


def test_the_template_s_shell_escape_runs_without_a_terminal(aws_bin: Path, tmp_path: Path) -> None:
    with StubEndpoint() as stub:
        code, output = _run(
            Command(("aws", "--version")), tmp_path, live_tools.tool_environment(stub, tmp_path / "home", aws_bin)
        )
    assert code == 0 and output.startswith("aws-cli/"), output


# ---------------------------------------------------------------- notebook 00: Studio install
def test_studio_install_commands_run_without_a_terminal(tmp_path: Path) -> None:
    """Notebook 00's install in Studio: pip with these arguments, here as a dry run from the
    installed packages only (--dry-run --no-index: this virtualenv already has the lock)."""
    first, second = preflight.install_commands(REPO_ROOT, python=sys.executable)
    assert first[:4] == [sys.executable, "-m", "pip", "install"] and second[:4] == first[:4]
    completed = subprocess.run(
        [*first, "--dry-run", "--no-index"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
