"""`make lab`: JupyterLab on the course, with this environment's kernel and clean saves.

- The notebooks ask for the standard `python3` kernel. A `python3` kernelspec in the user's own
  Jupyter folder may point at another Python, without the course's packages; the course's
  environment gets its own `python3` spec (installed by `make lab` with `--sys-prefix`) and
  `JUPYTER_PREFER_ENV_PATH=1` makes Jupyter pick it first.
- The server runs `nbfilter.pre_save_hook`, so saving a course notebook never writes the kernel's
  exact version, another kernelspec or editor timings to disk (the git filter covers other editors).
- It listens on 127.0.0.1 only and opens the notebooks folder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mtrl_course import config

PRE_SAVE_HOOK = "mtrl_course.curriculum.nbfilter.pre_save_hook"


def server_args(root: Path = config.REPO_ROOT) -> list[str]:
    """The JupyterLab options `make lab` uses (the JupyterLab test starts its server with the same)."""
    return [
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--ContentsManager.pre_save_hook={PRE_SAVE_HOOK}",
        "--ServerApp.default_url=/lab/tree/notebooks",
        # Containers and CI often run as root, where Jupyter refuses to start without this.
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
    ]


def lab_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    return env


def main(argv: list[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    command = [sys.executable, "-m", "jupyterlab", *server_args(), *extra]
    print("lab: jupyter lab " + " ".join(command[3:]))
    os.execve(sys.executable, command, lab_env())
    return 0  # not reached: exec replaces this process


if __name__ == "__main__":
    raise SystemExit(main())
