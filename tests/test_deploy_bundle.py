"""The AgentCore code bundle: the agent alone, importable and servable without the toolkit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from mtrl_course import deploy, lockfile

# What the bundle's top level must hold: the shim, the dependency manifest, the agent package.
BUNDLE_TOP_LEVEL = {"main.py", "pyproject.toml", "wordle_agent"}
AGENT_DATA_FILES = ("answers.txt", "allowed_guesses.txt", "word_entropy.json")
# Course-only packages that must never reach the runtime's dependency list.
COURSE_ONLY_PACKAGES = {"numpy", "pandas", "mlflow", "matplotlib", "jupyterlab", "moto", "pyarrow"}
AGENTCORE_HTTP_PORT = 8080
FORBIDDEN_PARTS = {"__pycache__", ".state", "tests", "notebooks", "mtrl_course"}
SUBPROCESS_TIMEOUT_SECONDS = 120

# Run in a fresh interpreter with the bundle first on sys.path and agent_src removed (the
# editable install puts agent_src on sys.path through a .pth file). It imports the shim the way
# a check would, then runs it the way the runtime does, with uvicorn.run replaced by a recorder
# so nothing listens. It reports where every wordle_agent* / mtrl_course* module came from.
CHILD_SCRIPT = textwrap.dedent(
    """
    import json, logging, os, runpy, sys
    bundle, agent_src = (os.path.realpath(p) for p in sys.argv[1:3])
    sys.path[:] = [bundle] + [p for p in sys.path if p and os.path.realpath(p) != agent_src]

    import uvicorn
    served = []
    uvicorn.run = lambda app, **kwargs: served.append((app, kwargs))

    import main
    from bedrock_agentcore import BedrockAgentCoreApp
    agent_main = sys.modules["wordle_agent.main"]
    report = {
        "main_file": main.__file__,
        "is_app": isinstance(main.app, BedrockAgentCoreApp),
        "handlers": sorted(main.app.handlers),
        "entry_is_handle_rollout": main.app.handlers.get("main") is agent_main.handle_rollout,
        "served_on_import": len(served),
    }
    runpy.run_path(os.path.join(bundle, "main.py"), run_name="__main__")
    report["served"] = [
        {"is_app": isinstance(app, BedrockAgentCoreApp), "handlers": sorted(app.handlers),
         "port": kwargs.get("port")}
        for app, kwargs in served
    ]
    report["agent_log_handlers"] = len(logging.getLogger("wordle_agent").handlers)
    report["modules"] = {
        name: getattr(module, "__file__", None)
        for name, module in sorted(sys.modules.items())
        if name.split(".")[0] in ("wordle_agent", "mtrl_course")
    }
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return deploy.build_bundle(tmp_path_factory.mktemp("bundle") / "WordleAgent")


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _fake_package(root: Path, requirements: str = "bedrock-agentcore>=1.25\n") -> Path:
    """A stand-in agent package holding the kinds of clutter the bundle must leave out."""
    package = root / "wordle_agent"
    for relative, text in {
        "__init__.py": '"""fake agent"""\n',
        "main.py": "app = None\n",
        "requirements.txt": requirements,
        "data/answers.txt": "CRANE\n",
        "__pycache__/main.cpython-311.pyc": "bytecode",
        "stale.pyc": "bytecode",
        "tests/test_game.py": "def test(): pass\n",
        "test_local.py": "def test(): pass\n",
        "scratch.ipynb": "{}",
        ".env": "SECRET=1\n",
        ".ipynb_checkpoints/scratch-checkpoint.ipynb": "{}",
    }.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def _project_copy(root: Path, **runtime_changes) -> Path:
    """agentcore.json copied to <root>/agentcore/, with the runtime entry changed as given."""
    project = deploy.load_project()
    project["runtimes"][0].update(runtime_changes)
    project_file = root / "agentcore" / "agentcore.json"
    project_file.parent.mkdir(parents=True)
    project_file.write_text(json.dumps(project), encoding="utf-8")
    return project_file


# ----------------------------------------------------------------------------- the real bundle
def test_bundle_holds_the_agent_and_nothing_else(bundle: Path) -> None:
    assert {p.name for p in bundle.iterdir()} == BUNDLE_TOP_LEVEL
    prefix = "wordle_agent/"
    shipped = {f.removeprefix(prefix) for f in _files(bundle) if f.startswith(prefix)}
    source = _files(deploy.AGENT_PACKAGE_DIR)
    assert shipped <= source, f"files that are not in the agent package: {shipped - source}"
    assert "requirements.txt" in shipped and "main.py" in shipped
    for name in AGENT_DATA_FILES:
        assert f"data/{name}" in shipped
    for relative in shipped:
        assert (bundle / "wordle_agent" / relative).read_bytes() == (deploy.AGENT_PACKAGE_DIR / relative).read_bytes()


def test_bundle_has_no_tests_notebooks_state_or_caches(bundle: Path) -> None:
    for relative in _files(bundle):
        parts = relative.split("/")
        name = parts[-1]
        assert not FORBIDDEN_PARTS & set(parts), relative
        assert not name.endswith((".pyc", ".ipynb")), relative
        assert not (name.startswith("test_") or name == "conftest.py"), relative


def test_dependency_manifest_is_the_agents_requirements(bundle: Path) -> None:
    manifest = tomllib.loads((bundle / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = deploy.read_requirements(deploy.AGENT_PACKAGE_DIR / "requirements.txt")
    dependencies = manifest["dependencies"]
    assert manifest["name"] == deploy.BUNDLE_PROJECT_NAME
    # The same requirements, each pinned to the version requirements.lock tested.
    versions = lockfile.tested_versions()
    assert dependencies[: len(requirements)] == [deploy.pin_requirement(r, versions) for r in requirements]
    # agentcore.json keeps OpenTelemetry on, so the runtime starts main.py through
    # opentelemetry-instrument, which only the distro provides.
    names = {lockfile.requirement_name(r) for r in dependencies}
    assert "aws-opentelemetry-distro" in names
    assert not names & COURSE_ONLY_PACKAGES


def test_bundle_is_deterministic_and_rebuilds_in_place(bundle: Path, tmp_path: Path) -> None:
    again = deploy.build_bundle(tmp_path / "again")
    assert deploy.bundle_manifest(again) == deploy.bundle_manifest(bundle)
    (again / "wordle_agent" / "removed_module.py").write_text("x = 1\n", encoding="utf-8")
    deploy.build_bundle(again)
    assert deploy.bundle_manifest(again) == deploy.bundle_manifest(bundle)


@pytest.mark.slow
def test_bundle_imports_and_serves_without_agent_src(bundle: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(AWS_DEFAULT_REGION="us-east-1", SAGEMAKER_TELEMETRY_DISABLED="true")
    completed = subprocess.run(
        # -I: no PYTHONPATH, no user site, no script directory; -B: no .pyc written into the bundle.
        [sys.executable, "-I", "-B", "-c", CHILD_SCRIPT, str(bundle), str(deploy.AGENT_SRC_DIR)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(completed.stdout.strip().splitlines()[-1])

    bundle_root = bundle.resolve()
    assert Path(report["main_file"]).resolve() == bundle_root / "main.py"
    agent_modules = {k: v for k, v in report["modules"].items() if k.startswith("wordle_agent")}
    assert "wordle_agent.main" in agent_modules
    for name, file in agent_modules.items():
        assert file is not None and Path(file).resolve().is_relative_to(bundle_root), (name, file)
    assert not [name for name in report["modules"] if name.startswith("mtrl_course")]

    assert report["is_app"] and report["handlers"] == ["main"]
    assert report["entry_is_handle_rollout"]
    assert report["served_on_import"] == 0
    # Run as a script, the shim serves the app on AgentCore's HTTP port, through the agent's own
    # __main__ block (which also attaches the log handlers the runtime logs rely on).
    assert report["served"] == [{"is_app": True, "handlers": ["main"], "port": AGENTCORE_HTTP_PORT}]
    assert report["agent_log_handlers"] >= 1
    assert not list(bundle.rglob("__pycache__"))


# ----------------------------------------------------------------------- rules, on a fake agent
def test_clutter_is_left_out(tmp_path: Path) -> None:
    package = _fake_package(tmp_path / "src")
    out = deploy.build_bundle(tmp_path / "out", package_dir=package)
    assert _files(out) == {
        "main.py",
        "pyproject.toml",
        "wordle_agent/__init__.py",
        "wordle_agent/main.py",
        "wordle_agent/requirements.txt",
        "wordle_agent/data/answers.txt",
    }


def test_default_output_is_the_code_location(tmp_path: Path) -> None:
    # The CLI resolves codeLocation against the parent of the agentcore/ folder.
    project_file = _project_copy(tmp_path, codeLocation="app/Elsewhere/")
    package = _fake_package(tmp_path / "src")
    out = deploy.build_bundle(project_file=project_file, package_dir=package)
    assert out == (tmp_path / "app" / "Elsewhere").resolve()
    assert (out / "main.py").is_file()


def test_real_code_location_is_the_git_ignored_app_folder() -> None:
    ignored = (deploy.REPO_ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "agent_src/app/" in ignored
    assert deploy.bundle_dir().is_relative_to(deploy.AGENT_SRC_DIR / "app")


def test_entrypoint_file_follows_agentcore_json(tmp_path: Path) -> None:
    project_file = _project_copy(tmp_path, entrypoint="serve.py:handler")
    out = deploy.build_bundle(tmp_path / "out", project_file=project_file, package_dir=_fake_package(tmp_path / "src"))
    assert (out / "serve.py").read_text(encoding="utf-8") == deploy.ENTRYPOINT_SHIM
    assert not (out / "main.py").exists()


def test_otel_distro_only_when_instrumentation_is_on(tmp_path: Path) -> None:
    project_file = _project_copy(tmp_path, instrumentation={"enableOtel": False})
    out = deploy.build_bundle(tmp_path / "out", project_file=project_file, package_dir=_fake_package(tmp_path / "src"))
    manifest = tomllib.loads((out / "pyproject.toml").read_text(encoding="utf-8"))
    assert manifest["project"]["dependencies"] == ["bedrock-agentcore==1.25.0"]  # pinned to requirements.lock


def test_requirement_already_listed_is_not_added_twice(tmp_path: Path) -> None:
    requirements = "aws_opentelemetry_distro==0.18.1  # pinned\n\nbedrock-agentcore>=1.25\n"
    package = _fake_package(tmp_path / "src", requirements=requirements)
    out = deploy.build_bundle(tmp_path / "out", package_dir=package)
    manifest = tomllib.loads((out / "pyproject.toml").read_text(encoding="utf-8"))
    assert manifest["project"]["dependencies"] == [
        "aws_opentelemetry_distro==0.18.1",
        "bedrock-agentcore==1.25.0",
    ]


def test_pip_options_in_requirements_are_rejected(tmp_path: Path) -> None:
    package = _fake_package(tmp_path / "src", requirements="boto3\n-r other.txt\n")
    with pytest.raises(ValueError, match=r"requirements\.txt:2: '-r other\.txt' is a pip option"):
        deploy.build_bundle(tmp_path / "out", package_dir=package)


def test_refuses_to_empty_a_foreign_directory(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me", encoding="utf-8")
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        deploy.build_bundle(tmp_path, package_dir=_fake_package(tmp_path / "src"))
    assert precious.read_text(encoding="utf-8") == "keep me"


def test_manifest_lists_what_the_cli_ships(tmp_path: Path) -> None:
    out = deploy.build_bundle(tmp_path / "out", package_dir=_fake_package(tmp_path / "src"))
    (out / "wordle_agent" / "__pycache__").mkdir()
    (out / "wordle_agent" / "__pycache__" / "main.cpython-312.pyc").write_bytes(b"x")
    (out / ".env.local").write_text("TOKEN=1\n", encoding="utf-8")
    rows = deploy.bundle_manifest(out)
    assert [path for path, _ in rows] == sorted(
        _files(out)
        - {
            "wordle_agent/__pycache__/main.cpython-312.pyc",
            ".env.local",
        }
    )
    assert all(len(digest) == 64 for _, digest in rows)
