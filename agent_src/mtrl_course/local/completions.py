"""The chat completion a policy returns: the OpenAI response shape, built in one place.

Every offline policy (the stand-in, the tiny language model, the emulator's scripted policies)
answers a request with a non-streaming OpenAI chat completion dict with `usage`; the job runtime
emulator (`job_runtime_emulator`) turns it into server-sent events when the caller streams. A
policy may add a `policy_trace` entry (what its gradient needs later); the emulator keeps it with
the turn and never sends it to the caller.

This module needs nothing but the standard library, so a policy or a trainer that builds
completions does not load the emulator's HTTP server (uvicorn) with it.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

POLICY_TRACE_KEY = "policy_trace"
# A rough chars-per-token ratio for policies that do not count tokens themselves.
CHARS_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """A rough token count (about four characters a token) for policies without a tokenizer."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN)) if text else 0


def chat_completion(
    *,
    content: str | None = None,
    tool_calls: Iterable[Mapping[str, Any]] = (),
    reasoning: str | None = None,
    prompt_tokens: int,
    completion_tokens: int,
    model: str = "default",
    finish_reason: str | None = None,
    policy_trace: Any = None,
) -> dict:
    """A non-streaming OpenAI chat completion dict, the shape a policy returns.

    `tool_calls` items are {"name", "arguments" (dict or JSON string), optional "id"}.
    """
    calls = []
    for call in tool_calls:
        arguments = call.get("arguments", {})
        calls.append(
            {
                "id": call.get("id") or f"call_{uuid.uuid4().hex[:16]}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    response = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    if policy_trace is not None:
        response[POLICY_TRACE_KEY] = policy_trace
    return response
