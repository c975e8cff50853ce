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

Layers, each a defence against hostile programs in tests/test_sandbox.py and
tests/test_sandbox_attacks.py (which names the layers each attack needs):

| layer | stops |
|---|---|
| `ast.parse` in the parent | code that does not parse never starts a process |
| scrubbed environment (no AWS_*, no HOME of ours) | credential and environment reads |
| rlimits: CPU, address space, processes, file size, open files, no core | infinite CPU loops, memory bombs, fork bombs, disk fills |
| wall-clock deadline, then SIGKILL to the whole process group | sleeping loops and grandchildren |
| output cap (the parent stops reading and kills) | megabytes printed |
| a bounded reader of the result (frame depth, integer digits; anything else it meets is a verdict) | frames that would crash the judge: 5,000 nested brackets, a 5,000-digit integer |
| as root: the child runs as an unprivileged uid of its own | signals to the parent, reads of root-only files, RLIMIT_NPROC (root ignores it) |
| without the jail, a Landlock fence (`jail.FENCE`, Linux 5.13+, no privilege needed) | every file but the interpreter's, its standard library's and the working folder; TCP (Landlock ABI 4+), abstract Unix sockets and signals to other processes (ABI 6+) |
| the jail (`coding_agent.jail`) where the machine allows: network, PID and mount namespaces, a root made for the child, every capability dropped | network and abstract Unix sockets, processes that escape the group (setsid), every file but the interpreter and its standard library (other checkouts, socket files, /run/lock), the host's processes in /proc, undoing a mount |

Where namespaces are unavailable the sandbox still runs, and `isolation()` says which layers are
missing, in one sentence (`Isolation.summary()`, also logged once as a warning): a learner's
machine reports honestly what it enforces. What holds everywhere is the design above: the
expected values are never sent to the child, so no amount of reading the harness passes a test.
Without the jail, the Landlock fence still keeps every other file out of reach (another
checkout's tasks included); without either (an old kernel, or not Linux), a world-readable copy
of the tasks elsewhere on the machine can be read, and the summary says so. For stronger
isolation (the post's advice) run the verifier in a dedicated sandbox service or container.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import secrets
import select
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

from coding_agent import jail

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
# Where a run without the jail gets its working directory (None: the system's temporary folder).
# Tests point it at a folder of their own, so they never list a folder other processes share.
SCRATCH_PARENT: str | None = None
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
# How the wrapper reports its own failures: unshare's messages, the jail launcher's exit status.
WRAPPER_PREFIXES = (b"unshare: ", b"prlimit: ", b"sandbox: ")
MOUNT_FAILED = jail.SETUP_FAILED
# What the parent parses of a result frame: the output cap bounds its size; these bound the rest.
# The harness nests at most 20 levels of values, each at most 3 JSON levels deep, in a frame of 3.
MAX_FRAME_DEPTH = 80
MAX_INT_DIGITS = 4000  # below Python's own 4300, so int() can never be the one that refuses


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
    """Which layers this machine enforces, as the probe observed them (never assumed)."""

    drops_privileges: bool
    network_namespace: bool
    pid_namespace: bool
    private_root: bool
    locked_mounts: bool
    private_proc: bool
    interpreter: str
    fenced: bool = False  # without the jail: a Landlock fence keeps every other file out of reach
    reason: str = ""  # why the namespace layers are missing, in the wrapper's own words

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"layer": "child runs as an unprivileged uid of its own (root parent)", "active": self.drops_privileges},
            {"layer": "no network, no abstract Unix sockets (network namespace)", "active": self.network_namespace},
            {"layer": "PID namespace (escaped processes die with it)", "active": self.pid_namespace},
            {
                "layer": "files: only the interpreter, its stdlib and the child's scratch (jail, or Landlock without it)",
                "active": self.private_root or self.fenced,
            },
            {
                "layer": "a root made for the child: interpreter and stdlib read-only, private /tmp, nothing else",
                "active": self.private_root,
            },
            {"layer": "mounts locked (every capability dropped: umount fails)", "active": self.locked_mounts},
            {"layer": "the host's processes unseen (a /proc of its own, or none)", "active": self.private_proc},
            {"layer": "rlimits, scrubbed env, wall-clock group kill, output cap", "active": True},
        ]

    def missing(self) -> list[str]:
        """The layers this machine does not enforce, by name (empty when every layer holds)."""
        return [row["layer"] for row in self.rows() if not row["active"]]

    def summary(self) -> str:
        """One plain sentence: every layer holds, or which are missing and why."""
        missing = self.missing()
        if not missing:
            return "every sandbox layer is active"
        why = f" ({self.reason})" if self.reason else ""
        if self.private_root or self.fenced:
            files = "submitted code still reaches no file but the interpreter's, its standard library's and its scratch"
        else:
            files = (
                "submitted code can read every file this user can read: the expected values are never sent to it, "
                "but a world-readable copy of the tasks (another checkout) can be found and imported"
            )
        return f"sandbox layers missing on this machine{why}: {'; '.join(missing)}. {files}"


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


def _sandbox_uid() -> int:
    return SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UID_COUNT)


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


# What the probe checks from inside, with the same wrapper, limits and uid as a real run. Each
# fact is one layer; a layer is reported active only if the child observed it holding.
PROBE = r"""
import ctypes, json, os, socket
facts = {}
s = socket.socket(); s.settimeout(1)
facts["net"] = s.connect_ex(("127.0.0.1", 9)) != 0
facts["pid"] = os.getppid() == 1
facts["root"] = not os.path.exists(HOST_FILE) and not os.path.exists(HOST_DIR)
facts["locked"] = ctypes.CDLL(None, use_errno=True).umount2(b"/tmp", 2) != 0
facts["proc"] = not os.path.isdir("/proc") or len([p for p in os.listdir("/proc") if p.isdigit()]) <= 3
print("PROBE" + json.dumps(facts))
"""


FENCE_PROBE = r"""
import json
facts = {}
try:
    open(HOST_FILE).read(1)
    facts["fenced"] = False
except PermissionError:
    facts["fenced"] = True
except OSError:
    facts["fenced"] = False
open("probe", "w").write("its scratch is writable")
print("PROBE" + json.dumps(facts))
"""


@cache
def isolation() -> Isolation:
    """Probe once which layers work here, from inside a child started exactly as a real run is."""
    unprivileged_child = hasattr(os, "geteuid") and os.geteuid() == 0
    interpreter = _interpreter(unprivileged_child)
    here = Path(__file__).resolve()
    facts: dict[str, bool] = {}
    reason = ""
    if not sys.platform.startswith("linux"):
        reason = "not Linux"
    elif not shutil.which("unshare"):
        reason = "no unshare (util-linux) on this machine"
    else:
        probe = PROBE.replace("HOST_FILE", repr(str(here))).replace("HOST_DIR", repr(str(here.parent)))
        facts, reason = _probe(lambda: jail.command(interpreter, probe), None, unprivileged_child)
    if sys.platform.startswith("linux") and not _jailed_by(facts):
        workdir = tempfile.mkdtemp(prefix="mtrl-sandbox-probe-", dir=SCRATCH_PARENT)
        try:
            probe = FENCE_PROBE.replace("HOST_FILE", repr(str(here)))
            fence, why = _probe(lambda: jail.fence_command(interpreter, workdir, probe), workdir, unprivileged_child)
            facts["fenced"] = bool(fence.get("fenced"))
            reason = "; ".join(r for r in (reason, why and f"no Landlock fence either: {why}") if r)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    layers = Isolation(
        drops_privileges=unprivileged_child,
        network_namespace=bool(facts.get("net")),
        pid_namespace=bool(facts.get("pid")),
        private_root=bool(facts.get("root")),
        locked_mounts=bool(facts.get("locked")),
        private_proc=bool(facts.get("proc")),
        interpreter=interpreter,
        fenced=bool(facts.get("fenced")),
        reason=reason,
    )
    if layers.missing():
        logging.getLogger(__name__).warning("%s", layers.summary())
    return layers


def _probe(command, workdir: str | None, unprivileged_child: bool) -> tuple[dict[str, bool], str]:
    """(facts the probe printed, "") or ({}, why it printed none), for one probe command."""
    uid = _sandbox_uid() if unprivileged_child else None
    prefix, spawn = _spawn(DEFAULT_LIMITS, uid)  # the same limits and uid switch as a real run
    try:
        if workdir is not None and uid is not None:
            os.chown(workdir, uid, uid)
        done = subprocess.run(
            [*prefix, *command()],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
            cwd=workdir or "/",
            env=scrubbed_env(workdir or "/tmp"),
            **spawn,
        )
    except (jail.Unavailable, OSError, subprocess.SubprocessError) as error:
        return {}, str(error)[:200]
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROBE")]
    if not lines:
        return {}, (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}")[-200:]
    try:
        return json.loads(lines[-1][len("PROBE") :]), ""
    except ValueError as error:
        return {}, str(error)[:200]


def _jailed_by(facts: dict[str, bool]) -> bool:
    return all(facts.get(name) for name in ("root", "locked", "net", "pid"))


def _jailed(layers: Isolation) -> bool:
    """Whether runs go through the jail: only when the probe saw its root and its locks hold."""
    return layers.private_root and layers.locked_mounts and layers.network_namespace and layers.pid_namespace


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
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # ValueError: null bytes
        return Verdict(SYNTAX_ERROR, 0, total, time.monotonic() - started, f"{type(exc).__name__}: {exc}"[:MAX_DETAIL])
    nonce = secrets.token_hex(16)
    payload = json.dumps(
        {"nonce": nonce, "code": code, "entry_point": entry_point, "calls": [list(c.args) for c in cases]}
    )
    try:
        status, raw, returncode = _execute(payload, limits)
    except OSError as exc:  # no process left to fork, no file descriptor: ours, not the code's
        detail = f"the sandbox could not start the program: {type(exc).__name__}: {exc}"
        return Verdict(SANDBOX_ERROR, 0, total, time.monotonic() - started, detail[:MAX_DETAIL])
    return judge_output(raw, status, returncode, nonce, entry_point, cases, time.monotonic() - started)


def judge_output(
    raw: bytes,
    status: str,
    returncode: int | None,
    nonce: str,
    entry_point: str,
    cases: Sequence[TestCase],
    seconds: float = 0.0,
) -> Verdict:
    """The verdict on what a child wrote. Never raises: the bytes are the program's to choose.

    Anything the bounded reader does not expect (a frame too deep, an integer too long, a type
    that is not the harness's) is a forged or malformed result, with the reason in the detail.
    """
    total = len(cases)
    try:
        verdict = _read_output(raw, status, returncode, nonce, entry_point, cases, seconds)
        return verdict if len(verdict.detail) <= MAX_DETAIL else replace(verdict, detail=verdict.detail[:MAX_DETAIL])
    except Exception as exc:  # the last line of defence; _read_output rejects what it knows first
        detail = f"the result could not be judged: {type(exc).__name__}: {exc}"
        return Verdict(FORGED, 0, total, seconds, detail[:MAX_DETAIL])


def _read_output(
    raw: bytes,
    status: str,
    returncode: int | None,
    nonce: str,
    entry_point: str,
    cases: Sequence[TestCase],
    seconds: float,
) -> Verdict:
    total = len(cases)
    if status == OK and (returncode == MOUNT_FAILED or raw.startswith(WRAPPER_PREFIXES)):
        return Verdict(SANDBOX_ERROR, 0, total, seconds, "the sandbox could not start the program: " + _tail(raw))
    if status != OK:
        return Verdict(status, 0, total, seconds, _tail(raw))
    frames = _frames(raw, nonce)
    if not frames:
        return Verdict(NO_RESULT, 0, total, seconds, "the program ended without a result: " + _tail(raw))
    if len(frames) > 1:
        return Verdict(FORGED, 0, total, seconds, f"{len(frames)} result frames; the harness writes exactly one")
    record, problem = frames[0]
    if problem:
        return Verdict(FORGED, 0, total, seconds, f"the result frame is not the harness's: {problem}"[:MAX_DETAIL])
    if not isinstance(record, dict) or record.get("status") not in (OK, MISSING_ENTRY_POINT, IMPORT_ERROR):
        return Verdict(FORGED, 0, total, seconds, "the result frame is not the harness's")
    if record["status"] == MISSING_ENTRY_POINT:
        defined = record.get("defined", [])
        return Verdict(
            MISSING_ENTRY_POINT,
            0,
            total,
            seconds,
            f"no callable {entry_point!r}; the code defines {str(defined)[:MAX_DETAIL]}"[:MAX_DETAIL],
        )
    if record["status"] == IMPORT_ERROR:
        error = str(record.get("error"))[:80]
        return Verdict(IMPORT_ERROR, 0, total, seconds, f"{error} while running the module body")
    outputs = record.get("outputs")
    count = record.get("count")
    # The count check of the post: a frame must report exactly the calls that were sent.
    if not isinstance(outputs, list) or type(count) is not int or count != total or len(outputs) != total:
        return Verdict(
            FORGED, 0, total, seconds, f"expected {total} outputs, the frame holds {str(count)[:40]}"[:MAX_DETAIL]
        )
    passed = sum(1 for case, got in zip(cases, outputs) if got == case.expected_record())
    return Verdict(OK, passed, total, seconds, outputs=tuple(outputs))


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (the judge reads at most {MAX_INT_DIGITS})")
    return int(text)


def _depth_within(value: Any, limit: int) -> bool:
    """True if `value` nests lists and dicts at most `limit` deep (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return False
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def _parse_frame(body: str) -> tuple[Any, str]:
    """(record, "") for a frame the judge can read, (None, why not) otherwise."""
    # Bracket count first: json's C scanner recurses once per level, so 5,000 nested brackets would
    # end in RecursionError before any check on the parsed value could run.
    if body.count("[") + body.count("{") > MAX_FRAME_DEPTH and _bracket_depth(body) > MAX_FRAME_DEPTH:
        return None, f"nested deeper than {MAX_FRAME_DEPTH} levels"
    try:
        record = json.loads(body, parse_int=_bounded_int)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError, so are long integers
        return None, f"{type(exc).__name__}: {exc}"[:200]
    if not _depth_within(record, MAX_FRAME_DEPTH):
        return None, f"nested deeper than {MAX_FRAME_DEPTH} levels"
    return record, ""


def _bracket_depth(body: str) -> int:
    """The deepest bracket nesting outside JSON strings (an upper bound is all that is needed)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in body:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _frames(raw: bytes, nonce: str) -> list[tuple[Any, str]]:
    """Every line that carries the nonce, parsed: (record, "") or (None, why it could not be read)."""
    text = raw.decode("utf-8", "replace")
    frames = []
    for line in text.splitlines():
        if line.startswith(nonce) and line.endswith(nonce) and len(line) > 2 * len(nonce):
            frames.append(_parse_frame(line[len(nonce) : -len(nonce)]))
        elif nonce in line:
            frames.append((None, "the nonce in another shape"))  # tampering, not noise
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
    uid = _sandbox_uid() if layers.drops_privileges else None
    # In the jail the child's /tmp is a tmpfs of its own namespace: nothing of a run touches the
    # host's disk. Without it, the child works in a fresh folder that is removed afterwards.
    workdir = None if _jailed(layers) else tempfile.mkdtemp(prefix="mtrl-sandbox-", dir=SCRATCH_PARENT)
    try:
        if workdir is None:
            command = jail.command(layers.interpreter, HARNESS)
        else:
            if uid is not None:
                os.chown(workdir, uid, uid)
            command = (
                jail.fence_command(layers.interpreter, workdir, HARNESS)
                if layers.fenced
                else [layers.interpreter, "-I", "-S", "-c", HARNESS]
            )
        prefix, spawn = _spawn(limits, uid)
        proc = subprocess.Popen(
            [*prefix, *command],
            cwd=workdir or "/",
            env=scrubbed_env(workdir or "/tmp"),
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
        if workdir is not None:
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
