"""The offline network guard (netguard.py) and the telemetry switches (telemetry.py).

Every refused case uses TEST-NET-3 addresses (203.0.113.0/24) and the reserved `.invalid`
domain, so even a broken guard reaches nothing real; allowed traffic stays on 127.0.0.1. Issue
12 found lookups through gethostbyname/gethostbyaddr, UDP sendto, the C `_socket` module and
child processes all getting past the old guard; each has a test here. The guard's limits are
shown by tests too, next to the statement in netguard.py's docstring.
"""

from __future__ import annotations

import _socket
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mtrl_course import aws, config, netguard, telemetry

REMOTE = ("203.0.113.7", 9)  # TEST-NET-3, the discard port
NAME = "mtrl-guard-test.invalid"
PACKAGE_ROOT = str(Path(netguard.__file__).resolve().parents[1])


@pytest.fixture(autouse=True)
def guard():
    aws.install_network_guard()  # conftest installs it already; this makes each test stand alone
    assert netguard.installed()


# ------------------------------------------------------------------------------ name lookups
@pytest.mark.parametrize(
    "lookup",
    [
        lambda: socket.gethostbyname(NAME),
        lambda: socket.gethostbyname_ex(NAME),
        lambda: socket.getaddrinfo(NAME, 443),
        lambda: socket.gethostbyaddr(REMOTE[0]),
        lambda: socket.getnameinfo(REMOTE, 0),
        lambda: socket.create_connection((NAME, 443), timeout=1),
        lambda: _socket.gethostbyname(NAME),
        lambda: _socket.gethostbyaddr(REMOTE[0]),
        lambda: _socket.getaddrinfo(NAME, 443),
    ],
    ids=[
        "gethostbyname",
        "gethostbyname_ex",
        "getaddrinfo",
        "gethostbyaddr",
        "getnameinfo",
        "create_connection",
        "_socket.gethostbyname",
        "_socket.gethostbyaddr",
        "_socket.getaddrinfo",
    ],
)
def test_remote_name_lookups_are_refused(lookup):
    with pytest.raises(socket.gaierror, match="offline mode"):
        lookup()


def test_loopback_lookups_still_work():
    assert socket.gethostbyname("localhost").startswith("127.")
    assert socket.getaddrinfo("127.0.0.1", 80)[0][4][0] == "127.0.0.1"
    assert socket.gethostbyaddr("127.0.0.1")


# -------------------------------------------------------------------------------- datagrams
@pytest.mark.parametrize("address", [REMOTE, (NAME, 9)], ids=["address", "name"])
def test_udp_sendto_is_refused(address):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(aws.OfflineNetworkError):
        sock.sendto(b"x", address)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(aws.OfflineNetworkError):
        sock.sendto(b"x", 0, address)


def test_udp_sendmsg_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(aws.OfflineNetworkError):
        sock.sendmsg([b"x"], [], 0, REMOTE)


def test_udp_on_loopback_still_works():
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender,
    ):
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(5)
        sender.sendto(b"ping", receiver.getsockname())
        assert receiver.recvfrom(16)[0] == b"ping"


def test_ipv4_mapped_ipv6_addresses_are_judged_by_their_ipv4_part():
    assert netguard.is_local_host("::ffff:127.0.0.1") and not netguard.is_local_host("::ffff:203.0.113.7")


# ---------------------------------------------------------------------- the C _socket module
def test_a_c_level_socket_cannot_connect_out():
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        with pytest.raises(aws.OfflineNetworkError, match="only loopback"):
            raw.connect(REMOTE)
        with pytest.raises(aws.OfflineNetworkError):
            raw.connect_ex(REMOTE)
    finally:
        raw.close()


def test_a_c_level_socket_cannot_send_a_datagram_out():
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        with pytest.raises(aws.OfflineNetworkError):
            raw.sendto(b"x", REMOTE)
    finally:
        raw.close()


def test_limit_a_c_level_socket_resolves_a_name_before_the_guard_sees_it():
    # CPython converts (and, for a name, resolves) the address of the C type's connect() before
    # it raises the audit event. A name with a NUL byte fails that conversion without any lookup,
    # and the TypeError (not OfflineNetworkError) shows the order: a real name given to the C
    # type is looked up, then the connection is refused. Through socket.socket the guard answers
    # first, before anything is resolved.
    name = "guard\x00test.invalid"
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        with pytest.raises(TypeError, match="null character"):
            raw.connect((name, 80))
    finally:
        raw.close()
    with socket.socket() as sock, pytest.raises(aws.OfflineNetworkError):
        sock.connect((name, 80))


# ------------------------------------------------------------------------------ child processes
def child(code: str, *flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=120, env=env, check=False
    )


LOOKUP_IN_CHILD = f"import socket\ntry:\n    socket.gethostbyname({NAME!r})\nexcept OSError as e:\n    print(e)\n"


def test_python_children_of_the_offline_backend_guard_themselves(tmp_path):
    aws.reset_offline(tmp_path / "state")
    result = child(LOOKUP_IN_CHILD)
    assert "offline mode: name lookup" in result.stdout, result.stdout + result.stderr


def test_the_child_guard_keeps_a_shadowed_sitecustomize(tmp_path):
    shadowed = tmp_path / "other"
    shadowed.mkdir()
    (shadowed / "sitecustomize.py").write_text("import os\nos.environ['SHADOWED_RAN'] = '1'\n")
    env = {**os.environ, **netguard.child_environment(tmp_path / "state")}
    env["PYTHONPATH"] += os.pathsep + str(shadowed)
    result = child(
        "import os, socket; print(os.environ.get('SHADOWED_RAN'), getattr(socket, '_mtrl_network_guard', False))",
        env=env,
    )
    assert result.stdout.split() == ["1", "True"], result.stderr


def test_limit_isolated_python_children_are_not_guarded(tmp_path):
    env = {**os.environ, **netguard.child_environment(tmp_path / "state")}
    probe = "import socket; print(getattr(socket, '_mtrl_network_guard', False))"
    assert child(probe, env=env).stdout.strip() == "True"
    assert child(probe, "-I", env=env).stdout.strip() == "False"  # -I ignores PYTHONPATH


# -------------------------------------------------------------------------------- telemetry
TELEMETRY_VARS = (*telemetry.TELEMETRY_ENV, telemetry.SDK_CONFIG_ENV_VAR)


def test_importing_the_course_switches_mlflow_telemetry_off():
    env = {k: v for k, v in os.environ.items() if k not in TELEMETRY_VARS}
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, env.get("PYTHONPATH", "")])
    code = (
        "import mtrl_course.config\nimport mlflow.telemetry.utils as u\n"
        "u._IS_IN_CI_ENV_OR_TESTING = False\nprint(u.is_telemetry_disabled())"
    )
    result = child(code, env=env)
    assert result.stdout.strip() == "True", result.stderr


@pytest.fixture
def live(monkeypatch, tmp_path):
    for name in TELEMETRY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(config, "MODE", config.Mode.LIVE)
    monkeypatch.setattr(config, "STATE_DIR", tmp_path / "state")
    user_config = tmp_path / "user" / "config.yaml"
    monkeypatch.setattr(telemetry, "_default_sdk_config", lambda: user_config)
    return user_config


def test_a_live_session_switches_telemetry_off(live):
    aws.session()
    assert all(os.environ[name] == value for name, value in telemetry.TELEMETRY_ENV.items())
    from sagemaker.core.config.config import load_sagemaker_config

    loaded = load_sagemaker_config()
    assert loaded["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"] is True


def test_a_live_session_keeps_the_learners_own_sdk_config(live):
    live.parent.mkdir(parents=True)
    live.write_text("SchemaVersion: '1.0'\n")
    aws.session()
    assert telemetry.SDK_CONFIG_ENV_VAR not in os.environ


def test_a_variable_the_learner_set_is_left_alone(monkeypatch):
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "false")
    telemetry.switch_off()
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "false"
