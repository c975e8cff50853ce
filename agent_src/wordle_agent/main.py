"""The AgentCore entrypoint: the HTTP app the training service invokes once per rollout.

``agentcore deploy`` ships this package and runs this file; AgentCore then sends each rollout
to ``POST /invocations`` and health checks to ``GET /ping``. The work happens in
``wordle_agent.rollout.run_rollout``; this file only wires it to the two SDKs and hands it its
model: the Job Runtime client (``rollout.openai_policy_model``), which is what ``app`` and
``handle_rollout`` play with.

``build_app(model, observer)`` is where the wiring is written, once. A caller that plays rollouts
in its own process (the toolkit's reference solver, an app served inside a notebook's kernel) gets
the same app and the same decorated handler with a model of its own, and an observer if it wants
the finished games, instead of swapping anything process-wide: ``build_app(model, observer)``, or
``rollout_handler(model, observer)`` for its entrypoint alone.

Deployable alone: it imports nothing from the course toolkit (``mtrl_course``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from bedrock_agentcore import BedrockAgentCoreApp
from sagemaker.train.rft import sagemaker_rft_handler

from wordle_agent.auth import install_feedback_signer
from wordle_agent.reward import NO_PLAY_REWARD
from wordle_agent.rollout import GameObserver, ModelFactory, openai_policy_model, run_rollout, sanitize_payload

# Libraries that log every HTTP request or model call at INFO; a runtime serving 32 concurrent
# rollouts would drown its own messages in them.
NOISY_LOGGERS = ("httpx", "httpcore", "openai", "urllib3", "botocore", "strands", "opentelemetry")
QUIET_LEVEL = logging.WARNING
# When run as the runtime's main program, these packages' progress lines (parsed task, token
# signed, policy errors, CompleteRollout/UpdateReward) go to the container log at INFO.
LOGGED_PACKAGES = ("wordle_agent", "sagemaker.train.rft")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

for _name in NOISY_LOGGERS:
    logging.getLogger(_name).setLevel(QUIET_LEVEL)

logger = logging.getLogger(__name__)

# The SDK's feedback client signs each CompleteRollout/UpdateReward with the shared session.
install_feedback_signer()


def _guarded(handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Hand the SDK's rollout wrapper a sanitized payload and never let it fail the invocation.

    ``sagemaker_rft_handler`` reads ``payload.get(...)`` and builds its feedback client from
    the metadata before our handler runs, so a payload that is not an object (or metadata that
    is not one) would end in HTTP 500, and the service fails a job on an error status.
    ``functools.wraps`` keeps the one-parameter signature AgentCore inspects.
    """

    @functools.wraps(handler)
    def guarded(payload: Any) -> Any:
        try:
            return handler(sanitize_payload(payload))
        except Exception:
            logger.exception("the rollout wrapper failed; returning the no-play reward")
            return {"reward": float(NO_PLAY_REWARD)}

    return guarded


def build_app(model: ModelFactory, observer: GameObserver | None = None) -> BedrockAgentCoreApp:
    """An AgentCore app whose entrypoint plays every rollout with ``model`` (``model(endpoint,
    params)`` once per attempt) and hands each finished game to ``observer``, if given.

    The deployed ``app`` is ``build_app(openai_policy_model)``; in-process callers build their own
    with their model, so nothing process-wide is ever swapped.
    """
    app = BedrockAgentCoreApp()

    # Order matters. @app.entrypoint must be outermost: @sagemaker_rft_handler alone starts no
    # HTTP server, and every invocation then times out after 30 s. The handler takes ONLY
    # `payload`: the SDK wrapper passes on a single argument, but AgentCore sees the inner
    # signature through functools.wraps and, for a second parameter named `context`, calls the
    # wrapper with two arguments, which fails every invocation with HTTP 500.
    @app.entrypoint
    @_guarded
    @sagemaker_rft_handler
    def handle_rollout(payload: dict) -> dict:
        """Play one rollout; the SDK wrapper reports the reward to the Job Runtime."""
        return run_rollout(payload, model=model, observer=observer)

    return app


def rollout_handler(model: ModelFactory, observer: GameObserver | None = None) -> Callable[[Any], Any]:
    """The entrypoint of ``build_app(model, observer)``: ``handle_rollout`` with another model.

    The same decorated handler AgentCore calls (guard, SDK wrapper, ``run_rollout``), for a caller
    that calls it directly in its own process, as the reference solver of ``make course`` does.
    """
    return build_app(model, observer).handlers["main"]


# The deployed app: every rollout plays against the job's policy through the Job Runtime client.
app = build_app(openai_policy_model)
handle_rollout = app.handlers["main"]


if __name__ == "__main__":
    # Handlers on our packages only: the app's own logger already has one, and a root handler
    # would print its lines twice.
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter(LOG_FORMAT))
    for _name in LOGGED_PACKAGES:
        logging.getLogger(_name).addHandler(_handler)
        logging.getLogger(_name).setLevel(logging.INFO)
    app.run()
