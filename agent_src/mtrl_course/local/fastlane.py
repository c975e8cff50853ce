"""The fast lane: the real rollout handler, game, reward and policy, all in one process.

The full offline path is the real thing end to end: the local MTRL service invokes the AgentCore
app over HTTP, the SDK's handler wraps `run_rollout`, Strands' OpenAIModel (through `wrap_model`)
posts chat completions to the Job Runtime emulator over loopback, and the SDK's feedback client
posts CompleteRollout and UpdateReward back. On two cores that manages a few episodes a second,
far too slow to train on. The fast lane keeps every piece that decides an episode and drops only
the transport:

- the same `wordle_agent.rollout.run_rollout` (task parsing, Strands agent, `guess_word` tool,
  retries, raw-text recovery, reward), handed its model and the caller's game observer:
  `handler(payload, model=factory, observer=observer)`;
- a Strands custom model provider (`FastLaneModel`) instead of OpenAIModel: it turns the
  Strands messages into the OpenAI request body OpenAIModel would send (same messages, tools
  and sampling parameters; only `stream` is false, as nothing crosses a wire), calls the
  emulator's in-process `sample` (so every turn is routed to the job's policy and recorded
  exactly as over HTTP, as a trusted caller without a bearer token), and yields the answer as
  Strands stream events;
- completion and reward reported to the emulator in-process, the way `sagemaker_rft_handler`
  reports them (`report_result`).

Each episode hands its rollout a factory bound to its own trajectory (and the caller's observer,
if any), so nothing process-wide is swapped: every other rollout in the process (for instance the
thread-mode AgentCore app serving a full-path job) plays with the model its own caller handed it.
A context variable still marks the thread that plays an episode, for one thing only: keeping the
agent's per-rollout log lines quiet.

Measured on the course's 2-core machine (whole-process medians of 3 runs of 256 episodes at
temperature 1): about 90 to 110 episodes per second with the base stand-in (5.4 model calls a
game) and 125 to 155 with a trained adapter (4.1 calls a game), against a target of 40.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import AsyncIterable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from strands.models.openai import OpenAIModel

from mtrl_course.local.provider import InProcessModel
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator, JobRuntimeError
from wordle_agent import rollout

logger = logging.getLogger(__name__)

POLICY_MODEL_ID = "default"
# What the SDK's decorator treats as "the trajectory was already closed" (skip, do not fail).
ALREADY_CLOSED_MARKERS = ("not in valid status", "Cannot transition trajectory")
FAILED, READY = "failed", "ready"
# sagemaker_rft_handler reports an error status with this reward (feedback.report_error).
ERROR_REWARD = 0.0

# A rollout handler: `handler(payload, model=factory, observer=observer)`, as
# `wordle_agent.rollout.run_rollout` (`observer` may be None).
Handler = Callable[..., Any]


class SamplingError(RuntimeError):
    """A sampling call the Job Runtime refused; `status_code` as an HTTP client would report it.

    `wordle_agent.rollout` reads `status_code` (401/403 means re-sign and retry), exactly as it
    reads the OpenAI client's APIStatusError on the HTTP path.
    """

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"Error code: {status_code} - {message}")
        self.status_code = status_code


@dataclass(frozen=True)
class Binding:
    """The trajectory a fast-lane thread is playing, and the sampling parameters of its rollout."""

    emulator: JobRuntimeEmulator
    job_arn: str
    trajectory_id: str
    sampling: dict[str, Any] = field(default_factory=dict)
    # Sampling calls the emulator refused ("403 Authentication failed", ...): over HTTP the
    # emulator logs them; in-process they are only exceptions, so the lane keeps them here.
    refusals: list[str] = field(default_factory=list)


_BINDING: contextvars.ContextVar[Binding | None] = contextvars.ContextVar("fastlane_binding", default=None)

# The agent logs a line per rollout (and a warning per recovered raw-text guess): fine for a
# runtime's log stream, a flood in a notebook that plays thousands of fast-lane episodes.
QUIET_LOGGERS = ("wordle_agent.rollout",)


class _QuietFastLane(logging.Filter):
    """Drop the agent's records below ERROR while a fast-lane episode plays (other threads log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or _BINDING.get() is None


for _name in QUIET_LOGGERS:
    logging.getLogger(_name).addFilter(_QuietFastLane())


class FastLaneModel(InProcessModel):
    """A Strands model provider that samples from the Job Runtime emulator in-process."""

    STRUCTURED_OUTPUT_REFUSAL = "the fast lane only plays the rollout's tool-calling loop"

    def __init__(self, binding: Binding, params: dict | None = None) -> None:
        self.binding = binding
        self.config: dict[str, Any] = {"model_id": POLICY_MODEL_ID, "params": dict(params or {})}

    def request(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The chat-completions body OpenAIModel (as wrapped by `wrap_model`) would post."""
        body: dict[str, Any] = {
            "model": POLICY_MODEL_ID,
            # OpenAIModel's own converter, so the policy reads exactly what it reads over HTTP.
            "messages": OpenAIModel.format_request_messages(
                messages, system_prompt, system_prompt_content=kwargs.get("system_prompt_content")
            ),
            "stream": False,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": spec["name"],
                        "description": spec["description"],
                        "parameters": spec["inputSchema"]["json"],
                    },
                }
                for spec in tool_specs or []
            ],
        }
        body.update(self.config.get("params") or {})
        body.update(self.binding.sampling)
        return body

    async def stream(  # type: ignore[override]  # Strands adds keyword-only options; **kwargs takes them
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[dict[str, Any]]:
        body = self.request(messages, tool_specs, system_prompt, **kwargs)
        binding = self.binding
        try:
            response = binding.emulator.sample(binding.job_arn, binding.trajectory_id, body)
        except JobRuntimeError as error:
            binding.refusals.append(f"{error.status} {error.message}")
            raise SamplingError(error.status, error.message) from error
        for event in completion_events(response):
            yield event


def completion_events(response: dict) -> list[dict[str, Any]]:
    """The Strands stream events for one OpenAI chat completion (text first, then tool calls)."""
    choice = (response.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    if message.get("content"):
        events += [
            {"contentBlockStart": {"start": {}}},
            {"contentBlockDelta": {"delta": {"text": message["content"]}}},
            {"contentBlockStop": {}},
        ]
    calls = message.get("tool_calls") or []
    for call in calls:
        function = call.get("function") or {}
        events += [
            {"contentBlockStart": {"start": {"toolUse": {"name": function.get("name"), "toolUseId": call.get("id")}}}},
            # Strands expects the input as a JSON *string*, as a streaming API sends it.
            {"contentBlockDelta": {"delta": {"toolUse": {"input": function.get("arguments") or "{}"}}}},
            {"contentBlockStop": {}},
        ]
    if calls:
        stop = "tool_use"
    elif choice.get("finish_reason") == "length":
        # As OpenAIModel maps it: the reply ran out of max_tokens (Strands then raises).
        stop = "max_tokens"
    else:
        stop = "end_turn"
    events.append({"messageStop": {"stopReason": stop}})
    usage = response.get("usage") or {}
    prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    events.append(
        {
            "metadata": {
                "usage": {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion},
                "metrics": {"latencyMs": 0},
            }
        }
    )
    return events


# --- nothing to install ---------------------------------------------------------------------------


@contextmanager
def installed() -> Iterator[None]:
    """Kept for callers written when the lane swapped a process-wide factory: it installs nothing.

    Every episode now hands its rollout its own model (`play_episode`), so a block needs no set-up.
    """
    yield


# --- one episode -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Episode:
    """What one fast-lane rollout returned and how it was reported."""

    trajectory_id: str
    result: Any
    reported: str  # "ready", "failed", "complete-only", "nothing" or "skipped"
    error: str | None
    seconds: float
    refusals: tuple[str, ...] = ()


def report_result(emulator: JobRuntimeEmulator, job_arn: str, trajectory_id: str, result: Any) -> str:
    """Report a handler's result as `sagemaker_rft_handler` does, but in-process.

    Over HTTP the SDK's RolloutFeedbackClient mints a bearer token and POSTs once per call
    (CompleteRollout, then UpdateReward); here the same two operations are direct calls. The
    rules are the decorator's: a float reward -> ready + [reward]; a list -> ready + the list;
    status "error" -> failed + [0.0]; status "skipped" or not a dict -> nothing; no reward key ->
    CompleteRollout only. If CompleteRollout is refused, UpdateReward is never sent.
    """
    if not isinstance(result, dict) or result.get("status") == "skipped":
        return "nothing"
    if result.get("status") == "error":
        emulator.complete_rollout(job_arn, trajectory_id, FAILED)
        emulator.update_reward(job_arn, trajectory_id, [ERROR_REWARD])
        return FAILED
    emulator.complete_rollout(job_arn, trajectory_id, READY)
    if "reward" not in result:
        return "complete-only"
    reward = result["reward"]
    emulator.update_reward(job_arn, trajectory_id, list(reward) if isinstance(reward, (list, tuple)) else [reward])
    return READY


def payload_for(
    prompt: str, job_arn: str, trajectory_id: str, *, temperature: float, top_p: float | None, max_tokens: int | None
) -> dict[str, Any]:
    """The invocation payload the service sends for one rollout (as in AGENT_SPEC section 4)."""
    params: dict[str, Any] = {"temperature": temperature}
    if top_p is not None:
        params["topP"] = top_p
    if max_tokens is not None:
        params["maxTokens"] = max_tokens
    return {"prompt": prompt, "metadata": {"jobArn": job_arn, "rolloutId": trajectory_id}, "inferenceParams": params}


def play_episode(
    emulator: JobRuntimeEmulator,
    job_arn: str,
    trajectory_id: str,
    prompt: str,
    *,
    temperature: float,
    top_p: float | None = None,
    max_tokens: int | None = None,
    handler: Handler = rollout.run_rollout,
    observer: rollout.GameObserver | None = None,
) -> Episode:
    """Play one rollout of `prompt` in-process and report it to the emulator; never raises.

    `handler` is the undecorated rollout function (the agent's `run_rollout` by default), called as
    `handler(payload, model=factory, observer=observer)` with a factory bound to this trajectory;
    `observer(task_id, game)` sees the finished game. An exception from the handler is reported as
    the decorator would (CompleteRollout failed, reward 0.0).
    """
    started = time.monotonic()
    payload = payload_for(prompt, job_arn, trajectory_id, temperature=temperature, top_p=top_p, max_tokens=max_tokens)
    sampling: dict[str, Any] = {"temperature": temperature}
    if top_p is not None:
        sampling["top_p"] = top_p
    if max_tokens is not None:
        sampling["max_tokens"] = max_tokens
    binding = Binding(emulator, job_arn, trajectory_id, sampling)

    def model(endpoint: str, params: dict) -> FastLaneModel:
        return FastLaneModel(binding, params)  # the endpoint is the emulator's; no wire is crossed

    token = _BINDING.set(binding)
    result: Any = None
    error: str | None = None
    try:
        result = handler(payload, model=model, observer=observer)
    except Exception as exc:  # a custom handler's bug: the SDK reports it as a failed rollout
        error = f"{type(exc).__name__}: {exc}"
        result = {"status": "error", "error": error}
    finally:
        _BINDING.reset(token)
    try:
        reported = report_result(emulator, job_arn, trajectory_id, result)
    except JobRuntimeError as exc:
        if any(marker in exc.message for marker in ALREADY_CLOSED_MARKERS):
            reported = "skipped"
        else:
            reported = "nothing"
            error = error or f"reporting failed: {exc}"
            logger.warning("fast lane: reporting rollout %s failed: %s", trajectory_id, exc)
    return Episode(trajectory_id, result, reported, error, time.monotonic() - started, tuple(binding.refusals))
