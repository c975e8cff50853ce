"""The committed notebooks are well kept: fresh outputs, clean metadata, the shared skeleton.

Fast checks on the files as committed (nothing is executed, except the one slow test that runs
the template through the executor). nbval then re-executes them and compares outputs; these
tests catch what nbval cannot see: a cell edited after its outputs were stored, counts missing
(nbval silently skips such cells), editor metadata, a live step without its guard.

Each check is a function returning problems, so the tests below can also prove that every
check fires on a notebook that breaks its rule.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mtrl_course import config, notebook
from mtrl_course.curriculum import catalog, executor, nbfilter

# The lessons and the template for new ones (in templates/, out of the lessons' folder).
NOTEBOOK_FILES = [*sorted(config.NOTEBOOKS_DIR.glob("*.ipynb")), executor.TEMPLATE_PATH]
LIVE_CHECK = re.compile(r"\bnb\.(?:is_live|live_only|run_live)\b")
SHELL_ESCAPE = re.compile(r"^\s*!|%sx\b|%system\b|get_ipython\(\)\.system\(", re.M)
CELL_MAGIC_SHELL = re.compile(r"^\s*%%(?:bash|sh|script|system)\b")
PIP_INSTALL = re.compile(r"\bpip3?\b['\",\s]+install\b")
NBVAL_SKIP_COMMENT = re.compile(r"^\s*#\s*NBVAL_SKIP\s*$", re.M)
INSTALL_NOTEBOOK = "00"


def _id(path: Path) -> str:
    return path.name


def _nn(path: Path) -> str:
    return executor.notebook_id(path) or notebook.TEMPLATE_ID


def code_cells(nb: Any) -> list[Any]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


# ------------------------------------------------------------------------------------ checks
def check_counts(nb: Any) -> list[str]:
    counts = [cell.execution_count for cell in code_cells(nb)]
    if counts != list(range(1, len(counts) + 1)):
        return [f"execution counts are {counts}, expected 1..{len(counts)} in order: re-run make notebooks"]
    return []


def check_hashes(nb: Any) -> list[str]:
    found = []
    for index, cell in enumerate(code_cells(nb), 1):
        stored = cell.metadata.get(executor.HASH_KEY, {}).get(executor.HASH_FIELD)
        if stored != executor.source_sha(cell.source):
            found.append(f"code cell {index}: stale outputs (source edited after the run): re-run make notebooks")
    return found


def check_errors(nb: Any) -> list[str]:
    return [
        f"code cell {index}: error output {output.get('ename')}: {output.get('evalue')}"
        for index, cell in enumerate(code_cells(nb), 1)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error" and executor.RAISES_TAG not in executor.tags(cell)
    ]


def check_stderr(nb: Any) -> list[str]:
    return [
        f"code cell {index}: stderr in the stored output; quiet it or tag the cell {executor.STDERR_OK_TAG}"
        for index, cell in enumerate(code_cells(nb), 1)
        if executor.STDERR_OK_TAG not in executor.tags(cell)
        and any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", []))
    ]


def check_metadata(nb: Any) -> list[str]:
    found = []
    extra = set(nb.metadata) - executor.NOTEBOOK_METADATA_KEYS
    if extra:
        found.append(f"notebook metadata has volatile keys {sorted(extra)}")
    if nb.metadata.get("kernelspec") != executor.KERNELSPEC:
        found.append(f"kernelspec is {nb.metadata.get('kernelspec')}, expected {executor.KERNELSPEC}")
    extra = set(nb.metadata.get("language_info", {})) - executor.LANGUAGE_INFO_KEYS
    if extra:
        found.append(f"language_info has volatile keys {sorted(extra)}")
    for index, cell in enumerate(nb.cells, 1):
        extra = set(cell.get("metadata", {})) - executor.CELL_METADATA_KEYS
        if extra:
            found.append(f"cell {index} metadata has volatile keys {sorted(extra)}")
    return found


def check_bootstrap(nb: Any, nn: str) -> list[str]:
    cells = code_cells(nb)
    if not cells or cells[0].source != notebook.bootstrap_source(nn):
        return [f"the first code cell must be exactly notebook.bootstrap_source({nn!r})"]
    missing = set(notebook.BOOTSTRAP_TAGS) - set(executor.tags(cells[0]))
    return [f"the bootstrap cell lacks the tags {sorted(missing)}"] if missing else []


def check_generated_cells(nb: Any, nn: str) -> list[str]:
    found = []
    for tag, position in ((executor.BANNER_TAG, 0), (executor.NEXT_TAG, len(nb.cells) - 1)):
        tagged = [i for i, cell in enumerate(nb.cells) if tag in executor.tags(cell)]
        if tagged != [position] or nb.cells[position].cell_type != "markdown":
            found.append(f"one markdown cell tagged {tag!r} must be at position {position}; found {tagged}")
    if nn != notebook.TEMPLATE_ID and not found:
        if nb.cells[0].source != catalog.banner_markdown(nn):
            found.append(
                "the banner differs from the catalog: it is generated; edit curriculum/catalog.py, then run `mtrl notebooks sync`"
            )
        if nb.cells[-1].source != catalog.next_markdown(nn):
            found.append(
                "the next cell differs from the catalog: it is generated; edit curriculum/catalog.py, then run `mtrl notebooks sync`"
            )
    return found


def _has_nbval_skip(cell: Any) -> bool:
    return executor.NBVAL_SKIP_TAG in executor.tags(cell) or bool(NBVAL_SKIP_COMMENT.search(cell.source))


def check_live_cells(nb: Any, nn: str) -> list[str]:
    found = []
    for index, cell in enumerate(code_cells(nb), 1):
        live_only = executor.LIVE_ONLY_TAG in executor.tags(cell)
        if CELL_MAGIC_SHELL.match(cell.source):
            found.append(f"code cell {index}: %%bash-style cells cannot check the mode; use nb.run_live(...)")
        if SHELL_ESCAPE.search(cell.source) and not live_only:
            found.append(f"code cell {index}: a shell escape outside a cell tagged {executor.LIVE_ONLY_TAG!r}")
        if live_only and not LIVE_CHECK.search(cell.source):
            found.append(
                f"code cell {index}: live-only cell without a mode check in code (nb.is_live, nb.live_only, nb.run_live)"
            )
        if live_only and not _has_nbval_skip(cell):
            found.append(f"code cell {index}: live-only cell without the nbval-skip tag or # NBVAL_SKIP")
        if PIP_INSTALL.search(cell.source) and nn != INSTALL_NOTEBOOK:
            found.append(f"code cell {index}: pip install belongs in 00 only")
        if not cell.source.strip():
            found.append(f"code cell {index}: empty code cell")
    return found


STORED_RERUN_TAG = "stored-rerun"  # = notebooks_conftest_plugin.STORED_RERUN_TAG


def _bound_and_read(source: str) -> tuple[set[str], set[str]]:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return bound, read


def check_stored_reruns(nb: Any) -> list[str]:
    """A `stored-rerun` cell is skipped by `make test`: nothing after it may read a name it binds."""
    found = []
    cells = code_cells(nb)
    for index, cell in enumerate(cells, 1):
        if STORED_RERUN_TAG not in executor.tags(cell):
            continue
        bound, _ = _bound_and_read(cell.source)
        for later_index, later in enumerate(cells[index:], index + 1):
            used = sorted(bound & _bound_and_read(later.source)[1])
            if used:
                found.append(
                    f"code cell {later_index} reads {', '.join(used)} from the {STORED_RERUN_TAG} cell {index}, "
                    "which `make test` skips: define them in a cell of their own"
                )
    return found


def all_problems(nb: Any, nn: str) -> list[str]:
    return [
        *check_counts(nb),
        *check_hashes(nb),
        *check_errors(nb),
        *check_stderr(nb),
        *check_metadata(nb),
        *check_bootstrap(nb, nn),
        *check_generated_cells(nb, nn),
        *check_live_cells(nb, nn),
        *check_stored_reruns(nb),
    ]


# ------------------------------------------------------------------------ committed notebooks
def test_there_are_notebooks_to_check() -> None:
    assert executor.TEMPLATE_PATH.is_file(), "templates/_template.ipynb is missing"


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=_id)
def test_notebook_is_in_the_catalog_or_private(path: Path) -> None:
    assert executor.notebook_id(path) or path.name.startswith("_"), (
        f"{path.name} is not in agent_src/mtrl_course/curriculum/catalog.py (names are NN_slug.ipynb; a draft starts with _)"
    )


def _differs_from_head(path: Path) -> bool:
    """True when the working file is not byte-identical to its committed version (or git cannot say)."""
    relative = path.resolve().relative_to(config.REPO_ROOT).as_posix()
    try:
        shown = subprocess.run(
            ["git", "-C", str(config.REPO_ROOT), "show", f"HEAD:{relative}"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return True
    return shown.returncode != 0 or shown.stdout != path.read_bytes()


def as_git_stores_it(path: Path) -> Any:
    """The notebook to check: a committed file exactly as it is; a file changed in the working tree
    (opened, run and saved in JupyterLab) as `git add` will store it, through the clean filter.

    So volatile metadata a kernel or editor wrote (language_info.version, another kernelspec,
    timings) never fails `make test` locally, because it can never reach a commit where the filter
    is configured; and a commit made without the filter still fails on a clean clone (CI), where
    every file equals its committed version and is checked strictly.
    """
    text = path.read_text(encoding="utf-8")
    if _differs_from_head(path):
        text = nbfilter.clean_text(text)
    return nbformat.reads(text, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=_id)
def test_notebook_hygiene(path: Path) -> None:
    nb = as_git_stores_it(path)
    nbformat.validate(nb)
    problems = all_problems(nb, _nn(path))
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=_id)
def test_notebook_is_stored_as_nbformat_writes_it(path: Path) -> None:
    """JupyterLab and the executor both save through nbformat. A file stored in another layout (an
    edit written with json.dump, say) changes on its first save in JupyterLab, which
    tests/test_jupyter.py then reports, minutes later; this says so at once."""
    text = path.read_text(encoding="utf-8")
    if _differs_from_head(path):
        text = nbfilter.clean_text(text)
    canonical = nbformat.writes(nbformat.reads(text, as_version=4)) + "\n"
    assert text == canonical, (
        f"{path.name} is not stored as nbformat writes it: run it with `mtrl notebooks run` or write it "
        "with nbformat.write"
    )


# ------------------------------------------------------------- each check catches its breakage
@pytest.fixture()
def template() -> Any:
    return nbformat.read(executor.TEMPLATE_PATH, as_version=4)


def _code(nb: Any, index: int) -> Any:
    return code_cells(nb)[index]


def test_the_template_passes_every_check(template: Any) -> None:
    assert all_problems(template, notebook.TEMPLATE_ID) == []


def test_missing_or_shuffled_counts_are_caught(template: Any) -> None:
    _code(template, 1).execution_count = None
    assert check_counts(template)


def test_an_edited_cell_is_stale(template: Any) -> None:
    _code(template, 1).source += "\nprint('edited')"
    assert "stale outputs" in check_hashes(template)[0]


def test_error_outputs_are_caught_unless_expected(template: Any) -> None:
    cell = _code(template, 1)
    cell.outputs.append(nbformat.v4.new_output("error", ename="ValueError", evalue="boom", traceback=[]))
    assert check_errors(template)
    cell.metadata["tags"] = [executor.RAISES_TAG]
    assert not check_errors(template)


def test_stderr_is_caught_unless_tagged(template: Any) -> None:
    cell = _code(template, 1)
    cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text="WARNING noisy\n"))
    assert check_stderr(template)
    cell.metadata["tags"] = [executor.STDERR_OK_TAG]
    assert not check_stderr(template)


def test_volatile_metadata_is_caught_and_normalise_removes_it(template: Any) -> None:
    template.metadata["widgets"] = {"state": {}}
    template.metadata["language_info"]["version"] = "3.11.7"
    template.metadata["kernelspec"] = {"name": "conda-env-mtrl-py", "display_name": "mtrl", "language": "python"}
    _code(template, 1).metadata["execution"] = {"iopub.execute_input": "2026-11-30T08:01:41Z"}
    _code(template, 1).metadata["ExecuteTime"] = {"end_time": "2026-11-30T08:01:41Z"}
    assert len(check_metadata(template)) == 4
    executor.normalise(template)
    assert check_metadata(template) == []
    assert check_hashes(template) == []


def test_a_changed_bootstrap_is_caught(template: Any) -> None:
    _code(template, 0).source = _code(template, 0).source.replace("_template", "05")
    assert check_bootstrap(template, notebook.TEMPLATE_ID)
    fresh = nbformat.read(executor.TEMPLATE_PATH, as_version=4)
    _code(fresh, 0).metadata["tags"] = ["bootstrap"]
    assert check_bootstrap(fresh, notebook.TEMPLATE_ID) == ["the bootstrap cell lacks the tags ['nbval-ignore-output']"]


def test_a_drifted_banner_is_caught_and_sync_fixes_it(template: Any) -> None:
    template.cells[0].source = "# 05 · Launch training\n\nold text"
    template.cells[-1].source = "**Next:** somewhere"
    assert len(check_generated_cells(template, "05")) == 2
    assert executor._sync_generated(template, "05") is True
    assert check_generated_cells(template, "05") == []
    assert executor._sync_generated(template, "05") is False


def test_sync_adds_missing_generated_cells(template: Any) -> None:
    template.cells = [c for c in template.cells if not set(executor.tags(c)) & {"banner", "next"}]
    assert check_generated_cells(template, "04")
    executor._sync_generated(template, "04")
    assert check_generated_cells(template, "04") == []
    nbformat.validate(template)


@pytest.mark.parametrize(
    ("source", "tags", "expected"),
    [
        ("!aws s3 ls", [], "outside a cell tagged"),
        ("if nb.is_live:\n    !aws s3 ls", ["live-only"], "without the nbval-skip"),
        ("!aws s3 ls", ["live-only", "nbval-skip"], "without a mode check"),
        ("%%bash\naws s3 ls", [], "%%bash-style"),
        ("%pip install requests", [], "pip install belongs in 00"),
        ("import subprocess; subprocess.run(['pip', 'install', 'x'])", [], "pip install belongs in 00"),
        ("print('pip is how you install packages')", [], None),
        ("   ", [], "empty code cell"),
    ],
)
def test_live_and_install_rules(template: Any, source: str, tags: list[str], expected: str | None) -> None:
    cell = _code(template, 1)
    cell.source, cell.metadata["tags"] = source, tags
    problems = check_live_cells(template, notebook.TEMPLATE_ID)
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


def test_a_later_cell_reading_a_stored_reruns_names_is_caught(template: Any) -> None:
    fresh = nbformat.from_dict(template)
    cells = code_cells(fresh)
    cells[-2].source = "rerun = 1"
    cells[-2].metadata["tags"] = [STORED_RERUN_TAG]
    cells[-1].source = "print(rerun)"
    assert any("reads rerun from the stored-rerun cell" in p for p in check_stored_reruns(fresh))
    cells[-1].source = "print(2)"
    assert check_stored_reruns(fresh) == []


def test_only_a_run_that_leaves_out_the_second_tier_skips_the_stored_reruns() -> None:
    from types import SimpleNamespace

    from notebooks_conftest_plugin import leaves_out_stored_reruns

    def run(expression: str) -> bool:
        return leaves_out_stored_reruns(SimpleNamespace(option=SimpleNamespace(markexpr=expression)))  # type: ignore[arg-type]

    assert run("not experiments")  # make test
    assert not run("experiments") and not run("") and not run("notebooks")


def test_guarded_live_cells_pass(template: Any) -> None:
    cell = _code(template, 1)
    cell.source = "# NBVAL_SKIP\nif nb.is_live:\n    !agentcore deploy"
    cell.metadata["tags"] = ["live-only"]
    assert check_live_cells(template, notebook.TEMPLATE_ID) == []
    cell.source = "%pip install -r requirements.lock"
    cell.metadata["tags"] = []
    assert check_live_cells(template, INSTALL_NOTEBOOK) == []


# ------------------------------------------------------------------------- the toolkit side
def test_bootstrap_source_names_the_notebook() -> None:
    source = notebook.bootstrap_source("05")
    assert source.splitlines()[-1] == 'nb = notebook.setup("05")'
    assert source.startswith("# Bootstrap:")
    compile(source, "bootstrap", "exec")


def test_the_bootstrap_imports_the_installed_toolkit_and_never_touches_sys_path() -> None:
    source = notebook.bootstrap_source("05")
    assert "sys.path" not in source and "ROOT" not in source
    assert "from mtrl_course import notebook" in source


def test_a_toolkit_from_another_checkout_is_named(tmp_path: Path) -> None:
    here, other = tmp_path / "here", tmp_path / "other"
    assert notebook.other_checkout_note(here / "agent_src" / "mtrl_course", here) is None
    note = notebook.other_checkout_note(other / "agent_src" / "mtrl_course", here)
    assert note is not None and str(other / "agent_src") in note and "make lab" in note


def test_kernels_the_cli_and_test_processes_collect_garbage_at_the_course_thresholds(monkeypatch, capsys) -> None:
    assert gc.get_threshold() == config.GC_THRESHOLDS  # this process: tests/conftest.py
    for name in ("_quiet_logs", "_quiet_warnings", "_setup_pandas", "_setup_matplotlib"):
        monkeypatch.setattr(notebook, name, lambda: None)  # process-wide settings other tests rely on
    monkeypatch.setattr(notebook, "_activate_backend", lambda: config.OFFLINE_REGION)
    try:
        gc.set_threshold(700, 10, 10)
        notebook.setup("00")
        assert gc.get_threshold() == config.GC_THRESHOLDS
    finally:
        config.tune_garbage_collector()
    capsys.readouterr()
    probe = (  # any command, even one that fails on its input
        "import gc\nfrom mtrl_course import cli\ngc.set_threshold(700, 10, 10)\n"
        "cli.main(['dataset', 'validate', '/nonexistent/train.jsonl'])\nprint(gc.get_threshold())"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert ran.stdout.strip().splitlines()[-1] == str(config.GC_THRESHOLDS)


def test_setup_rejects_an_unknown_notebook() -> None:
    with pytest.raises(KeyError, match="'42'"):
        notebook.setup("42")


def _context(tmp_path: Path, mode: config.Mode = config.Mode.OFFLINE) -> notebook.NotebookContext:
    return notebook.NotebookContext(nn="05", mode=mode, region="us-east-1", interactive=False, figures_dir=tmp_path)


def test_save_figure_names_and_writes_a_deterministic_png(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    context = _context(tmp_path)

    def draw() -> Any:
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2])
        return fig

    with pytest.raises(ValueError, match="'05_<lower_snake_case>'"):
        context.save_figure(draw(), "06_wrong_notebook")
    with pytest.raises(ValueError):
        context.save_figure(draw(), "05_curve.png")
    plt.close("all")
    context.save_figure(draw(), "05_curve")
    first = (tmp_path / "05_curve.png").read_bytes()
    context.save_figure(draw(), "05_curve")
    assert (tmp_path / "05_curve.png").read_bytes() == first
    assert b"Software" not in first and b"Matplotlib" not in first
    assert plt.get_fignums() == []  # closed, so the inline backend cannot show it twice


def test_table_plain_text_is_rounded_and_truncated(capsys: pytest.CaptureFixture[str]) -> None:
    context = _context(Path("."))
    context.table([{"word": "CRANE", "bits": 5.7431}] * 3, max_rows=2)
    out = capsys.readouterr().out
    assert "5.743" in out and "5.7431" not in out
    assert "(first 2 of 3 rows)" in out
    context.table({"solve rate": 0.5})
    assert "solve rate" in capsys.readouterr().out


def test_show_source_shows_course_code_only(capsys: pytest.CaptureFixture[str]) -> None:
    from wordle_agent import game

    context = _context(Path("."))
    context.show_source(game.score_guess)
    out = capsys.readouterr().out
    assert out.startswith("`agent_src/wordle_agent/game.py`")
    assert "def score_guess(" in out
    with pytest.raises(ValueError, match="agent_src/ only"):
        context.show_source(pytest.fixture)


def test_live_helpers_do_nothing_offline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    context = _context(tmp_path)
    calls = []
    assert context.live_only("spend money", lambda: calls.append(1)) is None
    assert context.live_only("read", lambda: 1, offline=lambda: 2) == 2
    assert context.run_live("agentcore deploy --yes", cwd=config.REPO_ROOT / "agent_src") is None
    out = capsys.readouterr().out
    assert calls == []
    assert "offline: skipped, live only: spend money" in out
    assert "offline: would run `agentcore deploy --yes` in agent_src/" in out


def test_run_live_runs_and_reports_failures_in_live_mode(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    context = _context(tmp_path, config.Mode.LIVE)
    assert context.run_live([sys.executable, "-c", "print('hello from live')"]) == 0
    assert "hello from live" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match="exited with status 3"):
        context.run_live([sys.executable, "-c", "raise SystemExit(3)"])


def test_kernel_env_is_offline_and_has_no_aws_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTRL_MODE", "live")
    monkeypatch.setenv("AWS_PROFILE", "someone")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = executor.kernel_env()
    assert env["MTRL_MODE"] == "offline" and env[notebook.BATCH_ENV_VAR] == "1"
    assert not [name for name in env if name.startswith("AWS_")]
    assert "MPLBACKEND" not in env


def test_resolve_selection() -> None:
    assert executor.resolve(["_template"]) == [executor.TEMPLATE_PATH]
    assert executor.resolve(None)[-1] == executor.TEMPLATE_PATH
    with pytest.raises(FileNotFoundError, match="'no_such_notebook'"):
        executor.resolve(["no_such_notebook"])


def test_executing_the_template_reproduces_the_committed_file(tmp_path: Path) -> None:
    """The executor end to end: a fresh kernel gives byte-identical outputs and metadata."""
    copy = tmp_path / executor.TEMPLATE_PATH.name
    shutil.copy(executor.TEMPLATE_PATH, copy)
    row = executor.execute(copy)
    assert row["status"] == "ok" and row["cells"] == len(code_cells(nbformat.read(copy, as_version=4)))
    assert copy.read_text() == executor.TEMPLATE_PATH.read_text(), "stale template outputs: re-run make notebooks"


# ------------------------------------------------------------------------------ the nbval setup
NBVAL_PROBE_CELLS = {
    # stored output -> what the fresh run prints; only the sanitizer makes these equal
    "import uuid; print(uuid.uuid4())": "9f0c3b2e-1d4a-4c55-8a1e-0b2c3d4e5f60\n",
    "print(f'ran in {__import__(\"time\").perf_counter() % 7:.2f} s')": "ran in 1.23 s\n",
    # stderr is not compared
    "import sys; print('noise', file=sys.stderr); print('kept')": "kept\n",
}


def _probe_notebook(path: Path, last_output: str) -> None:
    cells = []
    for count, (source, text) in enumerate([*NBVAL_PROBE_CELLS.items(), ("print('answer: 42')", last_output)], 1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": executor.KERNELSPEC})
    nbformat.write(nb, str(path))


@pytest.mark.slow
def test_nbval_plugin_sanitizes_marks_and_compares(tmp_path: Path) -> None:
    """pytest -p notebooks_conftest_plugin --nbval: sanitizer and stderr skip by default, real diffs fail."""
    import subprocess

    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    _probe_notebook(good, "answer: 42\n")
    _probe_notebook(bad, "answer: 41\n")
    tests_dir = Path(__file__).parent
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "notebooks_conftest_plugin",
        "--nbval",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp_path),
        "-o",
        f"pythonpath={tests_dir}",
        "-c",
        "/dev/null",
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    # The inner run's plugin empties its state folders before it starts: give it folders of its
    # own, or it would empty the running suite's (the notebooks' chain on the other worker lost
    # its job's MLflow store mid-run that way).
    env["MTRL_TEST_STATE_ROOT"] = str(tmp_path / "state")
    ran = subprocess.run([*command, str(good), str(bad)], capture_output=True, text=True, env=env, timeout=180)
    summary = ran.stdout.strip().splitlines()[-1]
    assert "1 failed, 7 passed" in summary, ran.stdout[-3000:]
    assert "bad.ipynb::Cell 3" in ran.stdout
    deselected = subprocess.run(
        [*command, "-m", "not notebooks", str(good)], capture_output=True, text=True, env=env, timeout=180
    )
    assert "4 deselected" in deselected.stdout, deselected.stdout[-2000:]


def test_normalise_merges_split_stream_outputs(template: Any) -> None:
    cell = _code(template, 1)
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="offline: skipped"),
        nbformat.v4.new_output("stream", name="stdout", text="\n"),
        nbformat.v4.new_output("stream", name="stderr", text="warn\n"),
        nbformat.v4.new_output("stream", name="stdout", text="after\n"),
    ]
    executor.normalise(template)
    assert [(o.name, o.text) for o in cell.outputs] == [
        ("stdout", "offline: skipped\n"),
        ("stderr", "warn\n"),
        ("stdout", "after\n"),
    ]


def test_run_without_store_leaves_the_file_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run empties its state folder first: not the notebooks' chain's, running on another worker.
    monkeypatch.setattr(config, "BATCH_STATE_DIR", tmp_path / "batch-state")
    copy = tmp_path / executor.TEMPLATE_PATH.name
    shutil.copy(executor.TEMPLATE_PATH, copy)
    nb = nbformat.read(copy, as_version=4)
    _code(nb, 2).outputs = []
    nbformat.write(nb, str(copy))
    before = copy.read_bytes()
    results = executor.run([str(copy)], store=False)
    assert [r["status"] for r in results] == ["ok"]
    assert copy.read_bytes() == before


# ------------------------------------------------------------------- tolerant of a saved file
def test_a_file_changed_in_the_working_tree_is_checked_as_git_will_store_it() -> None:
    """JupyterLab's metadata on a changed file does not fail; a committed file is read as it is."""
    probe_dir = config.REPO_ROOT / "build" / f"hygiene-probe-{os.getpid()}"
    probe_dir.mkdir(parents=True, exist_ok=True)
    try:
        nb = nbformat.read(executor.TEMPLATE_PATH, as_version=4)
        nb.metadata["language_info"]["version"] = "3.11.7"
        nb.metadata["kernelspec"] = {
            "name": "mtrl-wordle",
            "display_name": "Python (mtrl-wordle)",
            "language": "python",
        }
        probe = probe_dir / executor.TEMPLATE_PATH.name
        nbformat.write(nb, str(probe))
        assert check_metadata(nbformat.read(probe, as_version=4))
        assert check_metadata(as_git_stores_it(probe)) == []
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    # The committed template (unchanged in a clean checkout) is read as it is, not filtered.
    if not _differs_from_head(executor.TEMPLATE_PATH):
        assert as_git_stores_it(executor.TEMPLATE_PATH) == nbformat.read(executor.TEMPLATE_PATH, as_version=4)


def test_the_bootstrap_names_the_remedy_when_the_toolkit_is_not_installed(tmp_path: Path) -> None:
    """A kernel without the toolkit (notebook 00 not run yet) fails on the import line, and the
    traceback shows that line, whose comment says what to do."""
    script = tmp_path / "bootstrap.py"
    script.write_text(notebook.bootstrap_source("05") + "\n")
    # -I: no PYTHONPATH, no user site; -S: no site-packages, so no editable install either.
    done = subprocess.run([sys.executable, "-I", "-S", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "ModuleNotFoundError" in done.stderr
    assert "Run notebook 00" in done.stderr


def test_a_notebook_loads_an_experiment_script_without_touching_sys_path() -> None:
    context = notebook.NotebookContext(nn="09", mode=config.Mode.OFFLINE, region="us-east-1", interactive=False)
    before = list(sys.path)
    module = context.experiment("standin_lessons")
    assert module.__file__ == str(config.REPO_ROOT / "experiments" / "standin_lessons.py")
    assert context.experiment("standin_lessons") is module
    with pytest.raises(FileNotFoundError, match="no experiment script 'no_such_script'"):
        context.experiment("no_such_script")
    assert "no_such_script" not in sys.modules
    # The script may put its own folder on sys.path (standin_lessons does not); the cell does not.
    assert [p for p in sys.path if p not in before] == []


def test_the_notebooks_beside_the_chain_get_folders_of_their_own_and_print_none_of_them() -> None:
    """Under xdist, notebooks 00 to 08 run in order in the folder `mtrl notebooks run` stores their
    outputs with; 09, 10, 11 and the template run beside them, each in its own state folder
    (tests/notebooks_conftest_plugin.py). That is safe only while none of those prints a path
    inside its folder: the stored outputs were taken in the chain's."""
    import notebooks_conftest_plugin as plugin

    paths = NOTEBOOK_FILES
    folders = {path.name: plugin.notebook_state_dir(path) for path in paths}
    chain = sorted(name for name, folder in folders.items() if folder == plugin.BATCH_STATE_DIR)
    assert chain == sorted(name for name in folders if re.match(r"0[0-8]_", name)), folders
    beside = [path for path in paths if folders[path.name] != plugin.BATCH_STATE_DIR]
    assert len({folders[path.name] for path in beside}) == len(beside) >= 4
    for path in beside:
        printed = "".join(
            str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code"
            for output in cell.outputs
        )
        assert ".state/" not in printed, f"{path.name} prints a path in its state folder: run it in the chain"
