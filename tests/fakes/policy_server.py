"""A loopback, OpenAI-compatible stand-in for the Job Runtime, for tests only.

It answers ``POST /v1/chat/completions`` (streaming SSE or one JSON body) with whatever a
*policy* callable decides for each request, and records ``/complete-rollout`` and
``/update-reward`` calls the way the real Job Runtime receives them from the SDK. Every request
is recorded with its headers and JSON body.

    with FakePolicyServer(guesses("SLATE", "CRANE")) as server:
        run_rollout({"prompt": task, "metadata": {"endpoint": server.url, ...}}, model=openai_policy_model)
        server.chat_requests[0].body["messages"]

A policy maps the request body to a reply: ``ToolCall(word)``, ``Text(text)``,
``HttpError(status, message)``, ``Garbage(body)`` or ``Delay(seconds, reply)``. Helpers build the
common ones: ``guesses``, ``always``, ``scripted`` and ``reject_param``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

HOST = "127.0.0.1"
CHAT_PATH = "/v1/chat/completions"
FEEDBACK_PATHS = ("/complete-rollout", "/update-reward")
TOOL_NAME = "guess_word"
# Bodies larger than this are refused; the agent never sends anything close.
MAX_BODY_BYTES = 5_000_000
# How often the serving loop checks for shutdown (the default half second slows every test).
POLL_SECONDS = 0.02
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass(frozen=True)
class ToolCall:
    """A ``guess_word`` call with ``{"guess": word}`` (or raw ``arguments`` JSON text)."""

    word: str = ""
    arguments: str | None = None
    name: str = TOOL_NAME

    def arguments_json(self) -> str:
        return self.arguments if self.arguments is not None else json.dumps({"guess": self.word})


@dataclass(frozen=True)
class Text:
    """A plain assistant message (which may contain a tool call written as text)."""

    text: str


@dataclass(frozen=True)
class HttpError:
    """An error status with an OpenAI-style error body."""

    status: int
    message: str


@dataclass(frozen=True)
class Garbage:
    """HTTP 200 with a body that is not a chat completion."""

    body: bytes = b"<html>this is not a chat completion</html>"


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` (or until the server stops), then answer with ``reply``."""

    seconds: float
    reply: "Reply"


Reply = Union[ToolCall, Text, HttpError, Garbage, Delay]
Policy = Callable[[dict], Reply]


def tool_results(body: dict) -> int:
    """How many tool results the conversation in a request already holds."""
    return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "tool")


def guesses(*words: str, then: Reply = Text("I am done.")) -> Policy:
    """Call the tool with ``words`` in order (one per turn), then answer ``then``."""

    def policy(body: dict) -> Reply:
        played = tool_results(body)
        return ToolCall(words[played]) if played < len(words) else then

    return policy


def always(reply: Reply) -> Policy:
    """Answer every request the same way."""
    return lambda body: reply


def scripted(*replies: Reply, then: Policy) -> Policy:
    """Answer the first requests with ``replies`` in order, then defer to ``then``."""
    queue = list(replies)
    lock = threading.Lock()

    def policy(body: dict) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return then(body)

    return policy


def reject_param(name: str, inner: Policy) -> Policy:
    """Refuse (HTTP 400) any request that carries the body parameter ``name``."""

    def policy(body: dict) -> Reply:
        if name in body:
            return HttpError(400, f"Unsupported parameter: '{name}' is not supported with this model.")
        return inner(body)

    return policy


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)


class FakePolicyServer:
    """The loopback server; a context manager that starts and stops it."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy: Policy = policy or guesses("CRANE")
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "FakePolicyServer":
        server = self

        class Handler(_Handler):
            owner = server

        httpd = ThreadingHTTPServer((HOST, 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": POLL_SECONDS},
            name="fake-policy",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakePolicyServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests read ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not running"
        return f"http://{HOST}:{self._httpd.server_address[1]}"

    @property
    def chat_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def feedback(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path in FEEDBACK_PATHS]

    def feedback_for(self, trajectory_id: str) -> list[str]:
        """The feedback paths called for one trajectory, in order."""
        return [
            r.path for r in self.feedback if isinstance(r.body, dict) and r.body.get("TrajectoryId") == trajectory_id
        ]

    def reset(self, policy: Policy | None = None) -> None:
        with self._lock:
            self.requests.clear()
        if policy is not None:
            self.policy = policy

    def _record(self, item: Recorded) -> None:
        with self._lock:
            self.requests.append(item)


class _Handler(BaseHTTPRequestHandler):
    owner: FakePolicyServer

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        if self.path == "/ping":
            self._send_json(200, {"status": "Healthy"})
        else:
            self._send_json(404, {"message": f"no route {self.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send_json(413, {"message": "request body too large"})
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.owner._record(Recorded(self.path, headers, body))
        if self.path in FEEDBACK_PATHS:
            self._send_json(200, {})
        elif self.path == CHAT_PATH and isinstance(body, dict):
            self._answer_chat(body)
        elif self.path == CHAT_PATH:
            self._send_json(400, {"error": {"message": "the request body is not a JSON object"}})
        else:
            self._send_json(404, {"message": f"no route {self.path}"})

    # -- chat completions ----------------------------------------------------------------------

    def _answer_chat(self, body: dict) -> None:
        try:
            reply = self.owner.policy(body)
        except Exception as error:  # a broken test policy shows up as a 500, not a hung client
            self._send_json(500, {"error": {"message": f"policy failed: {error}"}})
            return
        while isinstance(reply, Delay):
            if self.owner._stopping.wait(reply.seconds):
                return
            reply = reply.reply
        if isinstance(reply, HttpError):
            self._send_json(reply.status, {"error": {"message": reply.message, "type": "fake_error"}})
        elif isinstance(reply, Garbage):
            self._send_bytes(200, "application/json", reply.body)
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._send_json(200, self._completion(body, reply))

    def _completion(self, body: dict, reply: Reply) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(reply, ToolCall):
            message["tool_calls"] = [
                {
                    "id": "call_" + uuid.uuid4().hex[:12],
                    "type": "function",
                    "function": {"name": reply.name, "arguments": reply.arguments_json()},
                }
            ]
            finish = "tool_calls"
        else:
            message["content"] = reply.text
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "default"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE,
        }

    def _stream(self, body: dict, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "default"),
        }

        def send(choices: list, usage: dict | None = None) -> None:
            chunk = dict(base, choices=choices)
            if usage is not None:
                chunk["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

        if isinstance(reply, ToolCall):
            call_id = "call_" + uuid.uuid4().hex[:12]
            start = {"index": 0, "id": call_id, "type": "function", "function": {"name": reply.name, "arguments": ""}}
            send([{"index": 0, "delta": {"role": "assistant", "tool_calls": [start]}, "finish_reason": None}])
            args = {"index": 0, "function": {"arguments": reply.arguments_json()}}
            send([{"index": 0, "delta": {"tool_calls": [args]}, "finish_reason": None}])
            send([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])
        else:
            send([{"index": 0, "delta": {"role": "assistant", "content": reply.text}, "finish_reason": None}])
            send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        send([], usage=USAGE)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    # -- plumbing --------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any) -> None:
        self._send_bytes(status, "application/json", json.dumps(payload).encode())

    def _send_bytes(self, status: int, content_type: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a budget cut-off); nothing left to tell it
