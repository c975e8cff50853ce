"""The offline network guard: nothing leaves the machine, only loopback is reachable.

Offline, moto answers AWS calls inside botocore, but anything else (a library's telemetry, a
stray https:// URL, an IMDS probe, a DNS lookup) would reach the network; offline must not, and
must say why. The guard has three layers, because each misses something the next catches:

1. Python level: `socket.socket.connect`, `connect_ex`, `sendto` and `sendmsg` check the address
   before the C code runs, so a host name is refused before it is resolved.
2. An audit hook (PEP 578). CPython's C `_socket` module raises an audit event for every
   connect, sendto, sendmsg and name lookup (getaddrinfo, gethostbyname(_ex), gethostbyaddr,
   getnameinfo), whichever Python object made it, so a socket of the C type, which layer 1
   cannot patch, is refused as well; so are lookups made through `_socket` directly.
3. Child processes: `guard_children()` puts a `sitecustomize` on PYTHONPATH and sets
   MTRL_NETWORK_GUARD=1, so every Python child installs layers 1 and 2 as it starts.

What it cannot cover (tests/test_netguard.py shows each):

- a host name passed straight to the C type's `connect()`/`sendto()`: CPython resolves it
  before raising the audit event, so the connection is refused but the DNS query has left;
- code that opens sockets without Python's `_socket`: C extensions with their own network
  stack (pyarrow's S3 file system, gRPC's core) and ctypes calls into libc;
- non-Python children, and Python children started with -I, -E or -S (they skip PYTHONPATH or
  sitecustomize). Only a network namespace (`unshare -n`, a container without a network)
  closes these; the course's one non-Python child is npm fetching from its registry.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path
from typing import Any

GUARD_ENV_VAR = "MTRL_NETWORK_GUARD"
SITE_DIR_NAME = "netguard-site"
# Marks the guard on the socket module itself: a child may load this file twice (through
# sitecustomize, then as mtrl_course.netguard), and two sets of patches would stack.
_MARK = "_mtrl_network_guard"

SITECUSTOMIZE = '''\
"""Written by mtrl_course.netguard: installs the offline network guard in this Python child."""
import importlib.machinery
import importlib.util
import os
import sys

if os.environ.get({env!r}) == "1":
    try:
        from mtrl_course import netguard
    except ImportError:  # a Python without the course installed: load the guard by its path
        spec = importlib.util.spec_from_file_location("_mtrl_netguard", {path!r})
        netguard = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(netguard)
    netguard.install()

# Run the sitecustomize this one shadows, if there is one (Debian's, a venv's), skipping every
# guard folder: two of them on the path would otherwise run each other forever.
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.basename(os.path.abspath(p or ".")) != {site!r}]
)
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
'''


class OfflineNetworkError(ConnectionRefusedError):
    """A connection or datagram to anything but loopback while the guard is on."""


class OfflineLookupError(socket.gaierror):
    """A name lookup (DNS) of anything but a loopback name while the guard is on."""


def is_local_host(host: Any) -> bool:
    """True for loopback and unspecified addresses, "localhost" and this machine's own name."""
    if host in (None, "", b"", "localhost", "localhost.localdomain"):
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return str(host).lower() in (socket.gethostname().lower(), "localhost")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is loopback; ::ffff:8.8.8.8 is not
    return address.is_loopback or address.is_unspecified


def is_address(host: Any) -> bool:
    try:
        ipaddress.ip_address((host.decode() if isinstance(host, bytes) else str(host)).split("%", 1)[0])
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _check_address(family: int, address: Any) -> None:
    if family in (socket.AF_INET, socket.AF_INET6):
        host = address[0] if isinstance(address, tuple) and address else address
        if not is_local_host(host):
            port = address[1] if isinstance(address, tuple) and len(address) > 1 else "?"
            raise OfflineNetworkError(
                f"offline mode: connection to {host}:{port} refused; only loopback (127.0.0.1, "
                "localhost) is allowed. Set MTRL_MODE=live to use AWS."
            )
    elif family == getattr(socket, "AF_PACKET", None) and not (
        isinstance(address, tuple) and address and address[0] == "lo"
    ):
        # A raw frame needs no address resolution and no route: only the loopback interface.
        raise OfflineNetworkError("offline mode: raw packets are allowed on the loopback interface only")


def _check_lookup(host: Any) -> None:
    # An address literal needs no lookup: let it through; connect() refuses it if it is remote.
    if not is_local_host(host) and not is_address(host):
        raise OfflineLookupError(socket.EAI_NONAME, f"offline mode: name lookup of {host!r} refused (loopback only)")


def _check_reverse(address: Any) -> None:
    if not is_local_host(address):
        raise OfflineLookupError(
            socket.EAI_NONAME, f"offline mode: reverse lookup of {address!r} refused (loopback only)"
        )


def _first(args: tuple) -> Any:
    """The first argument of an audit event whose arguments come as one tuple."""
    value = args[0] if args else None
    return value[0] if isinstance(value, tuple) and value else value


def _audit(event: str, args: tuple) -> None:
    # The hook sees every audited event in the process (a one-step offline training raised 1.9
    # million, nearly all builtins.id from deepcopy), each costing about 0.4 us for the call
    # alone (measured): leave on the cheapest test that rules most of them out.
    if event[0] != "s" or not event.startswith("socket."):
        return
    if event == "socket.connect":
        _check_address(args[0].family, args[1])
    elif event in ("socket.sendto", "socket.sendmsg"):
        if args[1] is not None:
            _check_address(args[0].family, args[1])
    elif event == "socket.getaddrinfo":
        _check_lookup(args[0])
    elif event in ("socket.gethostbyname", "socket.gethostbyname_ex"):
        _check_lookup(_first(args))
    elif event in ("socket.gethostbyaddr", "socket.getnameinfo"):
        _check_reverse(_first(args))


def installed() -> bool:
    return bool(getattr(socket, _MARK, False))


def install() -> None:
    """Install layers 1 and 2 in this process (idempotent; the audit hook cannot be removed)."""
    if installed():
        return
    cls = socket.socket
    original_connect, original_connect_ex = cls.connect, cls.connect_ex
    original_sendto, original_sendmsg = cls.sendto, cls.sendmsg

    def connect(sock: socket.socket, address: Any) -> None:
        _check_address(sock.family, address)
        return original_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        _check_address(sock.family, address)
        return original_connect_ex(sock, address)

    def sendto(sock: socket.socket, data: Any, *args: Any) -> int:
        _check_address(sock.family, args[-1] if args else None)
        return original_sendto(sock, data, *args)

    def sendmsg(sock: socket.socket, buffers: Any, *args: Any, **kwargs: Any) -> int:
        address = kwargs.get("address", args[2] if len(args) > 2 else None)
        if address is not None:
            _check_address(sock.family, address)
        return original_sendmsg(sock, buffers, *args, **kwargs)

    cls.connect, cls.connect_ex, cls.sendto, cls.sendmsg = connect, connect_ex, sendto, sendmsg  # type: ignore[method-assign,assignment]
    sys.addaudithook(_audit)
    setattr(socket, _MARK, True)


def child_environment(state_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables that make a Python child install the guard (layer 3); writes its sitecustomize."""
    environ = dict(os.environ if environ is None else environ)
    site_dir = Path(state_dir) / SITE_DIR_NAME
    site_dir.mkdir(parents=True, exist_ok=True)
    text = SITECUSTOMIZE.format(env=GUARD_ENV_VAR, path=str(Path(__file__).resolve()), site=SITE_DIR_NAME)
    target = site_dir / "sitecustomize.py"
    if not target.is_file() or target.read_text() != text:
        target.write_text(text)
    # One guard folder on the path: an earlier backend (another state folder) may have added its own.
    parts = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).name != SITE_DIR_NAME]
    return {"PYTHONPATH": os.pathsep.join([str(site_dir), *parts]), GUARD_ENV_VAR: "1"}


def guard_children(state_dir: Path) -> None:
    """Make every Python child of this process guard itself too (sets os.environ)."""
    os.environ.update(child_environment(state_dir))
