"""The sandbox against hostile programs: each attack gets a verdict and correctness 0, never a crash.

Every run here is bounded: short wall-clock and CPU limits, 256 MB of address space (the post's
2 GB default is kept for training; a shared test machine does not need a test to allocate it),
64 processes. Attacks that only a namespace can stop are skipped, with the reason, on machines
where `sandbox.isolation()` reports the layer missing, so the suite says what the machine enforces
instead of pretending.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sandbox_watch
from coding_agent import sandbox
from coding_agent.sandbox import Raises, TestCase

LIMITS = sandbox.Limits(
    cpu_seconds=2, wall_seconds=4.0, memory_bytes=256 * 1024**2, processes=64, output_bytes=64 * 1024
)
# Wall-clock allowance on top of the limit for process start-up and the kill on a busy 2-core machine.
SLACK = 6.0
ADD = (TestCase((1, 2), 3), TestCase((2, 2), 4), TestCase((-5, 5), 0), TestCase(("a", 1), Raises("TypeError")))
GOOD = "def add(a, b):\n    return a + b\n"
LAYERS = sandbox.isolation()


def judge(code: str, cases=ADD, entry: str = "add", limits: sandbox.Limits = LIMITS) -> sandbox.Verdict:
    sandbox.clear_cache()
    return sandbox.run_tests(textwrap.dedent(code), entry, cases, limits)


@pytest.fixture(autouse=True)
def watch_our_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox_watch.record_uids(monkeypatch)


@pytest.fixture(autouse=True)
def scratch_parent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary root of this test's own for the sandbox's working folders.

    Listing the machine's shared temporary folder would count the folders of every other
    sandbox on the machine (another test worker, a notebook, another checkout's suite) as ours.
    World-searchable, because a child that runs as a sandbox uid must reach its folder in it.
    """
    root = Path(tempfile.mkdtemp(prefix="mtrl-sandbox-tests-"))
    root.chmod(0o755)
    monkeypatch.setattr(sandbox, "SCRATCH_PARENT", str(root))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def sandbox_dirs() -> set[str]:
    """The sandbox folders under this test's own scratch root (see `scratch_parent`)."""
    assert sandbox.SCRATCH_PARENT is not None
    return {p.name for p in Path(sandbox.SCRATCH_PARENT).iterdir()}


# ------------------------------------------------------------------------------ honest code
def test_correct_code_passes_and_wrong_code_fails() -> None:
    assert judge(GOOD).correctness == 1.0
    wrong = judge("def add(a, b):\n    return a - b\n")
    assert wrong.status == sandbox.OK and wrong.passed == 1  # only the call that must raise TypeError still does
    assert 0 < wrong.correctness < 1


def test_the_child_never_receives_expected_values(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = sandbox._execute
    monkeypatch.setattr(sandbox, "_execute", lambda payload, limits: (seen.append(payload), real(payload, limits))[1])
    canary = "expected-value-" + uuid.uuid4().hex
    verdict = judge("def echo(x):\n    return x\n", (TestCase(("in",), canary),), entry="echo")
    assert verdict.passed == 0
    assert canary not in seen[0] and json.loads(seen[0])["calls"] == [["in"]]


def test_results_are_cached_by_code_and_tests() -> None:
    sandbox.clear_cache()
    first = sandbox.run_tests(GOOD, "add", ADD, LIMITS)
    again = sandbox.run_tests(GOOD, "add", ADD, LIMITS)
    other = sandbox.run_tests(GOOD, "add", ADD[:2], LIMITS)
    assert not first.cached and again.cached and not other.cached
    assert (again.passed, again.total) == (first.passed, first.total)


# ------------------------------------------------------------------------------ bad code
@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("def add(a, b) return a + b", sandbox.SYNTAX_ERROR),
        ("x = 1\0", sandbox.SYNTAX_ERROR),
        ("", sandbox.MISSING_ENTRY_POINT),
        ("def plus(a, b):\n    return a + b\n", sandbox.MISSING_ENTRY_POINT),
        ("add = 3", sandbox.MISSING_ENTRY_POINT),
        ("import not_a_module_anywhere\ndef add(a, b):\n    return a + b\n", sandbox.IMPORT_ERROR),
    ],
    ids=["no-parse", "null-byte", "defines-nothing", "wrong-entry-point", "not-callable", "failed-import"],
)
def test_bad_code_gets_a_clear_status(code: str, status: str) -> None:
    verdict = judge(code)
    assert verdict.status == status and verdict.correctness == 0.0
    assert verdict.detail or status == sandbox.MISSING_ENTRY_POINT


def test_wrong_entry_point_names_what_was_defined() -> None:
    assert "plus" in judge("def plus(a, b):\n    return a + b\n").detail


# ------------------------------------------------------------------------------ forging
def test_forged_frame_with_the_stolen_nonce_is_caught() -> None:
    # Reads the nonce from the harness's globals and prints a frame claiming every test passed.
    verdict = judge("""
        import __main__, json
        n = __main__.nonce
        print(n + json.dumps({"status": "ok", "count": 4, "outputs": [["bool", True]] * 4}) + n)
        def add(a, b):
            return 0
    """)
    assert verdict.status == sandbox.FORGED and verdict.correctness == 0.0


def test_forged_frame_then_exit_cannot_pass_without_the_right_values() -> None:
    # One forged frame and no genuine one: the count is right, but the parent compares values it never sent.
    verdict = judge("""
        import __main__, json, os
        n = __main__.nonce
        __main__.out.write(n + json.dumps({"status": "ok", "count": 4, "outputs": [["int", 1]] * 4}) + n + "\\n")
        __main__.out.flush()
        os._exit(0)
    """)
    assert verdict.status == sandbox.OK and verdict.passed == 0


def test_a_padded_test_count_is_caught() -> None:
    verdict = judge("""
        import __main__, json, os
        n = __main__.nonce
        __main__.out.write(n + json.dumps({"status": "ok", "count": 100, "outputs": [["int", 3]] * 100}) + n + "\\n")
        __main__.out.flush()
        os._exit(0)
    """)
    assert verdict.status == sandbox.FORGED


def test_a_plain_fake_summary_is_not_a_result() -> None:
    verdict = judge("print('Ran 4 tests: OK')\nprint('PASSED 4/4')\nimport os\nos._exit(0)\n")
    assert verdict.status == sandbox.NO_RESULT and verdict.correctness == 0.0


def test_patched_unittest_changes_nothing() -> None:
    verdict = judge("""
        import unittest
        unittest.TestCase.assertEqual = lambda *a, **k: None
        unittest.TestCase.run = lambda self, result=None: None
        def add(a, b):
            return 42
    """)
    assert verdict.status == sandbox.OK and verdict.passed == 0


def test_an_object_that_equals_everything_does_not_pass() -> None:
    verdict = judge("""
        class Anything:
            def __eq__(self, other):
                return True
        def add(a, b):
            return Anything()
    """)
    assert verdict.passed == 0


# ------------------------------------------------------------------------------ exits and loops
@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("import os\nos._exit(0)\n", sandbox.NO_RESULT),
        ("raise SystemExit(0)\n", sandbox.IMPORT_ERROR),
        # As PID 1 of its namespace the harness ignores its own SIGKILL and reports the missing function.
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", (sandbox.NO_RESULT, sandbox.MISSING_ENTRY_POINT)),
    ],
    ids=["os-exit", "system-exit", "kills-itself"],
)
def test_exit_at_import_scores_zero(code: str, status: str | tuple[str, ...]) -> None:
    verdict = judge(code)
    assert verdict.status in ((status,) if isinstance(status, str) else status) and verdict.correctness == 0.0


@pytest.mark.parametrize(
    "code",
    ["while True:\n    pass\n", "import time\ndef add(a, b):\n    time.sleep(3600)\n"],
    ids=["cpu-loop-at-import", "sleeping-entry-point"],
)
def test_endless_programs_are_stopped(code: str) -> None:
    started = time.monotonic()
    verdict = judge(code)
    assert verdict.status in (sandbox.TIMEOUT, sandbox.NO_RESULT) and verdict.correctness == 0.0
    assert time.monotonic() - started < LIMITS.wall_seconds + SLACK
    assert sandbox_watch.wait_until_gone() == []


# ------------------------------------------------------------------------------ resources
def test_fork_bomb_is_contained_and_leaves_no_process() -> None:
    started = time.monotonic()
    verdict = judge("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """)
    assert verdict.correctness == 0.0
    assert time.monotonic() - started < LIMITS.wall_seconds + SLACK
    assert sandbox_watch.wait_until_gone() == [], "fork-bomb processes survived the group kill"


@pytest.mark.skipif(
    not LAYERS.pid_namespace, reason="no PID namespace on this machine: a setsid() child can outlive the group kill"
)
def test_a_process_that_leaves_the_group_dies_with_the_namespace() -> None:
    verdict = judge("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
        def add(a, b):
            return a + b
    """)
    assert verdict.status == sandbox.OK and verdict.correctness == 1.0
    assert sandbox_watch.wait_until_gone() == []


@pytest.mark.parametrize(
    "code",
    ["x = bytearray(10 ** 10)\n", "chunks = []\nwhile True:\n    chunks.append(bytearray(10 ** 7))\n"],
    ids=["one-huge-allocation", "growing-allocation"],
)
def test_memory_bombs_hit_the_address_space_limit(code: str) -> None:
    verdict = judge(code)
    assert verdict.status in (sandbox.IMPORT_ERROR, sandbox.NO_RESULT) and verdict.correctness == 0.0


@pytest.mark.parametrize(
    "code",
    ["print('x' * 10 ** 7)\n", "while True:\n    print('y' * 1000)\n", "import sys\nsys.stderr.write('z' * 10 ** 7)\n"],
    ids=["one-huge-print", "endless-printing", "huge-stderr"],
)
def test_huge_output_is_cut_off(code: str) -> None:
    verdict = judge(code)
    assert verdict.status == sandbox.OUTPUT_LIMIT and verdict.correctness == 0.0
    assert len(verdict.detail) <= sandbox.MAX_DETAIL


def test_a_huge_file_is_cut_by_the_file_size_limit() -> None:
    verdict = judge(
        """
        def add(a, b):
            try:
                with open("big", "wb") as f:
                    f.write(b"0" * (8 * 1024 ** 2))
                return "wrote it"
            except OSError as exc:
                return type(exc).__name__
    """,
        (TestCase((1, 2), "wrote it"),),
    )
    assert verdict.passed == 0


# ------------------------------------------------------------------------------ secrets and files
def test_the_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "canary-" + uuid.uuid4().hex
    monkeypatch.setenv("MTRL_SANDBOX_CANARY", canary)
    verdict = judge("import os\ndef add(a, b):\n    return dict(os.environ)\n", (TestCase((1, 2), {}),))
    seen = json.dumps(verdict.outputs)
    assert verdict.status == sandbox.OK and canary not in seen
    assert "AWS_" not in seen and "testing" not in seen  # conftest's fake credentials stay with the parent


@pytest.mark.skipif(
    not (LAYERS.private_root or LAYERS.fenced), reason="layer missing on this machine: neither the jail nor a fence"
)
def test_the_hidden_tests_cannot_be_read() -> None:
    source = Path(sandbox.__file__).with_name("tasks.py")
    verdict = judge(f"def add(a, b):\n    return open({str(source)!r}).read()[:60]\n", (TestCase((1, 2), "x"),))
    assert "import" not in json.dumps(verdict.outputs), "the child read the task definitions"
    assert verdict.outputs and verdict.outputs[0][0] == "raises"


@pytest.mark.skipif(
    not (LAYERS.drops_privileges or LAYERS.private_root), reason="neither a uid drop nor a root of its own here"
)
def test_a_private_file_of_the_parent_cannot_be_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    secret.chmod(0o600)
    verdict = judge(f"def add(a, b):\n    return open({str(secret)!r}).read()\n", (TestCase((1, 2), "x"),))
    assert "top secret" not in json.dumps(verdict.outputs)


@pytest.mark.skipif(
    not (LAYERS.private_root or LAYERS.fenced), reason="layer missing on this machine: neither the jail nor a fence"
)
def test_writes_outside_the_sandbox_do_not_land(tmp_path: Path) -> None:
    targets = [
        tmp_path / "pwned.txt",
        Path(tempfile.gettempdir()) / f"mtrl-escape-{uuid.uuid4().hex}",
        Path(sandbox.__file__).with_name(f"pwned-{uuid.uuid4().hex}.py"),
    ]
    before = sandbox_dirs()
    try:
        judge(
            "def add(a, b):\n    for p in %r:\n        try:\n            open(p, 'w').write('x')\n        except OSError:\n            pass\n    return a + b\n"
            % [str(t) for t in targets]
        )
        assert [t for t in targets if t.exists()] == []
        assert sandbox_dirs() <= before, "the sandbox left its working directory behind"
    finally:  # a failing run must not leave its litter behind for the next one
        for target in targets:
            target.unlink(missing_ok=True)


def test_bad_code_leaves_nothing_on_disk() -> None:
    before = sandbox_dirs()
    for code in (
        "def add(a, b) return",
        "while True:\n    pass\n",
        "print('x' * 10 ** 7)\n",
        "open('junk', 'w').write('x' * 1000)\ndef add(a, b):\n    return a + b\n",
    ):
        judge(code)
    assert sandbox_dirs() <= before


# ------------------------------------------------------------------------------ network and signals
@pytest.mark.skipif(
    not LAYERS.network_namespace, reason="no network namespace on this machine: the child shares the parent's network"
)
def test_no_network_not_even_loopback() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        verdict = judge(
            f"""
            import socket
            def add(a, b):
                s = socket.socket()
                s.settimeout(1)
                s.connect(("127.0.0.1", {port}))
                s.sendall(b"leak")
                return "connected"
        """,
            (TestCase((1, 2), "connected"),),
        )
        with pytest.raises(socket.timeout):
            server.accept()
    assert verdict.passed == 0 and verdict.outputs[0][0] == "raises"


@pytest.mark.skipif(
    not (LAYERS.drops_privileges or LAYERS.pid_namespace),
    reason="neither a uid drop nor a PID namespace: signalling the parent's processes is possible here",
)
def test_signals_cannot_reach_the_parent_or_its_processes() -> None:
    decoy = subprocess.Popen(["sleep", "30"])
    try:
        verdict = judge(f"""
            import os, signal
            for target in ({decoy.pid}, {os.getpid()}, os.getppid()):
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.kill(target, sig)
                    except (OSError, ValueError):
                        pass
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            def add(a, b):
                return a + b
        """)
        assert decoy.poll() is None, "the sandboxed code killed a process of the parent"
        assert verdict.status in (sandbox.OK, sandbox.NO_RESULT)
    finally:
        decoy.send_signal(signal.SIGKILL)
        decoy.wait()


# ------------------------------------------------------------------------------ without the jail
def landlock_abi() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    return int(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))  # LANDLOCK_CREATE_RULESET_VERSION


@pytest.mark.skipif(landlock_abi() < 6, reason="no Landlock ABI 6 (Linux 6.12+): the fence would not cover TCP")
def test_without_the_jail_the_landlock_fence_keeps_files_tcp_and_signals_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A machine that forbids user namespaces: no jail, but the harness fences itself in.
    fence_only = replace(
        LAYERS,
        network_namespace=False,
        pid_namespace=False,
        private_root=False,
        locked_mounts=False,
        private_proc=False,
        fenced=True,
    )
    monkeypatch.setattr(sandbox, "isolation", lambda: fence_only)
    assert not sandbox._jailed(fence_only) and "still reaches no file" in fence_only.summary()
    outside = tmp_path / "outside.txt"
    outside.write_text("top secret")
    tmp_path.chmod(0o755)
    outside.chmod(0o644)  # world-readable: only the fence stands in the way
    target = Path(tempfile.gettempdir()) / f"mtrl-escape-{uuid.uuid4().hex}"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.2)
        code = f"""
import os, socket
def attempt(action):
    try:
        return action()
    except OSError as exc:
        return type(exc).__name__
RESULTS = [
    attempt(lambda: open({str(Path(sandbox.__file__).with_name("tasks.py"))!r}).read(20)),
    attempt(lambda: open({str(outside)!r}).read()),
    attempt(lambda: open({str(target)!r}, "w").write("x")),
    attempt(lambda: open("scratch.txt", "w").write("ok")),
    attempt(lambda: socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), timeout=1) and "connected"),
    attempt(lambda: os.kill({os.getpid()}, 0) or "signalled"),
]
def add(a, b):
    return RESULTS
"""
        verdict = judge(code, (TestCase((1, 2), "x"),))
        with pytest.raises(OSError):
            server.accept()
    try:
        results = [item[1] for item in verdict.outputs[0][1]]
        assert results == [
            "PermissionError",
            "PermissionError",
            "PermissionError",
            2,
            "PermissionError",
            "PermissionError",
        ], results
        assert not target.exists()
        assert judge(GOOD).correctness == 1.0  # and honest code still runs
    finally:
        target.unlink(missing_ok=True)


# ------------------------------------------------------------------------------ encoding
@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=5)
        | st.floats(allow_nan=False, allow_infinity=False),
        lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
        max_leaves=8,
    )
)
def test_the_encoding_is_json_stable_and_tells_types_apart(value: object) -> None:
    record = sandbox.encode_value(value)
    assert json.loads(json.dumps(record)) == record
    if isinstance(value, list):
        assert sandbox.encode_value(tuple(value)) != record


# ------------------------------------------------------------------------------ judging hostile frames
NONCE = "0123456789abcdef0123456789abcdef"
HOSTILE_BODIES = st.one_of(
    st.text(max_size=200),
    st.integers(min_value=0, max_value=6000).map(lambda d: "[" * d + "]" * d),
    st.integers(min_value=0, max_value=6000).map(lambda d: '{"a":' * d + "1" + "}" * d),
    st.integers(min_value=1, max_value=9000).map(
        lambda n: json.dumps({"status": "ok", "count": 4, "outputs": []}).replace("4", "9" * n, 1)
    ),
    st.sampled_from(
        ["NaN", "Infinity", "-Infinity", "[NaN, Infinity]", "1e999999", "-0", '"\\ud800"', "{}", "[]", "null"]
    ),
    st.builds(
        lambda status, count, outputs: json.dumps({"status": status, "count": count, "outputs": outputs}),
        st.sampled_from([sandbox.OK, sandbox.MISSING_ENTRY_POINT, sandbox.IMPORT_ERROR, "ok ", 1, None]),
        st.one_of(st.integers(), st.text(max_size=5), st.none(), st.just(True), st.floats()),
        st.one_of(
            st.lists(st.lists(st.one_of(st.text(max_size=5), st.integers(), st.none()), max_size=3), max_size=6),
            st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
            st.text(max_size=5),
        ),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            HOSTILE_BODIES.map(lambda body: NONCE + body + NONCE),
            st.text(max_size=50),
            HOSTILE_BODIES.map(lambda body: "x" + NONCE + body),
        ),
        max_size=3,
    ),
    st.binary(max_size=20),
    st.sampled_from([sandbox.OK, sandbox.TIMEOUT, sandbox.OUTPUT_LIMIT]),
    st.sampled_from([0, 1, -9, sandbox.MOUNT_FAILED, None]),
)
def test_the_judge_returns_a_verdict_for_any_output(
    lines: list[str], junk: bytes, status: str, code: int | None
) -> None:
    # Whatever the child writes (frames nested 6,000 deep, integers of 9,000 digits, NaN, wrong
    # types, invalid UTF-8), the parent answers with a verdict and a reason, never an exception.
    raw = junk + "\n".join(lines).encode("utf-8", "surrogatepass")
    verdict = sandbox.judge_output(raw, status, code, NONCE, "add", ADD)
    assert verdict.status in sandbox.STATUSES
    assert 0 <= verdict.passed <= verdict.total == len(ADD)
    assert verdict.status == sandbox.OK or (verdict.passed == 0 and verdict.outputs == ())
    assert len(verdict.detail) <= sandbox.MAX_DETAIL


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("[" * 5000 + "]" * 5000, "nested deeper"),
        (
            json.dumps({"status": "ok", "count": 4, "outputs": [["int", 0]] * 3}).replace("0]", "1" * 5001 + "]", 1),
            "digits",
        ),
        (
            json.dumps({"status": "ok", "count": 4, "outputs": [["list", [["list", []]]]] * 4}).replace(
                "[]", "[" * 100 + "]" * 100
            ),
            "nested deeper",
        ),
    ],
    ids=["5000-brackets", "5001-digit-integer", "deep-value-inside-a-valid-frame"],
)
def test_frames_beyond_the_judges_bounds_are_malformed_with_the_reason(body: str, reason: str) -> None:
    verdict = sandbox.judge_output((NONCE + body + NONCE + "\n").encode(), sandbox.OK, 0, NONCE, "add", ADD)
    assert verdict.status == sandbox.FORGED and verdict.passed == 0
    assert reason in verdict.detail


def test_a_program_that_returns_a_5000_digit_integer_gets_a_verdict() -> None:
    verdict = judge("import sys\nsys.set_int_max_str_digits(0)\ndef add(a, b):\n    return 10 ** 5000\n")
    assert verdict.status == sandbox.FORGED and "digits" in verdict.detail and verdict.passed == 0


def test_a_judge_of_its_own_that_cannot_start_is_a_sandbox_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork(payload: str, limits: sandbox.Limits) -> tuple[str, bytes, int | None]:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(sandbox, "_execute", no_fork)
    verdict = judge(GOOD)
    assert verdict.status == sandbox.SANDBOX_ERROR and "BlockingIOError" in verdict.detail


def test_one_and_true_are_different_answers() -> None:
    assert sandbox.encode_value(1) != sandbox.encode_value(True) != sandbox.encode_value(1.0)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="cpu_seconds"):
        sandbox.Limits(cpu_seconds=0)


def test_bad_arguments_name_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="entry_point"):
        sandbox.run_tests(GOOD, "not an identifier", ADD)
    with pytest.raises(ValueError, match="at least one test"):
        sandbox.run_tests(GOOD, "add", ())


def test_isolation_is_reported() -> None:
    rows = LAYERS.rows()
    assert rows[-1]["active"] is True and len(rows) == 8
    assert LAYERS.missing() == [row["layer"] for row in rows if not row["active"]]
    assert ("every sandbox layer is active" in LAYERS.summary()) == (not LAYERS.missing())
    if os.geteuid() == 0:
        assert LAYERS.drops_privileges


@pytest.mark.skipif(
    not (os.geteuid() == 0 and shutil.which("unshare")),
    reason="namespaces are only expected for a root parent with unshare",
)
def test_a_root_parent_with_unshare_gets_every_layer() -> None:
    # Without this, a broken probe would silently turn the namespace tests above into skips.
    assert LAYERS.missing() == [], LAYERS.summary()


def test_a_fork_bomb_does_not_starve_a_sandbox_running_beside_it() -> None:
    # Each run has its own uid when the parent is root, so RLIMIT_NPROC budgets are not shared.
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    with ThreadPoolExecutor(max_workers=2) as pool:
        bombing = pool.submit(sandbox._judge, bomb, "add", ADD, LIMITS)
        time.sleep(1.0)
        beside = pool.submit(sandbox._judge, GOOD, "add", ADD, LIMITS).result()
        bombing.result()
    assert beside.status == sandbox.OK and beside.correctness == 1.0
    assert sandbox_watch.wait_until_gone() == []


def test_the_process_budget_comes_on_top_of_what_a_shared_uid_already_runs() -> None:
    assert sandbox.process_budget(LIMITS, uid=sandbox.SANDBOX_UID_BASE) == LIMITS.processes
    assert sandbox.process_budget(LIMITS, uid=None) > LIMITS.processes  # this test process alone counts


@pytest.mark.skipif(not LAYERS.network_namespace, reason="no namespace wrapper on this machine")
def test_a_broken_sandbox_is_its_own_status_and_is_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    # If the wrapper cannot start, scoring the code 0 would be a silently dead scorer of our own.
    monkeypatch.setattr(sandbox.jail, "command", lambda interpreter, program: ["unshare", "--no-such-option", "--"])
    sandbox.clear_cache()
    first = sandbox.run_tests(GOOD, "add", ADD, LIMITS)
    again = sandbox.run_tests(GOOD, "add", ADD, LIMITS)
    assert first.status == again.status == sandbox.SANDBOX_ERROR and not again.cached
    assert "could not start" in first.detail


# ------------------------------------------------------------------------------ the jail's plan
def test_the_plan_follows_symlinks_to_real_files(tmp_path: Path) -> None:
    real = tmp_path / "usr" / "lib"
    real.mkdir(parents=True)
    (real / "libx.so.1.2").write_text("")
    (real / "libx.so.1").symlink_to("libx.so.1.2")
    (tmp_path / "lib").symlink_to("usr/lib")
    ops: list[list[str]] = []
    found = sandbox.jail._route(str(tmp_path / "lib" / "libx.so.1"), ops)
    assert found == str(real / "libx.so.1.2")
    assert ops == [["link", str(tmp_path / "lib"), "usr/lib"], ["link", str(real / "libx.so.1"), "libx.so.1.2"]]


def test_the_plan_reads_ldd_output() -> None:
    listed = (
        "/usr/bin/python3.11:\n\tlinux-vdso.so.1 (0x00007ffd)\n\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x7f)\n"
        "\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n\tlibgone.so => not found\n"
    )
    found = sandbox.jail._library_paths(listed)
    assert found <= {"/lib/x86_64-linux-gnu/libm.so.6", "/lib64/ld-linux-x86-64.so.2"}  # only those that exist
    assert not any("vdso" in p or "gone" in p for p in found)


@pytest.mark.skipif(not LAYERS.private_root, reason="layer missing on this machine: private_root")
def test_the_plan_binds_no_project_file() -> None:
    binds = [op[1] for op in sandbox.jail.root_plan(LAYERS.interpreter) if op[0] == "bind"]
    repository = str(Path(sandbox.__file__).resolve().parents[2])
    assert binds and not [b for b in binds if b.startswith(repository) or repository.startswith(b + "/")]
