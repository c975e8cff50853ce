"""How big is the code bundle `agentcore deploy` uploads, against the limits it must stay under?

The AgentCore CLI (@aws/agentcore 0.30.0, dist/cli/index.mjs, `PythonCodeZipPackager`) packs a
CodeZip runtime like this: `uv pip install -r <codeLocation>/pyproject.toml --target <staging>
--python-version <runtimeVersion> --python-platform aarch64-manylinux2014 --only-binary :all:`
(then aarch64-manylinux_2_28, _2_34 if that fails), copies the code beside the packages, zips the
folder (deflate level 6, leaving out .git, .venv, __pycache__, .pytest_cache, .DS_Store and
node_modules) and refuses a zip over `250 * 1024 * 1024` bytes ("Packaged artifact exceeds ...",
`enforceZipSizeLimit`). The AgentCore quotas page ("Quotas for Amazon Bedrock AgentCore", direct
code deployment) states 250 MB compressed and 750 MB uncompressed, neither adjustable.

This script does the same with pip instead of uv (uv is not installed here; the same wheels, but
the two resolvers may pick different versions of the floating transitive dependencies) and prints
both sizes beside both limits, and the largest top-level entries. It needs the package registry
(pip download). Run it from the repository root:

    .venv/bin/python benchmarks/bundle_size.py [--keep DIR]

Measured 2026-12-03 for this repository's bundle (Python 3.12, aarch64-manylinux2014, the pins of
requirements.lock plus aws-opentelemetry-distro ~= 0.18.0): zip 198.3 MiB (207,950,542 bytes) of
the CLI's 250 MiB (262,144,000 bytes), 79 %; unpacked 647.2 MiB (678.7 MB) of the quota's 750 MB,
90 % if the quota's MB are decimal (86 % if binary). The largest entries are pyarrow, scipy,
botocore, mlflow, scikit-learn and pandas, all brought in by sagemaker-train; pyarrow, scipy,
pandas and numpy are imported when `wordle_agent.main` starts, mlflow and scikit-learn are not.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from mtrl_course import deploy

CLI_ZIP_LIMIT_BYTES = 250 * 1024 * 1024  # @aws/agentcore 0.30.0, enforceZipSizeLimit
QUOTA_UNZIPPED_MB = 750  # AgentCore quotas page: direct code deployment package, uncompressed
QUOTA_ZIPPED_MB = 250  # ... compressed
CLI_PLATFORM = "manylinux2014_aarch64"  # pip's name for the CLI's first candidate, aarch64-manylinux2014
CLI_EXCLUDED = deploy.CLI_EXCLUDED_NAMES
ZIP_LEVEL = 6
MIB = 1024 * 1024
TOP = 12


def python_version(project_file: Path = deploy.PROJECT_FILE) -> str:
    """ "3.12" from the runtime's runtimeVersion "PYTHON_3_12" (the CLI's extractPythonVersion)."""
    version = deploy.agent_runtime(deploy.load_project(project_file))["runtimeVersion"]
    match = re.fullmatch(r"PYTHON_(\d+)_?(\d+)?", version)
    if not match or not match.group(2):
        raise ValueError(f"unsupported runtimeVersion {version!r}")
    return f"{int(match.group(1))}.{int(match.group(2))}"


def install(bundle: Path, staging: Path) -> None:
    dependencies = tomllib.loads((bundle / deploy.BUNDLE_MANIFEST_NAME).read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]
    requirements = staging.parent / "requirements.txt"
    requirements.write_text("\n".join(dependencies) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"]
    command += [str(staging), "--platform", CLI_PLATFORM, "--python-version", python_version()]
    command += ["--implementation", "cp", "--only-binary=:all:", "--no-compile", "-r", str(requirements)]
    subprocess.run(command, check=True)


def zip_like_the_cli(folder: Path, archive: Path) -> tuple[int, dict[str, tuple[int, int]]]:
    """Unpacked bytes, and per top-level entry (unpacked, compressed) bytes."""
    unpacked: collections.Counter[str] = collections.Counter()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as out:
        for directory, subdirectories, files in os.walk(folder):
            subdirectories[:] = sorted(d for d in subdirectories if d not in CLI_EXCLUDED)
            for name in sorted(files):
                if name in CLI_EXCLUDED:
                    continue
                path = Path(directory) / name
                relative = path.relative_to(folder).as_posix()
                out.write(path, relative)
                unpacked[relative.split("/", 1)[0]] += path.stat().st_size
    compressed: collections.Counter[str] = collections.Counter()
    with zipfile.ZipFile(archive) as done:
        for info in done.infolist():
            compressed[info.filename.split("/", 1)[0]] += info.compress_size
    return sum(unpacked.values()), {k: (unpacked[k], compressed[k]) for k in unpacked}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bundle-size-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        staging = work / "staging"
        bundle = deploy.build_bundle(staging)  # the code, the shim and pyproject.toml
        install(bundle, staging)
        archive = work / "bundle.zip"
        unpacked, entries = zip_like_the_cli(staging, archive)
        zipped = archive.stat().st_size
    print(
        f"zip:      {zipped / MIB:7.1f} MiB ({zipped:,} bytes); the CLI refuses more than {CLI_ZIP_LIMIT_BYTES:,} bytes "
        f"({zipped / CLI_ZIP_LIMIT_BYTES:.0%}); quota {QUOTA_ZIPPED_MB} MB"
    )
    print(
        f"unpacked: {unpacked / MIB:7.1f} MiB ({unpacked / 1e6:.1f} MB); quota {QUOTA_UNZIPPED_MB} MB "
        f"({unpacked / (QUOTA_UNZIPPED_MB * 1e6):.0%} decimal, {unpacked / (QUOTA_UNZIPPED_MB * MIB):.0%} binary)"
    )
    for name, (size, packed) in sorted(entries.items(), key=lambda kv: -kv[1][1])[:TOP]:
        print(f"  {name:32s} zip {packed / MIB:6.1f} MiB   unpacked {size / MIB:6.1f} MiB")
    over = zipped > CLI_ZIP_LIMIT_BYTES or unpacked > QUOTA_UNZIPPED_MB * 1e6
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
