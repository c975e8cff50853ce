"""An offline MLflow store copied from a migrated empty one is the store MLflow would have made."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mtrl_course.local import mlflow_store


def _tables(path: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as db:
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        tables = {name: sorted(db.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in names}
    db.close()
    return tables


def _without_default_times(tables: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    # experiments: (experiment_id, name, artifact_location, lifecycle_stage, creation_time,
    # last_update_time, workspace); the two times are the clock's.
    out = dict(tables)
    out["experiments"] = [row[:4] + row[6:] for row in tables["experiments"]]
    return out


def test_a_copied_store_matches_one_mlflow_creates_in_the_same_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the Default experiment's artifacts go under the working folder
    before = int(time.time() * 1000)
    copied = tmp_path / "copied.db"
    assert mlflow_store.ensure_store(copied) == f"sqlite:///{copied.as_posix()}"
    fresh = tmp_path / "fresh.db"
    MlflowClient(tracking_uri=mlflow_store.tracking_uri(fresh)).search_experiments()
    ours, theirs = _tables(copied), _tables(fresh)
    assert _without_default_times(ours) == _without_default_times(theirs)
    (default,) = ours["experiments"]
    assert default[1] == "Default" and default[2] == f"{tmp_path.as_posix()}/mlruns/0"
    assert before <= default[4] == default[5] <= int(time.time() * 1000)


def test_a_copied_store_takes_runs_and_an_existing_store_is_left_alone(tmp_path):
    path = tmp_path / "apps" / "one" / "mlflow.db"
    uri = mlflow_store.ensure_store(path)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("course")
    run = client.create_run(experiment).info.run_id
    client.log_metric(run, "val/reward/pass_at_1", 0.5, step=2)
    assert mlflow_store.ensure_store(path) == uri  # a second call must not replace the store
    again = MlflowClient(tracking_uri=uri).get_metric_history(run, "val/reward/pass_at_1")
    assert [(m.step, m.value) for m in again] == [(2, 0.5)]


def test_threads_asking_for_one_store_at_once_get_one_whole_store(tmp_path):
    path = tmp_path / "shared.db"
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            barrier.wait()
            mlflow_store.ensure_store(path)
        except BaseException as error:  # collected: a thread's failure must fail the test
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert [e.name for e in MlflowClient(tracking_uri=mlflow_store.tracking_uri(path)).search_experiments()] == [
        "Default"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.db"]  # no partial copy left


@pytest.mark.parametrize("name", ["mlflow.db", "lessons-mlflow.db"])
def test_the_store_is_made_where_asked_with_its_folders(tmp_path, name):
    path = tmp_path / "deep" / "er" / name
    mlflow_store.ensure_store(path)
    assert path.is_file() and path.stat().st_size > 0


@pytest.fixture
def no_template(tmp_path, monkeypatch):
    """A process that has made no store yet, with its checkout's cache in `tmp_path / "cache"`."""
    from mtrl_course import config

    monkeypatch.setattr(config, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(mlflow_store, "_template", None)
    return tmp_path / "cache"


def _refuse_migrations(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("MLflow was asked to build a store although the checkout's cache holds one")

    monkeypatch.setattr("mlflow.tracking.MlflowClient", refuse)


def test_a_later_process_copies_the_checkouts_cached_store_without_migrating(tmp_path, monkeypatch, no_template):
    mlflow_store.ensure_store(tmp_path / "first.db")
    (cached,) = no_template.glob("mlflow-*-sqlite-*-empty.db")
    monkeypatch.setattr(mlflow_store, "_template", None)  # as in the next process
    _refuse_migrations(monkeypatch)
    uri = mlflow_store.ensure_store(tmp_path / "second.db")
    assert _tables(tmp_path / "second.db")["alembic_version"] == _tables(cached)["alembic_version"]
    monkeypatch.undo()
    assert [e.name for e in MlflowClient(tracking_uri=uri).search_experiments()] == ["Default"]


@pytest.fixture(scope="module")
def migrated_cache(tmp_path_factory):
    """A checkout's cached store, migrated by MLflow once for the tests that damage a copy of it
    (a migration costs about 1.5 s of CPU)."""
    from mtrl_course import config

    folder = tmp_path_factory.mktemp("migrated-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(config, "CACHE_DIR", folder)
        patch.setattr(mlflow_store, "_template", None)
        mlflow_store.ensure_store(folder / "first.db")
    (cached,) = folder.glob("mlflow-*-sqlite-*-empty.db")
    return cached


@pytest.mark.parametrize("damage", ["not a database", "a store with a run", "half a file"])
def test_a_damaged_or_used_cached_store_is_made_again(tmp_path, monkeypatch, no_template, damage, migrated_cache):
    no_template.mkdir()
    cached = Path(shutil.copyfile(migrated_cache, no_template / migrated_cache.name))
    assert mlflow_store._is_empty_and_migrated(cached)  # whole before the damage
    if damage == "not a database":
        cached.write_bytes(b"nothing to see")
    elif damage == "half a file":
        cached.write_bytes(cached.read_bytes()[: cached.stat().st_size // 2])
    else:
        client = MlflowClient(tracking_uri=mlflow_store.tracking_uri(cached))
        client.create_run("0")
    monkeypatch.setattr(mlflow_store, "_template", None)
    uri = mlflow_store.ensure_store(tmp_path / "second.db")
    client = MlflowClient(tracking_uri=uri)
    assert [e.name for e in client.search_experiments()] == ["Default"] and not client.search_runs(["0"])
    assert mlflow_store._is_empty_and_migrated(cached)  # replaced by a whole, empty store


def test_a_checkout_whose_cache_cannot_be_written_still_gets_stores(tmp_path, no_template):
    no_template.write_text("a file where the cache folder would go")
    uri = mlflow_store.ensure_store(tmp_path / "store.db")
    assert [e.name for e in MlflowClient(tracking_uri=uri).search_experiments()] == ["Default"]
    assert no_template.read_text() == "a file where the cache folder would go"
