"""Which resources in an account are this run's: the scoping clean-up applies (see `cleanup`).

A lab account holds an instructor's run and every learner's. A run is recognised by its
`run_id` tag, by names ending in its id (`mtrl-wordle-<kind>-<run id>`) and by its S3 prefix
(`mtrl-wordle/<run id>/`); `other_runs` lists every other run the account shows.

What the SDK creates under names of its own, untagged (the trainer's get-or-create model package
groups `<model>-mtrl-mpg`), carries none of these marks. The course records the ARNs of those it
saw the SDK create for this run (`record_created`, in a file in the state folder); clean-up
deletes nothing of that kind that is not recorded there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course import aws, config, deploy, naming, storage

NAME_PREFIX = naming.NAME_PREFIX
TAG_KEY = naming.TAG_COURSE
TAG_VALUE = config.COURSE_TAG


def tag_index(session: Any) -> dict[str, str]:
    """ARN -> run id (or "") of what the Resource Groups Tagging API knows with the course tag."""
    tagging = session.client("resourcegroupstaggingapi")
    found: dict[str, str] = {}
    for page in tagging.get_paginator("get_resources").paginate(TagFilters=[{"Key": TAG_KEY, "Values": [TAG_VALUE]}]):
        for item in page.get("ResourceTagMappingList", []):
            found[item["ResourceARN"]] = {t["Key"]: t["Value"] for t in item.get("Tags", [])}.get(naming.TAG_RUN_ID, "")
    return found


def tagged_arns(session: Any) -> set[str]:
    """ARNs tagged with the course tag and this run's id."""
    run = naming.run_id()
    return {arn for arn, tagged_run in tag_index(session).items() if tagged_run == run}


# Course-made names end in the run id: mtrl-wordle-job-role-<run>, mtrl-wordle-mlflow-<run>, ...
RUN_NAMED = re.compile(
    rf"^{re.escape(NAME_PREFIX)}-(?:job-role|runtime-role|mlflow-role|mlflow|wrong-principal|train|eval)-(?P<run>[a-z0-9]{{1,12}})$"
)


def other_runs(session: Any | None = None) -> set[str]:
    """Run ids other than this one that the account shows: role and MLflow names, tags, S3 prefixes."""
    session = aws.session_or_new(session)
    runs: set[str] = set()
    try:
        runs |= {r for r in tag_index(session).values() if r}
    except Exception:  # the tag index is one source among several
        pass
    iam_client = session.client("iam")
    for page in iam_client.get_paginator("list_roles").paginate():
        runs |= {m["run"] for role in page.get("Roles", []) if (m := RUN_NAMED.match(role["RoleName"]))}
    try:
        for summary in session.client("sagemaker").list_mlflow_apps().get("Summaries", []):
            if m := RUN_NAMED.match(summary.get("Name", "")):
                runs.add(m["run"])
    except Exception:
        pass
    s3 = session.client("s3")
    for bucket in [b["Name"] for b in s3.list_buckets().get("Buckets", []) if storage.is_course_bucket(b["Name"])]:
        runs |= runs_in_bucket(s3, bucket)
    return runs - {naming.run_id()}


def runs_in_bucket(s3: Any, bucket: str) -> set[str]:
    try:
        page = s3.list_objects_v2(Bucket=bucket, Prefix=storage.KEY_PREFIX + "/", Delimiter="/")
    except Exception:
        return set()
    return {p["Prefix"].split("/")[1] for p in page.get("CommonPrefixes", []) if p["Prefix"].count("/") >= 2}


def deployed_from_this_checkout() -> bool:
    """Whether `agentcore deploy` ran from this checkout (the CLI records it in .cli/deployed-state.json)."""
    return (deploy.AGENTCORE_DIR / ".cli" / "deployed-state.json").is_file()


# --- what this run saw the SDK create --------------------------------------------------------------
CREATED_FILE_NAME = "created-by-run.json"


def created_file() -> Path:
    """Where the record is kept: the state folder live, the offline backend's folder offline."""
    if config.is_live():
        return config.STATE_DIR / CREATED_FILE_NAME
    return Path(aws.offline_backend().state_dir) / CREATED_FILE_NAME


def _read_created() -> dict[str, list[str]]:
    try:
        data = json.loads(created_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(run): [str(arn) for arn in arns] for run, arns in data.items() if isinstance(arns, list)}


def record_created(arns: Iterable[str], run: str | None = None) -> None:
    """Remember that this run created these resources (ARNs), for clean-up."""
    run = run or naming.run_id()
    data = _read_created()
    data[run] = sorted(set(data.get(run, [])) | set(arns))
    path = created_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def created_arns(run: str | None = None) -> set[str]:
    """ARNs recorded as created by this run (`record_created`)."""
    return set(_read_created().get(run or naming.run_id(), []))


@dataclass(frozen=True)
class Scope:
    """What discovery needs to know to keep to this run."""

    run: str
    tagged: frozenset[str]
    others: frozenset[str]
    deployed_here: bool
    created: frozenset[str] = field(default_factory=frozenset)  # recorded ARNs (record_created)

    @property
    def alone(self) -> bool:
        return not self.others

    def shared_reason(self) -> str:
        return (
            f"shared by every course run in the account, and other runs are here ({', '.join(sorted(self.others))}); "
            "delete it by hand when none of them needs it"
        )
