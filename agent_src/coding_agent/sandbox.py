"""Run untrusted committed code against hidden tests, and judge it in the trusted parent.

The Nova Forge post's harness runs the model's code with its unit tests in a child process,
prints a result summary between per-run random sentinels, and checks that the number of tests
that ran equals the number expected. That stops a program from printing a fake "all passed"
line, until the program reads its own harness: the sentinel and the test count are in the
child's memory, so code that inspects its interpreter can forge both. This sandbox goes one step
further: **the child only emits outputs**. It receives the call arguments, never the expected
values, runs the entry point on each, and writes the encoded return values (or the exception
type) back. The parent, which alone holds the expected values, compares. A program can still
forge the frame, but the only way to make the parent count a test as passed is to emit the right
value, which is what solving the task means. The nonce and count checks stay as a second lock
(they turn a forged or truncated frame into a clear status instead of a silent zero).

Layers, each a defence against one hostile program in tests/test_sandbox.py:

| layer | stops |
|---|---|
| `ast.parse` in the parent | code that does not parse never starts a process |
| scrubbed environment (no AWS_*, no HOME of ours) | credential and environment reads |
| rlimits: CPU, address space, processes, file size, open files, no core | infinite CPU loops, memory bombs, fork bombs, disk fills |
| wall-clock deadline, then SIGKILL to the whole process group | sleeping loops and grandchildren |
| output cap (the parent stops reading and kills) | megabytes printed |
| as root: the child runs as an unprivileged uid of its own | signals to the parent, reads of root-only files, RLIMIT_NPROC (root ignores it) |
| namespaces when the machine allows (`unshare`): network, PID, mount | network, processes that escape the group (setsid), writes to /tmp, reading the hidden tests from the repository |

Where namespaces are unavailable the sandbox still runs, and `isolation()` says which layers are
active, so a learner's machine reports honestly what it enforces. For stronger isolation (the
post's advice) run the verifier in a dedicated sandbox service or container.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import secrets
import select
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

# --- limits: the post's harness uses 2 GB of address space, 64 processes and a 30 s timeout ------
POST_MEMORY_BYTES = 2 * 1024**3
POST_PROCESSES = 64
POST_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run. Defaults are the post's, except the timeouts (see below)."""

    # The post's 30 s suits a single verification; training runs thousands of them on a laptop,
    # and every correct task here finishes in well under a second, so a stuck program is cut off
    # after a few seconds instead.
    cpu_seconds: int = 4
    wall_seconds: float = 6.0
    memory_bytes: int = POST_MEMORY_BYTES
    processes: int = POST_PROCESSES
    file_bytes: int = 1024**2
    open_files: int = 64
    output_bytes: int = 256 * 1024

    def __post_init__(self) -> None:
        for name in (
            "cpu_seconds",
            "wall_seconds",
            "memory_bytes",
            "processes",
            "file_bytes",
            "open_files",
            "output_bytes",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"sandbox limit {name} must be positive, got {getattr(self, name)!r}")


DEFAULT_LIMITS = Limits()
# When the parent is root the child runs as an unprivileged uid of its own, drawn per run from
# this range: root ignores RLIMIT_NPROC, may signal any process and may read every file, so a
# root child would make three layers decorative. A uid per run (not the shared `nobody`) keeps
# concurrent sandboxes apart: RLIMIT_NPROC counts processes per uid, so a fork bomb running as
# nobody would starve every other sandbox of processes, and could signal them.
SANDBOX_UID_BASE = 200_000
SANDBOX_UID_COUNT = 60_000
# A private tmpfs this size replaces /tmp (and friends) inside the mount namespace.
TMPFS_SIZE = "16m"
MAX_DETAIL = 300  # characters of the child's output kept in a verdict, for reading transcripts

# Statuses a verdict can carry (the reward's correctness is 0 for all but "ok").
OK = "ok"
SYNTAX_ERROR = "syntax_error"
MISSING_ENTRY_POINT = "missing_entry_point"
IMPORT_ERROR = "error_at_import"
TIMEOUT = "timeout"
OUTPUT_LIMIT = "output_limit"
NO_RESULT = "no_result"  # exited without a result frame (exit at import, killed by a limit)
FORGED = "forged_or_malformed_result"  # more than one frame, wrong nonce, wrong count
# The sandbox itself failed before the code ran (namespace setup, no process left to fork). Not
# the code's fault and never cached: scored as 0 it would be a silently dead scorer of our own.
SANDBOX_ERROR = "sandbox_error"
STATUSES = (
    OK,
    SYNTAX_ERROR,
    MISSING_ENTRY_POINT,
    IMPORT_ERROR,
    TIMEOUT,
    OUTPUT_LIMIT,
    NO_RESULT,
    FORGED,
    SANDBOX_ERROR,
)
# How the wrapper reports its own failures: unshare's messages, the mount script's exit status.
WRAPPER_PREFIXES = (b"unshare: ", b"prlimit: ", b"sandbox: ")
MOUNT_FAILED = 97


# --- the harness: the only code the child runs besides the submission ---------------------------
# Python 3.8+ and stdlib only (it may run on the system interpreter, without site-packages).
# It reads one JSON payload from stdin (code, entry point, call arguments, nonce), never the
# expected values, and writes one frame: NONCE + JSON list of encoded outputs + NONCE.
HARNESS = r"""
import json, os, sys
payload = json.loads(sys.stdin.read())
sys.stdin.close()
nonce = payload.pop("nonce")
out = os.fdopen(os.dup(1), "w")

def encode(value, depth=0):
    if depth > 20:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, (bool, int, str)):
        return [type(value).__name__, value if type(value) in (bool, int, str, type(None)) else repr(value)]
    if isinstance(value, float):
        return ["float", repr(round(value, 9))]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__ if type(value) in (list, tuple) else "seq", [encode(v, depth + 1) for v in value]]
    if isinstance(value, dict):
        items = sorted((json.dumps(encode(k, depth + 1)), encode(v, depth + 1)) for k, v in value.items())
        return ["dict", items]
    if isinstance(value, (set, frozenset)):
        return ["set", sorted(json.dumps(encode(v, depth + 1)) for v in value)]
    return ["other", type(value).__name__]

def emit(record):
    out.write(nonce + json.dumps(record) + nonce + "\n")
    out.flush()

namespace = {"__name__": "submission"}
try:
    exec(compile(payload["code"], "submission.py", "exec"), namespace)
except BaseException as exc:
    emit({"status": "error_at_import", "error": type(exc).__name__})
    raise SystemExit(0)
fn = namespace.get(payload["entry_point"])
if not callable(fn):
    emit({"status": "missing_entry_point", "defined": sorted(k for k in namespace if not k.startswith("__"))[:20]})
    raise SystemExit(0)
outputs = []
for args in payload["calls"]:
    try:
        outputs.append(encode(fn(*args)))
    except BaseException as exc:
        outputs.append(["raises", type(exc).__name__])
emit({"status": "ok", "count": len(outputs), "outputs": outputs})
"""


# The encoder is the same text in parent and child, so both sides encode a value identically.
_ENCODER_SOURCE = HARNESS[HARNESS.index("def encode") : HARNESS.index("def emit")]
_ENCODER: dict[str, Any] = {"json": json}
exec(compile(_ENCODER_SOURCE, "sandbox-encoder", "exec"), _ENCODER)


def encode_value(value: Any) -> Any:
    """The harness's encoding of `value`, computed in the parent for the expected values."""
    return json.loads(json.dumps(_ENCODER["encode"](value)))


@dataclass(frozen=True)
class Raises:
    """An expected outcome: the call must raise an exception of this type name ("ValueError")."""

    name: str

    def record(self) -> list[str]:
        return ["raises", self.name]


@dataclass(frozen=True)
class TestCase:
    """One hidden test: positional arguments for the entry point and the expected return value.

    `expected` is a plain value, or `Raises("ValueError")` for a call that must raise.
    """

    __test__ = False  # not a pytest test class, despite the name

    args: tuple[Any, ...]
    expected: Any

    def expected_record(self) -> Any:
        if isinstance(self.expected, Raises):
            return self.expected.record()
        return encode_value(self.expected)


@dataclass(frozen=True)
class Verdict:
    """What the parent concluded about one submission."""

    status: str
    passed: int
    total: int
    seconds: float
    detail: str = ""
    cached: bool = False
    outputs: tuple[Any, ...] = field(default=(), repr=False)  # the child's encoded outputs, for reading

    @property
    def correctness(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class Isolation:
    """Which layers this machine enforces (reported by notebooks and tests; never assumed)."""

    drops_privileges: bool
    network_namespace: bool
    pid_namespace: bool
    mount_namespace: bool
    interpreter: str

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"layer": "child runs as an unprivileged uid of its own (root parent)", "active": self.drops_privileges},
            {"layer": "no network (network namespace)", "active": self.network_namespace},
            {"layer": "PID namespace (escaped processes die with it)", "active": self.pid_namespace},
            {"layer": "private /tmp, hidden repository (mount namespace)", "active": self.mount_namespace},
            {"layer": "rlimits, scrubbed env, wall-clock group kill, output cap", "active": True},
        ]


# --- environment of the child ---------------------------------------------------------------------
def scrubbed_env(home: str) -> dict[str, str]:
    """The child's whole environment: nothing inherited, so no credentials and no paths of ours."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
    }


def _world_executable(path: Path) -> bool:
    """True if a user who is not the owner can run `path` (every parent directory searchable)."""
    try:
        if not path.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)
    except OSError:
        return False


@cache
def _interpreter(unprivileged_child: bool) -> str:
    """A Python the child can execute: ours, or the system's when ours sits in a private home."""
    ours = Path(sys.executable).resolve()
    if not unprivileged_child or _world_executable(ours):
        return str(ours)
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        if _world_executable(Path(candidate)):
            return candidate
    raise RuntimeError(
        f"the sandbox drops to an unprivileged uid when run as root, but {ours} is not executable by other users "
        "and there is no system python3; install python3 system-wide or run the course as a normal user"
    )


def _hidden_paths() -> list[str]:
    """Directories the child must not see: this package (the hidden tests) and its repository."""
    package = Path(__file__).resolve().parent
    paths = [package]
    for parent in package.parents:
        if (parent / ".git").exists():
            paths.append(parent)
            break
    return [str(p) for p in paths]


def _namespace_prefix(hidden: Sequence[str]) -> list[str]:
    # Outermost first: once the repository is covered, the package inside it is gone already.
    mounts = " ".join(shlex.quote(p) for p in ("/tmp", "/var/tmp", "/dev/shm", *sorted(hidden, key=len)))
    script = (
        f"for d in {mounts}; do "
        f'if [ -d "$d" ]; then mount -t tmpfs -o size={TMPFS_SIZE},mode=0777 none "$d" || exit {MOUNT_FAILED}; fi; '
        # No exec: the shell stays PID 1 of the namespace and Python runs as its child. PID 1 is
        # immune to signals it has no handler for, including the kernel's SIGXCPU/SIGKILL for
        # RLIMIT_CPU, so a harness running as PID 1 would only ever stop at the wall clock.
        'done; cd /tmp && "$@"'
    )
    return [
        "unshare",
        "-r",
        "--net",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount",
        "--",
        "/bin/sh",
        "-c",
        script,
        "sandbox",
    ]


def _sandbox_uid() -> int:
    return SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UID_COUNT)


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


@cache
def isolation() -> Isolation:
    """Probe once which layers work here: a child that must fail to reach the network and see no repository."""
    unprivileged_child = hasattr(os, "geteuid") and os.geteuid() == 0
    interpreter = _interpreter(unprivileged_child)
    namespaces = False
    if shutil.which("unshare") and sys.platform.startswith("linux"):
        probe = (
            "import os, socket, sys\n"
            "s = socket.socket(); s.settimeout(1)\n"
            "net = s.connect_ex(('127.0.0.1', 9)) != 0\n"
            f"p = {_hidden_paths()[0]!r}\n"
            "hidden = not os.path.isdir(p) or not os.listdir(p)\n"
            "print('OK' if net and hidden and os.getppid() == 1 else 'NO')\n"  # the shell is PID 1
        )
        # The same limits and uid switch as a real run, so a probe that passes means runs can start.
        prefix, spawn = _spawn(DEFAULT_LIMITS, _sandbox_uid() if unprivileged_child else None)
        try:
            done = subprocess.run(
                [*prefix, *_namespace_prefix(_hidden_paths()), interpreter, "-I", "-S", "-c", probe],
                check=False,
                capture_output=True,
                text=True,
                timeout=15,
                env=scrubbed_env("/tmp"),
                **spawn,
            )
            namespaces = done.stdout.strip() == "OK"
        except (OSError, subprocess.SubprocessError):
            namespaces = False
    return Isolation(unprivileged_child, namespaces, namespaces, namespaces, interpreter)


# --- running one submission -------------------------------------------------------------------------
_CACHE: dict[str, Verdict] = {}
CACHE_MAX = 20_000


def cache_key(code: str, entry_point: str, cases: Sequence[TestCase], limits: Limits) -> str:
    """A hash of everything that decides a verdict, so an identical submission is judged once."""
    blob = json.dumps(
        [code, entry_point, [[list(c.args), c.expected_record()] for c in cases], limits.__dict__],
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def clear_cache() -> None:
    _CACHE.clear()


def run_tests(code: str, entry_point: str, cases: Sequence[TestCase], limits: Limits = DEFAULT_LIMITS) -> Verdict:
    """Judge `code`: call `entry_point` on each case's arguments in the sandbox, compare in here.

    Never raises for anything the code does (it is the model's output, so anything can be in it);
    bad code gets a verdict with a status from STATUSES and correctness 0.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be a string, got {type(code).__name__}")
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
    if not cases:
        raise ValueError("run_tests needs at least one test case")
    key = cache_key(code, entry_point, cases, limits)
    if key in _CACHE:
        return replace(_CACHE[key], cached=True)
    verdict = _judge(code, entry_point, cases, limits)
    if len(_CACHE) >= CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    if verdict.status != SANDBOX_ERROR:
        _CACHE[key] = verdict
    return verdict


def _judge(code: str, entry_point: str, cases: Sequence[TestCase], limits: Limits) -> Verdict:
    started = time.monotonic()
    total = len(cases)
    try:
        ast.parse(code)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        return Verdict(SYNTAX_ERROR, 0, total, time.monotonic() - started, f"{type(exc).__name__}: {exc}"[:MAX_DETAIL])
    nonce = secrets.token_hex(16)
    payload = json.dumps(
        {"nonce": nonce, "code": code, "entry_point": entry_point, "calls": [list(c.args) for c in cases]}
    )
    status, raw, returncode = _execute(payload, limits)
    seconds = time.monotonic() - started
    if status == OK and (returncode == MOUNT_FAILED or raw.startswith(WRAPPER_PREFIXES)):
        return Verdict(SANDBOX_ERROR, 0, total, seconds, "the sandbox could not start the program: " + _tail(raw))
    if status != OK:
        return Verdict(status, 0, total, seconds, _tail(raw))
    frames = _frames(raw, nonce)
    if not frames:
        return Verdict(NO_RESULT, 0, total, seconds, "the program ended without a result: " + _tail(raw))
    if len(frames) > 1:
        return Verdict(FORGED, 0, total, seconds, f"{len(frames)} result frames; the harness writes exactly one")
    record = frames[0]
    if not isinstance(record, dict) or record.get("status") not in (OK, MISSING_ENTRY_POINT, IMPORT_ERROR):
        return Verdict(FORGED, 0, total, seconds, "the result frame is not the harness's")
    if record["status"] == MISSING_ENTRY_POINT:
        defined = record.get("defined", [])
        return Verdict(
            MISSING_ENTRY_POINT,
            0,
            total,
            seconds,
            f"no callable {entry_point!r}; the code defines {defined}"[:MAX_DETAIL],
        )
    if record["status"] == IMPORT_ERROR:
        return Verdict(IMPORT_ERROR, 0, total, seconds, f"{record.get('error')} while running the module body")
    outputs = record.get("outputs")
    # The count check of the post: a frame must report exactly the calls that were sent.
    if not isinstance(outputs, list) or record.get("count") != total or len(outputs) != total:
        return Verdict(FORGED, 0, total, seconds, f"expected {total} outputs, the frame holds {record.get('count')!r}")
    passed = sum(1 for case, got in zip(cases, outputs) if got == case.expected_record())
    return Verdict(OK, passed, total, seconds, outputs=tuple(outputs))


def _frames(raw: bytes, nonce: str) -> list[Any]:
    text = raw.decode("utf-8", "replace")
    frames = []
    for line in text.splitlines():
        if line.startswith(nonce) and line.endswith(nonce) and len(line) > 2 * len(nonce):
            try:
                frames.append(json.loads(line[len(nonce) : -len(nonce)]))
            except json.JSONDecodeError:
                frames.append(None)
        elif nonce in line:
            frames.append(None)  # a nonce in any other shape is tampering, not noise
    return frames


def _tail(raw: bytes) -> str:
    return raw[-MAX_DETAIL:].decode("utf-8", "replace").strip()


def _processes_of(uid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


def process_budget(limits: Limits, uid: int | None) -> int:
    """The RLIMIT_NPROC value that gives the child `limits.processes` processes of its own.

    RLIMIT_NPROC counts every process of the child's real uid. A fresh sandbox uid owns none, so
    the limit is the budget itself; a child that keeps our uid (no root parent) shares the count
    with everything we already run, so the budget goes on top of that, or a desktop session with
    hundreds of processes would leave the child unable to start at all.
    """
    if uid is not None or not Path("/proc").is_dir():
        return limits.processes
    return limits.processes + _processes_of(os.getuid())


def _spawn(limits: Limits, uid: int | None) -> tuple[list[str], dict[str, Any]]:
    """(command prefix, Popen keyword arguments) that start a child under `limits` as `uid`.

    With util-linux `prlimit`, the limits are set by an exec'd program and the uid switch by
    Popen itself (in C, after the fork), so no Python code runs between fork and exec: the
    thread pool that judges submissions in parallel cannot deadlock a child on a lock another
    thread held at fork time, which `preexec_fn` can. Without `prlimit`, `preexec_fn` it is.
    """
    processes = process_budget(limits, uid)
    if shutil.which("prlimit"):
        prefix = [
            "prlimit",
            f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
            f"--as={limits.memory_bytes}",
            f"--nproc={processes}",
            f"--fsize={limits.file_bytes}",
            f"--nofile={limits.open_files}",
            "--core=0",
            "--",
        ]
        kwargs: dict[str, Any] = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        return prefix, kwargs
    return [], {"preexec_fn": _limits_preexec(limits, uid)}


def _limits_preexec(limits: Limits, uid: int | None):
    import resource

    processes = process_budget(limits, uid)  # counted here, before the fork

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:
            _drop_privileges(uid)

    return apply


def _execute(payload: str, limits: Limits) -> tuple[str, bytes, int | None]:
    """Run the harness on `payload`: (OK, TIMEOUT or OUTPUT_LIMIT; everything it wrote; exit status)."""
    layers = isolation()
    workdir = tempfile.mkdtemp(prefix="mtrl-sandbox-")
    try:
        uid = _sandbox_uid() if layers.drops_privileges else None
        if uid is not None:
            os.chown(workdir, uid, uid)
        command = [layers.interpreter, "-I", "-S", "-c", HARNESS]
        if layers.network_namespace:
            command = [*_namespace_prefix(_hidden_paths()), *command]
        prefix, spawn = _spawn(limits, uid)
        proc = subprocess.Popen(
            [*prefix, *command],
            cwd=workdir,
            env=scrubbed_env(workdir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so one killpg reaches every descendant
            **spawn,
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(payload.encode("utf-8"))
                proc.stdin.close()
            except BrokenPipeError:
                pass  # it died before reading; its output says why
            status, raw = _collect(proc, limits)
        finally:
            _kill_group(proc)
        return status, raw, proc.returncode
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _collect(proc: subprocess.Popen, limits: Limits) -> tuple[str, bytes]:
    deadline = time.monotonic() + limits.wall_seconds
    chunks: list[bytes] = []
    size = 0
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return TIMEOUT, b"".join(chunks)
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:  # every writer closed the pipe: the harness and anything it started are done
            break
        size += len(chunk)
        if size > limits.output_bytes:
            return OUTPUT_LIMIT, b"".join(chunks)[-MAX_DETAIL:]
        chunks.append(chunk)
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return TIMEOUT, b"".join(chunks)
    return OK, b"".join(chunks)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (grandchildren included), then reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not get ignored
        pass
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
