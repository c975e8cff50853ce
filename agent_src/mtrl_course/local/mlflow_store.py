"""Empty MLflow tracking stores, migrated once per process and then copied.

An offline MLflow app is a sqlite tracking store. MLflow builds a new store by running its
schema migrations, about a second on a 2-core machine; copying an empty store that was
migrated once takes a few milliseconds. A notebook creates one or two stores, the test suite
dozens, so every store is a copy of one migrated empty store: the checkout's cached one for the
installed MLflow and SQLite (`.cache/`, kept across processes: each notebook kernel and test
worker would otherwise spend about a second migrating its own), or, when there is none or it
cannot be written, one migrated in a private temporary folder for this process.

The copy is the store MLflow would have made, row for row, with the "Default" experiment's row
brought up to date: its creation time, and its artifact location, which MLflow derives from the
working directory at the moment it creates the store (`./mlruns`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_EXPERIMENT_ID = 0
_lock = threading.Lock()
_template: Path | None = None


def tracking_uri(path: Path) -> str:
    """The sqlite tracking URI MLflow reads the store at `path` from."""
    return f"sqlite:///{Path(path).as_posix()}"


def ensure_store(path: Path) -> str:
    """Make sure an MLflow store exists at `path` (a copy of an empty one if not); its URI.

    An existing file is left as it is: it holds an earlier process's runs.
    """
    path = Path(path)
    if path.exists():
        return tracking_uri(path)
    with _lock:
        if not path.exists():
            _copy_whole(_empty_store(), path, _bring_default_experiment_up_to_date)
    return tracking_uri(path)


def _copy_whole(source: Path, path: Path, update: Callable[[Path], None] | None = None) -> None:
    """Copy `source` to `path` (updating the copy first) so that no reader ever sees half a store."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    shutil.copyfile(source, partial)
    if update is not None:
        update(partial)
    os.replace(partial, path)  # atomic, also against other processes


def default_artifact_location() -> str:
    """Where MLflow would put the Default experiment's artifacts for a store created now."""
    from mlflow.store.tracking import DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH
    from mlflow.utils.uri import append_to_uri_path, resolve_uri_if_local

    return append_to_uri_path(resolve_uri_if_local(DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH), str(DEFAULT_EXPERIMENT_ID))


def _bring_default_experiment_up_to_date(path: Path) -> None:
    now_ms = int(time.time() * 1000)
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE experiments SET artifact_location = ?, creation_time = ?, last_update_time = ? "
            "WHERE experiment_id = ?",
            (default_artifact_location(), now_ms, now_ms, DEFAULT_EXPERIMENT_ID),
        )
    db.close()


def _empty_store() -> Path:
    """A migrated empty store: the checkout's cached one, else one made now (and cached if possible)."""
    global _template
    if _template is not None and _template.is_file():
        return _template
    cached = _cache_path()
    if _is_empty_and_migrated(cached):
        _template = cached
        return cached
    from mlflow.tracking import MlflowClient

    folder = Path(tempfile.mkdtemp(prefix="mtrl-mlflow-empty-"))
    atexit.register(shutil.rmtree, folder, True)
    store = folder / "empty.db"
    # Through the client, as every reader of the course's stores opens them: the same code path
    # (and so the same migrations and default rows) as a store MLflow creates on first use.
    MlflowClient(tracking_uri=tracking_uri(store)).search_experiments()
    _template = store
    try:
        _copy_whole(store, cached)
    except OSError:
        pass  # a read-only checkout: this process keeps its own template
    return store


def _cache_path() -> Path:
    """Where this checkout keeps the empty store for the installed MLflow and SQLite versions."""
    from importlib.metadata import version

    from mtrl_course import config

    return config.CACHE_DIR / f"mlflow-{version('mlflow')}-sqlite-{sqlite3.sqlite_version}-empty.db"


def _is_empty_and_migrated(path: Path) -> bool:
    """True for a store whose migrations ran to the end and that holds only the Default experiment."""
    if not path.is_file():
        return False
    try:
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as db:
            (migrations,) = db.execute("SELECT count(*) FROM alembic_version").fetchone()
            experiments = db.execute("SELECT experiment_id, name FROM experiments").fetchall()
            (runs,) = db.execute("SELECT count(*) FROM runs").fetchone()
        db.close()
    except sqlite3.Error:
        return False
    return migrations == 1 and experiments == [(DEFAULT_EXPERIMENT_ID, "Default")] and runs == 0
