"""S3 helpers: names and URIs, the course bucket (created tagged, in the session's Region), dataset
uploads, listings and deletions. Offline against moto."""

from __future__ import annotations

import pytest
from mtrl_course import aws, config, naming, storage

# Built at run time so no real-looking account ID is written in a committed file.
REAL_LOOKING = "4" + "0" * 7 + "9876"
COURSE_BUCKET = f"mtrl-wordle-{config.MOTO_ACCOUNT}-{config.OFFLINE_REGION}"


@pytest.fixture
def offline(monkeypatch, offline_session):
    monkeypatch.delenv(storage.BUCKET_ENV_VAR, raising=False)
    monkeypatch.delenv(naming.RUN_ID_ENV_VAR, raising=False)
    return offline_session


def tags_of(tag_set) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tag_set}


# --- names and URIs ------------------------------------------------------------------------------


def test_parse_and_build_s3_uris():
    assert storage.parse_s3_uri("s3://my-bucket/a/b.jsonl") == ("my-bucket", "a/b.jsonl")
    assert storage.parse_s3_uri("s3://my-bucket") == ("my-bucket", "")
    assert storage.s3_uri("my-bucket", "a/b") == "s3://my-bucket/a/b"
    for bad in ("my-bucket/a", "https://my-bucket/a", "s3://B/a", "s3:///key"):
        with pytest.raises(ValueError, match="S3 URI|valid bucket"):
            storage.parse_s3_uri(bad)


def test_bucket_name_is_the_course_bucket_unless_the_learner_names_one(offline, monkeypatch):
    assert storage.bucket_name(offline) == COURSE_BUCKET
    assert storage.is_course_bucket(COURSE_BUCKET) and not storage.is_course_bucket("my-data")
    monkeypatch.setenv(storage.BUCKET_ENV_VAR, "my-own-bucket")
    assert storage.bucket_name(offline) == "my-own-bucket"
    monkeypatch.setenv(storage.BUCKET_ENV_VAR, "Not_A_Bucket")
    with pytest.raises(ValueError, match="MTRL_BUCKET"):
        storage.bucket_name(offline)


def test_keys_sit_under_the_run_prefix(offline):
    assert storage.course_prefix() == "mtrl-wordle/offline/"
    uris = storage.dataset_uris(offline)
    assert uris == {
        "training": f"s3://{COURSE_BUCKET}/mtrl-wordle/offline/datasets/training-data.jsonl",
        "validation": f"s3://{COURSE_BUCKET}/mtrl-wordle/offline/datasets/validation-data.jsonl",
    }
    assert storage.output_uri(offline) == f"s3://{COURSE_BUCKET}/mtrl-wordle/offline/output/"
    assert storage.course_prefix("lab7") == "mtrl-wordle/lab7/"


def test_rows_mask_real_accounts():
    row = storage.S3Object(f"mtrl-wordle-{REAL_LOOKING}-us-east-1", "k", 3).row()
    assert REAL_LOOKING not in row["object"] and "9876" in row["object"]
    assert config.MOTO_ACCOUNT in storage.S3Object(COURSE_BUCKET, "k", 3).row()["object"]


# --- buckets and uploads ----------------------------------------------------------------------------


def test_upload_dataset_creates_a_tagged_private_bucket_and_uploads_both_files(offline):
    uploaded = storage.upload_dataset(session=offline)
    s3 = offline.client("s3")
    assert [o.key for o in uploaded] == [
        "mtrl-wordle/offline/datasets/training-data.jsonl",
        "mtrl-wordle/offline/datasets/validation-data.jsonl",
    ]
    for obj, local in zip(uploaded, (config.TRAIN_FILE, config.VALIDATION_FILE)):
        assert s3.get_object(Bucket=obj.bucket, Key=obj.key)["Body"].read() == local.read_bytes()
        assert obj.size == local.stat().st_size
        assert tags_of(s3.get_object_tagging(Bucket=obj.bucket, Key=obj.key)["TagSet"])["course"] == config.COURSE_TAG
    bucket_tags = tags_of(s3.get_bucket_tagging(Bucket=COURSE_BUCKET)["TagSet"])
    assert bucket_tags == {"course": config.COURSE_TAG, "run_id": "offline", "notebook": "04"}
    block = s3.get_public_access_block(Bucket=COURSE_BUCKET)["PublicAccessBlockConfiguration"]
    assert all(block.values())
    assert storage.list_prefix(COURSE_BUCKET, storage.dataset_prefix(), offline) == sorted(
        uploaded, key=lambda o: o.key
    )
    # Idempotent: a second upload replaces the objects, the bucket stays.
    assert storage.upload_dataset(session=offline) == uploaded


def test_ensure_bucket_refuses_a_bucket_in_another_region(offline):
    elsewhere = aws.session(region="eu-west-1")
    bucket = storage.ensure_bucket(elsewhere)
    assert bucket.endswith("-eu-west-1") and storage.bucket_region(bucket, elsewhere) == "eu-west-1"
    with pytest.raises(ValueError, match="is in eu-west-1.*us-east-1"):
        storage.ensure_bucket(offline, bucket=bucket)
    assert storage.ensure_bucket(elsewhere) == bucket  # same Region: reused


def test_upload_file_refuses_prefixes_and_missing_files(offline, tmp_path):
    storage.ensure_bucket(offline)
    with pytest.raises(ValueError, match="names a prefix"):
        storage.upload_file(config.TRAIN_FILE, f"s3://{COURSE_BUCKET}/mtrl-wordle/", offline)
    with pytest.raises(FileNotFoundError, match="no file to upload"):
        storage.upload_file(tmp_path / "absent.jsonl", f"s3://{COURSE_BUCKET}/x.jsonl", offline)
    with pytest.raises(ValueError, match="exactly two files"):
        storage.upload_dataset([config.TRAIN_FILE], offline)


# --- deletions ----------------------------------------------------------------------------------------


def test_delete_prefix_removes_only_that_prefix_in_batches(offline, monkeypatch):
    s3 = offline.client("s3")
    s3.create_bucket(Bucket="learner-data")
    for i in range(5):
        s3.put_object(Bucket="learner-data", Key=f"mtrl-wordle/offline/datasets/f{i}.jsonl", Body=b"{}")
    s3.put_object(Bucket="learner-data", Key="mine/keep.csv", Body=b"a,b")
    monkeypatch.setattr(storage, "DELETE_BATCH", 2)
    assert storage.prefix_exists("learner-data", "mtrl-wordle/", offline)
    assert storage.delete_prefix("learner-data", "mtrl-wordle/", offline) == 5
    assert not storage.prefix_exists("learner-data", "mtrl-wordle/", offline)
    assert [o.key for o in storage.list_prefix("learner-data", "", offline)] == ["mine/keep.csv"]
    with pytest.raises(ValueError, match="empty prefix"):
        storage.delete_prefix("learner-data", "", offline)


def test_delete_bucket_removes_every_version_then_the_bucket(offline):
    s3 = offline.client("s3")
    bucket = storage.ensure_bucket(offline)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"one", b"two"):
        s3.put_object(Bucket=bucket, Key="mtrl-wordle/offline/x", Body=body)
    s3.delete_object(Bucket=bucket, Key="mtrl-wordle/offline/x")  # leaves a delete marker
    assert storage.delete_bucket(bucket, offline) == 3
    assert not storage.bucket_exists(bucket, offline)
