"""Where one rollout's time goes on the full HTTP path: a stack sampler over every thread.

cProfile sees one thread, but a rollout crosses five (the runtime's server loop, the handler
thread, the handler's own event loop, the emulator's server loop, and the caller), so this
samples `sys._current_frames()` every few milliseconds and charges each busy thread's sample to
the innermost frame that belongs to a known component. A thread whose innermost frame is a
blocking wait (select, a lock, a socket read, an idle worker) is idle and not counted. Samples
are taken under the interpreter lock, so they land where threads give it up; the shares are a
guide to where CPU goes, not an exact account. The milliseconds shown are each component's
share of the process CPU time measured over the same episodes.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass

SAMPLE_INTERVAL_S = 0.002
EMULATOR_THREAD = "job-runtime-emulator"
OTHER = "other (asyncio, json, stdlib)"

# (component, path fragments); the first component whose fragment is in a frame's file wins,
# innermost frame first. Order matters where paths nest (strands/models before strands).
COMPONENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("policy (stand-in)", ("mtrl_course/local/stand_in_policy.py",)),
    ("emulator (Job Runtime)", ("mtrl_course/local/job_runtime_emulator.py", "mtrl_course/local/tokens.py")),
    (
        "token signing (SigV4)",
        ("sagemaker/core/token_generator", "botocore/auth.py", "botocore/signers.py", "botocore/credentials.py"),
    ),
    (
        "game + reward",
        ("wordle_agent/game.py", "wordle_agent/reward.py", "wordle_agent/words.py", "wordle_agent/recovery.py"),
    ),
    ("feedback POSTs (requests)", ("/requests/", "/urllib3/")),
    (
        "model client (OpenAIModel, openai, httpx)",
        ("strands/models/", "/openai/", "/httpx/", "/httpcore/", "sagemaker/train/rft/adapters"),
    ),
    ("Strands agent loop", ("/strands/",)),
    ("handler (wordle_agent, SDK decorator)", ("wordle_agent/", "sagemaker/train/rft/")),
    (
        "app server (AgentCore app, uvicorn, starlette)",
        ("bedrock_agentcore/", "/uvicorn/", "/h11/", "/starlette/", "/anyio/"),
    ),
    ("telemetry (opentelemetry)", ("/opentelemetry/",)),
    ("pydantic", ("/pydantic/", "/pydantic_core/")),
)
# Innermost frames that mean "waiting", not working.
IDLE_LEAVES = {
    ("selectors.py", "select"),
    ("threading.py", "wait"),
    ("threading.py", "_wait_for_tstate_lock"),
    ("queue.py", "get"),
    ("socket.py", "readinto"),
    ("socket.py", "accept"),
    ("thread.py", "_worker"),
    ("ssl.py", "read"),
    ("ssl.py", "recv_into"),
    ("threading.py", "join"),
    ("_base.py", "result"),
    ("stack_profile.py", "_run"),
    ("http/client.py", "_read_status"),
    ("_threading_local.py", "__getattribute__"),
}
# Leaves that are the caller's time.sleep polls (their Python frame is the caller's).
SLEEPERS = {("agent_server.py", "_watch_ready"), ("agent_server.py", "_begin")}


def component_of(frame) -> str | None:
    while frame is not None:
        path = frame.f_code.co_filename.replace("\\", "/")
        for name, fragments in COMPONENTS:
            if any(fragment in path for fragment in fragments):
                return name
        frame = frame.f_back
    return None


def _attribute(frame, thread_name: str) -> tuple[str, str]:
    """(component, "file:function" of the innermost frame charged) for one busy stack."""
    leaf = frame
    while frame is not None:
        path = frame.f_code.co_filename.replace("\\", "/")
        for name, fragments in COMPONENTS:
            if any(fragment in path for fragment in fragments):
                if name.startswith("app server") and thread_name.startswith(EMULATOR_THREAD):
                    name = "emulator's HTTP server (uvicorn)"
                return name, f"{path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]}:{frame.f_code.co_name}"
        frame = frame.f_back
    path = leaf.f_code.co_filename.replace("\\", "/")
    return OTHER, f"{path.rsplit('/', 1)[-1]}:{leaf.f_code.co_name}"


def _idle(frame) -> bool:
    path = frame.f_code.co_filename.replace("\\", "/")
    leaf = (path.rsplit("/", 1)[-1], frame.f_code.co_name)
    if leaf in IDLE_LEAVES or leaf in SLEEPERS:
        return True
    return path.endswith("http/client.py") and frame.f_code.co_name in ("begin", "_read_status")


@dataclass
class Profile:
    samples: Counter
    busy: int
    episodes: int
    cpu_s: float
    wall_s: float
    detail: Counter

    def details(self, top: int = 25) -> list[str]:
        return [
            f"    {100 * n / self.busy:5.1f}%  {name:<40} {where}" for (name, where), n in self.detail.most_common(top)
        ]

    def summary(self, title: str, top: int = 8) -> list[str]:
        per_episode_cpu = 1000 * self.cpu_s / self.episodes
        lines = [
            f"{title}: {per_episode_cpu:.0f} ms of CPU per episode ({self.episodes} episodes, "
            f"{1000 * self.wall_s / self.episodes:.0f} ms wall each, {self.busy} busy samples)"
        ]
        for name, count in self.samples.most_common(top):
            share = count / self.busy if self.busy else 0.0
            lines.append(f"    {name:<48} {100 * share:5.1f}%  ~{share * per_episode_cpu:5.0f} ms")
        return lines


class Sampler:
    """Samples every other thread's stack until stopped; `profile()` gives the tally."""

    def __init__(self, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.interval = interval
        self.samples: Counter = Counter()
        self.detail: Counter = Counter()  # (component, innermost frame of that component)
        self.busy = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            threads = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me or _idle(frame):
                    continue
                self.busy += 1
                name, where = _attribute(frame, threads.get(ident, ""))
                self.samples[name] += 1
                self.detail[(name, where)] += 1
        self.own_cpu_s = time.thread_time()  # the sampler's own cost, left out of the total

    def __enter__(self) -> Sampler:
        self._cpu = time.process_time()
        self._wall = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_s = time.process_time() - self._cpu - self.own_cpu_s
        self.wall_s = time.perf_counter() - self._wall

    def profile(self, episodes: int) -> Profile:
        return Profile(self.samples, self.busy, episodes, self.cpu_s, self.wall_s, self.detail)
