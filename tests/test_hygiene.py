"""Repository hygiene: nothing secret or personal in anything we commit.

Committed notebook outputs, figures, data and docs are read by people who never run the code, so
they must hold only placeholder accounts (111122223333, and moto's 123456789012 offline) and no
keys, tokens, presigned URLs or home-directory paths. The scanner covers every file git would
commit (tracked plus untracked-but-not-ignored), including the text chunks of PNG figures.
"""

from __future__ import annotations

import re
import subprocess
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ALLOWED_ACCOUNTS = {"111122223333", "123456789012"}
# Spelled in pieces so this file does not trip its own scan.
_AK = "AK" + "IA"
_ASIA = "AS" + "IA"
PATTERNS = {
    "AWS access key id": re.compile(rf"\b(?:{_AK}|{_ASIA})[A-Z0-9]{{16}}\b"),
    "AWS secret access key": re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+]{40}\b"),
    "SageMaker bearer token": re.compile(r"sagemaker-api-key-[A-Za-z0-9+/=]{40,}"),
    "presigned URL signature": re.compile(r"X-Amz-(?:Signature|Security-Token|Credential)(?:=|%3D)"),
    "bearer token": re.compile(r"Bearer\s+[A-Za-z0-9._~+/=-]{40,}"),
    "private key": re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----"),
    "home directory path": re.compile(r"(?:/home/[a-z_][\w.-]*/|/Users/[\w.-]+/|C:\\\\Users\\\\)"),
}
ACCOUNT = re.compile(r"(?<![\w.-])(\d{12})(?![\w-])")
ARN_ACCOUNT = re.compile(r"arn:aws[\w-]*:[\w-]+:[\w-]*:(\d{12}):")
SKIP_SUFFIXES = {".lock"}
SKIP_FILES = {"tests/test_hygiene.py", "requirements.lock"}


def committed_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    names = [n for n in out.decode().split("\0") if n]
    return [REPO / n for n in names if (REPO / n).is_file()]


def png_text(data: bytes) -> str:
    """The text chunks (tEXt, zTXt, iTXt) of a PNG: where figure metadata lives."""
    chunks, pos = [], 8
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"tEXt":
            chunks.append(body.decode("latin-1"))
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            chunks.append(key.decode("latin-1") + " " + zlib.decompress(rest[1:]).decode("latin-1"))
        elif kind == b"iTXt":
            chunks.append(body.decode("utf-8", "replace"))
        pos += 12 + length
    return "\n".join(chunks)


def file_text(path: Path) -> str | None:
    data = path.read_bytes()
    if path.suffix.lower() == ".png":
        return png_text(data)
    if b"\0" in data[:4096]:
        return None  # other binary files (parquet exports are not committed)
    return data.decode("utf-8", "replace")


def scan_text(text: str) -> list[str]:
    findings = []
    for name, pattern in PATTERNS.items():
        for m in pattern.finditer(text):
            findings.append(f"{name}: {m.group(0)[:60]!r}")
    for m in ARN_ACCOUNT.finditer(text):
        if m.group(1) not in ALLOWED_ACCOUNTS:
            findings.append(f"ARN with a non-placeholder account: {m.group(0)!r}")
    for m in ACCOUNT.finditer(text):
        if m.group(1) not in ALLOWED_ACCOUNTS and _looks_like_account_context(text, m.start()):
            findings.append(f"possible account id {m.group(1)!r}")
    return findings


def _looks_like_account_context(text: str, start: int) -> bool:
    window = text[max(0, start - 40) : start].lower()
    return any(w in window for w in ("account", "arn:", "owner", "iam::", "aws_account"))


def test_scanner_catches_what_it_should():
    key = _AK + "ABCDEFGHIJKLMNOP"
    assert scan_text(f"key = {key}")
    assert scan_text("arn:aws:iam::" + "210987654321" + ":role/x")
    assert scan_text('"AccountId": "' + "210987654321" + '"')
    assert scan_text("https://x/?X-Amz-" + "Signature=abc")
    assert scan_text("sagemaker-api-key-" + "A" * 60)
    assert scan_text("see /home/" + "alice/notebooks")
    assert not scan_text("arn:aws:iam::111122223333:role/x and arn:aws:s3:::bucket 123456789012")
    png = _png_with_text(b"Software", b"/home/" + b"bob/x")
    assert scan_text(png_text(png))


def _png_with_text(key: bytes, value: bytes) -> bytes:
    body = key + b"\0" + value
    chunk = len(body).to_bytes(4, "big") + b"tEXt" + body + zlib.crc32(b"tEXt" + body).to_bytes(4, "big")
    return b"\x89PNG\r\n\x1a\n" + chunk


def scanned_files() -> list[Path]:
    return [
        p for p in committed_files() if str(p.relative_to(REPO)) not in SKIP_FILES and p.suffix not in SKIP_SUFFIXES
    ]


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_secrets_or_personal_paths(path: Path):
    rel = str(path.relative_to(REPO))
    text = file_text(path)
    if text is None:
        return
    findings = scan_text(text)
    assert not findings, f"{rel}: " + "; ".join(findings[:5])


# A temporary or home folder named in a committed file is a path only one machine had (a stored
# result's `--out /tmp/...`, a provenance's `--init /home/...`): a reader cannot re-run it. Name a
# repository path instead (build/ is git-ignored scratch) or a placeholder (`<out>`). Tests are
# exempt: some of them name such folders on purpose (the sandbox's attacks, this file).
MACHINE_FOLDER = re.compile(r"(?<![\w.])(?:/tmp|/var/tmp|/var/folders|/root|/home|/Users)/|\b[A-Za-z]:\\+Users\\+")
# Files outside tests/ that may name one anyway, each with its reason. Empty: keep it short.
MACHINE_FOLDER_ALLOWED: dict[str, str] = {}


def machine_folders(text: str) -> list[str]:
    return [text[max(0, m.start() - 30) : m.end() + 30] for m in MACHINE_FOLDER.finditer(text)]


def test_the_machine_folder_check_catches_what_it_should():
    for named in ("--out /tmp/w19/stage1", "/root/x", "see /home/" + "bob/", "/Users/" + "ann/x", "C:\\Users\\ann"):
        assert machine_folders(named), named
    assert machine_folders('"C:\\\\Users\\\\ann"')  # as JSON escapes it
    # The sandbox's own private /tmp, a URL's path and repository paths are not machine folders.
    for fine in (
        "a private `/tmp` of its own",
        "umount2(b'/tmp', 2)",
        "https://example.com/home/x",
        "build/base/stage1",
    ):
        assert not machine_folders(fine), fine


def test_no_file_outside_tests_names_a_temporary_or_home_folder():
    found = {}
    for path in committed_files():
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("tests/") or rel in MACHINE_FOLDER_ALLOWED:
            continue
        text = file_text(path)
        if text is not None and machine_folders(text):
            found[rel] = machine_folders(text)[:3]
    assert not found, f"machine folders in committed files (name a repository path instead): {found}"
    stale = [rel for rel in MACHINE_FOLDER_ALLOWED if not (REPO / rel).is_file()]
    assert not stale, f"MACHINE_FOLDER_ALLOWED names files that are gone: {stale}"


def test_local_state_is_ignored():
    ignored = (REPO / ".gitignore").read_text()
    for entry in (".venv/", ".state/", "build/", "mlruns/"):
        assert entry in ignored, f".gitignore must ignore {entry}"


def test_the_suite_blocks_non_loopback_connections():
    """conftest installs the offline network guard: a remote address is refused, loopback is not."""
    import socket

    from mtrl_course.aws import OfflineNetworkError

    remote = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(OfflineNetworkError, match="only loopback"):
            remote.connect(("192.0.2.1", 443))  # TEST-NET-1: never routed, never contacted
    finally:
        remote.close()
    with pytest.raises(socket.gaierror, match="offline mode"):
        socket.getaddrinfo("example.com", 443)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        client.connect(server.getsockname())
    finally:
        client.close()
        server.close()
