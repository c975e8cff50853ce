"""The toolkit works on the checkout it is run from, not the one its package was installed from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mtrl_course import config


def checkout(root: Path) -> Path:
    (root / "agent_src" / "mtrl_course").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'mtrl-wordle-course'\n")
    return root


def test_the_current_folders_checkout_wins_over_the_packages(tmp_path: Path) -> None:
    first, second = checkout(tmp_path / "first"), checkout(tmp_path / "second")
    package = first / "agent_src" / "mtrl_course"
    assert config.find_repo_root(cwd=second / "agent_src", package_dir=package) == second.resolve()
    assert config.find_repo_root(cwd=second, package_dir=package) == second.resolve()


def test_outside_any_checkout_the_packages_own_checkout_is_used(tmp_path: Path) -> None:
    first = checkout(tmp_path / "first")
    (tmp_path / "elsewhere").mkdir()
    package = first / "agent_src" / "mtrl_course"
    assert config.find_repo_root(cwd=tmp_path / "elsewhere", package_dir=package) == first.resolve()


def test_no_checkout_anywhere_is_refused_with_both_places_named(tmp_path: Path) -> None:
    (tmp_path / "site-packages" / "mtrl_course").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(config.NotInCheckout, match="cd into your clone") as refused:
        config.find_repo_root(cwd=tmp_path / "elsewhere", package_dir=tmp_path / "site-packages" / "mtrl_course")
    assert "elsewhere" in str(refused.value) and "site-packages" in str(refused.value)


def test_a_process_started_in_a_second_clone_reads_that_clones_files(tmp_path: Path) -> None:
    second = checkout(tmp_path / "second-clone")
    probe = "from mtrl_course import config; print(config.REPO_ROOT); print(config.STATE_DIR)"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(config.REPO_ROOT / "agent_src")}
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=second, capture_output=True, text=True, env=env, timeout=60, check=True
    )
    root, state = ran.stdout.split()
    assert Path(root) == second.resolve() and Path(state) == second.resolve() / ".state"
