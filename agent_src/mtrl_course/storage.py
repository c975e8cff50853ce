"""S3 for the course: one bucket, one key prefix per run, uploads, listings and deletions.

The training job reads its two dataset files from S3 and writes its output there; both must be
in the same Region as the agent's runtime (the job itself must run in that Region). Everything
the course writes goes under one key prefix, `mtrl-wordle/<run id>/`:

    s3://<bucket>/mtrl-wordle/<run id>/datasets/training-data.jsonl
    s3://<bucket>/mtrl-wordle/<run id>/datasets/validation-data.jsonl
    s3://<bucket>/mtrl-wordle/<run id>/output/            (the trainer's s3_output_path)

The bucket is the course's own, `mtrl-wordle-<account>-<region>` (account and Region make the
name globally unique), created on first use and tagged like every course resource; set
`MTRL_BUCKET` to use a bucket you already have instead. Clean-up (notebook 08) deletes the course
bucket whole, and only the course prefix inside a bucket of yours.

Offline, the same calls reach moto's in-memory S3. Bucket names carry the account, so anything
printed for a person goes through `naming.mask_account`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from mtrl_course.errors import aws_error_code
from mtrl_course import aws, config, naming

BUCKET_ENV_VAR = "MTRL_BUCKET"
# The top-level key prefix of everything the course writes, in any bucket.
KEY_PREFIX = naming.NAME_PREFIX
DATASETS_DIR = "datasets"
OUTPUT_DIR = "output"
DEFAULT_NOTEBOOK = "04"
# S3's rules for bucket names (lowercase letters, digits, dots and hyphens; 3 to 63 characters).
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
# us-east-1 is the one Region that takes no LocationConstraint, and reports none back.
NO_LOCATION_REGION = "us-east-1"
DELETE_BATCH = 1000  # DeleteObjects takes at most this many keys per call
MISSING_BUCKET_CODES = ("404", "NoSuchBucket", "NotFound")
DATASET_CONTENT_TYPES = {
    ".jsonl": "application/jsonl",
    ".json": "application/json",
    ".csv": "text/csv",
    ".parquet": "application/vnd.apache.parquet",
}


@dataclass(frozen=True)
class S3Object:
    """One object: where it is and how big. `row()` is what a notebook table shows (masked)."""

    bucket: str
    key: str
    size: int

    @property
    def uri(self) -> str:
        return s3_uri(self.bucket, self.key)

    def row(self) -> dict[str, Any]:
        return {"object": naming.mask_account(self.uri), "bytes": self.size}


# --------------------------------------------------------------------------------- names and URIs
def _region(session: Any) -> str:
    return session.region_name or config.OFFLINE_REGION


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/some/key` -> ("bucket", "some/key"); ValueError naming the URI otherwise."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise ValueError(f"{uri!r} is not an S3 URI: it must start with s3://")
    bucket, _, key = uri[len("s3://") :].partition("/")
    if not BUCKET_NAME.match(bucket):
        raise ValueError(f"{uri!r} does not name a valid bucket ({bucket!r})")
    return bucket, key


def s3_uri(bucket: str, key: str = "") -> str:
    return f"s3://{bucket}/{key}"


def default_bucket_name(account: str, region: str) -> str:
    """The course bucket: `mtrl-wordle-<account>-<region>`."""
    name = f"{KEY_PREFIX}-{account}-{region}"
    if not BUCKET_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid bucket name; check the account ({account}) and Region ({region})")
    return name


def bucket_name(session: Any | None = None) -> str:
    """`MTRL_BUCKET` if set, else the course bucket for the session's account and Region."""
    given = os.environ.get(BUCKET_ENV_VAR, "").strip()
    if given:
        if not BUCKET_NAME.match(given):
            raise ValueError(f"{BUCKET_ENV_VAR}={given!r} is not a valid S3 bucket name")
        return given
    session = aws.session_or_new(session)
    account = session.client("sts").get_caller_identity()["Account"]
    return default_bucket_name(account, _region(session))


def is_course_bucket(name: str) -> bool:
    """True for buckets the course created (and may delete whole): names `mtrl-wordle-...`."""
    return name.startswith(KEY_PREFIX + "-")


def course_prefix(run: str | None = None) -> str:
    """`mtrl-wordle/<run id>/`: the key prefix of everything this run writes."""
    return f"{KEY_PREFIX}/{run or naming.run_id()}/"


def dataset_prefix(run: str | None = None) -> str:
    return f"{course_prefix(run)}{DATASETS_DIR}/"


def dataset_uris(
    session: Any | None = None,
    *,
    bucket: str | None = None,
    files: Sequence[str | Path] = (config.TRAIN_FILE, config.VALIDATION_FILE),
) -> dict[str, str]:
    """Where `upload_dataset` puts the files: {"training": uri, "validation": uri}."""
    bucket = bucket or bucket_name(session)
    keys = [dataset_prefix() + Path(f).name for f in files]
    return {label: s3_uri(bucket, key) for label, key in zip(("training", "validation"), keys)}


def output_uri(session: Any | None = None, *, bucket: str | None = None) -> str:
    """The trainer's `s3_output_path`: under the course prefix, so clean-up finds it."""
    return s3_uri(bucket or bucket_name(session), f"{course_prefix()}{OUTPUT_DIR}/")


# ------------------------------------------------------------------------------------- buckets
def bucket_region(bucket: str, session: Any | None = None) -> str:
    """The Region a bucket lives in."""
    s3 = aws.session_or_new(session).client("s3")
    location = s3.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    return location or NO_LOCATION_REGION


def bucket_exists(bucket: str, session: Any | None = None) -> bool:
    s3 = aws.session_or_new(session).client("s3")
    try:
        s3.head_bucket(Bucket=bucket)
    except Exception as error:
        if aws_error_code(error, or_type=True) in MISSING_BUCKET_CODES:
            return False
        raise
    return True


def ensure_bucket(session: Any | None = None, *, bucket: str | None = None, notebook: str = DEFAULT_NOTEBOOK) -> str:
    """Create the bucket if it is missing (tagged, no public access); return its name.

    A bucket that exists must be in the session's Region: the training job reads its data in
    the runtime's Region, so a bucket elsewhere is refused with a message naming both Regions.
    """
    session = aws.session_or_new(session)
    region = _region(session)
    bucket = bucket or bucket_name(session)
    s3 = session.client("s3")
    if bucket_exists(bucket, session):
        found = bucket_region(bucket, session)
        if found != region:
            raise ValueError(
                f"bucket {naming.mask_account(bucket)} is in {found}, but your session (and the agent's "
                f"runtime) is in {region}: use a bucket in {region} ({BUCKET_ENV_VAR}) or unset {BUCKET_ENV_VAR}"
            )
        return bucket
    create: dict[str, Any] = {"Bucket": bucket}
    if region != NO_LOCATION_REGION:
        create["CreateBucketConfiguration"] = {"LocationConstraint": region}
    s3.create_bucket(**create)
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": naming.course_tags(notebook)})
    return bucket


# ------------------------------------------------------------------------------------- objects
def _object_tagging(notebook: str) -> str:
    return urlencode([(tag["Key"], tag["Value"]) for tag in naming.course_tags(notebook)])


def upload_file(
    path: str | Path, uri: str, session: Any | None = None, *, notebook: str = DEFAULT_NOTEBOOK
) -> S3Object:
    """Upload one local file to `uri` (tagged with the course tags); returns the object."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no file to upload at {path}")
    bucket, key = parse_s3_uri(uri)
    if not key or key.endswith("/"):
        raise ValueError(f"{uri!r} names a prefix, not an object: add the file name")
    s3 = aws.session_or_new(session).client("s3")
    body = path.read_bytes()
    extra = {"ContentType": DATASET_CONTENT_TYPES[path.suffix]} if path.suffix in DATASET_CONTENT_TYPES else {}
    s3.put_object(Bucket=bucket, Key=key, Body=body, Tagging=_object_tagging(notebook), **extra)
    return S3Object(bucket, key, len(body))


def upload_dataset(
    files: Sequence[str | Path] = (config.TRAIN_FILE, config.VALIDATION_FILE),
    session: Any | None = None,
    *,
    bucket: str | None = None,
    notebook: str = DEFAULT_NOTEBOOK,
) -> list[S3Object]:
    """Upload the training and validation files under the run's dataset prefix.

    The bucket is created first if needed (`ensure_bucket`). Returns the uploaded objects in the
    order given; their `.uri` is what the trainer takes.
    """
    session = aws.session_or_new(session)
    if len(files) != 2:
        raise ValueError(f"give exactly two files (training, validation), got {len(files)}")
    bucket = ensure_bucket(session, bucket=bucket, notebook=notebook)
    uris = dataset_uris(session, bucket=bucket, files=files)
    return [upload_file(path, uri, session, notebook=notebook) for path, uri in zip(files, uris.values())]


def list_prefix(bucket: str, prefix: str = "", session: Any | None = None) -> list[S3Object]:
    """Every object under `prefix` (all pages), sorted by key."""
    s3 = aws.session_or_new(session).client("s3")
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found += [S3Object(bucket, item["Key"], int(item["Size"])) for item in page.get("Contents", [])]
    return sorted(found, key=lambda o: o.key)


def prefix_exists(bucket: str, prefix: str, session: Any | None = None) -> bool:
    s3 = aws.session_or_new(session).client("s3")
    return bool(s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1).get("KeyCount", 0))


def _delete_keys(s3: Any, bucket: str, keys: Iterable[dict[str, str]]) -> int:
    batch: list[dict[str, str]] = []
    deleted = 0
    for key in keys:
        batch.append(key)
        if len(batch) == DELETE_BATCH:
            deleted += _delete_batch(s3, bucket, batch)
            batch = []
    if batch:
        deleted += _delete_batch(s3, bucket, batch)
    return deleted


def _delete_batch(s3: Any, bucket: str, batch: list[dict[str, str]]) -> int:
    response = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
    errors = response.get("Errors") or []
    if errors:
        first = errors[0]
        raise RuntimeError(
            f"S3 refused to delete {len(errors)} object(s) in {naming.mask_account(bucket)}, e.g. "
            f"{first.get('Key')}: {first.get('Code')} {first.get('Message')}"
        )
    return len(batch)


def delete_prefix(bucket: str, prefix: str, session: Any | None = None) -> int:
    """Delete every object under `prefix`; returns how many. An empty prefix is refused."""
    if not prefix:
        raise ValueError("refusing to delete an empty prefix: that would empty the whole bucket; use delete_bucket")
    s3 = aws.session_or_new(session).client("s3")
    keys = ({"Key": o.key} for o in list_prefix(bucket, prefix, session))
    return _delete_keys(s3, bucket, keys)


def delete_bucket(bucket: str, session: Any | None = None) -> int:
    """Delete every object version and delete marker, then the bucket; returns objects deleted.

    Versions too: S3 refuses to delete a bucket that still holds any, and a bucket that once had
    versioning on keeps them after every plain delete.
    """
    s3 = aws.session_or_new(session).client("s3")

    def versions() -> Iterable[dict[str, str]]:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
                yield {"Key": item["Key"], "VersionId": item["VersionId"]}

    deleted = _delete_keys(s3, bucket, versions())
    s3.delete_bucket(Bucket=bucket)
    return deleted
