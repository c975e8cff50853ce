"""One rollout: parse the task, play one game of Wordle with a Strands agent, return its reward.

The training service invokes the agent once per rollout with a payload like::

    {"prompt": "<task JSON string>",
     "metadata": {"jobArn": ..., "rolloutId": ..., "endpoint": ...},
     "inferenceParams": {"temperature": ..., "topP": ..., "maxTokens": ...}}

and reads back exactly one thing: ``{"reward": <float>}``. ``run_rollout`` always returns that,
whatever happens, because both alternatives fail the whole training job: an error status (or an
exception, which AgentCore turns into HTTP 500) is reported as a failed rollout, and a rollout
that never sent a sampling request to the policy ends the job with "No sampling requests were
received".

**A malformed task string** (not JSON, no answer, an answer that is not five letters, ...) is
logged as an error naming the problem; the handler then still sends ONE minimal sampling request
to the policy, so the service sees the rollout reach the policy, and returns the no-play reward
(-1.5), even if that request fails. Every rollout of the row gets the same -1.5, so its GRPO group
has zero advantage and the row teaches nothing, but the job survives. Rejecting bad rows is the
dataset validator's job, before upload, not the handler's: by the time a row reaches the
handler, raising would cost the whole training run.

Other robustness rules: hostile payloads never raise (wrong types, huge strings, unknown fields);
an attempt that made no guess is retried once with a fresh conversation and a short "call the
tool now" prompt; a 403 drops the cached bearer token and retries; an endpoint that rejects
``reasoning_effort`` makes the process stop sending it; everything stays within a wall-clock
budget (``ROLLOUT_BUDGET_SECONDS``) safely under the service's 600-second rollout timeout; and
guesses the model wrote as text instead of a tool call are recovered with a small penalty.

**A curriculum** may add ``"prior_guesses": ["CRANE", ...]`` to the task: the game plays those
words for the policy before its first turn (``WordleGame(answer, prior_guesses=...)`` says how the
game and the reward treat them) and the instruction gets their feedback lines and the knowledge
summary, under ``game.PRIOR_GUESSES_HEADER``. Words that cannot seed a game (not a list, not
dictionary words, repeated, the answer itself, more than five) make the task malformed.

The policy model is built by a factory, ``factory(endpoint, params)`` once per attempt, and every
caller hands the rollout its own: ``run_rollout(payload, model=factory)``. The deployed runtime
(``main.py``) hands it the Job Runtime's OpenAI-compatible client (``openai_policy_model``); the
toolkit's fast lane plays this same handler in-process with a Strands custom model. There is no
process default to fall back on and nothing process-wide to swap: two rollouts running at once
with different models each play with their own. Likewise ``observer(task_id, game)``, if given,
sees the finished game of that one rollout (the service only ever sees the reward).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import math
import os
import re
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.tools.executors import SequentialToolExecutor
from strands.types.tools import ToolContext

from wordle_agent.auth import TOKENS, current_region, default_region, rollout_region, use_rollout_region
from wordle_agent.game import MAX_TOOL_CALLS, WordleGame, check_prior_guesses
from wordle_agent.recovery import extract_guesses
from wordle_agent.reward import NO_PLAY_REWARD

logger = logging.getLogger(__name__)

# --- Environment settings (read on every rollout, so a test or a redeploy can change them) ------

REASONING_EFFORT_ENV = "REASONING_EFFORT"
REASONING_PROMPT_HINT_ENV = "REASONING_PROMPT_HINT"
ROLLOUT_BUDGET_ENV = "ROLLOUT_BUDGET_SECONDS"
RUNTIME_ENDPOINT_ENV = "RFT_RUNTIME_ENDPOINT"
# Raw-text recovery (wordle_agent.recovery) is on unless this says "0", "false", "no" or "off".
# Only for experiments: notebook 10 turns it off to show what a too-high learning rate did
# before the agent read guesses back out of text (every rollout at the floor, no gradient).
RAW_TEXT_RECOVERY_ENV = "RAW_TEXT_RECOVERY"
FALSE_WORDS = ("0", "false", "no", "off")
# gpt-oss reads these levels; anything else (unset, "off", a typo) sends no effort at all.
REASONING_LEVELS = ("low", "medium", "high")
TRUE_WORDS = ("1", "true", "yes", "on")
# The service abandons a rollout after its rollout_timeout of 600 s; 420 s leaves room for
# reporting the reward and for a slow final request to be cut off cleanly.
DEFAULT_BUDGET_SECONDS = 420.0
# An attempt started with less time than this could not finish a single model call.
MIN_ATTEMPT_SECONDS = 1.0
# The regional Job Runtime endpoint, used when neither the payload nor the environment names one.
RUNTIME_ENDPOINT_TEMPLATE = "https://job-runtime.sagemaker.{region}.api.aws"

# --- The policy model -----------------------------------------------------------------------------

# The Job Runtime serves the job's policy under this model id on its OpenAI-compatible API.
POLICY_MODEL_ID = "default"
OPENAI_API_PATH = "/v1"
REASONING_EFFORT_PARAM = "reasoning_effort"
# The OpenAI client's own retries (with backoff) on 429, 5xx and dropped connections: transient
# errors under load should not cost a whole attempt.
POLICY_HTTP_RETRIES = 2

# --- Task and payload limits ----------------------------------------------------------------------

# A task string is a small JSON object (~100 characters); anything this long is not a task.
MAX_TASK_CHARS = 20_000
# Optional curriculum field of a task: words played for the policy before its first turn.
PRIOR_GUESSES_KEY = "prior_guesses"
MAX_INSTRUCTION_CHARS = 10_000
WORD_LENGTH = 5
# Metadata values end up in HTTP headers and URLs: printable ASCII, no spaces, bounded length.
MAX_METADATA_CHARS = 2_048
MAX_TEMPERATURE = 2.0
MAX_SAMPLING_TOKENS = 1_000_000

# --- The agent loop -------------------------------------------------------------------------------

# Model turns per attempt: one per tool call the game accepts, plus room for a closing message.
# It only bites on runaway loops (unknown tool names, invalid arguments), which the game's own
# tool-call cap does not see.
MAX_AGENT_TURNS = MAX_TOOL_CALLS + 2
# Re-signed retries after a 403; when a fresh token is refused too, the token is not the cause.
MAX_AUTH_RETRIES = 2
# Attempts per rollout at most: the first, one fresh-conversation retry when no guess was made,
# the re-signed retries and one retry without reasoning_effort.
MAX_ATTEMPTS = 1 + 1 + MAX_AUTH_RETRIES + 1

TOOL_NAME = "guess_word"

SYSTEM_PROMPT = """\
You are playing Wordle. A secret five-letter English word has been chosen, and you have six \
guesses to find it.

You guess by calling the guess_word tool with one five-letter word (letters a-z); a guess \
written as text instead of a tool call is penalised. The tool answers with the colour of every \
letter and a summary of everything known so far:
- green: right letter, right position;
- yellow: the letter is in the word, but at another position;
- gray: the letter is not in the word (or not that many times).
Input that is not five letters does not use a guess. Repeating a word does use one.

Strategy:
- Open with a word made of five different common letters, to learn as much as possible.
- Respect every clue: keep each green letter where it is, place each yellow letter somewhere \
new, and never play a gray letter again.
- Never repeat a word.
- While many words still fit, prefer guesses that try letters you have not used yet.

Call guess_word right away, and again after every answer, until you solve the word or the tool \
says the game is over. Keep your reasoning brief and do not describe your plan."""

REASONING_HINT_TEMPLATE = "Reasoning: {level}"

# The retry after an attempt that made no guess starts a fresh conversation with this appended.
CALL_TOOL_NOW_PROMPT = "Call the guess_word tool now with your first five-letter guess. Only tool calls count."
# The one request sent for a malformed task, so the service sees the rollout reach the policy.
MALFORMED_TASK_PROMPT = "Reply with the single word OK."

ModelFactory = Callable[[str, dict], Any]


class TaskError(ValueError):
    """The task string of a rollout payload is not a valid Wordle task."""


# --- Task and payload -----------------------------------------------------------------------------


def _decode_task(raw: object) -> tuple[str, str, str]:
    instruction, answer, task_id, _ = _decode_task_with_priors(raw)
    return instruction, answer, task_id


def _decode_task_with_priors(raw: object) -> tuple[str, str, str, list[str]]:
    if not isinstance(raw, str):
        raise TaskError(f"the task must be a JSON string, got {type(raw).__name__}")
    if len(raw) > MAX_TASK_CHARS:
        raise TaskError(f"the task string is {len(raw)} characters long, over the limit of {MAX_TASK_CHARS}")
    try:
        task = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise TaskError(f"the task string is not valid JSON ({error})") from None
    if not isinstance(task, dict):
        raise TaskError(
            f'the task JSON must be an object like {{"prompt": ..., "answer": ...}}, got {type(task).__name__}'
        )
    instruction = task.get("prompt")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(
            f"the task has no instruction: 'prompt' must be a non-empty string, got {_describe(instruction)}"
        )
    if len(instruction) > MAX_INSTRUCTION_CHARS:
        raise TaskError(
            f"the task's 'prompt' is {len(instruction)} characters long, over the limit of {MAX_INSTRUCTION_CHARS}"
        )
    answer = task.get("answer")
    if not isinstance(answer, str):
        raise TaskError(f"the task's 'answer' must be a string, got {_describe(answer)}")
    if not (len(answer) == WORD_LENGTH and answer.isascii() and answer.isalpha()):
        raise TaskError(f"the task's 'answer' must be exactly {WORD_LENGTH} letters a-z, got {answer[:40]!r}")
    task_id = task.get("id")
    shown_id = task_id[:80] if isinstance(task_id, str) else "-"
    try:
        priors = check_prior_guesses(task.get(PRIOR_GUESSES_KEY) or [], answer.upper())
    except ValueError as error:
        raise TaskError(f"the task's '{PRIOR_GUESSES_KEY}' cannot seed the game: {error}") from None
    return instruction, answer.upper(), shown_id, priors


def parse_task(raw: str) -> tuple[str, str]:
    """Decode a task string into (instruction, answer in uppercase).

    Raises ``TaskError`` (a ``ValueError``) naming the problem: not a string, too long, not
    JSON, not an object, missing or non-string ``prompt``/``answer``, or an answer that is not
    exactly five letters a-z. Whether the answer is in the answer list is not checked here (the
    dataset validator does that; the game accepts any five-letter answer).
    """
    instruction, answer, _ = _decode_task(raw)
    return instruction, answer


def parse_prior_guesses(raw: str) -> list[str]:
    """The task's optional `prior_guesses` (uppercase), validated as `parse_task` validates the rest.

    A curriculum field: words played for the policy before its first turn (see
    `wordle_agent.game.WordleGame` for how the game and reward treat them). Raises ``TaskError``
    if the task is invalid or the words cannot seed the game.
    """
    return _decode_task_with_priors(raw)[3]


def _describe(value: object) -> str:
    if value is None:
        return "nothing"
    return type(value).__name__


_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
_URL = re.compile(r"https?://[A-Za-z0-9.\-]+(?::\d{1,5})?(?:/[\x21-\x7e]*)?")
_METADATA_ALIASES = {
    "jobArn": ("jobArn", "job_arn"),
    "rolloutId": ("trajectory_id", "trajectoryId", "rolloutId"),
    "endpoint": ("endpoint",),
    "region": ("region",),
}
_PARAM_ALIASES = {
    "temperature": ("temperature",),
    "top_p": ("top_p", "topP"),
    "max_tokens": ("max_tokens", "maxTokens"),
}


def _clean_text(value: object, pattern: re.Pattern[str]) -> str | None:
    if isinstance(value, str) and len(value) <= MAX_METADATA_CHARS and pattern.fullmatch(value):
        return value
    return None


def _clean_metadata(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    patterns = {
        "jobArn": _HEADER_SAFE,
        "rolloutId": _HEADER_SAFE,
        "endpoint": _URL,
        "region": _REGION,
    }
    clean: dict[str, str] = {}
    for key, aliases in _METADATA_ALIASES.items():
        for alias in aliases:
            value = _clean_text(raw.get(alias), patterns[key])
            if value is not None:
                clean[key] = value.rstrip("/") if key == "endpoint" else value
                break
    return clean


def _clean_number(value: object, low: float, high: float, *, integer: bool = False) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or not low <= value <= high:
        return None
    if integer:
        return int(value) if float(value).is_integer() else None
    return float(value)


def _clean_inference_params(raw: object) -> dict[str, float]:
    if not isinstance(raw, dict):
        return {}
    limits = {
        "temperature": (0.0, MAX_TEMPERATURE, False),
        "top_p": (1e-9, 1.0, False),
        "max_tokens": (1, MAX_SAMPLING_TOKENS, True),
    }
    clean: dict[str, float] = {}
    for key, aliases in _PARAM_ALIASES.items():
        low, high, integer = limits[key]
        for alias in aliases:
            value = _clean_number(raw.get(alias), low, high, integer=integer)
            if value is not None:
                clean[key] = value
                break
    return clean


def sanitize_payload(payload: object) -> dict[str, Any]:
    """A copy of an invocation payload that is safe to hand to the SDK's rollout wrapper.

    ``sagemaker_rft_handler`` calls ``payload.get`` and builds a feedback client from the
    metadata *before* the handler runs, so a payload that is not an object, or metadata that is
    not one, would fail the invocation with HTTP 500 before any of our code could help. Keeps
    ``prompt`` untouched (``parse_task`` judges it), only well-formed metadata strings (job ARN,
    rollout id, an http(s) endpoint, a Region) and only numeric sampling parameters in range;
    drops everything else.
    """
    if not isinstance(payload, dict):
        return {"prompt": None}
    clean: dict[str, Any] = {"prompt": payload.get("prompt")}
    metadata = _clean_metadata(payload.get("metadata"))
    if metadata:
        # Written in so that the SDK's feedback client, which reads metadata.region first,
        # reports rewards to the same Region the model tokens are signed for.
        metadata["region"] = rollout_region(metadata)
        clean["metadata"] = metadata
    raw_params = payload.get("inferenceParams") or payload.get("inference_params")
    params = _clean_inference_params(raw_params)
    if params:
        clean["inferenceParams"] = params
    return clean


# --- Settings -------------------------------------------------------------------------------------

# Set once the endpoint has rejected reasoning_effort; from then on no request in this process
# sends it (the prompt hint, if enabled, stays).
_EFFORT_REJECTED = threading.Event()


@dataclass(frozen=True)
class RolloutSettings:
    """The environment settings one rollout runs with."""

    reasoning_effort: str | None
    prompt_hint: bool
    budget_seconds: float
    region: str
    runtime_endpoint: str | None
    recover_raw_text: bool = True


def read_settings() -> RolloutSettings:
    """Read the rollout settings from the environment (see the ``*_ENV`` constants)."""
    effort = os.environ.get(REASONING_EFFORT_ENV, "").strip().lower()
    hint = os.environ.get(REASONING_PROMPT_HINT_ENV, "").strip().lower() in TRUE_WORDS
    raw_budget = os.environ.get(ROLLOUT_BUDGET_ENV, "").strip()
    budget = DEFAULT_BUDGET_SECONDS
    if raw_budget:
        try:
            budget = float(raw_budget)
        except ValueError:
            budget = math.nan
        if not (math.isfinite(budget) and budget > 0):
            logger.warning(
                "%s=%r is not a positive number of seconds; using %s",
                ROLLOUT_BUDGET_ENV,
                raw_budget,
                DEFAULT_BUDGET_SECONDS,
            )
            budget = DEFAULT_BUDGET_SECONDS
    endpoint = os.environ.get(RUNTIME_ENDPOINT_ENV, "").strip().rstrip("/") or None
    recovery = os.environ.get(RAW_TEXT_RECOVERY_ENV, "").strip().lower() not in FALSE_WORDS
    return RolloutSettings(
        reasoning_effort=effort if effort in REASONING_LEVELS else None,
        prompt_hint=hint,
        budget_seconds=budget,
        region=default_region(),
        runtime_endpoint=endpoint,
        recover_raw_text=recovery,
    )


def resolve_endpoint(metadata: dict, settings: RolloutSettings) -> str:
    """``metadata.endpoint``, else ``RFT_RUNTIME_ENDPOINT``, else the regional Job Runtime URL."""
    endpoint = metadata.get("endpoint") if isinstance(metadata, dict) else None
    if isinstance(endpoint, str) and endpoint:
        return endpoint.rstrip("/")
    if settings.runtime_endpoint:
        return settings.runtime_endpoint
    return RUNTIME_ENDPOINT_TEMPLATE.format(region=settings.region)


def build_system_prompt(effort: str | None = None) -> str:
    """The system prompt; with ``effort`` a ``Reasoning: <level>`` line goes on top.

    gpt-oss reads its reasoning level from that line of the system prompt (its Harmony chat
    format), so the hint works even where the request parameter is ignored.
    """
    if effort:
        return REASONING_HINT_TEMPLATE.format(level=effort) + "\n\n" + SYSTEM_PROMPT
    return SYSTEM_PROMPT


def _request_params(settings: RolloutSettings) -> dict[str, Any]:
    if settings.reasoning_effort and not _EFFORT_REJECTED.is_set():
        return {REASONING_EFFORT_PARAM: settings.reasoning_effort}
    return {}


# --- The policy model factory ---------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """One SSL context (with the CA bundle loaded) for every policy request of the process."""
    return httpx.create_ssl_context()


class SharedSSLOpenAIModel(OpenAIModel):
    """Strands' ``OpenAIModel`` that builds each request's HTTP client on one shared SSL context.

    Stock ``OpenAIModel`` creates (and closes) a new ``AsyncOpenAI`` per request, and each new
    HTTP client loads the CA bundle into a new SSL context: about 55 ms of CPU per model call on
    the course's 2-core reference machine, most of a turn's cost against a fast endpoint. The
    client must stay per request (an httpx client cannot be shared across the event loops
    Strands creates), but the SSL context can be shared. If a future Strands stops calling
    ``_resolve_client_args``, this silently falls back to the stock behaviour (a test notices).
    """

    def _resolve_client_args(self) -> dict[str, Any]:
        args = dict(super()._resolve_client_args())
        if "http_client" not in args:
            args["http_client"] = openai.DefaultAsyncHttpxClient(verify=shared_ssl_context())
        return args


def openai_policy_model(endpoint: str, params: dict) -> Any:
    """The deployed runtime's factory (``main.py`` hands it to every rollout): the Job Runtime's
    policy through Strands ``OpenAIModel``.

    ``wrap_model`` adds the job and trajectory headers and merges the service's sampling
    parameters (temperature, max_tokens, top_p) into every request; the bearer token comes from
    the process-wide cache.
    """
    from sagemaker.train.rft.adapters.strands import wrap_model

    model = SharedSSLOpenAIModel(
        model_id=POLICY_MODEL_ID,
        client_args={
            "base_url": endpoint.rstrip("/") + OPENAI_API_PATH,
            "api_key": TOKENS.get(current_region()),
            "max_retries": POLICY_HTTP_RETRIES,
        },
        params=dict(params),
    )
    return wrap_model(model)


# An observer sees the finished game of the rollout it was handed to (the service only ever sees
# the reward). The toolkit uses it to show the guesses and shaping of in-process games.
GameObserver = Callable[[str, WordleGame], None]


def _notify(observer: GameObserver | None, task_id: str, game: WordleGame) -> None:
    """Hand the finished game to the rollout's observer; one that raises is logged and ignored:
    observing must never change a rollout's reward."""
    if observer is None:
        return
    try:
        observer(task_id, game)
    except Exception:
        logger.exception("the game observer failed; the rollout's reward is unaffected")


# --- Running the agent ----------------------------------------------------------------------------


def _run_with_deadline(make_coro: Callable[[], Awaitable[Any]], timeout: float) -> Any:
    """Run a coroutine to completion, cancelling it (TimeoutError) after ``timeout`` seconds.

    A hard cancel, not a cooperative one: a request stuck waiting for the endpoint is cut off too.
    """

    async def bounded() -> Any:
        return await asyncio.wait_for(make_coro(), timeout)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    # A caller inside a running event loop (a notebook cell) cannot block it with asyncio.run:
    # use a worker thread that carries the contextvars (the SDK's rollout context) along.
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, bounded()).result()


# Where the tool finds its rollout's game: the agent call's invocation state, which Strands hands
# to every tool call of that invocation (see `_play_attempt`).
GAME_STATE_KEY = "wordle_game"


# Defined once, not per rollout: building a tool makes Strands derive its input schema (a pydantic
# model), which cost about 8% of a rollout's CPU offline. A coroutine, not a plain function:
# Strands runs a synchronous tool in a worker thread (one per call), a coroutine on the agent's
# own event loop. The game needs no lock: the sequential executor runs one call at a time.
@tool(name=TOOL_NAME, context=True)
async def guess_word(guess: str, tool_context: ToolContext) -> str:
    """Play one Wordle guess and get feedback for each letter plus a summary of what is known.

    Args:
        guess: One five-letter English word, letters a-z only, for example CRANE.
    """
    game: WordleGame = tool_context.invocation_state[GAME_STATE_KEY]
    answer = game.guess(guess)
    if game.over or game.limit_reached:
        # Nothing is left to play: end the loop instead of paying for a closing model turn.
        tool_context.agent.cancel(after_current_tools=True)
    return answer


@dataclass
class _Attempt:
    messages: list = field(default_factory=list)
    error: BaseException | None = None
    timed_out: bool = False
    sent_effort: bool = False
    token: str | None = None
    stop_reason: str | None = None


def _play_attempt(
    factory: ModelFactory,
    endpoint: str,
    settings: RolloutSettings,
    game: WordleGame,
    prompt: str | None,
    history: list | None,
    timeout: float,
) -> _Attempt:
    params = _request_params(settings)
    attempt = _Attempt(messages=list(history or []), sent_effort=bool(params))
    try:
        model = factory(endpoint, dict(params))
        client_args = getattr(model, "client_args", None)
        if isinstance(client_args, dict) and isinstance(client_args.get("api_key"), str):
            attempt.token = client_args["api_key"]
        hint = settings.reasoning_effort if settings.prompt_hint else None
        agent = Agent(
            model=model,
            tools=[guess_word],
            system_prompt=build_system_prompt(hint),
            messages=list(history or []),
            callback_handler=None,
            # One guess at a time: parallel tool calls in one turn must not race on the game.
            tool_executor=SequentialToolExecutor(),
        )
    except Exception as error:
        attempt.error = error
        return attempt
    try:
        result = _run_with_deadline(
            lambda: agent.invoke_async(
                prompt, invocation_state={GAME_STATE_KEY: game}, limits={"turns": MAX_AGENT_TURNS}
            ),
            timeout,
        )
        attempt.stop_reason = getattr(result, "stop_reason", None)
    except TimeoutError as error:
        attempt.error, attempt.timed_out = error, True
    except (Exception, asyncio.CancelledError) as error:
        attempt.error = error
    attempt.messages = list(agent.messages)
    return attempt


def _error_chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


_STATUS_403 = re.compile(r"\b40[13]\b")


def is_auth_failure(error: BaseException) -> bool:
    """True for a 401/403 or an "authentication failed" message anywhere in the error chain."""
    for item in _error_chain(error):
        if getattr(item, "status_code", None) in (401, 403):
            return True
        text = str(item).lower()
        if "authentication failed" in text or _STATUS_403.search(text):
            return True
    return False


def rejects_reasoning_effort(error: BaseException) -> bool:
    """True when the endpoint refused the request because of the reasoning_effort parameter."""
    for item in _error_chain(error):
        status = getattr(item, "status_code", None)
        text = str(item)
        if REASONING_EFFORT_PARAM in text and (status in (400, 422) or "400" in text):
            return True
    return False


def _assistant_texts(messages: list) -> Iterator[str]:
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                yield block["text"]


def _recover_raw_text_guesses(game: WordleGame, conversations: list[list]) -> int:
    played = 0
    for messages in conversations:
        for text in _assistant_texts(messages):
            for word in extract_guesses(text):
                if game.over or game.limit_reached:
                    return played
                if word in game.guesses:
                    continue
                game.guess_from_text(word)
                played += 1
    return played


def _reach_policy(factory: ModelFactory, endpoint: str, settings: RolloutSettings, timeout: float) -> None:
    """Send one minimal sampling request; failures are logged, never raised."""
    try:
        model = factory(endpoint, _request_params(settings))
        agent = Agent(model=model, callback_handler=None)
        _run_with_deadline(lambda: agent.invoke_async(MALFORMED_TASK_PROMPT, limits={"turns": 1}), timeout)
    except Exception as error:
        logger.warning("the minimal sampling request for a malformed task failed: %s", error)


def _play_rollout(
    payload: dict[str, Any], started: float, factory: ModelFactory, observer: GameObserver | None
) -> float:
    metadata = payload.get("metadata") or {}
    region = rollout_region(metadata)
    with use_rollout_region(region):
        settings = dataclasses.replace(read_settings(), region=region)
        return _play_rollout_in_region(payload, started, settings, factory, observer)


def _play_rollout_in_region(
    payload: dict[str, Any],
    started: float,
    settings: RolloutSettings,
    factory: ModelFactory,
    observer: GameObserver | None = None,
) -> float:
    metadata = payload.get("metadata") or {}
    rollout_id = metadata.get("rolloutId", "-")
    endpoint = resolve_endpoint(metadata, settings)
    deadline = started + settings.budget_seconds

    try:
        instruction, answer, task_id, priors = _decode_task_with_priors(payload.get("prompt"))
    except TaskError as error:
        logger.error(
            "rollout %s: malformed task (%s); sending one request to the policy and returning "
            "the no-play reward %s. Fix the dataset row: the validator should have rejected it.",
            rollout_id,
            error,
            NO_PLAY_REWARD,
        )
        remaining = max(MIN_ATTEMPT_SECONDS, deadline - time.monotonic())
        _reach_policy(factory, endpoint, settings, remaining)
        return NO_PLAY_REWARD
    logger.info("rollout %s: parsed task %s; policy endpoint %s", rollout_id, task_id, endpoint)

    game = WordleGame(answer, prior_guesses=priors)
    if priors:
        # The policy reads the seeded guesses where a model would: in the instruction.
        instruction = instruction + "\n\n" + game.prior_guesses_text()
    conversations: list[list] = []
    prompt: str | None = instruction
    history: list | None = None
    nudged = False
    auth_retries = 0
    errors: list[str] = []
    stops: list[str] = []
    attempts = 0
    for _ in range(MAX_ATTEMPTS):
        remaining = deadline - time.monotonic()
        if remaining < MIN_ATTEMPT_SECONDS:
            logger.warning("rollout %s: the %.0f s budget is spent", rollout_id, settings.budget_seconds)
            break
        attempts += 1
        attempt = _play_attempt(factory, endpoint, settings, game, prompt, history, remaining)
        if history is not None and conversations:
            conversations[-1] = attempt.messages  # the continued conversation contains the old one
        else:
            conversations.append(attempt.messages)
        stops.append(attempt.stop_reason or ("timeout" if attempt.timed_out else "error"))
        failure = attempt.error
        if failure is not None:
            errors.append(f"{type(failure).__name__}: {str(failure)[:300]}")
            logger.warning("rollout %s: attempt failed: %s", rollout_id, errors[-1])
        if game.over or game.limit_reached or attempt.timed_out:
            break
        if failure is not None and is_auth_failure(failure) and auth_retries < MAX_AUTH_RETRIES:
            auth_retries += 1
            TOKENS.invalidate(settings.region, token=attempt.token)
            prompt, history = None, attempt.messages  # continue the same conversation
            continue
        if failure is not None and attempt.sent_effort and rejects_reasoning_effort(failure):
            if not _EFFORT_REJECTED.is_set():
                logger.warning(
                    "the policy endpoint rejected %s; no request of this process will send it",
                    REASONING_EFFORT_PARAM,
                )
            _EFFORT_REJECTED.set()
            prompt, history = None, attempt.messages
            continue
        if not game.policy_guesses and not nudged:
            nudged = True
            # a fresh conversation, with the nudge after the instruction
            prompt, history = instruction + "\n\n" + CALL_TOOL_NOW_PROMPT, None
            continue
        break

    recovered = 0
    if not game.over and settings.recover_raw_text:
        recovered = _recover_raw_text_guesses(game, conversations)
        if recovered:
            logger.warning(
                "rollout %s: recovered %d guess(es) written as raw text instead of tool calls",
                rollout_id,
                recovered,
            )
    reward = game.final_reward()
    _notify(observer, task_id, game)
    logger.info(
        "rollout %s: task %s solved=%s guesses=%s recovered=%d attempts=%d stops=%s errors=%d "
        "reward=%.4f elapsed=%.1fs",
        rollout_id,
        task_id,
        game.solved,
        ",".join(game.guesses) or "-",
        recovered,
        attempts,
        ",".join(stops) or "-",
        len(errors),
        reward,
        time.monotonic() - started,
    )
    return reward


def run_rollout(payload: object, model: ModelFactory, observer: GameObserver | None = None) -> dict[str, float]:
    """Play one rollout and return ``{"reward": float}``; never raises on any payload (module
    docstring: why).

    ``model`` builds the policy model, ``model(endpoint, params)`` once per attempt: the deployed
    runtime passes ``openai_policy_model`` (the Job Runtime client), an in-process caller its own.
    There is no default (a caller that hands no callable gets a TypeError at once: that is a bug
    of the caller, not of the payload). ``observer(task_id, game)``, if given, is called with the
    finished game.
    """
    if not callable(model):
        raise TypeError(f"run_rollout needs a model factory, model(endpoint, params); got {type(model).__name__}")
    started = time.monotonic()
    try:
        reward = _play_rollout(sanitize_payload(payload), started, model, observer)
    except Exception:
        logger.exception("rollout failed unexpectedly; returning the no-play reward")
        reward = NO_PLAY_REWARD
    numeric = isinstance(reward, (int, float)) and not isinstance(reward, bool)
    if not (numeric and math.isfinite(reward)):
        logger.error("the game produced reward %r; returning the no-play reward instead", reward)
        reward = NO_PLAY_REWARD
    return {"reward": float(reward)}
