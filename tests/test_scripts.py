"""Every benchmark and experiment script still imports, and everything it imports still exists.

`benchmarks/stress_transport.py` once failed at its first line of work on `from mtrl_course
import course` (the module had moved to `curriculum.course_run`) and nothing noticed, because no
test or make target ran it and the import sat inside `main()`. So each script is imported here
(its `main()` does not run), and every import in it, at any depth of the file, is resolved: the
module, each name taken from it, and each attribute the script reads off an imported module
(`bench_backend._job_arn`, `course_run.quiet`). It runs in one child process, because importing a
script may set environment variables or change `sys.path`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("experiments/*.py")])

CHECK = r"""
import importlib, importlib.util, json, sys
problems = []
for script, wanted in json.loads(sys.argv[1]):
    sys.path.insert(0, str(__import__("pathlib").Path(script).parent))
    name = __import__("pathlib").Path(script).stem
    spec = importlib.util.spec_from_file_location(name, script)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # as a sibling script imports it
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        problems.append(f"{script}: importing it raised {type(exc).__name__}: {exc}")
        continue
    for module, name, line in wanted:
        where = f"{script}:{line}"
        try:
            found = importlib.import_module(module)
        except BaseException as exc:
            problems.append(f"{where}: import {module}: {type(exc).__name__}: {exc}")
            continue
        if name and not hasattr(found, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                problems.append(f"{where}: {module} has no {name}")
print(json.dumps(problems))
"""


def imports_of(path: Path) -> list[tuple[str, str, int]]:
    """(module, name or "", line) for every import in the file and every attribute read off one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted: list[tuple[str, str, int]] = []
    modules: dict[str, str] = {}  # local name -> module, for names bound to a module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                wanted.append((alias.name, "", node.lineno))
                if alias.asname:
                    modules[alias.asname] = alias.name
                elif "." not in alias.name:
                    modules[alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                wanted.append((node.module, alias.name, node.lineno))
                modules.setdefault(alias.asname or alias.name, f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            module = modules[node.value.id]
            if _is_module(module, path):
                wanted.append((module, node.attr, node.lineno))
    return wanted


def _is_module(dotted: str, script: Path) -> bool:
    """True for names that are modules of this repository or its scripts (not classes or functions)."""
    parts = dotted.split(".")
    if (script.parent / f"{parts[0]}.py").exists() and len(parts) == 1:
        return True
    base = ROOT / "agent_src" / Path(*parts)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def test_the_scripts_are_found() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"stress_transport.py", "bench_backend.py", "bench_sandbox.py", "composite_rewards.py"} <= names


@pytest.mark.slow  # imports every script, so the training stack too: about 5 s of CPU
def test_every_script_and_everything_it_imports_resolves() -> None:
    wanted = [[str(p), imports_of(p)] for p in SCRIPTS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "agent_src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(wanted)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    problems = json.loads(done.stdout.strip().splitlines()[-1])
    assert problems == [], "\n".join(problems)


def test_a_moved_module_is_caught(tmp_path: Path) -> None:
    # The failure of issue 22, on a copy: the old import of stress_transport's main().
    script = tmp_path / "moved.py"
    script.write_text("def main():\n    from mtrl_course import course\n    course.quiet()\n")
    assert ("mtrl_course", "course", 2) in imports_of(script)


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_scripts_run_main_only_when_run(script: Path) -> None:
    # Importing a script must not start its work: the check above imports every one.
    tree = ast.parse(script.read_text(encoding="utf-8"))
    calls_at_top = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and "main" in ast.unparse(node.value)
    ]
    assert calls_at_top == [], f"{script.name} calls main() at import (lines {calls_at_top})"


def _stress_transport():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import stress_transport
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return stress_transport


def _burst(label: str, **changes: object) -> dict:
    clean = {
        "label": label,
        "rollouts": 48,
        "failed": {},
        "lost": 0,
        "duplicated": 0,
        "hung": 0,
        "told_failed_but_reward_recorded": 0,
        "ok_without_reward": 0,
    }
    return {**clean, **changes}


def test_a_restart_that_cut_nothing_off_is_not_clean() -> None:
    stress = _stress_transport()
    measured = _burst("restart", failed={"424": 40}, in_flight_at_restart=48, cut_off=40)
    assert stress.problems([_burst("c96-b0"), measured]) == []
    idle = _burst("restart", in_flight_at_restart=0, cut_off=0)
    assert stress.problems([_burst("c96-b0"), idle]) == [
        "restart: nothing measured (0 in flight at the restart, 0 cut off)"
    ]
    assert stress.problems([_burst("c96-b0")]) == ["restart: no restart burst ran"]
    assert stress.problems([_burst("c96-b0")], restart_expected=False) == []
    assert stress.problems([_burst("c256-b1", lost=2)]) == ["c256-b1: 2 lost", "restart: no restart burst ran"]
