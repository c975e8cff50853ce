"""The offline world behind one face: what step modules and notebooks may use of `local/`.

Offline, every managed piece of the course has a local stand-in in this package (the MTRL
service, the Job Runtime, the AgentCore runtime, MLflow apps, pipelines, the hub, the stand-in
policy). Step modules (`training`, `monitoring`, `smoke`, `resources`, `cleanup`, ...) and the
notebooks reach them only through the functions below; the stand-ins themselves are reached by
the AWS calls the course makes anyway, through the seam in `mtrl_course.aws`. Nothing in this
package imports the seam or a step module (tests/test_design.py checks the rule).

| you want to | call |
|---|---|
| the running offline backend (moto + every stand-in; `local.offline_backend`) | `backend()` |
| start the real agent app as a local AgentCore runtime | `agent_runtime(name, env)`, `runtime_id_for(name)` |
| a runtime whose program never serves HTTP (notebook 03) | `NoServerRuntime(...)`, `NO_ENTRYPOINT_PROGRAM` |
| the Job Runtime emulator the agent samples from | `job_runtime()` |
| choose how offline jobs run (fast lane or full HTTP path) and inject a fault | `install_runners(lane=...)`, `injected_fault(kind)` |
| find, load or replay a trained stand-in adapter | `adapter_file`, `load_adapter`, `StandInPlayer` |
| the reference solver through the real handler | `play_through_handler(words)` |
| what the agent sends its policy under runtime settings; serve and invoke once | `agent_requests`, `serve_and_invoke_once` |
| jobs this process runs; forget deleted model packages | `running_jobs(category)`, `forget_model_packages(arns)` |
| the names of lanes, faults and defaults (`local.names`) | `LANE_FAST`, `FAULT_RESTART`, `FAULTS`, ... |
| what each reasoning effort means to the stand-in policy | `stand_in_efforts()` |

Every name is written here (no `__getattr__`), so editors and mypy see the face whole. Its only
import at load time is `local.names` (the standard library); the stand-ins are imported inside the
functions, so importing this face costs nothing until a function is called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtrl_course.local.names import (
    DEFAULT_RUNTIME_NAME,
    FAULT_AGENT_ERROR,
    FAULT_AUTH,
    FAULT_MISSING_REWARD,
    FAULT_RESTART,
    FAULTS,
    INIT_TIMEOUT_MESSAGE,
    LANE_FAST,
    LANE_FULL,
    LANES,
    MLFLOW_UI_WORKERS,
    NO_ENTRYPOINT_PROGRAM,
    NO_SERVER_NAME,
    OFFLINE_INIT_TIMEOUT_S,
)

if TYPE_CHECKING:
    from mtrl_course.local.no_server import NoServerRuntime as _NoServerRuntime
    from mtrl_course.local.stand_in_policy import Adapter, Effort
    from mtrl_course.local.agent_server import LocalAgentRuntime
    from mtrl_course.local.offline_backend import OfflineBackend

__all__ = [
    "DEFAULT_RUNTIME_NAME",
    "FAULTS",
    "FAULT_AGENT_ERROR",
    "FAULT_AUTH",
    "FAULT_MISSING_REWARD",
    "FAULT_RESTART",
    "INIT_TIMEOUT_MESSAGE",
    "LANES",
    "LANE_FAST",
    "LANE_FULL",
    "MLFLOW_UI_WORKERS",
    "NO_ENTRYPOINT_PROGRAM",
    "NO_SERVER_NAME",
    "OFFLINE_INIT_TIMEOUT_S",
    "InProcessInvocation",
    "NoServerRuntime",
    "StandInPlayer",
    "adapter_file",
    "agent_requests",
    "agent_runtime",
    "backend",
    "forget_model_packages",
    "get_runtime",
    "injected_fault",
    "install_runners",
    "invoke_app_in_process",
    "job_runtime",
    "load_adapter",
    "local_runtimes",
    "mlflow_app_registry",
    "play_through_handler",
    "runner_ready",
    "running_jobs",
    "runtime_id_for",
    "serve_and_invoke_once",
    "stand_in_efforts",
]


def backend() -> OfflineBackend:
    """The process's running offline backend (the seam starts it on the first AWS session)."""
    from mtrl_course.local.offline_backend import active

    return active()


def runtime_id_for(name: str) -> str:
    """The AgentCore runtime id a runtime called `name` gets (`<name>-<10 characters>`)."""
    from mtrl_course.local.agent_server import runtime_id_for as _runtime_id_for

    return _runtime_id_for(name)


def agent_runtime(
    name: str = DEFAULT_RUNTIME_NAME, env: Mapping[str, str] | None = None, *, register: bool = True
) -> LocalAgentRuntime:
    """A local AgentCore runtime serving the real agent app (not started yet: call `.start()`)."""
    from mtrl_course.local.agent_server import LocalAgentRuntime

    return LocalAgentRuntime(name=name, env=dict(env or {}), register=register)


def local_runtimes() -> list[Any]:
    """Every runtime registered with the offline backend (what GetAgentRuntime can find)."""
    return list(backend().runtimes.all())


def get_runtime(arn: str) -> Any | None:
    return backend().runtimes.get(arn)


def job_runtime() -> Any:
    """The process's Job Runtime emulator, attached to the backend and trusting its credentials."""
    from mtrl_course.local import runner

    return runner.job_runtime()


def install_runners(
    *,
    lane: str = LANE_FAST,
    adapter_dir: Path | None = None,
    fault: str | None = None,
    fault_step: int = 1,
    **options: Any,
) -> None:
    """Choose how this process's offline jobs run: the lane, where adapters go, and an optional fault.

    `fault` is one of the runner's FAULTS (e.g. "runtime_restart"), injected at `fault_step`.
    Installing again replaces the earlier choice (install without a fault to clear one).
    """
    from mtrl_course.local import runner

    if adapter_dir is not None:
        options["adapter_dir"] = adapter_dir
    runner.install(backend().service, lane=lane, fault=fault, fault_step=fault_step, **options)


@contextlib.contextmanager
def injected_fault(fault: str, *, step: int = 1, adapter_dir: Path | None = None) -> Iterator[None]:
    """Offline jobs started inside the block meet `fault` at `step`; the usual runners come back after.

    The faults are the service's failure modes the walkthrough names (the runner's FAULTS):
    a runtime restarted mid-job, rollouts whose sampling is refused, an agent error, a rollout
    that reports no reward.
    """
    install_runners(fault=fault, fault_step=step, adapter_dir=adapter_dir)
    try:
        yield
    finally:
        install_runners(adapter_dir=adapter_dir)


def runner_ready(category: str) -> bool:
    """True when this process's local service has a runner installed for `category`."""
    return backend().service.runner(category) is not None


def running_jobs(category: str | None = None) -> list[str]:
    """Names of the jobs this process runs that are InProgress or Stopping."""
    return sorted(job.name for job in backend().service.running_here(category))


def forget_model_packages(package_arns: Iterable[str]) -> None:
    """Tell the local service these model packages were deleted (it re-registers finished jobs' otherwise)."""
    backend().service.forget_model_packages(list(package_arns))


def mlflow_app_registry() -> Any:
    """The offline MLflow apps (`info(arn)` gives an app's local tracking URI)."""
    return backend().mlflow


def adapter_file(package_arn: str | None, directory: Path) -> Path | None:
    """Where the stand-in adapter of a model package is stored under `directory`, if known."""
    from mtrl_course.local import standin_lane

    return standin_lane.adapter_for_package(package_arn, directory) if package_arn else None


def load_adapter(path: str | Path) -> Adapter:
    """Read a stand-in adapter package (ValueError naming the file if it is not one)."""
    from mtrl_course.local.stand_in_policy import Adapter

    return Adapter.load(path)


class StandInPlayer:
    """Plays games with one stand-in adapter through the real handler, in this process.

    Each game goes through the real `run_rollout` (Strands agent, tool, reward) with the stand-in
    behind a private Job Runtime emulator, as the job's validation plays it.
    """

    def __init__(self, adapter: Adapter, *, seed: int, job_arn: str):
        from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator
        from mtrl_course.local.stand_in_policy import StandInPolicy

        self.job_arn = job_arn
        self.emulator = JobRuntimeEmulator()
        self.emulator.register_job(job_arn, StandInPolicy(adapter, seed=seed))

    def play(
        self,
        trajectory_id: str,
        task: str,
        *,
        rng_key: Sequence[int],
        temperature: float = 0.0,
        observer: Callable[[str, Any], None] | None = None,
    ) -> Any:
        """Play one game; `observer(task_id, game)` is handed the finished game."""
        from mtrl_course.local import fastlane

        self.emulator.start_trajectory(self.job_arn, trajectory_id, rng_key=list(rng_key))
        return fastlane.play_episode(
            self.emulator, self.job_arn, trajectory_id, task, temperature=temperature, observer=observer
        )


def agent_requests(task: str, environments: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, Any]]:
    """What the agent sends its policy on the first turn under each set of runtime variables.

    Plays `task` once per entry of `environments` (label -> variables such as REASONING_EFFORT)
    through the real `run_rollout`, with the reference solver as the policy, and records the
    system prompt and the request parameters of its first model call. The agent's own variables
    are cleared first, so each entry is exactly what a runtime with those variables would send.
    """
    from wordle_agent import rollout

    from mtrl_course import config
    from mtrl_course.local.solver_model import SolverPolicyModel

    seen: dict[str, dict[str, Any]] = {}

    class Recording(SolverPolicyModel):
        def stream(self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any) -> Any:
            seen[label].setdefault("system prompt", system_prompt)
            return super().stream(messages, tool_specs, system_prompt, **kwargs)

    def factory(endpoint: str, params: dict) -> Recording:
        seen[label].setdefault("request parameters", dict(params))
        return Recording()

    agent_variables = (rollout.REASONING_EFFORT_ENV, rollout.REASONING_PROMPT_HINT_ENV)
    for label, variables in environments.items():
        seen[label] = {}
        with config.environment(variables, unset=agent_variables):
            rollout.run_rollout({"prompt": task}, model=factory)
    return seen


def serve_and_invoke_once(
    task: str, runtime_env: Mapping[str, str], *, job_arn: str, rollout_id: str, session: Any
) -> tuple[Any, Any, list[str]]:
    """Serve the real agent app on loopback, invoke it once through boto3, and stop it.

    The untrained stand-in policy answers behind the process's Job Runtime emulator, so the
    rollout really plays and reports. The app is `wordle_agent.main.build_app` with the deployed
    model (the Job Runtime client) and an observer that keeps the finished game. Returns the Job
    Runtime's record of the trajectory, the finished game and the lines worth printing (ARN,
    /ping, the invocation's answer, and whether the runtime still serves after it is stopped).
    """
    import json

    import httpx
    from wordle_agent import main, rollout

    from mtrl_course.local.stand_in_policy import StandInPolicy
    from mtrl_course.local.agent_server import LocalAgentRuntime

    emulator = job_runtime().serve()
    emulator.register_job(job_arn, StandInPolicy())
    games: list[Any] = []
    served = LocalAgentRuntime(
        name=DEFAULT_RUNTIME_NAME,
        env={**runtime_env, rollout.RUNTIME_ENDPOINT_ENV: emulator.endpoint},
        app=main.build_app(rollout.openai_policy_model, observer=lambda task_id, game: games.append(game)),
    ).start()
    lines = [f"runtime ARN: {served.arn}"]
    try:
        lines.append(f"GET /ping -> status {httpx.get(served.url + '/ping').json()['status']}")
        answer = session.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=served.arn,
            runtimeSessionId=f"mtrl-wordle-02-{rollout_id}-session",  # AgentCore wants 33+ characters
            payload=json.dumps({"prompt": task, "metadata": {"jobArn": job_arn, "rolloutId": rollout_id}}),
        )
        lines.append(f"POST /invocations -> HTTP {answer['statusCode']}: {answer['response'].read().decode()}")
        record = emulator.trajectory(job_arn, rollout_id)
    finally:
        served.close()
        emulator.stop()
    lines.append(f"runtime serving after stop: {served.serving}")
    return record, games[0] if games else None, lines


@dataclass(frozen=True)
class InProcessInvocation:
    """One rollout POSTed to an app in this kernel, and what the Job Runtime made of it."""

    status: int  # the HTTP status the app answered
    body: Any  # its JSON answer (or text)
    record: Any  # the Job Runtime's TrajectoryRecord, or None: it never heard of this rollout
    rejected: tuple[Any, ...]  # calls the Job Runtime refused meanwhile (RejectedCall)

    @property
    def reward_recorded(self) -> tuple[float, ...]:
        """The rewards the Job Runtime recorded for the rollout: () when none arrived."""
        return tuple(self.record.rewards or ()) if self.record is not None else ()


def invoke_app_in_process(app: Any, task: str, *, job_arn: str, rollout_id: str) -> InProcessInvocation:
    """POST one service-shaped rollout to `app` in this kernel and read the Job Runtime's record.

    `app` is any `BedrockAgentCoreApp`, served with Starlette's test client (no port), so a
    notebook can try a variant of `main.py`, such as one with its decorators stacked the wrong
    way. A Job Runtime emulator with the untrained stand-in policy serves `job_arn`; the app's
    model calls and the SDK's reward reports reach it through `RFT_RUNTIME_ENDPOINT`, as on
    AgentCore. An app whose reward report never ran leaves no reward in the record, whatever
    HTTP status it answered.
    """
    import json

    from starlette.testclient import TestClient
    from wordle_agent import rollout

    from mtrl_course import config
    from mtrl_course.local.stand_in_policy import StandInPolicy

    emulator = job_runtime().serve()
    if job_arn in emulator.jobs():
        emulator.set_policy(job_arn, StandInPolicy())
    else:
        emulator.register_job(job_arn, StandInPolicy())
    already_rejected = len(emulator.rejections())
    payload = {"prompt": task, "metadata": {"jobArn": job_arn, "rolloutId": rollout_id}}
    try:
        with config.environment({rollout.RUNTIME_ENDPOINT_ENV: emulator.endpoint}), TestClient(app) as client:
            reply = client.post("/invocations", json=payload)
        try:
            body = reply.json()
        except json.JSONDecodeError:
            body = reply.text
        known = rollout_id in {t.trajectory_id for t in emulator.trajectories(job_arn)}
        return InProcessInvocation(
            status=reply.status_code,
            body=body,
            record=emulator.trajectory(job_arn, rollout_id) if known else None,
            rejected=tuple(emulator.rejections()[already_rejected:]),
        )
    finally:
        emulator.stop()


def play_through_handler(words: Iterable[str], solver: Any = None) -> Any:
    """The reference solver through the real rollout handler, in-process (a DataFrame per word)."""
    from mtrl_course.local.solver_model import play_through_handler as _play

    return _play(words, solver)


def NoServerRuntime(  # noqa: N802  (a class to its callers: `with local.NoServerRuntime(...) as runtime`)
    name: str = NO_SERVER_NAME, *, init_timeout: float = OFFLINE_INIT_TIMEOUT_S
) -> _NoServerRuntime:
    """A runtime whose program never serves HTTP (notebook 03); `local.no_server.NoServerRuntime`."""
    from mtrl_course.local.no_server import NoServerRuntime as _NoServerRuntime

    return _NoServerRuntime(name, init_timeout=init_timeout)


def stand_in_efforts() -> Mapping[str, Effort]:
    """What each reasoning effort means to the stand-in policy (its `EFFORTS` table, read-only)."""
    from types import MappingProxyType

    from mtrl_course.local.stand_in_policy import EFFORTS

    return MappingProxyType(EFFORTS)
