"""JupyterLab stays clean: opening, running and saving a notebook never breaks `make test` or a pull.

The end-to-end test starts a real JupyterLab server on 127.0.0.1, and does what the UI does: it
opens a notebook through the contents API, starts a session with the notebook's `python3`
kernel, asks the kernel for its info and executes every code cell over the kernel's websocket,
puts the results into the notebook as JupyterLab's model does (outputs, counts, the kernel's
`language_info` and kernelspec, timing metadata), and saves it through the contents API (plus the
checkpoint autosave makes): exactly the metadata that used to fail the hygiene test.
JupyterLab's pre-save hook (installed by `make lab`) keeps it off the disk, the git clean filter
keeps it out of commits made from other editors, and the tolerant hygiene check reads a changed
file as git will store it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mtrl_course import config, notebook
from mtrl_course.curriculum import executor, jupyter, nbfilter
from test_notebooks_hygiene import all_problems, check_metadata

SERVER_STARTUP_TIMEOUT = 90
CELL_TIMEOUT = 120
FILTER_COMMAND = f"{sys.executable} -m mtrl_course.curriculum.nbfilter"
# The template's path in the repository (templates/_template.ipynb), as git and JupyterLab name it.
TEMPLATE = executor.TEMPLATE_PATH.relative_to(config.REPO_ROOT).as_posix()


# ------------------------------------------------------------------------------ the filter
def _lab_metadata(nb: dict[str, Any]) -> dict[str, Any]:
    """What JupyterLab and a conda kernel write into a notebook nobody edited."""
    nb = json.loads(json.dumps(nb))
    nb["metadata"]["language_info"]["version"] = "3.11.7"
    nb["metadata"]["kernelspec"] = {"display_name": "Python (mtrl-wordle)", "language": "python", "name": "mtrl-wordle"}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for cell in nb["cells"]:
        cell["metadata"]["execution"] = {"iopub.execute_input": "2026-12-01T10:00:00.000Z"}
        cell["metadata"]["collapsed"] = False
    return nb


def test_the_filter_is_the_identity_on_every_committed_notebook() -> None:
    for path in [*sorted(config.NOTEBOOKS_DIR.glob("*.ipynb")), executor.TEMPLATE_PATH]:
        text = path.read_text(encoding="utf-8")
        assert nbfilter.clean_text(text) == text, f"{path.name}: the filter would change a committed notebook"


def test_the_filter_removes_lab_metadata_and_keeps_outputs_and_hashes() -> None:
    original = json.loads(executor.TEMPLATE_PATH.read_text(encoding="utf-8"))
    opened = _lab_metadata(original)
    assert check_metadata(nbformat.reads(json.dumps(opened), as_version=4))
    assert nbfilter.clean_text(json.dumps(opened)) == executor.TEMPLATE_PATH.read_text(encoding="utf-8")


def test_the_filter_keeps_a_stale_hash_stale() -> None:
    """Re-stamping hashes on commit would hide a cell edited after its outputs were stored."""
    nb = json.loads(executor.TEMPLATE_PATH.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[1]["source"] = "print('edited after the run')"
    cleaned = nbformat.reads(nbfilter.clean_text(json.dumps(nb)), as_version=4)
    assert any("stale outputs" in p for p in all_problems(cleaned, notebook.TEMPLATE_ID))


@pytest.mark.parametrize("text", ["", "not json", '{"a": 1}', "<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> x\n"])
def test_the_filter_passes_anything_else_through(text: str) -> None:
    assert nbfilter.clean_text(text) == text


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@given(
    notebook_meta=st.dictionaries(st.text(max_size=12), _JSON, max_size=4),
    cell_meta=st.dictionaries(
        st.sampled_from(["tags", "mtrl", "jupyter", "execution", "scrolled", "trusted"]), _JSON, max_size=4
    ),
)
def test_the_filter_is_idempotent_and_leaves_only_allowed_keys(
    notebook_meta: dict[str, Any], cell_meta: dict[str, Any]
) -> None:
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": dict(notebook_meta, language_info={"name": "python", "version": "3.12"}),
        "cells": [
            {"cell_type": "code", "id": "a", "metadata": cell_meta, "source": "1", "outputs": [], "execution_count": 1}
        ],
    }
    once = nbfilter.clean_text(json.dumps(nb))
    assert nbfilter.clean_text(once) == once
    cleaned = json.loads(once)
    assert set(cleaned["metadata"]) == executor.NOTEBOOK_METADATA_KEYS
    assert set(cleaned["cells"][0]["metadata"]) <= executor.CELL_METADATA_KEYS


def test_gitattributes_routes_the_notebooks_through_the_filter() -> None:
    for path in ("notebooks/00_setup.ipynb", TEMPLATE):
        ran = subprocess.run(
            ["git", "-C", str(config.REPO_ROOT), "check-attr", "filter", path],
            capture_output=True,
            text=True,
            check=True,
        )
        assert ran.stdout.strip().endswith(f"filter: {nbfilter.FILTER_NAME}"), ran.stdout


def _git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        PYTHONPATH=str(config.REPO_ROOT / "agent_src"),
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def scratch_repo(root: Path, *, with_filter: bool) -> Path:
    """A git repository holding the committed template, with (or without) the filter registered."""
    repo = root / ("filtered" if with_filter else "plain")
    (repo / TEMPLATE).parent.mkdir(parents=True)
    shutil.copy(config.REPO_ROOT / ".gitattributes", repo / ".gitattributes")
    shutil.copy(executor.TEMPLATE_PATH, repo / TEMPLATE)
    _git(repo, "init", "-q")
    if with_filter:
        _git(repo, "config", f"filter.{nbfilter.FILTER_NAME}.clean", FILTER_COMMAND)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "template")
    return repo


def test_with_the_filter_git_stores_no_change_after_lab_metadata(tmp_path: Path) -> None:
    """Another editor (Studio, VS Code) wrote volatile metadata: the diff is empty, `git add` stores
    nothing new, and afterwards the file is clean for a pull. Without the filter it is a change."""
    opened = nbfilter.dumps(_lab_metadata(json.loads(executor.TEMPLATE_PATH.read_text(encoding="utf-8"))))
    target = TEMPLATE
    repo = scratch_repo(tmp_path, with_filter=True)
    (repo / target).write_text(opened, encoding="utf-8")
    assert _git(repo, "diff", "--stat") == ""
    _git(repo, "add", "-A")
    assert _git(repo, "status", "--porcelain") == ""
    plain = scratch_repo(tmp_path, with_filter=False)
    (plain / target).write_text(opened, encoding="utf-8")
    assert _git(plain, "diff", "--stat") != ""


def test_the_pre_save_hook_cleans_course_notebooks_only() -> None:
    opened = _lab_metadata(json.loads(executor.TEMPLATE_PATH.read_text(encoding="utf-8")))
    own = json.loads(json.dumps(opened))
    nbfilter.pre_save_hook(model={"type": "notebook", "content": opened}, path=TEMPLATE)
    assert nbfilter.dumps(opened) == executor.TEMPLATE_PATH.read_text(encoding="utf-8")
    nbfilter.pre_save_hook(model={"type": "notebook", "content": own}, path="scratch/mine.ipynb")
    assert own["metadata"]["language_info"]["version"] == "3.11.7"


# ------------------------------------------------------ opening without a save prompt; the kernel
def test_notebooks_are_handed_to_jupyterlab_with_the_version_the_kernel_reports() -> None:
    """JupyterLab writes the kernel's `language_info` into an open notebook; when it already holds
    exactly that, nothing changed and closing the notebook asks nothing (issue 39). On save the
    pre-save hook takes the version out again, so the file stays the committed one."""
    from ipykernel.ipkernel import IPythonKernel

    reported = IPythonKernel.language_info  # what this environment's kernel sends in kernel_info
    for path in [*sorted(config.NOTEBOOKS_DIR.glob("*.ipynb")), executor.TEMPLATE_PATH]:
        text = path.read_text(encoding="utf-8")
        handed = jupyter.with_kernel_version(json.loads(text))
        assert handed["metadata"]["language_info"] == reported, path.name
        model = {"type": "notebook", "content": handed}
        nbfilter.pre_save_hook(model=model, path=path.relative_to(config.REPO_ROOT).as_posix())
        assert nbfilter.dumps(handed) == text, path.name
    # A notebook that has a version, or asks for another kernel, is handed out as it is.
    other = {"metadata": {"kernelspec": {"name": "mtrl-wordle"}, "language_info": {"name": "python"}}}
    assert jupyter.with_kernel_version(json.loads(json.dumps(other))) == other
    versioned = {
        "metadata": {"kernelspec": {"name": "python3"}, "language_info": {"name": "python", "version": "3.12.1"}}
    }
    assert jupyter.with_kernel_version(json.loads(json.dumps(versioned))) == versioned


def test_the_server_uses_the_course_contents_manager_and_save_hook() -> None:
    args = jupyter.server_args()
    assert f"--ServerApp.contents_manager_class={jupyter.CONTENTS_MANAGER}" in args
    assert f"--ContentsManager.pre_save_hook={jupyter.PRE_SAVE_HOOK}" in args
    module, _, name = jupyter.CONTENTS_MANAGER.rpartition(".")
    assert module == jupyter.__name__ and getattr(jupyter, name) is jupyter.CourseContentsManager


def test_the_kernelspec_is_installed_only_when_it_differs(tmp_path: Path) -> None:
    """`make lab` with a shared virtualenv used to rewrite its kernelspec every time."""
    assert jupyter.ensure_kernelspec(tmp_path) is True
    spec = jupyter.kernelspec_dir(tmp_path)
    kernel = json.loads((spec / "kernel.json").read_text())
    assert kernel["display_name"] == jupyter.KERNEL_DISPLAY_NAME and kernel["language"] == "python"
    written = {p.name: p.stat().st_mtime_ns for p in spec.iterdir()}
    assert jupyter.ensure_kernelspec(tmp_path) is False
    assert {p.name: p.stat().st_mtime_ns for p in spec.iterdir()} == written
    (spec / "kernel.json").write_text(json.dumps({**kernel, "argv": ["/elsewhere/python", *kernel["argv"][1:]]}))
    assert jupyter.ensure_kernelspec(tmp_path) is True
    assert json.loads((spec / "kernel.json").read_text()) == kernel
    # make lab leaves the install to jupyter.py (it used to run ipykernel install itself).
    make = shutil.which("make")
    if make is not None:
        planned = subprocess.run(
            [make, "--no-print-directory", "-n", "-C", str(config.REPO_ROOT), "lab", f"VENV={sys.prefix}"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert "ipykernel install" not in planned and "mtrl_course.curriculum.jupyter" in planned, planned


# ------------------------------------------------------------------------ a real JupyterLab
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def lab_server(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """A JupyterLab server on loopback over a folder shaped like the course; (url, token, root)."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "agent_src").symlink_to(config.REPO_ROOT / "agent_src")  # shaped like a checkout
    for path in config.NOTEBOOKS_DIR.glob("*.ipynb"):
        shutil.copy(path, root / "notebooks")
    (root / TEMPLATE).parent.mkdir(parents=True)
    shutil.copy(executor.TEMPLATE_PATH, root / TEMPLATE)
    token, port = uuid.uuid4().hex, _free_port()
    jupyter_home = tmp_path / "jupyter"
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(
        {
            "JUPYTER_CONFIG_DIR": str(jupyter_home / "config"),
            "JUPYTER_RUNTIME_DIR": str(jupyter_home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(jupyter_home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(jupyter_home / "workspaces"),
            "MTRL_MODE": "offline",
            "PYTHONPATH": str(config.REPO_ROOT / "agent_src"),
        }
    )
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        *jupyter.server_args(root),
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        # If this test dies, the server still stops by itself.
        "--ServerApp.shutdown_no_activity_timeout=300",
        "--MappingKernelManager.cull_idle_timeout=300",
    ]
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=jupyter.lab_env(env), cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_STARTUP_TIMEOUT
        while True:
            try:
                if (
                    httpx.get(f"{url}/api/status", headers={"Authorization": f"token {token}"}, timeout=5).status_code
                    == 200
                ):
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url, token, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


async def _run_cells(ws_url: str, sources: list[str]) -> tuple[dict[str, Any], list[tuple[int, list[Any]]]]:
    """Over the kernel's websocket (the legacy JSON protocol): kernel_info, then each cell in turn."""
    from tornado.websocket import websocket_connect

    session = uuid.uuid4().hex
    conn = await websocket_connect(ws_url)

    def message(msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        header = {
            "msg_id": uuid.uuid4().hex,
            "username": "learner",
            "session": session,
            "msg_type": msg_type,
            "version": "5.3",
            "date": datetime.now(timezone.utc).isoformat(),
        }
        return {
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": "shell",
            "buffers": [],
        }

    async def request(msg: dict[str, Any]) -> tuple[dict[str, Any], list[Any], int | None]:
        await conn.write_message(json.dumps(msg))
        reply, outputs, count, idle = None, [], None, False
        while reply is None or not idle:
            raw = await asyncio.wait_for(conn.read_message(), CELL_TIMEOUT)
            assert raw is not None, "the kernel websocket closed"
            got = json.loads(raw)
            if got.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                continue
            kind = got["header"]["msg_type"]
            if got["channel"] == "shell":
                reply = got["content"]
            elif kind == "status" and got["content"]["execution_state"] == "idle":
                idle = True
            elif kind == "execute_input":
                count = got["content"]["execution_count"]
            elif kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append(nbformat.v4.output_from_msg(got))
            elif kind == "clear_output":
                outputs.clear()
        return reply, outputs, count

    info, _, _ = await request(message("kernel_info_request", {}))
    results = []
    for source in sources:
        content = {
            "code": source,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        reply, outputs, count = await request(message("execute_request", content))
        assert reply["status"] == "ok", f"cell failed in JupyterLab: {reply}\n{source}"
        results.append((int(count or reply["execution_count"]), outputs))
    conn.close()
    return info, results


@pytest.mark.slow
@pytest.mark.experiments
def test_open_run_and_save_in_jupyterlab_keeps_make_test_green(
    lab_server: tuple[str, str, Path], tmp_path: Path
) -> None:
    url, token, root = lab_server
    path = TEMPLATE
    headers = {"Authorization": f"token {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        model = client.get(f"/api/contents/{path}", params={"content": 1}).raise_for_status().json()
        nb = model["content"]
        spec_name = nb["metadata"]["kernelspec"]["name"]
        specs = client.get("/api/kernelspecs").raise_for_status().json()["kernelspecs"]
        assert spec_name in specs, f"JupyterLab offers no {spec_name!r} kernel: {sorted(specs)}"
        session = (
            client.post(
                "/api/sessions", json={"path": path, "name": path, "type": "notebook", "kernel": {"name": spec_name}}
            )
            .raise_for_status()
            .json()
        )
        kernel_id = session["kernel"]["id"]
        ws_url = f"ws://127.0.0.1:{url.rsplit(':', 1)[1]}/api/kernels/{kernel_id}/channels?token={token}"
        code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
        info, results = asyncio.run(
            _run_cells(ws_url, ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in code])
        )
        # The notebook came with the language_info the kernel reports: JupyterLab's update on kernel
        # start changes nothing, so opening and closing it asks nothing (issue 39).
        assert nb["metadata"]["language_info"] == info["language_info"]
        # What JupyterLab's notebook model writes back on save.
        nb["metadata"]["language_info"] = info["language_info"]
        nb["metadata"]["kernelspec"] = {
            "name": spec_name,
            "display_name": specs[spec_name]["spec"]["display_name"],
            "language": specs[spec_name]["spec"]["language"],
        }
        for cell, (count, outputs) in zip(code, results, strict=True):
            cell["execution_count"] = count
            cell["outputs"] = executor._coalesce_streams(outputs)  # the output area merges a stream's messages
            cell["metadata"]["execution"] = {"iopub.execute_input": datetime.now(timezone.utc).isoformat()}
        client.put(
            f"/api/contents/{path}", json={"type": "notebook", "format": "json", "content": nb}
        ).raise_for_status()
        client.post(f"/api/contents/{path}/checkpoints").raise_for_status()
        client.delete(f"/api/sessions/{session['id']}").raise_for_status()
        # Every other notebook opened with that kernel and saved: the same metadata, the same file.
        kernelspec = nb["metadata"]["kernelspec"]
        for other in sorted(config.NOTEBOOKS_DIR.glob("*.ipynb")):
            api_path = f"notebooks/{other.name}"
            opened = client.get(f"/api/contents/{api_path}", params={"content": 1}).raise_for_status().json()["content"]
            opened["metadata"].update(language_info=info["language_info"], kernelspec=kernelspec)
            client.put(
                f"/api/contents/{api_path}", json={"type": "notebook", "format": "json", "content": opened}
            ).raise_for_status()
            # A bool, not the two files: pytest's diff of two large byte strings takes minutes.
            unchanged = (root / api_path).read_bytes() == other.read_bytes()
            assert unchanged, f"saving {other.name} in JupyterLab changed it"

    saved_text = (root / path).read_text(encoding="utf-8")
    # The kernel reported its version and the session's kernelspec was written back; the pre-save
    # hook removed both before the file reached the disk.
    assert "version" in info["language_info"]
    saved = nbformat.reads(saved_text, as_version=4)
    assert check_metadata(saved) == []
    assert all_problems(saved, notebook.TEMPLATE_ID) == []
    # A fresh kernel in JupyterLab reproduces the committed outputs, so the saved file is the
    # committed file, byte for byte: git sees no change, nothing to commit or to conflict on a pull.
    assert saved_text == executor.TEMPLATE_PATH.read_text(encoding="utf-8")
    repo = scratch_repo(tmp_path, with_filter=False)
    (repo / path).write_text(saved_text, encoding="utf-8")
    assert _git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
@pytest.mark.experiments
def test_opening_and_closing_a_notebook_in_jupyterlab_asks_nothing(lab_server: tuple[str, str, Path]) -> None:
    """In chromium: open notebook 04, let the kernel start and report, and JupyterLab must not
    mark the notebook changed (it did within 3 s, so closing it asked to save), nor ask on close."""
    from test_site import _browser_or_skip

    executable, sync_api = _browser_or_skip()
    url, token, root = lab_server
    name = "04_dataset.ipynb"
    with sync_api.sync_playwright() as playwright:  # type: ignore[attr-defined]
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/lab/tree/notebooks/{name}?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            # The kernel has started and answered kernel_info when the toolbar shows it idle.
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
            page.wait_for_timeout(5_000)  # JupyterLab marked the notebook changed within 3 s
            dirty = page.eval_on_selector_all(".lm-TabBar-tab.jp-mod-dirty", "tabs => tabs.map(t => t.textContent)")
            assert dirty == [], f"JupyterLab marks {dirty} changed after only opening it"
            dialogs: list[str] = []

            def answer(dialog: Any) -> None:  # a browser "leave the page?" prompt, if any
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", answer)
            page.locator(".lm-TabBar-tab.jp-mod-current .lm-TabBar-tabCloseIcon").last.click()
            page.wait_for_timeout(1_000)
            assert page.locator(".jp-Dialog").count() == 0, page.inner_text(".jp-Dialog")
            assert dialogs == []
        finally:
            browser.close()
    assert (root / "notebooks" / name).read_bytes() == (config.NOTEBOOKS_DIR / name).read_bytes()
