"""The instructor's run a learner attaches to, as `instructor_run.attach` saves it (shared by the lab tests)."""

from __future__ import annotations

from mtrl_course import instructor_run

INSTRUCTOR_RUN = "inst1"
INSTRUCTOR_BUCKET = "instructor-bucket"
DATASETS = f"mtrl-wordle/{INSTRUCTOR_RUN}/datasets"


def instructor_attachment(account: str, region: str, bucket: str = INSTRUCTOR_BUCKET) -> instructor_run.Attachment:
    """An attachment naming the instructor's job, role, runtime, MLflow app and datasets in `bucket`."""
    return instructor_run.Attachment(
        run_id=INSTRUCTOR_RUN,
        job_name=f"mtrl-wordle-train-{INSTRUCTOR_RUN}-20261201000000",
        job_status="Completed",
        region=region,
        job_role_arn=f"arn:aws:iam::{account}:role/mtrl-wordle-job-role-{INSTRUCTOR_RUN}",
        runtime_arn=f"arn:aws:bedrock-agentcore:{region}:{account}:runtime/WordleMTRL_WordleAgent-abcdefghij",
        mlflow_app_arn=f"arn:aws:sagemaker:{region}:{account}:mlflow-app/app-instructor",
        bucket=bucket,
        train_s3_uri=f"s3://{bucket}/{DATASETS}/t.jsonl",
        validation_s3_uri=f"s3://{bucket}/{DATASETS}/v.jsonl",
        output_s3_uri=f"s3://{bucket}/mtrl-wordle/{INSTRUCTOR_RUN}/output/",
    )
