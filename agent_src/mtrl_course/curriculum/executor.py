"""Execute the notebooks offline and store their outputs: what `make notebooks` runs.

`run()` executes each notebook top to bottom in a fresh kernel (the interpreter running this
code), with `MTRL_MODE=offline` forced, progress bars off and the kernel's working directory in
`notebooks/`. It writes the outputs back with their execution counts (nbval skips a cell whose
count is missing, so counts are part of the test) and strips what changes from run to run
(execution timestamps, interpreter versions, widget state). Each code cell gets a hash of its
source in `metadata.mtrl.source_sha`, so a test can tell that a cell was edited after its outputs
were stored.

In a terminal the run shows a bar and one line per notebook as it finishes (stderr, see
`mtrl_course.progress`); the table at the end is the same either way. When a notebook takes far
longer (or shorter) than its banner says, the learner is told both times. The banners' times are
written by a maintainer's `mtrl notebooks run --record-times` (`record_offline_seconds`).

`sync()` rewrites the generated cells (the banner, tagged "banner"; the closing "next" cell,
tagged "next") from `catalog`, and the README's notebook table between its markers. `run()`
syncs first.

Conventions the hygiene tests enforce, and this module supports:
- cells tagged `live-only` do nothing useful offline: they check the mode in code
  (`nb.is_live`, `nb.live_only`, `nb.run_live`) AND carry `nbval-skip`;
- shell escapes (`!aws ...`) appear only in live-only cells; `%%bash` cells are not used;
  prefer `nb.run_live("aws ...")`, which runs everywhere and prints the command offline;
- deliberate errors are tagged `raises-exception` (nbclient and nbval both honour it);
- stderr in stored outputs only in cells tagged `stderr-ok`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mtrl_course import config, progress
from mtrl_course.curriculum import catalog
from mtrl_course.notebook import BATCH_ENV_VAR, BOOTSTRAP_TAGS, TEMPLATE_ID, bootstrap_source

CELL_TIMEOUT = 600  # seconds per cell; offline notebooks aim for about 90 s in total
KERNEL_STARTUP_TIMEOUT = 60
CURRENT_ENV_KERNEL = "mtrl-current-env"
# The template for new lessons lives outside notebooks/, so JupyterLab's file browser and the
# site list the lessons only (it sorted first there); nbval checks it like any notebook.
TEMPLATES_DIR = config.REPO_ROOT / "templates"
TEMPLATE_PATH = TEMPLATES_DIR / f"{TEMPLATE_ID}.ipynb"
BANNER_TAG = "banner"
NEXT_TAG = "next"
BOOTSTRAP_TAG = BOOTSTRAP_TAGS[0]
LIVE_ONLY_TAG = "live-only"
STDERR_OK_TAG = "stderr-ok"
RAISES_TAG = "raises-exception"
NBVAL_SKIP_TAG = "nbval-skip"
HASH_KEY = "mtrl"
HASH_FIELD = "source_sha"
HASH_LENGTH = 16
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# Everything else in notebook/cell metadata is editor state or run details (Studio's
# instance list, Colab, VS Code, ExecuteTime, collapsed/scrolled, nbclient's timings).
NOTEBOOK_METADATA_KEYS = {"kernelspec", "language_info"}
LANGUAGE_INFO_KEYS = {"name", "codemirror_mode", "file_extension", "mimetype", "nbconvert_exporter", "pygments_lexer"}
CELL_METADATA_KEYS = {"tags", HASH_KEY, "jupyter"}
# The kernel inherits our environment minus anything that could reach a real AWS account
# (offline mode also replaces credentials itself; this is the second lock on the door).
KERNEL_ENV = {
    config.MODE_ENV_VAR: config.Mode.OFFLINE.value,
    BATCH_ENV_VAR: "1",
    "TQDM_DISABLE": "1",
    # Set iteration order (and anything else hash-seeded) is the same in every run.
    "PYTHONHASHSEED": "0",
}
KERNEL_ENV_DROP_PREFIXES = ("AWS_",)
# ipykernel picks the inline backend only when MPLBACKEND is unset; the Makefile sets Agg.
KERNEL_ENV_DROP = ("MPLBACKEND",)


def figures_dir(*, store: bool, store_figures: bool = False) -> Path:
    """Where a run's kernels save their figures (`nb.save_figure`).

    A run that stores its outputs (`make notebooks`) refreshes the committed figures/ with them; a
    check run (`--no-store`, what `make course` runs) leaves the checkout as it found it and
    writes them to build/figures/ (git-ignored), unless asked to store them as well
    (`--store-figures`, `make figures`). MTRL_FIGURES_DIR, when set, wins (the test suite sets it).
    """
    chosen = os.environ.get(config.FIGURES_ENV_VAR)
    if chosen:
        return Path(chosen)
    return config.COMMITTED_FIGURES_DIR if store or store_figures else config.SCRATCH_FIGURES_DIR


class NotebookRunError(RuntimeError):
    """A cell failed; `results` holds the table rows up to and including the failure."""

    def __init__(self, message: str, results: list[dict[str, Any]]):
        super().__init__(message)
        self.results = results


# -------------------------------------------------------------------------------- selection
def course_notebooks() -> list[Path]:
    """The catalog's notebooks that exist on disk, in course order."""
    return [entry.path for entry in catalog.NOTEBOOKS if entry.path.is_file()]


def resolve(selection: Sequence[str] | None = None) -> list[Path]:
    """Notebook files for "05", "05_launch_training(.ipynb)", "_template" or a path.

    None means every course notebook that exists, then the template (its stored outputs are
    checked by nbval like any other).
    """
    if not selection:
        return course_notebooks() + ([TEMPLATE_PATH] if TEMPLATE_PATH.is_file() else [])
    paths = []
    for item in selection:
        name = item.removesuffix(".ipynb")
        if catalog.NN_PATTERN.match(name):
            path = catalog.get(name).path
        elif name == TEMPLATE_ID:
            path = TEMPLATE_PATH
        elif Path(item).suffix == ".ipynb" and Path(item).is_file():
            path = Path(item).resolve()
        else:
            path = config.NOTEBOOKS_DIR / f"{name}.ipynb"
        if not path.is_file():
            raise FileNotFoundError(f"no notebook for {item!r}: {path} does not exist")
        paths.append(path)
    return paths


def notebook_id(path: Path) -> str | None:
    """The catalog number of a notebook file, or None for the template and strays."""
    for entry in catalog.NOTEBOOKS:
        if path.name == entry.filename:
            return entry.nn
    return None


# --------------------------------------------------------------------------------- hygiene
def source_sha(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def normalise(nb: Any) -> Any:
    """Strip volatile metadata in place, keep outputs and counts, stamp code-cell source hashes."""
    from nbformat import NotebookNode, from_dict

    language = nb.metadata.get("language_info", {"name": "python"})
    nb.metadata = from_dict(
        {
            "kernelspec": dict(KERNELSPEC),
            "language_info": {k: v for k, v in language.items() if k in LANGUAGE_INFO_KEYS},
        }
    )
    for cell in nb.cells:
        metadata = NotebookNode({k: v for k, v in cell.get("metadata", {}).items() if k in CELL_METADATA_KEYS})
        if not metadata.get("tags"):
            metadata.pop("tags", None)
        if cell.cell_type == "code":
            metadata[HASH_KEY] = NotebookNode({HASH_FIELD: source_sha(cell.source)})
            cell.outputs = _coalesce_streams(cell.get("outputs", []))
            for output in cell.outputs:
                output.pop("transient", None)
        else:
            metadata.pop(HASH_KEY, None)
        cell.metadata = metadata
    return nb


def _coalesce_streams(outputs: list[Any]) -> list[Any]:
    """Merge adjacent outputs of the same stream: how the kernel splits a print (one message
    or two) depends on timing, and the stored file must not."""
    merged: list[Any] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] = previous["text"] + output["text"]
        else:
            merged.append(output)
    return merged


# ------------------------------------------------------------------------------------ sync
def _tagged(nb: Any, tag: str) -> list[Any]:
    return [cell for cell in nb.cells if tag in tags(cell)]


def _markdown_cell(nb: Any, text: str, tag: str) -> Any:
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = [tag]
    if nb.nbformat_minor >= 5:
        cell.id = tag  # stable ids: a fresh random id on every sync would churn the diff
    else:
        cell.pop("id", None)  # nbformat 4.4 files have no cell ids
    return cell


def _sync_generated(nb: Any, nn: str) -> bool:
    """Make the banner and next cells of `nb` equal their renders; True when something changed."""
    changed = False
    for tag, text, position in (
        (BANNER_TAG, catalog.banner_markdown(nn), 0),
        (NEXT_TAG, catalog.next_markdown(nn), None),
    ):
        cells = _tagged(nb, tag)
        if not cells:
            cell = _markdown_cell(nb, text, tag)
            nb.cells.insert(0 if position == 0 else len(nb.cells), cell)
            changed = True
            continue
        for cell in cells:
            if cell.cell_type != "markdown" or cell.source != text:
                cell.cell_type, cell.source = "markdown", text
                cell.pop("outputs", None)
                cell.pop("execution_count", None)
                changed = True
    # The bootstrap cell is generated too (`notebook.bootstrap_source`); a rewritten one is a
    # code change, so its stored output counts as stale until the notebook is run again.
    bootstrap = _tagged(nb, BOOTSTRAP_TAG)
    if bootstrap and bootstrap[0].cell_type == "code" and bootstrap[0].source != bootstrap_source(nn):
        bootstrap[0].source = bootstrap_source(nn)
        changed = True
    return changed


def readme_with_table(text: str) -> str | None:
    """README text with its notebooks block replaced by `catalog.readme_table()`; None without markers."""
    pattern = re.compile(re.escape(catalog.README_START) + r".*?" + re.escape(catalog.README_END), re.S)
    if not pattern.search(text):
        return None
    block = f"{catalog.README_START}\n{catalog.readme_table()}\n{catalog.README_END}"
    return pattern.sub(lambda _: block, text, count=1)


def sync(paths: Sequence[Path] | None = None, *, readme: bool = True, check: bool = False) -> list[str]:
    """Rewrite generated cells and the README table from the catalog.

    Returns one message per file that changed (with `check=True`: that is out of date, and
    nothing is written). A README without the markers is reported, not an error here.
    """
    import nbformat

    malformed = catalog.problems()
    if malformed:
        raise ValueError("the notebook catalog has problems:\n  " + "\n  ".join(malformed))
    messages = []
    for path in paths if paths is not None else course_notebooks():
        nn = notebook_id(path)
        if nn is None:
            continue  # the template's banner is an example, not a render
        nb = nbformat.read(path, as_version=4)
        if _sync_generated(nb, nn):
            messages.append(f"{path.name}: banner/next/bootstrap cell {'out of date' if check else 'updated'}")
            if not check:
                _write(nb, path)
    if readme:
        text = catalog.README_FILE.read_text(encoding="utf-8")
        updated = readme_with_table(text)
        if updated is None:
            messages.append(
                f"README.md: no notebooks table; add the lines {catalog.README_START} and "
                f"{catalog.README_END} where it belongs"
            )
        elif updated != text:
            messages.append(f"README.md: notebooks table {'out of date' if check else 'updated'}")
            if not check:
                catalog.README_FILE.write_text(updated, encoding="utf-8")
    return messages


def _write(nb: Any, path: Path) -> None:
    import nbformat

    nbformat.validate(nb)
    nbformat.write(nb, str(path))


# ------------------------------------------------------------------------------- execution
def kernel_env() -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(KERNEL_ENV_DROP_PREFIXES) and name not in KERNEL_ENV_DROP
    }
    env.update(KERNEL_ENV)
    return env


def _kernel_manager_class() -> type:
    """A kernel manager that runs this interpreter, whatever kernelspecs are installed.

    A `python3` kernelspec in the user's Jupyter folder may point at another Python; the
    notebooks must run against this environment's packages. nbclient creates the manager from
    this class, so it also shuts the kernel down after each notebook (a manager passed in ready
    made would be left running).
    """
    import ipykernel.kernelspec
    import zmq
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from traitlets import default

    class CurrentEnvKernelSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> Any:
            if kernel_name == CURRENT_ENV_KERNEL:
                return self.kernel_spec_class(
                    resource_dir=ipykernel.kernelspec.RESOURCES, **ipykernel.kernelspec.get_kernel_dict()
                )
            return super().get_kernel_spec(kernel_name)

    class CurrentEnvKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _current_env_specs(self) -> KernelSpecManager:
            return CurrentEnvKernelSpecs(data_dir=self.data_dir)

        # With CurveZMQ available the kernel's messages are encrypted even on loopback, and the
        # kernel stops warning about plain-text TCP on every start.
        @default("transport_encryption")
        def _encrypt_when_possible(self) -> str:
            return "auto" if zmq.has("curve") else "disabled"

    return CurrentEnvKernelManager


def _first_error(nb: Any) -> str:
    for index, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and RAISES_TAG not in tags(cell):
                return f"code cell {index + 1}: {output.get('ename')}: {output.get('evalue')}"
    return "unknown cell"


def execute(path: Path, timeout: int = CELL_TIMEOUT, *, store: bool = True) -> dict[str, Any]:
    """Run one notebook in a fresh kernel and (with `store`) write its outputs back; returns its table row.

    Raises NotebookRunError (the file is left untouched) when a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import (
        CellExecutionError,
        CellTimeoutError,
        DeadKernelError,
    )

    nb = nbformat.read(path, as_version=4)
    code_cells = sum(cell.cell_type == "code" for cell in nb.cells)
    client = NotebookClient(
        nb,
        kernel_manager_class=_kernel_manager_class(),
        kernel_name=CURRENT_ENV_KERNEL,
        timeout=timeout,
        startup_timeout=KERNEL_STARTUP_TIMEOUT,
        allow_errors=False,  # cells tagged raises-exception may still raise
        record_timing=False,
        shutdown_kernel="immediate",  # the outputs are in; a graceful shutdown only adds seconds
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},  # the notebook's folder, as nbval and Jupyter
    )
    start = time.perf_counter()
    row: dict[str, Any] = {
        "notebook": path.name,
        "seconds": 0.0,
        "cells": code_cells,
        "stderr cells": 0,
        "status": "ok",
    }
    try:
        client.execute(env=kernel_env())
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        row.update(seconds=round(time.perf_counter() - start, 1), status="error")
        if isinstance(err, CellExecutionError):
            where = _first_error(nb)
        else:
            where = "a cell timed out" if isinstance(err, CellTimeoutError) else "the kernel died (out of memory?)"
        raise NotebookRunError(f"{path.name}: {where}\n{err}", [row]) from err
    row["seconds"] = round(time.perf_counter() - start, 1)
    row["stderr cells"] = sum(
        any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", []))
        for cell in nb.cells
        if cell.cell_type == "code"
    )
    if store:
        _write(normalise(nb), path)
    return row


def run(
    notebooks: Sequence[str] | None = None,
    timeout: int = CELL_TIMEOUT,
    *,
    store: bool = True,
    sync_first: bool = True,
    record_times: bool = False,
    store_figures: bool = False,
) -> list[dict[str, Any]]:
    """Execute notebooks in course order, each in a fresh offline kernel; store their outputs.

    `notebooks`: numbers ("05"), file names or paths; None runs every course notebook that
    exists, then the template. `store=False` only checks that they run (what `make course`
    wants: a learner's run must not rewrite committed files); it also skips the sync, and the
    figures go to build/figures/ unless `store_figures` (see `figures_dir`). Prints a
    table (notebook, seconds, cells, status) and, for a learner, where a measured time is far
    from the one the course states. `record_times` (maintainers) writes the measured times into
    the catalog and syncs again (see `record_offline_seconds`). Stops at the first failing
    notebook and raises NotebookRunError, whose message names the notebook, the cell and the
    error; nothing is recorded then.
    """
    paths = resolve(notebooks)
    if sync_first and store:
        for message in sync(paths):
            print(f"sync: {message}")
    # One emptied offline state folder for the whole run, shared by its kernels in order (06
    # reads the job 05 trained): stored outputs are those of a clean run, whatever `.state/`
    # holds; the test suite uses the same folder, so printed paths match.
    shutil.rmtree(config.BATCH_STATE_DIR, ignore_errors=True)
    config.BATCH_STATE_DIR.mkdir(parents=True, exist_ok=True)
    figures = figures_dir(store=store, store_figures=store_figures)
    with _env(config.STATE_ENV_VAR, str(config.BATCH_STATE_DIR)), _env(config.FIGURES_ENV_VAR, str(figures)):
        results = _run_paths(paths, timeout, store)
    print(f"figures: {_figures_note(figures)}")
    if record_times:
        record_offline_seconds(results, sync_after=store)
    return results


def measured_offline_seconds(results: Sequence[dict[str, Any]]) -> dict[str, int]:
    """`nn -> whole seconds` for the catalog notebooks that ran to the end (the template has no entry)."""
    measured = {}
    for row in results:
        nn = notebook_id(config.NOTEBOOKS_DIR / row["notebook"])
        if nn is not None and row["status"] == "ok" and row["seconds"] is not None:
            # At least 1: the catalog refuses 0, and a notebook never takes no time.
            measured[nn] = max(1, round(row["seconds"]))
    return measured


def record_offline_seconds(results: Sequence[dict[str, Any]], *, sync_after: bool = True) -> dict[str, int]:
    """Write the measured times of `results` into catalog.py's offline_seconds; returns what was written.

    With `sync_after`, the banners and the README table are then synced from the new numbers.
    """
    measured = measured_offline_seconds(results)
    if not measured:
        print("record-times: no catalog notebook ran to the end; nothing recorded")
        return measured
    changes = catalog.record_offline_seconds(measured)
    for nn, seconds in measured.items():
        before = changes.get(nn, seconds)
        change = "unchanged" if before == seconds else f"was {before}"
        print(f"record-times: {catalog.get(nn).filename}: offline_seconds={seconds} ({change})")
    print(
        f"record-times: the banners say these times were taken on {catalog.OFFLINE_TESTED_ON}: record on such "
        "a machine, or change OFFLINE_TESTED_ON in catalog.py to what this one is"
    )
    if sync_after:
        for message in sync(course_notebooks()):
            print(f"sync: {message}")
    else:
        print("record-times: run `mtrl notebooks sync` to carry them into the banners and the README table")
    return measured


def _figures_note(folder: Path) -> str:
    if folder == config.COMMITTED_FIGURES_DIR:
        return "figures/ (the committed figures)"
    if folder == config.SCRATCH_FIGURES_DIR:
        return "build/figures/ (git-ignored; `make figures` or --store-figures writes them to figures/)"
    return f"{folder} (MTRL_FIGURES_DIR)"


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _run_paths(paths: Sequence[Path], timeout: int, store: bool) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    # Progress (stderr, terminals only): a bar over the notebooks whose clock moves while one
    # runs, and a line for each as it finishes; the table below is printed either way.
    with progress.bar(total=len(paths), desc="notebooks", unit="notebook") as shown, progress.ticking(shown):
        for path in paths:
            shown.set_postfix_str(path.name, refresh=True)
            try:
                results.append(execute(path, timeout, store=store))
            except NotebookRunError as err:
                progress.note(f"{path.name}: FAILED after {err.results[-1]['seconds']} s")
                results.extend(err.results)
                results.extend(
                    {"notebook": p.name, "seconds": None, "cells": None, "stderr cells": None, "status": "not run"}
                    for p in paths[len(results) :]
                )
                shown.close()
                print_results(results, store=store)
                raise NotebookRunError(str(err), results) from err
            progress.note(f"{path.name}: ok in {results[-1]['seconds']} s")
            shown.update()
    print_results(results, store=store)
    return results


# A measured time is worth a learner's attention only when it is far from the stated one: a
# loaded or slower machine is expected to differ by some seconds.
TIME_NOTE_FACTOR = 2.0
TIME_NOTE_MIN_GAP_S = 30


def time_note(notebook: str, measured_s: float, stated_s: int | None, missing_before: Sequence[str] = ()) -> str | None:
    """The learner's note when a notebook's time here is far from the course's; None otherwise.

    `missing_before`: the notebook's prerequisites that did not run before it in this run. The
    course's times are taken in course order, where a notebook reuses what earlier ones left
    (06 and 07 reuse 05's trained job); run without them, it redoes that work first.
    """
    if stated_s is None or measured_s <= 0:
        return None
    gap = abs(measured_s - stated_s)
    ratio = max(measured_s, stated_s) / max(1, min(measured_s, stated_s))
    if gap < TIME_NOTE_MIN_GAP_S or ratio < TIME_NOTE_FACTOR:
        return None
    direction = "longer" if measured_s > stated_s else "less time"
    if measured_s > stated_s and missing_before:
        why = (
            f"the course's times are taken in course order, and {', '.join(missing_before)} did not run "
            "before it here, so it redid their work first (06 and 07 train the stand-in again); nothing is wrong"
        )
    elif measured_s > stated_s:
        why = "a busier or slower machine takes longer, and nothing is wrong"
    else:
        why = "this machine is faster than the one the course was timed on"
    return (
        f"note: {notebook} took {measured_s:.0f} s here ({catalog.format_offline_time(round(measured_s))}); "
        f"the course says {catalog.format_offline_time(stated_s)}, measured on {catalog.OFFLINE_TESTED_ON}. "
        f"It took {direction} here: {why}."
    )


def print_results(results: Sequence[dict[str, Any]], *, store: bool = True) -> None:
    import pandas as pd

    if not results:
        print("no notebooks to run")
        return
    frame = pd.DataFrame([{k: "-" if v is None else v for k, v in row.items()} for row in results])
    print(frame.to_string(index=False))
    total = sum(r["seconds"] or 0 for r in results)
    print(f"total: {total:.1f} s")
    ran_before: set[str] = set()  # notebooks (two digits) that ran earlier in this run
    for row in results:
        if row["status"] != "ok":
            continue
        if row["stderr cells"] and store:
            # Only when storing: stored stderr fails the hygiene tests, which is the maintainer's
            # concern; a learner's check run (--no-store) changes no file.
            print(
                f"note: {row['notebook']}: {row['stderr cells']} cell(s) wrote to stderr; quiet them or tag them {STDERR_OK_TAG}"
            )
        nn = notebook_id(config.NOTEBOOKS_DIR / row["notebook"])
        if nn is None:
            continue
        entry = catalog.get(nn)
        missing = [p for p in entry.prerequisites if p.isdigit() and p not in ran_before]
        note = time_note(row["notebook"], row["seconds"], entry.offline_seconds, missing)
        if note:
            print(note)
        ran_before.add(nn)


# ------------------------------------------------------------------------------- commands
def run_command(
    notebooks: Sequence[str] | None = None,
    timeout: int = CELL_TIMEOUT,
    store: bool = True,
    record_times: bool = False,
    store_figures: bool = False,
) -> int:
    """`mtrl notebooks run [NN ...] [--no-store] [--store-figures] [--record-times]`: exit status 0, or 1
    after naming the failing cell."""
    # A notebook that is not there (an unknown number, a missing file) is raised to the caller,
    # `mtrl`, which says it in one line on stderr; a notebook that failed is named here, on stderr.
    try:
        run(notebooks, timeout, store=store, record_times=record_times, store_figures=store_figures)
    except NotebookRunError as err:
        print(f"notebooks: FAILED\n{err}", file=sys.stderr)
        return 1
    print("notebooks: OK")
    return 0


def sync_command(check: bool = False) -> int:
    """`mtrl notebooks sync [--check]`: rewrite (or, with check, only report) generated cells."""
    try:
        messages = sync(check=check)
    except ValueError as err:
        print(f"sync: FAILED\n{err}", file=sys.stderr)
        return 1
    for message in messages:
        print(f"sync: {message}")
    if not messages:
        print("sync: everything matches the catalog")
    return 1 if check and messages else 0
