"""The filesystem and namespaces made for one sandboxed program (Linux, with `unshare`).

Issue 22's attacks showed why hiding a few paths is not enough: a program that can list the
machine finds *another* checkout of the project (world-readable, so the hidden tests too), and a
program that is root in its own namespaces can `umount` the private `/tmp` laid over the real
one. So the child no longer sees the machine with holes punched in it; it gets a root built for
it, and nothing of the host's root remains in its mount namespace:

| what the child sees | how |
|---|---|
| the interpreter, the shared libraries it and its extension modules load, its standard library, `/dev/null`, `/dev/zero`, `/dev/random`, `/dev/urandom` | read-only bind mounts at their host paths, in a tmpfs root that is itself read-only |
| `/tmp` (also its home and working directory) | a private tmpfs of `SCRATCH_SIZE`, gone with the namespace |
| `/proc` | a fresh proc of the child's own PID namespace: two processes (empty where the kernel refuses a new proc) |
| nothing else: no project file, no home, no other checkout, no `/run`, `/var`, `/dev/shm` | `pivot_root` into the new root, then the old root is detached |
| no network, no abstract Unix sockets (they belong to a network namespace) | a fresh network namespace |
| no SysV shared memory, semaphores or queues of the host, and none left behind | a fresh IPC namespace |

Every mount is locked: before the program runs, the launcher drops every capability (the
bounding set, then effective, permitted, inheritable and ambient) and sets `no_new_privs`, so
`umount` fails with EPERM; a program that makes a nested user namespace to regain capabilities
finds the mounts locked there (EINVAL), and the host's root is not in its namespace to reveal.

The launcher is Python (the same interpreter, `-I -S`) because a shell would need a `mount` and
a `pivot_root` process per mount: about 30 mounts at ~6 ms each would triple the cost of judging
a submission. It stays PID 1 of the namespace and runs the program in a forked child, because
PID 1 ignores signals it has no handler for, including the kernel's SIGKILL for RLIMIT_CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path

SCRATCH_SIZE = "16m"  # the child's /tmp: enough for a task's scratch files, small enough to fill harmlessly
# Exit status of the launcher when it could not build the child's world (the sandbox's fault).
SETUP_FAILED = 97
# pivot_root has no libc wrapper; its syscall number per machine (os.uname().machine).
PIVOT_ROOT_SYSCALL = {
    "x86_64": 155,
    "aarch64": 41,
    "arm64": 41,
    "riscv64": 41,
    "ppc64le": 203,
    "ppc64": 203,
    "s390x": 217,
    "i686": 217,
    "armv7l": 218,
}
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")


class Unavailable(RuntimeError):
    """This machine cannot build the child's root (the reason is the message)."""


# How both launchers hand over: the program gets __main__ as a plain `python -c` would give it,
# without the launcher's names.
_RUN = """
def run(program):
    del sys.argv[1:]
    main = sys.modules["__main__"].__dict__
    for key in [k for k in main if not k.startswith("__")]:
        del main[key]
    exec(compile(program, "<string>", "exec"), main)
"""

# Runs as `python -I -S -c LAUNCHER PLAN PROGRAM` inside `unshare -r --net --pid --ipc --uts --mount --fork`,
# as PID 1 and root of the new user namespace. Stdlib only; nothing here reads stdin (the
# program's payload is there).
LAUNCHER = (
    r"""
import ctypes, json, os, sys
plan = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)

def fail(step):
    err = ctypes.get_errno()
    os.write(2, ("sandbox: %s: %s\n" % (step, os.strerror(err) if err else "failed")).encode())
    os._exit(plan["setup_failed"])

def mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        fail("mount " + target)

RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND = 1, 2, 4, 8, 32, 4096
ATIME = 1024 | 2048 | 4096  # noatime, nodiratime, relatime: a remount in a user namespace must keep them
new = "/tmp"  # any directory serves as the mount point; this mount namespace is ours alone
try:
    last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
except OSError:
    last_cap = 63
mount("sandbox-root", new, "tmpfs", NOSUID | NODEV, "size=1m,mode=0755")
for op in plan["ops"]:
    kind, path = op[0], op[1]
    target = new + path
    try:
        if kind == "link":
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(op[2], target)
            continue
        if os.path.isdir(path):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "w").close()
    except OSError as exc:
        os.write(2, ("sandbox: prepare %s: %s\n" % (path, exc)).encode())
        os._exit(plan["setup_failed"])
    if kind == "hide":
        mount("sandbox-hidden", target, "tmpfs", RDONLY | NOSUID | NODEV | NOEXEC, "size=4k,mode=0555")
        continue
    mount(path, target, None, BIND)
    keep = os.statvfs(path).f_flag & (NOSUID | NODEV | NOEXEC | ATIME)
    mount(None, target, None, REMOUNT | BIND | RDONLY | NOSUID | NODEV | keep)
os.mkdir(new + "/proc")
# A proc of this PID namespace. Where the kernel refuses it (a container that masks parts of its
# own /proc), the child gets an empty /proc: it still sees none of the host's processes.
libc.mount(b"proc", (new + "/proc").encode(), b"proc", NOSUID | NODEV | NOEXEC, None)
os.mkdir(new + "/tmp")
mount("sandbox-scratch", new + "/tmp", "tmpfs", NOSUID | NODEV, "size=%s,mode=1777" % plan["scratch_size"])
mount(None, new, None, REMOUNT | BIND | RDONLY | NOSUID | NODEV)
os.chdir(new)
if libc.syscall(plan["pivot_root"], b".", b".") != 0:
    fail("pivot_root")
if libc.umount2(b".", 2) != 0:  # MNT_DETACH: the host's root leaves this namespace
    fail("detach the old root")
os.chdir("/")
for cap in range(last_cap + 1):
    if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
        fail("drop capability %d from the bounding set" % cap)
libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL (fails harmlessly on old kernels)
if libc.capset((ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()) != 0:
    fail("capset")
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    fail("no_new_privs")
"""
    + _RUN
    + """
child = os.fork()
if child == 0:
    os.chdir("/tmp")
    run(sys.argv[-1])
else:
    while True:
        pid, status = os.wait()
        if pid == child:
            os._exit(os.waitstatus_to_exitcode(status) % 256)
"""
)


# Where the jail cannot be built (no user namespaces: some distributions and containers forbid
# them), the harness can still fence itself in with Landlock (Linux 5.13+, no privilege needed):
# it runs as `python -I -S -c FENCE PLAN PROGRAM`, allows reading only the interpreter, its
# libraries and standard library, reading and writing only its working folder, and from ABI 4 no
# TCP, from ABI 6 no abstract Unix sockets and no signals outside itself; then it runs the
# program. /proc has no rule, so the host's processes cannot be listed or read either. What
# Landlock does not cover: UDP (measured: a datagram to 127.0.0.1 is sent), connecting to a Unix
# socket file, SysV IPC.
FENCE = (
    r"""
import ctypes, json, os, sys
plan = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)

def fail(step):
    err = ctypes.get_errno()
    os.write(2, ("sandbox: landlock %s: %s\n" % (step, os.strerror(err) if err else "failed")).encode())
    os._exit(plan["setup_failed"])

abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
if abi < 1:
    fail("unavailable")
fs = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0) | (1 << 15 if abi >= 5 else 0)
attr = (ctypes.c_uint64 * 3)(fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
ruleset = libc.syscall(444, attr, 8 if abi < 4 else 16 if abi < 6 else 24, 0)
if ruleset < 0:
    fail("create_ruleset")

class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

FILE_RIGHTS = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # execute, write, read, truncate, ioctl on devices

def allow(path, rights):
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    rights &= fs if os.path.isdir(path) else fs & FILE_RIGHTS
    if libc.syscall(445, ruleset, 1, ctypes.byref(Beneath(rights, fd)), 0) != 0:
        fail("allow " + path)
    os.close(fd)

for path in plan["read"]:
    allow(path, 1 | 4 | 8)  # execute, read files, read directories
for path in plan["devices"]:
    allow(path, 2 | 4)
allow(plan["workdir"], fs)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, which landlock_restrict_self requires
    fail("no_new_privs")
if libc.syscall(446, ruleset, 0) != 0:
    fail("restrict_self")
os.close(ruleset)
"""
    + _RUN
    + """
run(sys.argv[-1])
"""
)


def command(interpreter: str, program: str) -> list[str]:
    """The argv that runs `program` (Python source) in its own root under `interpreter`."""
    plan = {
        "ops": root_plan(interpreter),
        "pivot_root": _pivot_root_number(),
        "scratch_size": SCRATCH_SIZE,
        "setup_failed": SETUP_FAILED,
    }
    namespaces = ["unshare", "-r", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--mount", "--"]
    return [*namespaces, interpreter, "-I", "-S", "-c", LAUNCHER, json.dumps(plan), program]


def fence_command(interpreter: str, workdir: str, program: str) -> list[str]:
    """The argv that runs `program` under `interpreter` fenced in by Landlock (no namespaces needed)."""
    binds = [op[1] for op in root_plan(interpreter) if op[0] == "bind"]
    plan = {
        "read": [p for p in [*binds, "/etc/ld.so.cache"] if p not in DEVICES and os.path.exists(p)],
        "devices": [p for p in DEVICES if os.path.exists(p)],
        "workdir": workdir,
        "setup_failed": SETUP_FAILED,
    }
    return [interpreter, "-I", "-S", "-c", FENCE, json.dumps(plan), program]


def _pivot_root_number() -> int:
    machine = os.uname().machine
    if machine not in PIVOT_ROOT_SYSCALL:
        raise Unavailable(f"no pivot_root syscall number known for the machine type {machine!r}")
    return PIVOT_ROOT_SYSCALL[machine]


@cache
def root_plan(interpreter: str) -> list[list[str]]:
    """What the launcher mounts: symlinks and read-only binds that make `interpreter` run.

    The interpreter's module path (with `-I -S`: its standard library and extension modules),
    the shared libraries `ldd` finds for the interpreter and every extension module, and the
    devices. Each path is reached through the same symlinks as on the host (`/lib -> usr/lib`),
    so the loader's default search and the ELF interpreter path both resolve. A `site-packages`
    inside the standard library (pyenv and venv bases keep one there) is covered by an empty
    read-only tmpfs: installed packages are not the standard library, and the course's own
    package may be among them.
    """
    try:
        found = subprocess.run(
            [interpreter, "-I", "-S", "-c", "import json, sys; print(json.dumps(sys.path))"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        )
        module_dirs = [p for p in json.loads(found.stdout) if os.path.isdir(p)]
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        raise Unavailable(f"could not ask {interpreter} for its module path: {error}") from error
    extensions = sorted(str(p) for d in module_dirs for p in Path(d).glob("*.so"))
    try:
        listed = subprocess.run(
            ["ldd", os.path.realpath(interpreter), *extensions],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise Unavailable(f"ldd could not list the interpreter's shared libraries: {error}") from error
    libraries = sorted(_library_paths(listed))
    if not libraries:
        raise Unavailable(f"ldd listed no shared libraries for {interpreter}")
    ops: list[list[str]] = []
    binds: list[str] = []
    for path in [interpreter, *libraries, *DEVICES, *module_dirs]:
        real = _route(path, ops)
        if not any(real == b or real.startswith(b.rstrip("/") + "/") for b in binds):
            binds.append(real)
    ops += [["bind", b] for b in binds]
    for base in binds:
        for name in ("site-packages", "dist-packages"):
            if os.path.isdir(os.path.join(base, name)):
                ops.append(["hide", os.path.join(base, name)])
    return ops


def _library_paths(ldd_output: str) -> set[str]:
    """Absolute library paths in `ldd` output (`libc.so.6 => /lib/.../libc.so.6 (0x...)`, `/lib64/ld-...`)."""
    paths = set()
    for line in ldd_output.splitlines():
        line = line.strip()
        if "=> /" in line:
            paths.add(line.split("=> ", 1)[1].split(" (", 1)[0])
        elif line.startswith("/") and " (0x" in line:
            paths.add(line.split(" (", 1)[0])
    return {p for p in paths if os.path.exists(p)}


def _route(path: str, ops: list[list[str]]) -> str:
    """Record the symlinks on the way to `path` (as `link` ops) and return its real path."""
    parts = [p for p in path.split("/") if p]
    current = "/"
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        if os.path.islink(candidate):
            hops += 1
            if hops > 40:
                raise Unavailable(f"too many symlinks on the way to {path}")
            target = os.readlink(candidate)
            if ["link", candidate, target] not in ops:
                ops.append(["link", candidate, target])
            parts = [p for p in target.split("/") if p] + parts
            if target.startswith("/"):
                current = "/"
        else:
            current = candidate
    return current
