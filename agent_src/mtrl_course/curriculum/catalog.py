"""The notebook catalog: the single source for every notebook's banner and the README table.

Each notebook opens with a banner (modes, time, live cost and billable resources, what it creates
and where that is cleaned up, prerequisites, tested versions) and the README lists the same facts
for the whole course. Both are rendered from the entries below, and `mtrl notebooks sync` writes
them into the files, so the notebooks and the README cannot drift apart. Edit an entry here, run
`mtrl notebooks sync`, commit both.

Rules for the text:
- Every number is either measured by this repository (offline times: a maintainer runs
  `mtrl notebooks run --record-times`, which writes them below; never typed by hand) or cited to its source ("AWS walkthrough" = the SageMaker AI multi-turn RL walkthrough with
  Wordle). Token prices are not in our sources: never write one here.
- Say "no charge" only where it is true (IAM, read-only calls, deletions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from mtrl_course import config, lockfile

OFFLINE = "offline"
LIVE = "live"
CLEANUP_NOTEBOOK = "08"
# The Python minor version the lock was resolved and the notebooks executed with
# (environment.yml pins the same). Read from here, not from the running interpreter, so a banner
# does not change with the machine that renders it.
TESTED_PYTHON = "3.11"
# Packages whose versions the banners and the bootstrap line report, in display order.
OFFLINE_TESTED_ON = "Linux, 2 CPUs"
# Set to a short description ("us-east-1, <month year>") once the live path has been run end to end.
LIVE_TESTED_ON: str | None = None
README_FILE = config.REPO_ROOT / "README.md"
README_START = "<!-- notebooks:start -->"
README_END = "<!-- notebooks:end -->"
# The README line under the table: the whole course live, from the walkthrough's own run.
COURSE_LIVE_TOTAL = (
    "A full live run as in the AWS walkthrough: about $339 in training tokens and about $79 of "
    "AgentCore runtime for the 100-step training job (12 h 40 min), plus about $1.20 in tokens "
    "for the evaluation jobs. Token prices are on the SageMaker AI pricing page; the course "
    "never assumes them."
)
# A banner is read before the learner starts; past this many words it is skimmed, and the cost and
# prerequisites get missed. `problems()` reports a banner that reaches it.
BANNER_WORD_LIMIT = 200
NN_PATTERN = re.compile(r"^\d\d$")
SLUG_PATTERN = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")


@dataclass(frozen=True)
class Entry:
    """One notebook: what the banner and the README say about it."""

    nn: str  # two digits, the order in the course
    slug: str  # lower snake_case; the file is f"{nn}_{slug}.ipynb" and its figures f"{nn}_*.png"
    title: str
    summary: str  # one line: what the learner does
    modes: tuple[str, ...]  # (OFFLINE, LIVE), or (OFFLINE,) when there is no live part
    # Fresh-kernel offline run in seconds, written by `mtrl notebooks run --record-times` on the
    # 2-CPU machine (`record_offline_seconds`); None until measured (the banner then says so).
    offline_seconds: int | None
    live_time: str | None  # None when there is no live part
    live_cost: str | None
    billable: tuple[str, ...] = ()  # billable resources in live mode
    creates: tuple[str, ...] = ()  # what live mode creates and leaves behind
    cleaned_up_in: str | None = None  # a notebook number, when `creates` is not empty
    # A notebook number links to it; anything else is printed as written.
    prerequisites: tuple[str, ...] = ()

    @property
    def filename(self) -> str:
        return f"{self.nn}_{self.slug}.ipynb"

    @property
    def path(self) -> Path:
        return config.NOTEBOOKS_DIR / self.filename

    @property
    def label(self) -> str:
        return f"{self.nn} · {self.title}"

    @property
    def has_live_part(self) -> bool:
        return LIVE in self.modes


_AGENTCORE_RUNTIME = "AgentCore runtime: CPU and memory per second of active session (AgentCore pricing page)"
_NO_LIVE_PART = (OFFLINE,)

NOTEBOOKS: tuple[Entry, ...] = (
    Entry(
        nn="00",
        slug="setup",
        title="Setup and orientation",
        summary="Check your environment, choose offline or live mode, and tour the system: "
        "a Strands agent on AgentCore trained by the SageMaker AI multi-turn RL service.",
        modes=(OFFLINE, LIVE),
        offline_seconds=21,
        live_time="not measured (read-only checks); section 5's first run: not measured",
        live_cost="no charge for the read-only checks; section 5's optional first run bills only after "
        "you opt in, and estimates its cost from your prices first",
        prerequisites=(
            "Python 3.11.5 or newer and the course environment (`make venv`, or `environment.yml` in SageMaker Studio)",
            "live: AWS credentials and a Region with gpt-oss-20b (us-east-1 or us-west-2)",
        ),
    ),
    Entry(
        nn="01",
        slug="iam_roles",
        title="IAM roles",
        summary="Create the training job role (trusted by job.sagemaker.amazonaws.com with "
        "sts:TagSession) and see what the agent's runtime role needs.",
        modes=(OFFLINE, LIVE),
        offline_seconds=3,
        live_time="not measured (IAM calls only)",
        live_cost="no charge: IAM roles are not billed (AWS walkthrough)",
        creates=("IAM role for training jobs (AmazonSageMakerJobFullAccess)",),
        cleaned_up_in=CLEANUP_NOTEBOOK,
        prerequisites=("00", "live: permission to create IAM roles"),
    ),
    Entry(
        nn="02",
        slug="deploy_the_agent",
        title="Deploy the agent",
        summary="Deploy the Wordle agent (environment, tool and reward in one module) to "
        "Amazon Bedrock AgentCore with the AgentCore CLI.",
        modes=(OFFLINE, LIVE),
        offline_seconds=12,
        live_time="not measured: the CLI builds about 700 MB of Linux ARM64 dependencies, "
        "then deploys through CloudFormation (AWS walkthrough)",
        live_cost="price not in our sources: the runtime bills only while sessions run "
        "(AgentCore pricing page); deploying starts none",
        billable=(_AGENTCORE_RUNTIME,),
        creates=(
            "AgentCore runtime",
            "its execution role (AmazonSageMakerJobRuntimeAccess)",
            "the CloudFormation stack that holds them",
        ),
        cleaned_up_in=CLEANUP_NOTEBOOK,
        prerequisites=("01", "live: Node 20+, uv and the AgentCore CLI (`npm install -g @aws/agentcore`)"),
    ),
    Entry(
        nn="03",
        slug="verify_the_runtime",
        title="Verify the runtime",
        summary="Invoke the deployed runtime with a service-shaped payload before spending GPU "
        'time: the expected answer is {"reward": -1.5}, and every failure in the diagnosis table '
        "but one (the runtime role without its policy) is reproduced offline.",
        modes=(OFFLINE, LIVE),
        offline_seconds=10,
        live_time="not measured (a few invocations)",
        live_cost="two short AgentCore sessions (price not in our sources); no tokens, because "
        "the fake job is refused before any sampling",
        billable=(_AGENTCORE_RUNTIME,),
        prerequisites=("02",),
    ),
    Entry(
        nn="04",
        slug="dataset",
        title="Dataset",
        summary="Build the 640/128 task split (each row carries only the secret word), validate "
        "it the way the service reads it, and upload it to S3.",
        modes=(OFFLINE, LIVE),
        offline_seconds=5,
        live_time="not measured (two small uploads)",
        live_cost="S3 storage and requests for two small files (standard S3 rates; not in our sources)",
        billable=("S3 storage",),
        creates=(
            "the course bucket (mtrl-wordle-<account>-<region>), or your MTRL_BUCKET",
            "the training and validation files in it, under the course prefix",
        ),
        cleaned_up_in=CLEANUP_NOTEBOOK,
        prerequisites=(
            "00",
            "live: permission to create an S3 bucket in the agent's Region (or MTRL_BUCKET naming one)",
        ),
    ),
    Entry(
        nn="05",
        slug="launch_training",
        title="Launch training",
        summary="Price and start a training job with MultiTurnRLTrainer and the walkthrough's three overrides, "
        "or attach to one started earlier; offline, a stand-in trains locally.",
        modes=(OFFLINE, LIVE),
        offline_seconds=76,
        live_time="about 12 h 40 min (the AWS walkthrough's 100-step run)",
        live_cost="about $339 in training tokens plus about $79 of AgentCore runtime (AWS walkthrough)",
        billable=(
            "SageMaker AI prefill, sample and train tokens (SageMaker AI pricing page)",
            _AGENTCORE_RUNTIME,
        ),
        creates=(
            "the training job (billing stops when it ends)",
            "an MLflow app if you have none",
            "the trainer's S3 objects",
            "model packages and their groups (not billed)",
        ),
        cleaned_up_in=CLEANUP_NOTEBOOK,
        prerequisites=("03", "04", "live: an MLflow app, or permission to create one"),
    ),
    Entry(
        nn="06",
        slug="monitor_in_mlflow",
        title="Monitor in MLflow",
        summary="Read reward, token and turn metrics from MLflow, plot the training curves, watch "
        "val/reward/pass_at_1, open the MLflow UI and follow one traced game.",
        modes=(OFFLINE, LIVE),
        offline_seconds=13,
        live_time="not measured (reading only; the job itself runs for hours)",
        live_cost="nothing beyond notebook 05's job: this notebook only reads metrics",
        prerequisites=("05",),
    ),
    Entry(
        nn="07",
        slug="evaluate_at_serving_settings",
        title="Evaluate at serving settings",
        summary="Evaluate the base and trained models at four serving settings (reasoning effort x "
        "temperature), one evaluation job at a time, and break down what the jobs billed.",
        modes=(OFFLINE, LIVE),
        offline_seconds=43,
        live_time="about an hour for the walkthrough's jobs, 4 to 7 min each (AWS walkthrough)",
        live_cost="about $1.20 in tokens for the walkthrough's evaluation jobs (AWS walkthrough), "
        "plus AgentCore runtime",
        billable=(
            "SageMaker AI tokens (SageMaker AI pricing page)",
            _AGENTCORE_RUNTIME,
        ),
        creates=(
            "evaluation jobs (billing stops when they end)",
            "a SageMaker pipeline, only if you use MultiTurnRLEvaluator (the grid does not)",
        ),
        cleaned_up_in=CLEANUP_NOTEBOOK,
        prerequisites=("05", "live: a finished training job (yours, or one your instructor started)"),
    ),
    Entry(
        nn="08",
        slug="clean_up",
        title="Clean up",
        summary="Find everything the course created, by tag and name prefix, list it, then "
        "delete it after confirmation: AgentCore runtime, MLflow app, S3 objects, and optionally "
        "roles and model packages.",
        modes=(OFFLINE, LIVE),
        offline_seconds=6,
        live_time="not measured",
        live_cost="no charge: it only deletes, which ends the runtime, MLflow app and S3 charges",
        prerequisites=("any notebook you ran live",),
    ),
    Entry(
        nn="09",
        slug="designing_the_reward",
        title="Deep dive: designing the reward",
        summary="Why a summed per-guess reward paid lost games and ranked fast solves below slow "
        "ones, and how an outcome-dominant reward with clipped shaping fixes both.",
        modes=_NO_LIVE_PART,
        offline_seconds=49,
        live_time=None,
        live_cost=None,
        prerequisites=("00", "05"),
    ),
    Entry(
        nn="10",
        slug="what_went_wrong",
        title="Deep dive: what went wrong",
        summary="Reproduce the walkthrough's failures in the order you would hit them (tokens "
        "under concurrency, rollouts that never sample, tool calls drifting into text, the "
        "plateau) and their fixes on real calls and real training of the stand-in, and evaluate "
        "checkpoints at serving settings.",
        modes=_NO_LIVE_PART,
        offline_seconds=30,
        live_time=None,
        live_cost=None,
        prerequisites=("05",),
    ),
    Entry(
        nn="11",
        slug="custom_composite_rewards",
        title="Bonus: custom composite rewards with Nova Forge",
        summary="Sandbox hidden tests, train a stand-in coder on the Nova Forge post's four-component reward, "
        "catch a dead scorer and a collapse, and package it for Nova Forge.",
        modes=(OFFLINE, LIVE),
        offline_seconds=35,
        live_time="not measured; the Nova Forge post gives none",
        live_cost="a Nova Forge subscription plus the resources below (no prices in our sources)",
        billable=(
            "SageMaker HyperPod (10 x ml.p5.48xlarge, the Nova infra sample's default)",
            "ECS Fargate reward workers",
            "Lambda, SQS, DynamoDB, S3",
        ),
        creates=(
            "the Nova infra sample's stacks (VPC, EKS, HyperPod, ECS, pipeline)",
            "a NovaForgeSDK stack per run (Lambda, SQS, DynamoDB)",
            "the bundle in S3",
        ),
        cleaned_up_in="11",
        prerequisites=(
            "09",
            "live: Nova Forge subscription, ml.p5.48xlarge quota, the Nova infra sample "
            "(aws-samples/sample-nova-multi-turn-rl-infra) checked out",
        ),
    ),
)

_BY_NN = {entry.nn: entry for entry in NOTEBOOKS}
CATALOG_FILE = Path(__file__)
_ENTRY_START = re.compile(r"^    Entry\(\s*$", re.M)
_NN_FIELD = re.compile(r'^\s*nn="(\d\d)",\s*$', re.M)
_SECONDS_FIELD = re.compile(r"^(\s*offline_seconds=)(None|\d+)(,\s*)$", re.M)


def with_offline_seconds(text: str, measured: dict[str, int]) -> tuple[str, dict[str, int | None]]:
    """`text` (this file's source) with `offline_seconds` of each entry in `measured` replaced.

    Returns the new text and each changed entry's previous value. Only the number is rewritten,
    so entries other people edit merge cleanly. ValueError names an entry that is missing or has
    no single `offline_seconds=` line, or a time that is not a positive whole number.
    """
    for nn, seconds in measured.items():
        if not NN_PATTERN.match(nn):
            raise ValueError(f"notebook number {nn!r} is not two digits")
        if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds <= 0:
            raise ValueError(f"offline_seconds for {nn} must be a positive whole number, got {seconds!r}")
    starts = [m.start() for m in _ENTRY_START.finditer(text)] + [len(text)]
    blocks = {}
    for begin, end in zip(starts, starts[1:]):
        found = _NN_FIELD.search(text, begin, end)
        if found:
            blocks[found.group(1)] = (begin, end)
    previous: dict[str, int | None] = {}
    pieces, cursor = [], 0
    for nn in sorted(measured, key=lambda n: blocks.get(n, (-1,))[0]):
        if nn not in blocks:
            raise ValueError(f'no catalog entry with nn="{nn}" in {CATALOG_FILE.name}')
        begin, end = blocks[nn]
        fields = list(_SECONDS_FIELD.finditer(text, begin, end))
        if len(fields) != 1:
            raise ValueError(f"catalog entry {nn} needs exactly one `offline_seconds=` line, found {len(fields)}")
        field = fields[0]
        old = None if field.group(2) == "None" else int(field.group(2))
        if old != measured[nn]:
            previous[nn] = old
        pieces += [text[cursor : field.start(2)], str(measured[nn])]
        cursor = field.end(2)
    pieces.append(text[cursor:])
    return "".join(pieces), previous


def record_offline_seconds(measured: dict[str, int], path: Path | None = None) -> dict[str, int | None]:
    """Write measured offline times (`nn -> seconds`) into the catalog's source; returns the old values that changed.

    The maintainer's side of the timing claims (`mtrl notebooks run --record-times`): the
    banners and the README then state what was measured, never a number typed by hand.
    """
    global NOTEBOOKS, _BY_NN
    target = CATALOG_FILE if path is None else path
    text = target.read_text(encoding="utf-8")
    updated, previous = with_offline_seconds(text, measured)
    if updated != text:
        target.write_text(updated, encoding="utf-8")
    # This process renders from the new numbers too (a sync right after must not undo them).
    NOTEBOOKS = tuple(
        replace(entry, offline_seconds=measured[entry.nn]) if entry.nn in measured else entry for entry in NOTEBOOKS
    )
    _BY_NN = {entry.nn: entry for entry in NOTEBOOKS}
    return previous


class UnknownNotebook(KeyError):
    """A notebook number the catalog does not have; its str() is the message (a KeyError's is a repr)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def get(nn: str) -> Entry:
    """The catalog entry for notebook `nn` ("05"); UnknownNotebook (a KeyError) naming the known numbers otherwise."""
    try:
        return _BY_NN[nn]
    except KeyError:
        known = ", ".join(_BY_NN)
        raise UnknownNotebook(
            f"no notebook {nn!r} in the catalog (agent_src/mtrl_course/curriculum/catalog.py); known: {known}"
        ) from None


def problems() -> list[str]:
    """Everything malformed in the catalog (empty when it is well formed)."""
    found = []
    numbers = [entry.nn for entry in NOTEBOOKS]
    if numbers != sorted(numbers) or len(set(numbers)) != len(numbers):
        found.append(f"notebook numbers must be unique and in order: {numbers}")
    for entry in NOTEBOOKS:
        where = f"catalog entry {entry.nn!r}"
        if not NN_PATTERN.match(entry.nn):
            found.append(f"{where}: number must be two digits")
        if not SLUG_PATTERN.match(entry.slug):
            found.append(f"{where}: slug {entry.slug!r} must be lower snake_case")
        if not entry.title.strip() or not entry.summary.strip():
            found.append(f"{where}: title and summary must not be empty")
        if "\n" in entry.summary:
            found.append(f"{where}: the summary must be one line")
        if not entry.modes or entry.modes[0] != OFFLINE or set(entry.modes) - {OFFLINE, LIVE}:
            found.append(f"{where}: modes must be (offline,) or (offline, live), got {entry.modes}")
        if entry.has_live_part and not (entry.live_time and entry.live_cost):
            found.append(f"{where}: a live notebook needs live_time and live_cost")
        if not entry.has_live_part and (entry.live_time or entry.live_cost or entry.billable or entry.creates):
            found.append(f"{where}: an offline-only notebook has no live time, cost or resources")
        if entry.creates and entry.cleaned_up_in not in _BY_NN:
            found.append(f"{where}: it creates resources, so cleaned_up_in must name a notebook")
        if entry.cleaned_up_in is not None and entry.cleaned_up_in < entry.nn:
            found.append(f"{where}: cleaned up in {entry.cleaned_up_in}, which comes before it")
        if entry.offline_seconds is not None and entry.offline_seconds <= 0:
            found.append(f"{where}: offline_seconds must be positive")
        for prerequisite in entry.prerequisites:
            if NN_PATTERN.match(prerequisite) and prerequisite not in _BY_NN:
                found.append(f"{where}: prerequisite {prerequisite} is not a notebook")
            if NN_PATTERN.match(prerequisite) and prerequisite >= entry.nn:
                found.append(f"{where}: prerequisite {prerequisite} does not come before it")
        try:
            words = len(banner_markdown(entry.nn).split())
        except KeyError:  # a link to a missing notebook, reported above
            words = 0
        if words >= BANNER_WORD_LIMIT:
            found.append(
                f"{where}: its banner has {words} words; keep it under {BANNER_WORD_LIMIT} "
                "(shorten the summary, live_time, live_cost, billable or creates)"
            )
        for text in filter(None, (entry.live_time, entry.live_cost, *entry.billable, *entry.creates)):
            if "$" in text and "walkthrough" not in text.lower():
                found.append(f"{where}: a dollar figure needs its source (the AWS walkthrough): {text!r}")
    missing = set(lockfile.KEY_PACKAGES) - set(lockfile.key_versions())
    if missing:
        found.append(f"{lockfile.LOCK_FILE.name} does not pin {sorted(missing)}")
    return found


# ----------------------------------------------------------------------------------- versions
def tested_with() -> str:
    packages = ", ".join(f"{name} {version}" for name, version in lockfile.key_versions().items())
    live = f"live path on {LIVE_TESTED_ON}" if LIVE_TESTED_ON else "live path not yet run end to end by the course team"
    return (
        f"Python {TESTED_PYTHON}, {packages} (pinned in `requirements.lock`); "
        f"offline path on {OFFLINE_TESTED_ON}; {live}"
    )


# ---------------------------------------------------------------------------------- renderers
def format_offline_time(seconds: int | None) -> str:
    if seconds is None:
        return "not yet measured"
    if seconds < 60:
        return "under 1 min"
    return f"about {round(seconds / 60)} min"


def _link(nn: str, relative_to_notebooks: bool = True) -> str:
    entry = get(nn)
    target = entry.filename if relative_to_notebooks else f"notebooks/{entry.filename}"
    return f"[{entry.label}]({target})"


def _prerequisites(entry: Entry) -> str:
    if not entry.prerequisites:
        return "none"
    return "; ".join(_link(p) if NN_PATTERN.match(p) else p for p in entry.prerequisites)


def _creates(entry: Entry) -> str:
    if not entry.has_live_part:
        return "nothing on AWS"
    if not entry.creates:
        return "nothing"
    where = "this notebook's clean-up section" if entry.cleaned_up_in == entry.nn else _link(str(entry.cleaned_up_in))
    return "; ".join(entry.creates) + f". Cleaned up in {where}"


def banner_markdown(nn: str) -> str:
    """The first cell of notebook `nn`: title, summary and the banner (tagged "banner" in the file).

    It says nothing to maintainers, not even in a hidden comment (a learner editing the cell sees
    it): an edited banner fails the hygiene tests with the fix, "edit the catalog, then run `mtrl
    notebooks sync`", and `sync` overwrites it.
    """
    entry = get(nn)
    offline_time = format_offline_time(entry.offline_seconds)
    if entry.offline_seconds is not None:
        offline_time += " in a fresh kernel"
    if entry.has_live_part:
        modes = "offline (the default, no AWS account) and live (`MTRL_MODE=live`, your AWS account)"
        time = f"offline: {offline_time}; live: {entry.live_time}"
        cost = entry.live_cost
        billable = "; ".join(entry.billable) or "none"
    else:
        modes = "offline only: it runs locally and calls no AWS service, whatever the mode"
        time = f"offline: {offline_time}"
        cost = "no charge: no live part"
        billable = "none"
    lines = [
        f"# {entry.label}",
        "",
        entry.summary,
        "",
        f"- **Modes:** {modes}",
        f"- **Time:** {time}",
        f"- **Live cost:** {cost}",
        f"- **Billable resources (live):** {billable}",
        f"- **Creates (live):** {_creates(entry)}",
        f"- **Prerequisites:** {_prerequisites(entry)}",
        f"- **Tested with:** {tested_with()}",
    ]
    return "\n".join(lines)


def next_markdown(nn: str) -> str:
    """The closing "next notebook" cell of notebook `nn` (tagged "next" in the file)."""
    position = [entry.nn for entry in NOTEBOOKS].index(get(nn).nn)
    if position + 1 == len(NOTEBOOKS):
        return "**Next:** this is the last notebook. The [README](../README.md) lists them all."
    following = NOTEBOOKS[position + 1]
    return f"**Next:** {_link(following.nn)}: {following.summary}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def readme_table() -> str:
    """The README's notebook table (the text between the notebooks markers)."""
    lines = [
        "| # | notebook | what you do | offline | live time | live cost |",
        "|---|---|---|---|---|---|",
    ]
    for entry in NOTEBOOKS:
        live_time = entry.live_time if entry.has_live_part else "no live part"
        live_cost = entry.live_cost if entry.has_live_part else "no charge"
        # A notebook that is not written yet is listed without a link, so the table never
        # points at a missing file.
        written = (config.NOTEBOOKS_DIR / entry.filename).is_file()
        title = f"[{entry.title}](notebooks/{entry.filename})" if written else f"{entry.title} (in preparation)"
        cells = (
            entry.nn,
            title,
            entry.summary,
            format_offline_time(entry.offline_seconds),
            live_time,
            live_cost,
        )
        lines.append("| " + " | ".join(_cell(str(c)) for c in cells) + " |")
    lines += ["", COURSE_LIVE_TOTAL, "", f"Tested with: {tested_with()}."]
    return "\n".join(lines)
