"""Jobs on disk: the local MTRL service's records, so jobs outlive the process as they do in AWS.

Each notebook runs in a fresh kernel, so the service writes every job's DescribeJob record (on
every change) and every model package it registers under `<state>/jobs/`, and a new process reads
them back. A reloaded job is read-only; one whose owner process has ended comes back as Failed,
with a reason that says so (process liveness is checked by pid and start time).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtrl_course.service_spec import JOB_CATEGORIES
from mtrl_course.local.job import (
    ACTIVE,
    MAX_TRANSITIONS,
    TERMINAL,
    LocalJob,
    job_summary,
)

logger = logging.getLogger(__name__)

# Cross-process persistence (see the module docstring).
STORE_SUBDIR = "jobs"
PACKAGE_INDEX_FILE = "model-packages.json"
RECORD_FORMAT = 1
RECORD_SUFFIX = ".json"
# DescribeJob fields that hold timestamps (JSON keeps them as ISO 8601 text).
TIME_FIELDS = ("CreationTime", "LastModifiedTime", "EndTime")
TRANSITION_TIME_FIELDS = ("StartTime", "EndTime")
DEAD_OWNER_REASON = (
    "The offline job stopped when the Python process that ran it (pid {pid}) ended: offline jobs run "
    "inside the notebook kernel or command that created them, so restarting that kernel ends them. "
    "Start a new job (and leave the kernel running until it finishes)."
)
ORPHAN_REASON = (
    "The offline backend was reset while this job was running (aws.reset_offline), which ends every "
    "running job. Start a new job."
)
FOREIGN_JOB_MESSAGE = (
    "Job {name} runs in another Python process (pid {pid}); offline jobs can only be stopped or deleted "
    "from the process (notebook kernel) that created them."
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# ----------------------------------------------------------------------------------------------
# Jobs on disk: records written by this process or an earlier one


def _process_start(pid: int) -> str | None:
    """When process `pid` started, as the kernel counts it (Linux), or None if unknown.

    Together with the pid it names a process for good: pids are reused, start times are not.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    # Field 22 of /proc/<pid>/stat (starttime); the fields after the ")" begin at field 3.
    return fields[19] if len(fields) > 19 else None


def process_identity() -> dict[str, Any]:
    """This process as a job record's owner: pid and start time."""
    pid = os.getpid()
    return {"Pid": pid, "Started": _process_start(pid)}


def process_alive(owner: Mapping[str, Any]) -> bool:
    """True if the process a record names is still running (the same process, not a reused pid)."""
    pid = int(owner.get("Pid") or 0)
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill would terminate the process on Windows
        try:
            import psutil
        except ImportError:
            return True  # cannot tell: better to show a job as running than to fail it wrongly
        return bool(psutil.pid_exists(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    except OSError:
        return False
    started = owner.get("Started")
    now = _process_start(pid)
    return started is None or now is None or now == started


def _encode_time(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"cannot store {type(value).__name__} in a job record")


def _decode_times(describe: dict[str, Any]) -> dict[str, Any]:
    for key in TIME_FIELDS:
        if isinstance(describe.get(key), str):
            describe[key] = dt.datetime.fromisoformat(describe[key])
    for transition in describe.get("SecondaryStatusTransitions") or []:
        for key in TRANSITION_TIME_FIELDS:
            if isinstance(transition.get(key), str):
                transition[key] = dt.datetime.fromisoformat(transition[key])
    return describe


class JobStore:
    """DescribeJob records (`<category>/<name>.json`) and model-package registrations on disk.

    Writes are atomic (a temporary file renamed over the record), so a reader in another process
    never sees half a record.
    """

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._lock = threading.Lock()

    def path(self, category: str, name: str) -> Path:
        return self.directory / category / f"{name}{RECORD_SUFFIX}"

    def _write(self, path: Path, payload: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_text(json.dumps(payload, default=_encode_time, indent=1, sort_keys=True) + "\n")
        os.replace(temporary, path)

    def save(self, describe: Mapping[str, Any], owner: Mapping[str, Any]) -> None:
        record = {"Format": RECORD_FORMAT, "Owner": dict(owner), "Describe": dict(describe)}
        self._write(self.path(describe["JobCategory"], describe["JobName"]), record)

    def load(self, path: Path) -> dict[str, Any] | None:
        """One record ({"Owner", "Describe"} with timestamps decoded), or None if unreadable."""
        try:
            record = json.loads(path.read_text())
            if record.get("Format") != RECORD_FORMAT:
                raise ValueError(f"record format {record.get('Format')!r}, expected {RECORD_FORMAT}")
            record["Describe"] = _decode_times(record["Describe"])
            return record
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as err:
            logger.warning("offline job record %s skipped: %s", path, err)
            return None

    def keys(self) -> list[tuple[str, str]]:
        """(category, name) of every stored record."""
        found = []
        for category in JOB_CATEGORIES:
            folder = self.directory / category
            if folder.is_dir():
                found += [
                    (category, p.name[: -len(RECORD_SUFFIX)])
                    for p in folder.glob(f"*{RECORD_SUFFIX}")
                    if not p.name.startswith(".")
                ]
        return sorted(found)

    def remove(self, category: str, name: str) -> None:
        self.path(category, name).unlink(missing_ok=True)

    # -- model packages -----------------------------------------------------------------------
    def _package_path(self) -> Path:
        return self.directory / PACKAGE_INDEX_FILE

    def packages(self) -> list[dict[str, Any]]:
        """Every recorded registration: {"Arn", "Region", "Request"} (CreateModelPackage's arguments)."""
        path = self._package_path()
        if not path.is_file():
            return []
        try:
            return list(json.loads(path.read_text()))
        except (OSError, ValueError) as err:
            logger.warning("offline model-package index %s skipped: %s", path, err)
            return []

    def add_package(self, arn: str, region: str, request: Mapping[str, Any]) -> None:
        with self._lock:
            # A group deleted and refilled gives out version numbers again: the newer wins.
            entries = [e for e in self.packages() if e.get("Arn") != arn]
            entries.append({"Arn": arn, "Region": region, "Request": dict(request)})
            self._write(self._package_path(), entries)

    def forget_packages(self, arns: Sequence[str]) -> int:
        with self._lock:
            entries = self.packages()
            kept = [e for e in entries if e.get("Arn") not in set(arns)]
            if len(kept) != len(entries):
                self._write(self._package_path(), kept)
            return len(entries) - len(kept)


def _package_version(arn: str) -> int:
    tail = arn.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class StoredJob:
    """A job known only from its record on disk: written by an earlier (or another) process.

    Read-only: it has the attributes and `describe()`/`summary()` of a `LocalJob`, and no runner.
    A job whose owning process is still alive (`foreign`) is re-read from disk as it progresses.
    """

    def __init__(self, record: Mapping[str, Any], store: JobStore):
        self._store = store
        self._lock = threading.RLock()
        self._stop_requested = threading.Event()
        self._apply(record)

    def _apply(self, record: Mapping[str, Any]) -> None:
        with self._lock:
            self.owner = dict(record.get("Owner") or {})
            self.record = copy.deepcopy(dict(record["Describe"]))
            self.name = self.record["JobName"]
            self.arn = self.record["JobArn"]
            self.category = self.record["JobCategory"]

    @property
    def status(self) -> str:
        return self.record["JobStatus"]

    @property
    def secondary_status(self) -> str:
        return self.record.get("SecondaryStatus", "")

    @property
    def failure_reason(self) -> str | None:
        return self.record.get("FailureReason")

    @property
    def creation_time(self) -> dt.datetime:
        return self.record["CreationTime"]

    @property
    def last_modified_time(self) -> dt.datetime:
        return self.record["LastModifiedTime"]

    @property
    def end_time(self) -> dt.datetime | None:
        return self.record.get("EndTime")

    @property
    def service_output(self) -> dict[str, Any]:
        return json.loads(self.record.get("JobConfigDocument") or "{}").get("ServiceOutput", {})

    @property
    def foreign(self) -> bool:
        """Still running in another live process."""
        return self.status in ACTIVE

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def should_stop(self) -> bool:
        return True

    def refresh(self) -> None:
        """Re-read a running job's record (its process keeps writing it)."""
        if self.done:
            return
        record = self._store.load(self._store.path(self.category, self.name))
        if record is None:
            return
        if record["Describe"]["JobStatus"] in ACTIVE and not process_alive(record.get("Owner") or {}):
            record = _failed_record(record, DEAD_OWNER_REASON.format(pid=(record.get("Owner") or {}).get("Pid", "?")))
            self._store.save(record["Describe"], record["Owner"])
        self._apply(record)

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.refresh()
            if self.done:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(STORED_JOB_POLL_S)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self.record)

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return job_summary(self)


STORED_JOB_POLL_S = 0.2


def _failed_record(record: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A copy of a running job's record, failed now with `reason` (DescribeJob's shape)."""
    failed = copy.deepcopy(dict(record))
    describe = failed["Describe"]
    now = _now()
    transitions = describe.setdefault("SecondaryStatusTransitions", [])
    if transitions and "EndTime" not in transitions[-1]:
        transitions[-1]["EndTime"] = now
    transitions.append({"Status": "Failed", "StartTime": now, "EndTime": now, "StatusMessage": reason})
    del transitions[:-MAX_TRANSITIONS]
    describe.update(
        JobStatus="Failed", SecondaryStatus="Failed", FailureReason=reason, EndTime=now, LastModifiedTime=now
    )
    return failed


AnyJob = LocalJob | StoredJob
