"""The external programs the live path runs, in one place: arguments, folder, what counts as success.

A notebook cell runs a command with `nb.run_live(commands.AGENTCORE_DEPLOY)` and `mtrl smoke`
with `commands.run(...)`; both go through `run()`, which starts the program the way a Jupyter
kernel does: stdin from /dev/null, stdout and stderr into a pipe. No terminal is attached, so a
program that prompts, or refuses to run without a terminal, fails here exactly as it would in
the notebook. tests/test_live_commands.py runs every command below through the real tool, with
these same arguments and the same pipes, up to its first network call (an AWS endpoint pointed at
a loopback stub), and reads the notebooks' `nb.run_live` calls to check they name only these.

What broke without this file: notebook 02 ran `agentcore deploy` without flags. The AgentCore CLI
(0.30.0) runs its interactive terminal UI when given no flags and first checks that stdin and
stdout are both terminals; through a pipe it prints "This command requires an interactive
terminal" and exits 1, so every live deploy failed. Notebook 08 passed `--force`, an option
`agentcore remove all` does not have (commander: "unknown option", exit 1). The CLI's contract
(flags, terminal checks, exit codes) is recorded in docs/LIVE_CHECKLIST.md, "External commands".
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mtrl_course.config import REPO_ROOT


class CommandFailed(RuntimeError):
    """An external command ended with an exit code its contract does not count as success."""

    def __init__(self, shown: str, returncode: int, output: str = ""):
        super().__init__(f"`{shown}` exited with status {returncode}; its output is above")
        self.returncode = returncode
        self.output = output


@dataclass(frozen=True)
class Command:
    """One external command: its arguments, the folder it runs in, and its success exit codes.

    `cwd` is relative to the repository root unless absolute (notebook 11's infra sample lives
    beside the course, not in it).
    """

    args: tuple[str, ...]
    cwd: str = "."
    ok_exit_codes: tuple[int, ...] = (0,)
    what: str = ""

    @property
    def program(self) -> str:
        return self.args[0]

    def shown(self) -> str:
        return shlex.join(self.args)

    def where(self, root: Path = REPO_ROOT) -> Path:
        folder = Path(self.cwd)
        return folder if folder.is_absolute() else Path(root) / folder


# ------------------------------------------------------------------------ the AgentCore CLI
# The CLI's project root: the folder that holds agentcore/agentcore.json.
AGENTCORE_PROJECT_DIR = "agent_src"
AGENTCORE = "agentcore"
# 0.30.0 exits 0 on success, 1 on failure, and 2 when the deploy succeeded with post-deploy
# warnings (dist/cli/index.mjs, handleDeployCLI): a deployed stack is not a failed cell.
DEPLOY_WARNINGS_EXIT = 2

AGENTCORE_VERSION = Command(
    (AGENTCORE, "--version"),
    what="print the CLI's version (the preflight compares it with the tested one)",
)
AGENTCORE_VALIDATE = Command(
    (AGENTCORE, "validate"),
    AGENTCORE_PROJECT_DIR,
    what="check agentcore.json and aws-targets.json with the CLI's own schemas (no AWS call)",
)
# -y: the non-interactive path (auto-confirms prompts, bootstraps CDK if needed); without any of
# -y/--json/--target/--dry-run/--verbose the CLI demands a terminal.
AGENTCORE_DEPLOY = Command(
    (AGENTCORE, "deploy", "-y"),
    AGENTCORE_PROJECT_DIR,
    ok_exit_codes=(0, DEPLOY_WARNINGS_EXIT),
    what="deploy the runtime's CloudFormation stack to the account and Region of aws-targets.json",
)
AGENTCORE_STATUS = Command(
    (AGENTCORE, "status"),
    AGENTCORE_PROJECT_DIR,
    what="show the deployed runtime's state",
)
# -y: the only confirmation flag `remove all` has (it has no --force); it empties agentcore.json
# locally, and the next deploy tears the stack down.
AGENTCORE_REMOVE_ALL = Command(
    (AGENTCORE, "remove", "all", "-y"),
    AGENTCORE_PROJECT_DIR,
    what="empty the project's resource lists in agentcore.json (local files only)",
)
# After the teardown deploy: put the course's project files back as committed.
RESTORE_AGENTCORE_PROJECT = Command(
    ("git", "checkout", "--", f"{AGENTCORE_PROJECT_DIR}/agentcore/"),
    ".",
    what="restore agent_src/agentcore/ as committed",
)
# Notebook 08's teardown through the CLI, in order.
AGENTCORE_TEARDOWN = (AGENTCORE_REMOVE_ALL, AGENTCORE_DEPLOY, RESTORE_AGENTCORE_PROJECT)


# ---------------------------------------------------- notebook 11: the Nova infra sample (CDK)
# `cdk deploy` asks before it deploys security-sensitive changes (a new IAM role is one); its
# prompt needs a terminal, and without one aws-cdk 2.1126.0 stops with "... but terminal (TTY) is
# not attached so we are unable to get a confirmation from the user". `--require-approval never`
# skips the question; `cdk destroy` asks unless given `--force`. `npx` installs a missing package
# without asking when stdin is not a terminal (libnpmexec 10.3.2, lib/index.js, in npm 11.19.1).
CDK_NO_APPROVAL = ("--require-approval", "never")
CDK_DESTROY_FORCE = "--force"


def custom_env_upload(archive: Path | str, bucket: str, env_id: str) -> Command:
    """Copy the custom environment's archive to the infra sample's bucket (`aws s3 cp`)."""
    return Command(
        ("aws", "s3", "cp", str(archive), f"s3://{bucket}/custom-envs/{env_id}.tar.gz"),
        what="upload the custom environment archive",
    )


def custom_env_delete(bucket: str, env_id: str) -> Command:
    """Delete the custom environment's archive from the bucket (`aws s3 rm`)."""
    return Command(
        ("aws", "s3", "rm", f"s3://{bucket}/custom-envs/{env_id}.tar.gz"),
        what="delete the custom environment archive",
    )


def infra_deploy(infra_dir: Path | str, env_id: str) -> Command:
    """Deploy the Nova infra sample with the custom environment (`npx cdk deploy`)."""
    return Command(
        ("npx", "cdk", "deploy", *CDK_NO_APPROVAL, "-c", "use_custom_env=true", "-c", f"custom_env_id={env_id}"),
        str(Path(infra_dir).resolve()),
        what="deploy the Nova infra sample's stack with the custom environment",
    )


def infra_destroy(infra_dir: Path | str) -> Command:
    """Destroy the Nova infra sample's stack (`npx cdk destroy --force`)."""
    return Command(
        ("npx", "cdk", "destroy", CDK_DESTROY_FORCE),
        str(Path(infra_dir).resolve()),
        what="destroy the Nova infra sample's stack",
    )


# Every fixed command above; the builders' commands are checked through the builders.
FIXED_COMMANDS: tuple[Command, ...] = (
    AGENTCORE_VERSION,
    AGENTCORE_VALIDATE,
    AGENTCORE_DEPLOY,
    AGENTCORE_STATUS,
    AGENTCORE_REMOVE_ALL,
    RESTORE_AGENTCORE_PROJECT,
)
COMMAND_BUILDERS: tuple[Callable[..., Command], ...] = (
    custom_env_upload,
    custom_env_delete,
    infra_deploy,
    infra_destroy,
)


# ------------------------------------------------------------------------------------ running
def popen_arguments(cwd: Path, env: Mapping[str, str] | None = None) -> dict:
    """How every command is started: no terminal anywhere, as in a notebook kernel.

    stdin is /dev/null rather than the kernel's own stdin, so a program that does prompt reads
    end-of-file at once instead of waiting for an answer nobody can type.
    """
    return {
        "cwd": cwd,
        "env": dict(env) if env is not None else None,
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.STDOUT,
        "text": True,
        "errors": "replace",
    }


def run(
    command: Command,
    *,
    root: Path = REPO_ROOT,
    env: Mapping[str, str] | None = None,
    echo: Callable[[str], object] | None = print,
    timeout: float | None = None,
) -> str:
    """Run `command` from `root` (its folder resolved there), streaming its output; the output.

    Raises CommandFailed (with the output) when the exit code is not one of the command's
    success codes, FileNotFoundError naming the program when it is not installed, and
    subprocess.TimeoutExpired after `timeout` seconds (the program is killed).
    """
    where = command.where(root)
    lines: list[str] = []
    try:
        proc = subprocess.Popen(list(command.args), **popen_arguments(where, env))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"`{command.program}` is not installed or not on PATH (needed for `{command.shown()}`)"
        ) from None
    with proc:
        assert proc.stdout is not None
        try:
            if timeout is None:
                for line in proc.stdout:
                    lines.append(line)
                    if echo is not None:
                        echo(line.rstrip("\n"))
            else:
                output, _ = proc.communicate(timeout=timeout)
                lines.append(output)
                if echo is not None and output:
                    echo(output.rstrip("\n"))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    output = "".join(lines)
    if proc.returncode not in command.ok_exit_codes:
        raise CommandFailed(command.shown(), proc.returncode, output)
    return output
