"""Notebook 00's toolkit: the preflight verdicts (pure, with made-up facts), the offline preflight
against the offline backend, the live fact-gathering with a stub session, and the architecture
figure (deterministic, every rollout step drawn)."""

from __future__ import annotations

import io

import pytest
from mtrl_course import config, deploy, preflight
from mtrl_course.curriculum import diagram as architecture
from mtrl_course.preflight import FAIL, OK, STAND_IN, WARN, Facts

# Built at run time so no real-looking account ID is written in a committed file.
REAL_LOOKING = "4" + "0" * 7 + "9876"


def statuses(rows):
    return {row.check: row.status for row in rows}


def good_live_facts(**changes) -> Facts:
    facts = Facts(
        live=True,
        region="us-west-2",
        credential_source="sso",
        identity_arn=f"arn:aws:sts::{REAL_LOOKING}:assumed-role/R/s",
        botocore_version="1.44.8",
        knows_create_job=True,
        running_jobs={"AgentRFT": 0, "AgentRFTEvaluation": 0},
        schema_versions=["1.0.0"],
        node_version="22.3.0",
        agentcore_cli="/usr/bin/agentcore",
        agentcore_cli_version=deploy.CLI_VERSION,
        uv="/usr/bin/uv",
    )
    for key, value in changes.items():
        setattr(facts, key, value)
    return facts


# --- pure verdicts --------------------------------------------------------------------------------


def test_version_tuple():
    assert preflight.version_tuple("1.43.20") == (1, 43, 20)
    assert preflight.version_tuple("v20.11.1") == (20, 11, 1)
    assert preflight.version_tuple("1.43.20rc1") == (1, 43)


def test_models_follow_the_documented_matrix():
    assert preflight.models_in_region("us-east-1") == ["Nova Lite 2.0", "GPT-OSS-20B"]
    assert len(preflight.models_in_region("us-west-2")) == 4
    assert preflight.models_in_region("eu-west-1") == []


@pytest.mark.parametrize(
    ("region", "model", "status"),
    [
        ("us-east-1", "GPT-OSS-20B", OK),
        ("us-east-1", "Qwen 3.6 27B", WARN),
        ("eu-west-1", "GPT-OSS-20B", FAIL),
        (None, "GPT-OSS-20B", FAIL),
    ],
)
def test_region_verdicts(region, model, status):
    assert preflight.check_region(region, model).status == status


@pytest.mark.parametrize(
    ("version", "knows", "status"),
    [("1.43.19", False, FAIL), ("1.43.20", True, OK), ("1.44.8", False, FAIL), ("1.42.0", True, FAIL)],
)
def test_botocore_verdicts(version, knows, status):
    assert preflight.check_botocore(version, knows).status == status


def test_quota_verdicts_and_masking():
    assert preflight.check_quota("AgentRFT", 0).status == OK
    busy = preflight.check_quota("AgentRFT", 1)
    assert busy.status == WARN and "ResourceLimitExceeded" in busy.fix
    unknown = preflight.check_quota("AgentRFTEvaluation", None, f"AccessDenied for arn:aws:iam::{REAL_LOOKING}:user/u")
    assert unknown.status == WARN and REAL_LOOKING not in unknown.detail and "9876" in unknown.detail


def test_a_good_live_environment_passes_and_masks_the_account():
    rows = preflight.judge(good_live_facts())
    assert {row.status for row in rows} == {OK}
    assert REAL_LOOKING not in " ".join(row.detail for row in rows)
    assert preflight.summary(rows) == "preflight: all checks passed"


def test_a_broken_live_environment_says_what_to_fix():
    rows = preflight.judge(
        good_live_facts(
            credential_source=None,
            identity_arn=None,
            identity_error="no credentials or no Region",
            region=None,
            botocore_version="1.43.0",
            knows_create_job=False,
            running_jobs={},
            jobs_error=None,
            node_version="18.0.0",
            agentcore_cli=None,
        )
    )
    found = statuses(rows)
    assert found["credentials"] == found["Region"] == found["botocore knows CreateJob"] == FAIL
    assert found["Node.js (AgentCore CLI)"] == found["AgentCore CLI"] == WARN
    assert all(row.fix for row in rows if row.status in (FAIL, WARN))
    assert preflight.summary(rows).startswith("preflight: 5 failed")


def test_an_agentcore_cli_of_another_version_is_a_warning_naming_the_tested_one():
    rows = {row.check: row for row in preflight.judge(good_live_facts(agentcore_cli_version="0.31.0"))}
    row = rows["AgentCore CLI"]
    assert row.status == WARN and "0.31.0" in row.detail and deploy.CLI_VERSION in row.detail
    assert row.fix.startswith(f"npm install -g @aws/agentcore@{deploy.CLI_VERSION}")
    unknown = {r.check: r for r in preflight.judge(good_live_facts(agentcore_cli_version=None))}["AgentCore CLI"]
    assert unknown.status == WARN and "--version" in unknown.detail


def test_offline_rows_list_the_stand_ins_and_skip_the_live_tools():
    rows = preflight.judge(
        Facts(
            live=False,
            region="us-east-1",
            identity_arn="arn:aws:sts::123456789012:user/moto",
            botocore_version="1.44.8",
            knows_create_job=True,
            running_jobs={"AgentRFT": 0, "AgentRFTEvaluation": 0},
            versions={"moto": "5.2.5"},
        )
    )
    found = statuses(rows)
    assert found["AWS control plane"] == found["policy model"] == STAND_IN
    assert "Node.js (AgentCore CLI)" not in found and "not gpt-oss" in next(
        r.detail for r in rows if r.check == "policy model"
    )


# --- gathering facts --------------------------------------------------------------------------------


@pytest.fixture
def offline(offline_session):
    return offline_session


def test_offline_preflight_runs_against_the_offline_backend(offline):
    table = preflight.run_preflight(offline, live=False)
    assert list(table.columns) == list(preflight.COLUMNS)
    assert not (table["status"] == FAIL).any()
    identity = table.loc[table["check"] == "caller identity", "detail"].item()
    assert identity == f"arn:aws:sts::{config.MOTO_ACCOUNT}:user/moto"
    assert "0 running now" in table.loc[table["check"] == "quota: training jobs at a time", "detail"].item()
    enabled = table.loc[table["check"] == "AgentRFT available to this account"]
    assert enabled["status"].item() == OK and "lists schema 1.0.0" in enabled["detail"].item()


class StubClient:
    def __init__(self, running: int, fail_list: bool = False):
        self.running, self.fail_list = running, fail_list

    def get_caller_identity(self):
        return {"Arn": f"arn:aws:sts::{REAL_LOOKING}:assumed-role/Learner/s"}

    def list_job_schema_versions(self, **params):
        assert params == {"JobCategory": "AgentRFT"}
        if self.fail_list:
            from botocore.exceptions import ClientError

            error = {"Error": {"Code": "AccessDeniedException", "Message": f"not authorized ({REAL_LOOKING})"}}
            raise ClientError(error, "ListJobSchemaVersions")
        return {"JobConfigSchemas": [{"JobConfigSchemaVersion": "1.0.0"}]}

    def list_jobs(self, **params):
        if self.fail_list:
            raise RuntimeError(f"AccessDenied: not allowed for {REAL_LOOKING}")
        assert params["StatusEquals"] == "InProgress"
        return {"JobSummaries": [{"JobName": "j"}] * (self.running if params["JobCategory"] == "AgentRFT" else 0)}


class StubCredentials:
    method = "sso"


class StubSession:
    def __init__(self, region="us-east-1", credentials=True, **client_options):
        self.region_name = region
        self._credentials = StubCredentials() if credentials else None
        self._client = StubClient(**client_options)

    def get_credentials(self):
        return self._credentials

    def client(self, name):
        return self._client


def test_live_facts_from_a_stub_session(monkeypatch):
    monkeypatch.setattr(preflight, "_node_version", lambda: "20.1.0")
    monkeypatch.setattr(preflight.shutil, "which", lambda name: None)
    facts = preflight.gather_facts(StubSession(running=1), live=True)
    assert facts.credential_source == "sso" and facts.knows_create_job
    assert facts.running_jobs == {"AgentRFT": 1, "AgentRFTEvaluation": 0}
    found = statuses(preflight.judge(facts))
    assert found["quota: training jobs at a time"] == WARN and found["quota: evaluation jobs at a time"] == OK
    assert found["AgentCore CLI"] == WARN


def test_live_facts_without_credentials_or_list_permission(monkeypatch):
    monkeypatch.setattr(preflight, "_node_version", lambda: None)
    bare = preflight.gather_facts(StubSession(credentials=False, running=0), live=True)
    assert bare.identity_arn is None and bare.running_jobs == {}
    denied = preflight.gather_facts(StubSession(running=0, fail_list=True), live=True)
    rows = preflight.judge(denied)
    quota = next(r for r in rows if r.check == "quota: training jobs at a time")
    assert quota.status == WARN and REAL_LOOKING not in quota.detail
    enabled = next(r for r in rows if r.check == "AgentRFT available to this account")
    assert enabled.status == WARN and "AccessDeniedException" in enabled.detail and REAL_LOOKING not in enabled.detail
    assert "not be enabled for AgentRFT" in enabled.fix


# --- issue 21 item 6: account enablement, the first live check --------------------------------------


def test_the_enablement_check_comes_right_after_the_identity_and_before_any_spend():
    checks = [row.check for row in preflight.judge(good_live_facts())]
    assert checks[:3] == ["credentials", "caller identity", "AgentRFT available to this account"]


@pytest.mark.parametrize(
    "versions, code, status, words",
    [
        (["1.0.0"], None, OK, "whether CreateJob is allowed shows only when a job starts"),
        (None, "AccessDeniedException", WARN, "refused"),
        (None, "ResourceNotFound", FAIL, "found no AgentRFT job schemas"),
        ([], None, FAIL, "found no AgentRFT job schemas"),
        (None, "RequestTimeout", WARN, "could not be asked"),
    ],
)
def test_enablement_verdicts(versions, code, status, words):
    row = preflight.check_agentrft_enabled(versions, code, f"{code}: x" if code else None)
    assert row.status == status and words in row.detail
    assert row.fix or status == OK


def test_the_enablement_call_is_a_read_only_operation_of_botocores_sagemaker_model():
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    operation = model.operation_model(preflight.ENABLEMENT_OPERATION)
    assert operation.input_shape.required_members == ["JobCategory"]
    assert preflight.ENABLEMENT_CATEGORY in operation.input_shape.members["JobCategory"].enum
    summary = operation.output_shape.members["JobConfigSchemas"].member
    assert list(summary.members) == ["JobConfigSchemaVersion"]
    assert preflight.ENABLEMENT_OPERATION.startswith("List")  # no side effects, no charge


# --- the architecture figure -----------------------------------------------------------------------


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60, metadata={"Software": None})
    return buffer.getvalue()


def test_architecture_figure_is_deterministic_and_complete():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = architecture.draw_architecture()
    texts = {t.get_text() for t in first.axes[0].texts}
    assert first.axes[0].get_title(loc="left") == architecture.TITLE
    assert {str(n) for n in range(1, len(architecture.ROLLOUT_STEPS) + 1)} <= texts
    assert [a[0] for a in architecture.ARROWS] == list(range(1, len(architecture.ROLLOUT_STEPS) + 1))
    assert all(box.offline.startswith("offline:") for box in architecture.BOXES)
    assert _png(first) == _png(architecture.draw_architecture())
    plt.close("all")
    with pytest.raises(ValueError, match="'middle'"):
        architecture.BOXES[0].anchor("middle")


# --- notebook 00's Studio install cell: standard library only -------------------------------------
def test_packages_to_install_names_missing_and_mismatched_pins(tmp_path):
    import importlib.metadata

    pytest_version = importlib.metadata.version("pytest")
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        f"pytest=={pytest_version}\n"
        "PyYAML==0.0.1 ; python_version >= '3.8'  # a marker and a comment\n"
        "surely-not-installed-pkg==1.0\n"
        "# a comment line\n",
        encoding="utf-8",
    )
    lock.write_text(
        lock.read_text(encoding="utf-8") + "PyYAML==0.0.2\n" + "pywin32==306 ; sys_platform == 'win32'\n",
        encoding="utf-8",
    )
    # Marker lines are left to pip (judging them needs `packaging`); the plain PyYAML pin counts.
    assert preflight.lock_pins(lock) == {
        "pytest": pytest_version,
        "pyyaml": "0.0.2",
        "surely-not-installed-pkg": "1.0",
    }
    needed = preflight.packages_to_install(lock)
    assert needed == [
        f"pyyaml: have {importlib.metadata.version('PyYAML')}, tested 0.0.2",
        "surely-not-installed-pkg: have missing, tested 1.0",
    ]


def test_the_course_venv_needs_no_install():
    assert preflight.packages_to_install() == []


def test_install_commands_install_the_lock_then_the_repo_without_deps(tmp_path):
    first, second = preflight.install_commands(tmp_path, python="/usr/bin/python3")
    assert first == ["/usr/bin/python3", "-m", "pip", "install", "--quiet", "-r", str(tmp_path / "requirements.lock")]
    assert second[-3:] == ["--no-deps", "-e", str(tmp_path)]


def test_the_install_cell_imports_nothing_the_bootstrap_needs():
    # A Studio kernel without the course's packages must still run notebook 00's install cell.
    import subprocess
    import sys

    from mtrl_course import config

    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); from mtrl_course import preflight; "
        "preflight.in_sagemaker_studio(); preflight.packages_to_install(); preflight.install_commands('.'); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'numpy', 'boto3', 'botocore', 'moto', "
        "'matplotlib', 'mlflow', 'sagemaker', 'strands'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(config.REPO_ROOT / "agent_src")], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def _install_cell():
    import nbformat

    nb = nbformat.read(config.NOTEBOOKS_DIR / "00_setup.ipynb", as_version=4)
    [cell] = [c for c in nb.cells if c.get("id") == "studio-install"]
    return cell


def test_notebook_00s_install_cell_runs_where_nothing_is_installed(tmp_path):
    # The notebooks import the toolkit as an installed package; in a fresh Studio kernel it is not
    # installed yet, so the install cell must find the course folder and run the installer on the
    # standard library alone. A virtual environment without pip or any package stands in for that
    # kernel: its interpreter runs the cell (from notebooks/, as Jupyter does) and the installer.
    import subprocess
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "bare")
    bare_python = tmp_path / "bare" / "bin" / "python"
    done = subprocess.run(
        [str(bare_python), "-E", "-c", _install_cell().source],
        cwd=config.NOTEBOOKS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("skipped: not a SageMaker Studio space")


def test_the_install_cell_never_edits_sys_path_and_restarts_on_the_installer_s_status():
    import re

    source = _install_cell().source
    assert "sys.path" not in source
    assert '-m", "mtrl_course.preflight", "studio-install"' in source
    [restart] = re.findall(r"^RESTART = (\d+)", source, re.M)
    assert int(restart) == preflight.RESTART_EXIT_STATUS


def _in_studio(monkeypatch, tmp_path, inside: bool) -> None:
    marker = tmp_path / "resource-metadata.json"
    if inside:
        marker.write_text("{}", encoding="utf-8")
    monkeypatch.setattr(preflight, "STUDIO_METADATA_FILE", marker)


def test_studio_install_outside_studio_installs_nothing(monkeypatch, tmp_path, capsys):
    _in_studio(monkeypatch, tmp_path, inside=False)
    ran = []
    assert preflight.studio_install(tmp_path, run=lambda *a, **k: ran.append(a)) == 0
    assert ran == []
    assert capsys.readouterr().out.startswith("skipped: not a SageMaker Studio space")


def test_studio_install_in_studio_with_the_tested_versions_installs_nothing(monkeypatch, tmp_path, capsys):
    _in_studio(monkeypatch, tmp_path, inside=True)
    monkeypatch.setattr(preflight, "packages_to_install", lambda: [])
    ran = []
    assert preflight.studio_install(tmp_path, run=lambda *a, **k: ran.append(a)) == 0
    assert ran == []
    assert "already has every package" in capsys.readouterr().out


def test_studio_install_installs_the_lock_then_the_course_and_asks_for_a_restart(monkeypatch, tmp_path, capsys):
    _in_studio(monkeypatch, tmp_path, inside=True)
    monkeypatch.setattr(preflight, "packages_to_install", lambda: ["boto3: have 1.0, tested 1.44.8"])
    ran = []
    status = preflight.studio_install(tmp_path, run=lambda command, check: ran.append((command, check)))
    assert status == preflight.RESTART_EXIT_STATUS != 0
    assert ran == [(command, True) for command in preflight.install_commands(tmp_path)]
    out = capsys.readouterr().out
    assert "1 differ, e.g. boto3: have 1.0, tested 1.44.8" in out and "restarts" in out


def test_the_installer_program_takes_one_action(capsys):
    with pytest.raises(SystemExit) as refused:
        preflight.main(["install-everything"])
    assert refused.value.code == 2
    assert "studio-install" in capsys.readouterr().err
