"""`make lab`: JupyterLab on the course, with this environment's kernel and clean saves.

- The notebooks ask for the standard `python3` kernel. A `python3` kernelspec in the user's own
  Jupyter folder may point at another Python, without the course's packages; the course's
  environment gets its own `python3` spec (`ensure_kernelspec`, installed into the environment
  like `ipykernel install --sys-prefix`, and only when the one there differs: a virtualenv shared
  by several clones used to get it rewritten on every `make lab`) and `JUPYTER_PREFER_ENV_PATH=1`
  makes Jupyter pick it first.
- The server runs `nbfilter.pre_save_hook`, so saving a course notebook never writes the kernel's
  exact version, another kernelspec or editor timings to disk (the git filter covers other editors).
- Opening a notebook and closing it without running anything asks nothing (issue 39: JupyterLab
  marked every notebook changed within 3 s of opening it). The committed notebooks carry
  `language_info` without the Python version, which differs from machine to machine; when the
  kernel starts, JupyterLab writes the version it reports into the open notebook, and that change
  made the notebook "unsaved". The server's contents manager (`CourseContentsManager`) hands
  JupyterLab each notebook with the version this environment's kernel will report already in
  place, so the kernel's report changes nothing; on save, the pre-save hook removes it again, so
  the files on disk and in git stay the same on every machine. (The other way, committing a
  version, would match one Python patch release and prompt on every other.)
- It listens on 127.0.0.1 only and opens the notebooks folder.
"""

from __future__ import annotations

import filecmp
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from mtrl_course import config

PRE_SAVE_HOOK = "mtrl_course.curriculum.nbfilter.pre_save_hook"
CONTENTS_MANAGER = "mtrl_course.curriculum.jupyter.CourseContentsManager"
KERNEL_NAME = "python3"
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"


def kernel_version() -> str:
    """The Python version this environment's kernel reports in `language_info` (as ipykernel does)."""
    return sys.version.split()[0]


def with_kernel_version(nb: dict[str, Any]) -> dict[str, Any]:
    """`nb` with the version the course kernel will report in `language_info`, in place; returns it.

    Only a notebook that asks for the course's `python3` kernel and carries no version yet (every
    committed one, every student copy) is touched.
    """
    metadata = nb.get("metadata")
    if not isinstance(metadata, dict):
        return nb
    language = metadata.get("language_info")
    kernelspec = metadata.get("kernelspec") or {}
    if (
        isinstance(language, dict)
        and language.get("name") == "python"
        and "version" not in language
        and isinstance(kernelspec, dict)
        and kernelspec.get("name") == KERNEL_NAME
    ):
        language["version"] = kernel_version()
    return nb


class CourseContentsManager(AsyncLargeFileManager):
    """Jupyter's default contents manager, with notebooks handed out as the kernel will see them."""

    async def get(
        self,
        path: Any,
        content: Any = True,
        type: Any = None,  # noqa: A002 - the base class's name
        format: Any = None,  # noqa: A002 - the base class's name
        require_hash: Any = False,
    ) -> Any:
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            with_kernel_version(model["content"])
        return model


def server_args(root: Path = config.REPO_ROOT) -> list[str]:
    """The JupyterLab options `make lab` uses (the JupyterLab test starts its server with the same)."""
    return [
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.contents_manager_class={CONTENTS_MANAGER}",
        f"--ContentsManager.pre_save_hook={PRE_SAVE_HOOK}",
        "--ServerApp.default_url=/lab/tree/notebooks",
        # Containers and CI often run as root, where Jupyter refuses to start without this.
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
    ]


def lab_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    return env


def kernelspec_dir(prefix: str | Path = sys.prefix) -> Path:
    return Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME


def _same_folder(a: Path, b: Path) -> bool:
    if not b.is_dir():
        return False
    names = sorted(p.name for p in a.iterdir())
    if names != sorted(p.name for p in b.iterdir()):
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    return not mismatch and not errors


def ensure_kernelspec(prefix: str | Path = sys.prefix) -> bool:
    """Install this environment's `python3` kernelspec into `prefix` unless it is there already.

    The spec is what `python -m ipykernel install --prefix <prefix> --name python3` writes
    (ipykernel's own code writes it to a scratch prefix first, to compare); returns True when it
    was installed.
    """
    from ipykernel import kernelspec

    with tempfile.TemporaryDirectory() as scratch:
        staged = Path(kernelspec.install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME, prefix=scratch))
        if _same_folder(staged, kernelspec_dir(prefix)):
            return False
    kernelspec.install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME, prefix=str(prefix))
    return True


def main(argv: list[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    if ensure_kernelspec():
        print(f"lab: installed this environment's {KERNEL_NAME} kernel in {kernelspec_dir()}")
    command = [sys.executable, "-m", "jupyterlab", *server_args(), *extra]
    print("lab: jupyter lab " + " ".join(command[3:]))
    os.execve(sys.executable, command, lab_env())
    return 0  # not reached: exec replaces this process


if __name__ == "__main__":
    raise SystemExit(main())
