"""The Makefile's set-up facts: an interpreter older than the lock supports gets one clear message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mtrl_course import config

MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")
NEEDS = "the course needs Python 3.11.5 or newer"


def fake_python(tmp_path: Path, version: tuple[int, int, int]) -> Path:
    """A `python3` that answers `-c` like the real one but reports `version`."""
    fake = tmp_path / "python3"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.version_info = {(*version, 'final', 0)!r}\n"
        'if sys.argv[1:2] != ["-c"]:\n'
        '    sys.exit("this fake python only runs -c")\n'
        "code = sys.argv[2]\n"
        'sys.argv = ["-c", *sys.argv[3:]]\n'
        "exec(code)\n"
    )
    fake.chmod(0o755)
    return fake


def make(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        [str(MAKE), "--no-print-directory", "-C", str(config.REPO_ROOT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("version", [(3, 10, 12), (3, 11, 4)])
def test_make_venv_on_an_old_python_says_so_once_and_creates_nothing(
    tmp_path: Path, version: tuple[int, int, int]
) -> None:
    venv = tmp_path / "venv"
    ran = make("venv", f"PYTHON={fake_python(tmp_path, version)}", f"VENV={venv}")
    assert ran.returncode != 0
    assert ran.stdout.count(NEEDS) == 1, ran.stdout
    assert "Python {}.{}.{}".format(*version) in ran.stdout
    assert not venv.exists()
    assert "pip" not in ran.stdout + ran.stderr  # it stopped before any install


def test_a_missing_python_is_named(tmp_path: Path) -> None:
    ran = make("check-python", f"PYTHON={tmp_path / 'no-such-python3'}")
    assert ran.returncode != 0
    assert "No Python found" in ran.stdout and NEEDS in ran.stdout


@pytest.mark.parametrize("version", [(3, 11, 5), (3, 13, 0)])
def test_a_supported_python_passes_silently(tmp_path: Path, version: tuple[int, int, int]) -> None:
    ran = make("-s", "check-python", f"PYTHON={fake_python(tmp_path, version)}")
    assert (ran.returncode, ran.stdout) == (0, "")


def test_this_interpreter_passes() -> None:
    assert make("-s", "check-python", f"PYTHON={sys.executable}").returncode == 0


def test_the_venv_stamp_decides_by_content_not_by_timestamps(tmp_path: Path) -> None:
    # A fresh clone (or a branch switch) leaves the lock newer than an existing stamp; with the
    # lock's content unchanged, make must not re-run pip (it used to, for about 45 s).
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    planned = make("-n", "venv", f"VENV={venv}")
    stamp = next(line for line in planned.stdout.splitlines() if "touch" in line).split()[-1]
    assert Path(stamp).name.startswith(".installed-"), planned.stdout
    Path(stamp).touch()
    os.utime(stamp, (0, 0))  # older than every file in the checkout
    again = make("-n", "venv", f"VENV={venv}")
    assert again.returncode == 0, again.stderr
    assert "pip install" not in again.stdout, again.stdout
    # A different lock content names a different stamp, which is missing: pip runs.
    (Path(stamp)).rename(venv / ".installed-0")
    assert "pip install" in make("-n", "venv", f"VENV={venv}").stdout


def test_every_make_command_runs_this_checkouts_code() -> None:
    # With a virtualenv shared by two clones, the editable install points at one of them; the
    # Makefile puts its own agent_src first so each clone runs (and reads) only itself.
    shown = make("-s", "-n", "-p", "help")
    exported = [line for line in shown.stdout.splitlines() if line.startswith("PYTHONPATH")]
    assert exported and exported[0].split("=", 1)[1].strip().startswith(f"{config.REPO_ROOT}/agent_src"), exported
