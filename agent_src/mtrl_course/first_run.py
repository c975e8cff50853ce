"""The first live run in your own account: the cheapest end-to-end pass of the live chain, in order.

`mtrl smoke` (and notebook 00's last section) runs, and stops hard at the first step that fails,
with the service's own message:

| step | what it does | live cost |
|---|---|---|
| preflight | notebook 00's read-only checks (credentials, Region, AgentRFT enablement, tools) | none |
| estimate | rollouts of the steps below x the walkthrough's tokens per rollout x **your** prices | none |
| roles, data | the job role (notebook 01), the bucket, the datasets and two small files (notebook 04) | none (S3 storage) |
| deploy | `aws-targets.json`, the code bundle, `agentcore deploy -y` (notebook 02) | runtime while sessions run |
| invoke | one service-shaped invocation; the answer must be reward -1.5 (notebook 03) | one short session |
| MLflow app | created with its own role (notebook 05) | per hour it exists |
| train | one step at the smallest batch (32 prompts x 2 rollouts), validating on 8 words | tokens |
| evaluate | the base model on 4 words at the training token cap (notebook 07) | tokens |
| clean-up | everything the run made (notebook 08): the stack, the app, the S3 objects, the roles | none |

Live nothing after the estimate starts without `yes_i_will_pay=True` (`--yes-i-will-pay`); the
estimate uses only prices you pass (`costs.check_prices`), never the course's. Offline the same
chain runs against the stand-ins and spends nothing.

Every step records what it saw of the contracts the course could not confirm offline
(`CONTRACTS`): AgentRFT enablement, the evaluation schema's names, the token cap in both job
kinds, the runtime role's policy, the MLflow metric names, the CLI's deploy. The report
(`write_report`, JSON and Markdown, account numbers masked, no credentials ever read into it)
says for each: confirmed, contradicted, or not reached; docs/LIVE_CHECKLIST.md says what to do
with each answer.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course import config, costs, naming

# --------------------------------------------------------------------------- the smallest run
# The smallest job the service takes: global_batch_size is one of 32, 64, 128 and group_size at
# least 2 (service_spec.TRAINING_SPEC); one step; validation at steps 0 and 1 (val_every 1) on a
# small file, so the run logs the validation metric the course reads.
SMOKE_TRAINING: dict[str, Any] = {
    "global_batch_size": 32,
    "group_size": 2,
    "max_steps": 1,
    "max_epochs": 1,
    "val_every": 1,
}
SMOKE_VALIDATION_WORDS = 8
SMOKE_EVALUATION_WORDS = 4
SMOKE_EVALUATION_TEMPERATURE = 1.0  # a sampled game, through CreateJob (the path the grid uses)
SMOKE_DATA_PREFIX = "smoke/"
NOTEBOOK = "00"
# Live, the runtime's lines reach CloudWatch seconds after the call (notebook 03 waits 15 s).
# Without them a healthy answer (-1.5 and the Job Runtime's 400 "Could not find job") cannot be
# told from a 403 or a missing policy, and the invoke step failed on every live run.
RUNTIME_LOG_WAIT_S = 10.0
RUNTIME_LOG_READS = 6
REPORT_DIR = config.STATE_DIR / "first-run"
OPT_IN_FLAG = "--yes-i-will-pay"

OK, FAILED, SKIPPED, NOT_RUN = "ok", "failed", "skipped", "not run"
CONFIRMED, CONTRADICTED, NOT_REACHED, STAND_IN = "confirmed", "contradicted", "not reached", "stand-in only"
VERDICT_RANK = (NOT_REACHED, STAND_IN, CONFIRMED, CONTRADICTED)


# ------------------------------------------------------------------------------- the contracts
@dataclass(frozen=True)
class Contract:
    key: str
    question: str
    assumed: str
    where: str


CONTRACTS: tuple[Contract, ...] = (
    Contract(
        "agentrft_enablement",
        "Does ListJobSchemaVersions(AgentRFT) tell an enabled account from one that is not?",
        "an enabled account lists schema 1.0.0; CreateJob of a training job then succeeds",
        "preflight.check_agentrft_enabled",
    ),
    Contract(
        "evaluation_names",
        "Which hyperparameter names does the live AgentRFTEvaluation schema define?",
        "temperature, sampling_top_p, sampling_max_tokens (the recipe's), not sampling_temperature, top_p, max_tokens",
        "service_spec.EVALUATION_SPEC, evaluation.evaluator_would_send_rejected_names",
    ),
    Contract(
        "token_caps",
        "Do both job kinds take sampling_max_tokens 8192 and run with it?",
        "training and evaluation documents carry 8192 and the jobs complete",
        "service_spec.WALKTHROUGH_OVERRIDES, evaluation.EVAL_MAX_TOKENS",
    ),
    Contract(
        "runtime_policy",
        "Does the runtime role agentcore deploy creates carry AmazonSageMakerJobRuntimeAccess?",
        "attached through additionalPolicies in agentcore.json; the invocation reaches the Job Runtime (-1.5)",
        "agent_src/agentcore/agentcore.json, deploy.JOB_RUNTIME_POLICY_ARN",
    ),
    Contract(
        "mlflow_metric_names",
        "Do the jobs log the metric names the course reads?",
        "training: rollout/reward/mean, rollout/turns/mean, val/reward/pass_at_1; evaluation: eval/reward/pass_at_1, "
        "eval/reward/mean",
        "progress.STEP_METRICS, evaluation._results",
    ),
    Contract(
        "agentcore_deploy",
        "Does `agentcore deploy -y` deploy from a pipe and leave agentcore/.cli/deployed-state.json?",
        "exit 0 (or 2: deployed with warnings); the state file exists afterwards",
        "commands.AGENTCORE_DEPLOY, cleanup.deployed_from_this_checkout",
    ),
    Contract(
        "role_propagation",
        "Does CreateMlflowApp refuse a role created a moment before, and in which words?",
        "it may (IAM is eventually consistent); iam.call_with_new_role retries a refusal that speaks of assuming",
        "iam.call_with_new_role",
    ),
)
EXPECTED_TRAINING_METRICS = ("rollout/reward/mean", "rollout/turns/mean", "val/reward/pass_at_1")
EXPECTED_EVALUATION_METRICS = ("eval/reward/pass_at_1", "eval/reward/mean")
RECIPE_NAMES = ("temperature", "sampling_top_p", "sampling_max_tokens")
SDK_NAMES = ("sampling_temperature", "top_p", "max_tokens")


@dataclass
class Observation:
    verdict: str = NOT_REACHED
    observed: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    name: str
    status: str = NOT_RUN
    seconds: float | None = None
    message: str = ""


@dataclass
class FirstRun:
    """What one `mtrl smoke` saw: the steps in order and the contracts, for the report."""

    mode: str
    region: str | None = None
    started: str = ""
    steps: list[StepResult] = field(default_factory=list)
    contracts: dict[str, Observation] = field(default_factory=lambda: {c.key: Observation() for c in CONTRACTS})
    estimate: list[dict[str, Any]] = field(default_factory=list)
    resources_left: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every step ran and passed."""
        return bool(self.steps) and all(step.status == OK for step in self.steps)

    @property
    def stopped_before_paying(self) -> bool:
        """Live without the opt-in: the chain stopped after the estimate, as asked, with nothing made."""
        return any(step.status == SKIPPED for step in self.steps) and not any(s.status == FAILED for s in self.steps)

    def observe(self, key: str, verdict: str, **observed: Any) -> None:
        """Record what a step saw of contract `key`; the strongest verdict so far stands
        (contradicted over confirmed over stand-in over not reached). Offline every verdict is a
        stand-in's: it shows the check works, not what AWS does."""
        if self.mode != config.Mode.LIVE.value and verdict in (CONFIRMED, CONTRADICTED):
            observed = {**observed, "would be": verdict}
            verdict = STAND_IN
        entry = self.contracts[key]
        entry.verdict = max(entry.verdict, verdict, key=VERDICT_RANK.index)
        entry.observed.update(observed)


class FirstRunFailed(RuntimeError):
    """A step of the first run failed; the message is the service's (accounts masked)."""


class PaymentNotConfirmed(PermissionError):
    """Live, the chain stops after the estimate unless the caller opts in to paying."""


# ----------------------------------------------------------------------------- cost estimate
def planned_rollouts() -> dict[str, int]:
    """How many games each billable step plays (the training arithmetic of `training.step_arithmetic`)."""
    from mtrl_course import training

    plan = training.step_arithmetic(
        32,  # the rows one step reads; a smaller file would not change the step
        SMOKE_TRAINING["global_batch_size"],
        SMOKE_TRAINING["group_size"],
        SMOKE_TRAINING["max_steps"],
        SMOKE_TRAINING["max_epochs"],
        validation_rows=SMOKE_VALIDATION_WORDS,
        val_every=SMOKE_TRAINING["val_every"],
    )
    return {
        "training": plan["training_rollouts"],
        "validation": plan["validation_rollouts"],
        "evaluation": SMOKE_EVALUATION_WORDS,
    }


def estimate(prices: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows (item, arithmetic, USD) of what the run may cost, from your prices only.

    Tokens: each game at the AWS walkthrough's average tokens per rollout (its 100-step run's
    totals over its rollouts: derived, not measured here; evaluation games train nothing). Dollars
    only for the dimensions you priced (USD per million tokens). AgentCore runtime: the
    walkthrough's reported runtime cost per rollout (derived the same way). The MLflow app bills
    per hour it exists: its price is not in the course's sources, so it is listed, not priced.
    """
    checked = costs.check_prices(prices)  # all three or none (costs says why)
    per_game = costs.per_rollout(costs.WALKTHROUGH_TOKENS, costs.WALKTHROUGH_ROLLOUTS)
    games = planned_rollouts()
    training_games = games["training"] + games["validation"]
    rows: list[dict[str, Any]] = []
    for dimension in costs.DIMENSIONS:
        played = training_games + (games["evaluation"] if dimension != "train" else 0)
        tokens = played * per_game[dimension]
        price = (checked or {}).get(dimension)
        arithmetic = f"{played} games x {per_game[dimension]:,.0f} {dimension} tokens/game = {tokens:,.0f} tokens"
        if price is not None:
            usd = tokens / costs.MILLION * price
            arithmetic += f" x ${price:g}/M = ${usd:.4f}"
        else:
            usd = None
            arithmetic += " (no price given)"
        rows.append({"item": f"{dimension} tokens", "arithmetic": arithmetic, "usd": usd})
    runtime_per_game = costs.WALKTHROUGH_AGENTCORE_USD / costs.WALKTHROUGH_ROLLOUTS
    all_games = training_games + games["evaluation"]
    rows.append(
        {
            "item": "AgentCore runtime",
            "arithmetic": f"{all_games} games x ${runtime_per_game:.6f}/game (the walkthrough's ~$79 over "
            f"{costs.WALKTHROUGH_ROLLOUTS:,} rollouts; derived) = ${all_games * runtime_per_game:.4f}",
            "usd": all_games * runtime_per_game,
        }
    )
    rows.append(
        {
            "item": "MLflow app",
            "arithmetic": "bills per hour it exists (SageMaker AI pricing page; not in the course's sources); "
            "the run deletes it at the end",
            "usd": None,
        }
    )
    priced = [row["usd"] for row in rows if row["usd"] is not None]
    missing = [row["item"] for row in rows if row["usd"] is None]
    rows.append(
        {
            "item": "total",
            "arithmetic": f"${sum(priced):.4f} for what is priced"
            + (f"; not priced: {', '.join(missing)}" if missing else ""),
            "usd": sum(priced),
        }
    )
    return rows


# ---------------------------------------------------------------------------------- the steps
def _masked(text: object) -> str:
    return scrub(" ".join(str(text).split()))


def observe_evaluation_schema(run: FirstRun, session: Any) -> None:
    """DescribeJobSchemaVersion(AgentRFTEvaluation, 1.0.0): which names the live schema defines."""
    from mtrl_course import service_spec

    try:
        answer = session.client("sagemaker").describe_job_schema_version(
            JobCategory=service_spec.EVALUATION, JobConfigSchemaVersion="1.0.0"
        )
    except Exception as error:
        run.observe("evaluation_names", NOT_REACHED, describe_job_schema_version=_masked(_refusal(error)))
        return
    text = answer.get("JobConfigSchema") or ""
    present = {name: bool(re.search(rf'"{re.escape(name)}"', text)) for name in (*RECIPE_NAMES, *SDK_NAMES)}
    recipe_ok = all(present[name] for name in RECIPE_NAMES)
    sdk_absent = not any(present[name] for name in SDK_NAMES)
    run.observe(
        "evaluation_names",
        CONFIRMED if recipe_ok and sdk_absent else CONTRADICTED,
        names_in_schema=present,
        schema_characters=len(text),
    )


def observe_runtime_policy(run: FirstRun, session: Any, runtime_arn: str) -> None:
    """The deployed runtime's role (GetAgentRuntime) and its attached managed policies."""
    from mtrl_course import deploy

    try:
        runtime_id = runtime_arn.rsplit("/", 1)[-1]
        role_arn = session.client("bedrock-agentcore-control").get_agent_runtime(agentRuntimeId=runtime_id)["roleArn"]
        role_name = role_arn.rsplit("/", 1)[-1]
        pages = session.client("iam").get_paginator("list_attached_role_policies").paginate(RoleName=role_name)
        attached = [p["PolicyArn"] for page in pages for p in page.get("AttachedPolicies", [])]
    except Exception as error:
        run.observe("runtime_policy", NOT_REACHED, read_role=_masked(_refusal(error)))
        return
    run.observe(
        "runtime_policy",
        CONFIRMED if deploy.JOB_RUNTIME_POLICY_ARN in attached else CONTRADICTED,
        role=scrub(role_name),
        attached_managed_policies=attached,
    )


def observe_job_document(run: FirstRun, session: Any, job_name: str, category: str) -> dict[str, Any]:
    """DescribeJob: the job's status and the sampling_max_tokens its document carries."""
    from mtrl_course import evaluation, service_spec

    described = session.client("sagemaker").describe_job(JobName=job_name, JobCategory=category)
    document = json.loads(described.get("JobConfigDocument") or "{}")
    section = document.get("TrainingConfig") or document.get("EvaluationConfig") or {}
    sent = section.get("HyperParameters") or {}
    cap = sent.get("sampling_max_tokens")
    kind = "training" if category == service_spec.TRAINING else "evaluation"
    ok = str(cap) == str(evaluation.EVAL_MAX_TOKENS) and described.get("JobStatus") == "Completed"
    run.observe(
        "token_caps",
        CONFIRMED if ok else CONTRADICTED,
        **{f"{kind}_sampling_max_tokens": cap, f"{kind}_status": described.get("JobStatus")},
    )
    if described.get("FailureReason"):
        run.observe("token_caps", CONTRADICTED, **{f"{kind}_failure": _masked(described["FailureReason"])})
    return described


def observe_metrics(run: FirstRun, tracking_uri: str, run_id: str, expected: Sequence[str], kind: str) -> None:
    """The metric names the job's MLflow run holds, against the ones the course reads."""
    from mtrl_course import mlflow_client

    try:
        names = sorted(mlflow_client.client(tracking_uri).get_run(run_id).data.metrics)
    except Exception as error:
        run.observe("mlflow_metric_names", NOT_REACHED, **{f"{kind}_read": _masked(_refusal(error))})
        return
    missing = [name for name in expected if name not in names]
    run.observe(
        "mlflow_metric_names",
        CONFIRMED if not missing else CONTRADICTED,
        **{f"{kind}_missing": missing, f"{kind}_metric_count": len(names)},
    )


def _refusal(error: BaseException) -> str:
    from mtrl_course import errors

    return errors.aws_refusal(error)


# -------------------------------------------------------------------------------------- scrub
ACCESS_KEY = re.compile(r"\b(A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")
LONG_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])")


def scrub(text: str) -> str:
    """`text` without account numbers (masked to their last four digits) or anything key-shaped."""
    text = naming.mask_account(text)
    text = ACCESS_KEY.sub("<access key removed>", text)
    return LONG_SECRET.sub("<secret-shaped text removed>", text)


# --------------------------------------------------------------------------------- the report
def report_data(run: FirstRun) -> dict[str, Any]:
    from mtrl_course import deploy

    return {
        "what": "mtrl smoke: the first run of the live chain",
        "mode": run.mode,
        "region": run.region,
        "started": run.started,
        "ok": run.ok,
        "agentcore_cli_tested": deploy.CLI_VERSION,
        "steps": [dataclasses.asdict(step) for step in run.steps],
        "estimate": run.estimate,
        "contracts": [
            {
                "key": contract.key,
                "question": contract.question,
                "assumed": contract.assumed,
                "where": contract.where,
                "verdict": run.contracts[contract.key].verdict,
                "observed": run.contracts[contract.key].observed,
            }
            for contract in CONTRACTS
        ],
        "resources_left": run.resources_left,
        "next": "docs/LIVE_CHECKLIST.md, 'What mtrl smoke settles', says what each verdict means and what to change",
    }


def report_markdown(data: Mapping[str, Any]) -> str:
    lines = [
        f"# First run ({data['mode']}, {data['region'] or 'no Region'}, {data['started']})",
        "",
        f"Result: {'every step passed' if data['ok'] else 'stopped: see the first failed step'}",
        "",
        "| step | status | seconds | message |",
        "|---|---|---|---|",
    ]
    for step in data["steps"]:
        message = str(step["message"]).replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {step['name']} | {step['status']} | {step['seconds'] if step['seconds'] is not None else '-'} | {message} |"
        )
    lines += ["", "| contract | verdict | observed | the course assumed |", "|---|---|---|---|"]
    for contract in data["contracts"]:
        observed = json.dumps(contract["observed"], sort_keys=True).replace("|", "\\|")
        lines.append(f"| {contract['key']} | {contract['verdict']} | {observed} | {contract['assumed']} |")
    if data["resources_left"]:
        lines += ["", "Left in the account (delete with `mtrl cleanup --yes`):", ""]
        lines += [f"- {item}" for item in data["resources_left"]]
    lines += ["", data["next"], ""]
    return "\n".join(lines)


def write_report(run: FirstRun, folder: Path | str | None = None) -> Path:
    """Write `report-<time>.json` and `.md` into `folder` (default .state/first-run/); the JSON's path.

    Both are scrubbed as a whole (account numbers masked, key-shaped strings removed) after
    rendering, whatever a service put into a message.
    """
    folder = Path(folder) if folder is not None else REPORT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stamp = run.started.replace(":", "").replace("-", "") or dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    data = report_data(run)
    path = folder / f"report-{run.mode}-{stamp}.json"
    path.write_text(scrub(json.dumps(data, indent=2, default=str)) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(scrub(report_markdown(data)), encoding="utf-8")
    return path


def summary_tables(run: FirstRun) -> list[list[dict[str, Any]]]:
    """The steps and the contracts' verdicts, as rows for a table (the command prints both)."""
    steps = [
        {
            "step": s.name,
            "status": s.status,
            "seconds": s.seconds if s.seconds is not None else "-",
            "message": s.message,
        }
        for s in run.steps
    ]
    verdicts = [{"contract": key, "verdict": seen.verdict} for key, seen in run.contracts.items()]
    left = [{"left in the account (mtrl cleanup --yes)": item} for item in run.resources_left]
    return [rows for rows in (steps, verdicts, left) if rows]


# ---------------------------------------------------------------------------------- the chain
@dataclass
class _Context:
    session: Any
    echo: Callable[[str], object]
    project_root: Path = config.REPO_ROOT  # the checkout whose agent_src/ holds the AgentCore project
    resources: Any = None
    runtime_arn: str | None = None
    validation_uri: str | None = None
    evaluation_uri: str | None = None
    training_job: str | None = None
    created: list[str] = field(default_factory=list)


def _small_file(rows: Sequence[Any], count: int, name: str) -> Path:
    from mtrl_course import dataset

    folder = config.STATE_DIR / "first-run" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    return dataset.export(list(rows)[:count], folder / name)


def _step_roles_and_data(run: FirstRun, ctx: _Context) -> str:
    from mtrl_course import dataset, iam, storage

    role = iam.ensure_job_role(session=ctx.session, notebook=NOTEBOOK)
    if role.problems:
        raise FirstRunFailed(f"the job role {role.name} is not fit for the job: {'; '.join(role.problems)}")
    bucket = storage.ensure_bucket(ctx.session, notebook=NOTEBOOK)
    uploaded = storage.upload_dataset(session=ctx.session, bucket=bucket, notebook=NOTEBOOK)
    validation_rows = dataset.read_rows(config.VALIDATION_FILE)
    small = [
        _small_file(validation_rows, SMOKE_VALIDATION_WORDS, "smoke-validation.jsonl"),
        _small_file(validation_rows[SMOKE_VALIDATION_WORDS:], SMOKE_EVALUATION_WORDS, "smoke-evaluation.jsonl"),
    ]
    objects = storage.upload_dataset(small, session=ctx.session, bucket=bucket, notebook=NOTEBOOK)
    ctx.validation_uri, ctx.evaluation_uri = objects[0].uri, objects[1].uri
    ctx.created += [f"role {role.name}", f"bucket {bucket} (course prefix)"]
    return f"job role {role.name}; {len(uploaded) + len(objects)} files in {bucket}"


def _step_deploy(run: FirstRun, ctx: _Context) -> str:
    from mtrl_course import commands, deploy

    if config.is_live():
        project_file = ctx.project_root / commands.AGENTCORE_PROJECT_DIR / "agentcore" / deploy.PROJECT_FILE.name
        deploy.configure_targets(ctx.session, targets_file=project_file.with_name(deploy.TARGETS_FILE.name))
        deploy.build_bundle(project_file=project_file)
        output = commands.run(commands.AGENTCORE_DEPLOY, root=ctx.project_root, echo=ctx.echo)
        state = project_file.parent / ".cli" / "deployed-state.json"
        run.observe(
            "agentcore_deploy",
            CONFIRMED if state.is_file() else CONTRADICTED,
            deployed_state_file=state.is_file(),
            warnings_exit="Post-deploy warnings" in output,
        )
        ctx.created.append(f"CloudFormation stack AgentCore-{deploy.load_project()['name']}-{deploy.TARGET_NAME}")
        return "deployed with " + commands.AGENTCORE_DEPLOY.shown()
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        deploy.configure_targets(ctx.session, targets_file=Path(scratch) / "aws-targets.json")
        deploy.build_bundle(Path(scratch) / "bundle")
    run.observe("agentcore_deploy", STAND_IN, offline="the local runtime stands in for the deploy")
    return f"offline: the bundle built, `{commands.AGENTCORE_DEPLOY.shown()}` not run; the local runtime stands in"


def _step_invoke(run: FirstRun, ctx: _Context) -> str:
    from mtrl_course import smoke

    if not config.is_live():
        from mtrl_course import resources

        ctx.resources = resources.prepare(session=ctx.session, notebook=NOTEBOOK)
    ctx.runtime_arn = smoke.find_runtime_arn(ctx.session)
    payload = smoke.smoke_payload(smoke.caller_account(ctx.session), session=ctx.session)
    since = time.time()
    result = smoke.invoke_smoke(ctx.runtime_arn, payload, ctx.session)
    if config.is_live():
        result = _with_runtime_logs(result, since, ctx.session)
    cause, fix = smoke.diagnose(result)
    if config.is_live():
        with _contextlib_suppress():
            smoke.stop_session(ctx.runtime_arn, result.session_id, ctx.session)
        observe_runtime_policy(run, ctx.session, ctx.runtime_arn)
    run.observe(
        "runtime_policy", CONFIRMED if result.ok else NOT_REACHED, invocation_reward=result.reward, diagnosis=cause
    )
    if not result.ok:
        raise FirstRunFailed(f"the runtime answered {result.summary()}: {cause}; {fix}")
    return f"reward {result.reward} in {result.elapsed:.1f} s"


def _with_runtime_logs(result: Any, since: float, session: Any) -> Any:
    """Live: `result` with the runtime's CloudWatch lines since `since`, read until they settle the
    diagnosis (or RUNTIME_LOG_READS reads); offline the lines were captured during the call."""
    from mtrl_course import smoke

    for _ in range(RUNTIME_LOG_READS):
        if smoke.diagnose_row(result) is not smoke.UNCONFIRMED:
            break
        time.sleep(RUNTIME_LOG_WAIT_S)
        try:
            lines = smoke.runtime_logs(result.runtime_arn, since, session)
        except LookupError:  # the log group appears with the runtime's first line
            continue
        result = dataclasses.replace(result, logs=tuple(lines))
    return result


def _contextlib_suppress() -> Any:
    import contextlib

    return contextlib.suppress(Exception)


def _step_mlflow(run: FirstRun, ctx: _Context, yes_i_will_pay: bool) -> str:
    from mtrl_course import iam, resources, storage

    before = len(iam.ROLE_PROPAGATION_LOG)
    arn = resources.ensure_mlflow_app(
        ctx.session, bucket=storage.bucket_name(ctx.session), notebook=NOTEBOOK, confirm_spend=yes_i_will_pay
    )
    waits = iam.ROLE_PROPAGATION_LOG[before:]
    # Either way the app was created: with no refusal, or after the retries waited it out (their
    # wording is what the report is for).
    run.observe("role_propagation", CONFIRMED, retries=len(waits), refusals=[e["refusal"] for e in waits][:3])
    ctx.created.append(f"MLflow app {resources.mlflow_app_name()} (bills per hour)")
    ctx.resources = resources.prepare(session=ctx.session, notebook=NOTEBOOK)
    return f"MLflow app {naming.mask_account(arn)}"


def _step_train(run: FirstRun, ctx: _Context, yes_i_will_pay: bool) -> str:
    from mtrl_course import monitoring, service_spec, training

    smaller = dataclasses.replace(ctx.resources, validation_s3_uri=ctx.validation_uri)
    trainer = training.make_trainer(smaller, SMOKE_TRAINING, notebook=NOTEBOOK)
    try:
        job = training.launch(trainer, confirm_spend=yes_i_will_pay)
    except Exception as error:
        from mtrl_course import errors

        # AccessDenied on CreateJob after the preflight listed the schema is what the enablement
        # question is about; any other refusal (a role check, a bad value) is not evidence either way.
        denied = errors.aws_error_code(error).startswith("AccessDenied")
        run.observe("agentrft_enablement", CONTRADICTED if denied else NOT_REACHED, create_job=_masked(_refusal(error)))
        raise
    run.observe("agentrft_enablement", CONFIRMED, create_job="a training job was created")
    job = training.wait(job, echo=False)
    ctx.training_job = job.job_name
    described = observe_job_document(run, ctx.session, job.job_name, service_spec.TRAINING)
    if described.get("JobStatus") != "Completed":
        raise FirstRunFailed(
            f"training job {job.job_name} ended {described.get('JobStatus')}: {described.get('FailureReason', '-')}"
        )
    location = monitoring.locate_run(job.job_name, session=ctx.session)
    observe_metrics(run, location.tracking_uri, location.run_id, EXPECTED_TRAINING_METRICS, "training")
    return f"{job.job_name}: Completed"


def _step_evaluate(run: FirstRun, ctx: _Context) -> str:
    from mtrl_course import evaluation, resources, service_spec

    effort = resources.deployed_reasoning_effort(ctx.resources, ctx.session) or "low"
    result = evaluation.evaluate(
        ctx.resources,
        evaluation.BASE,
        temperature=SMOKE_EVALUATION_TEMPERATURE,
        reasoning_effort=effort,
        dataset_uri=ctx.evaluation_uri,
        notebook=NOTEBOOK,
    )
    observe_job_document(run, ctx.session, result["job_name"], service_spec.EVALUATION)
    observe_metrics(
        run, ctx.resources.mlflow_app_arn, result["mlflow_run_id"], EXPECTED_EVALUATION_METRICS, "evaluation"
    )
    return (
        f"{result['job_name']} via {result['via']}: pass@1 {result['pass_at_1']:.0%} on {SMOKE_EVALUATION_WORDS} words"
    )


def _step_cleanup(run: FirstRun, ctx: _Context) -> str:
    from mtrl_course import cleanup, resources

    if ctx.resources is not None and not config.is_live():
        resources.close(ctx.resources)
    frame = cleanup.discover(ctx.session)
    results = cleanup.delete(frame, confirm=True, session=ctx.session, echo=False)
    failed = [
        f"{row['kind']} {row['name']}: {row['result']}" for _, row in results.iterrows() if "failed" in row["result"]
    ]
    if failed:
        raise FirstRunFailed("clean-up could not delete: " + "; ".join(failed))
    ctx.created.clear()
    return f"{len(results)} resource(s) deleted"


def run_first(
    *,
    prices: Mapping[str, Any] | None = None,
    yes_i_will_pay: bool = False,
    session: Any | None = None,
    echo: Callable[[str], object] = print,
    report_dir: Path | str | None = None,
    project_root: Path | str = config.REPO_ROOT,
) -> tuple[FirstRun, Path]:
    """Run the chain (see the module docstring); returns what it saw and the report's path.

    Stops at the first failed step and raises nothing itself: the failed step's row carries the
    service's message, `run.ok` is False, and the report lists what is left in the account.
    Live without `yes_i_will_pay` it stops after the estimate (PaymentNotConfirmed is recorded as
    that step's message), having created nothing. `project_root` is the checkout whose agent_src/
    holds the AgentCore project the live deploy runs in (a test passes a copy).
    """
    from mtrl_course import aws, preflight

    live = config.is_live()
    run = FirstRun(mode=config.MODE.value, started=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    ctx = _Context(session=session, echo=echo, project_root=Path(project_root))

    def preflight_step() -> str:
        # Live, aws.session() names a missing Region or missing credentials in one line.
        ctx.session = ctx.session if ctx.session is not None else aws.session()
        session = ctx.session
        run.region = session.region_name
        facts = preflight.gather_facts(session, live=live)
        rows = preflight.judge(facts)
        run.observe(
            "agentrft_enablement",
            NOT_REACHED,
            list_job_schema_versions=facts.schema_versions,
            list_job_schema_versions_error=_masked(facts.schema_error) if facts.schema_error else None,
        )
        failed = [f"{row.check}: {row.detail} ({row.fix})" for row in rows if row.status == preflight.FAIL]
        if failed:
            raise FirstRunFailed("preflight: " + "; ".join(failed))
        observe_evaluation_schema(run, session)  # free and read-only: before anything bills
        return preflight.summary(rows)

    def estimate_step() -> str:
        run.estimate = estimate(prices)
        for row in run.estimate:
            echo(f"  {row['item']}: {row['arithmetic']}")
        if live and not yes_i_will_pay:
            raise PaymentNotConfirmed(
                f"nothing started: the steps after this one bill (the estimate above); run again with {OPT_IN_FLAG} "
                "to go on"
            )
        return run.estimate[-1]["arithmetic"]

    steps: list[tuple[str, Callable[[], str]]] = [
        ("preflight", preflight_step),
        ("estimate", estimate_step),
        ("roles and data", lambda: _step_roles_and_data(run, ctx)),
        ("deploy", lambda: _step_deploy(run, ctx)),
        ("invoke", lambda: _step_invoke(run, ctx)),
        ("MLflow app", lambda: _step_mlflow(run, ctx, yes_i_will_pay)),
        ("train", lambda: _step_train(run, ctx, yes_i_will_pay)),
        ("evaluate", lambda: _step_evaluate(run, ctx)),
        ("clean-up", lambda: _step_cleanup(run, ctx)),
    ]
    run.steps = [StepResult(name) for name, _ in steps]
    for result, (name, step) in zip(run.steps, steps):
        echo(f"[{name}] ...")
        started = time.monotonic()
        try:
            result.message = _masked(step())
            result.status = OK
        except PaymentNotConfirmed as stop:
            result.status, result.message = SKIPPED, _masked(stop)
            result.seconds = round(time.monotonic() - started, 1)
            echo(f"[{name}] {result.message}")
            break
        except Exception as error:
            result.status = FAILED
            result.message = _masked(
                _refusal(error) if getattr(error, "response", None) else f"{type(error).__name__}: {error}"
            )
            result.seconds = round(time.monotonic() - started, 1)
            echo(f"[{name}] FAILED: {result.message}")
            run.resources_left = [scrub(item) for item in ctx.created]
            break
        result.seconds = round(time.monotonic() - started, 1)
        echo(f"[{name}] ok ({result.seconds} s): {result.message}")
    path = write_report(run, report_dir)
    echo(f"report: {path} (and {path.with_suffix('.md').name})")
    return run, path
