"""A job's MLflow run, as the offline runners write it: parameters, tags, metrics per step."""

from __future__ import annotations

import math
import time


from mtrl_course.local.trainee import (
    POLICY_TAG,
)
from mtrl_course.local.job_options import ReportingJob, RunnerOptions

# --- MLflow ---------------------------------------------------------------------------------------


class MlflowLog:
    """The job's MLflow run: parameters, which learner played (its tag), metrics per step."""

    def __init__(self, job: ReportingJob, options: RunnerOptions, policy_tag: str) -> None:
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=job.mlflow_tracking_uri)
        self.finished = False
        self.experiment_id, self.run_id = job.start_mlflow_run()
        params = [Param(k, str(v)[:500]) for k, v in sorted(job.hyperparameters.items())]
        tags = [
            RunTag(POLICY_TAG, policy_tag),
            RunTag("mtrl.offline.learner", options.policy),
            RunTag("mtrl.offline.estimator", options.estimator),
            RunTag("mtrl.offline.lane", options.lane),
            RunTag("mtrl.offline.seed", str(options.seed)),
            RunTag("mtrl.offline.reward", options.reward),
            RunTag("mtrl.offline.base_model", str(getattr(job.config, "base_model", ""))),
        ]
        self.client.log_batch(self.run_id, params=params, tags=tags)

    def log(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step) for k, v in sorted(values.items()) if math.isfinite(float(v))]
        for start in range(0, len(items), 900):  # MLflow takes at most 1,000 metrics per batch
            self.client.log_batch(self.run_id, metrics=items[start : start + 900])

    def finish(self, status: str) -> None:
        """End the run (once; later calls do nothing)."""
        if self.finished:
            return
        self.finished = True
        self.client.set_terminated(self.run_id, status)

    def fail_job(self, job: ReportingJob, reason: str) -> None:
        # The run is closed first: the job turns terminal inside fail(), and whoever waits on it
        # may read the run at once.
        self.finish("FAILED")
        job.fail(reason)
