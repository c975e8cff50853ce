"""The learner behind the Job Runtime: a real (tiny) language model answering the agent's turns.

`LearnerPolicy` implements the emulator's policy contract, `complete(request, trajectory) ->
dict`, with `mtrl_course.learner`: the request's messages are rendered with the chat template
(the reasoning level from `reasoning_effort` or the system prompt's `Reasoning:` line), the
model samples a reply with the request's temperature, top_p and max_tokens, and the tool-call
parser turns it into an OpenAI chat completion (a `guess_word` tool call, or the raw text if
the reply was malformed). Token counts are real: prompt tokens are the rendered context, and
completion tokens the sampled ones. The `policy_trace` carries what token-level GRPO needs: the
prompt ids, the sampled ids and the model's log-probability of each sampled token.

Serving many rollouts at once (`BatchingEngine`). The fast lane's rollout threads each call
`complete` and block; one engine thread takes every request waiting at that moment and samples
them together (one prefill per request into a shared KV cache, then one forward pass per token
for the whole batch). Requests that arrive while a batch is decoding wait for the next batch:
this is static batching per round. vLLM's continuous batching would let them join the running
batch at the next token; with turns of 5 to 40 tokens the difference is small here, and said.

Random draws: each request samples from its own generator, seeded by the trajectory's key
(the runner's seed, phase, step, prompt row, rollout index, attempt) and the turn number, so the
same conversation in the same trajectory slot gets the same reply whatever the thread timing.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mtrl_course.learner import model as lm
from mtrl_course.learner import sampler, template, weights
from mtrl_course.learner.lora import Adapter
from mtrl_course.local.completions import chat_completion

LABEL = "learner (tiny language model)"
MODEL_NAME = "learner-tiny-lm"
BASE_DIR = Path(__file__).resolve().parents[1] / "learner" / "base"
BASE_FILE = BASE_DIR / "base.safetensors"
# A request without max_tokens may write this many tokens (the context is the other cap).
DEFAULT_MAX_TOKENS = 256
# The engine waits this long after the first request of a batch for others to arrive.
BATCH_WINDOW_S = 0.002
MAX_BATCH = 256

_BASE_LOCK = threading.Lock()
_BASES: dict[str, tuple[dict[str, np.ndarray], lm.ModelConfig, str]] = {}


def load_base(path: Path | None = None) -> tuple[dict[str, np.ndarray], lm.ModelConfig, str]:
    """(params, config, base_id) of the base model (`BASE_FILE` by default), loaded once per process."""
    path = Path(path) if path is not None else BASE_FILE
    key = str(path.resolve())
    with _BASE_LOCK:
        if key not in _BASES:
            if not Path(path).is_file():
                raise FileNotFoundError(
                    f"the learner's base weights {path} are missing; train them with experiments/train_base_lm.py"
                )
            _BASES[key] = weights.load_model(Path(path))
        return _BASES[key]


def rng_key(trajectory: Any, seed: int) -> list[int]:
    """The trajectory's integer key (as the runner opened it), else a hash of its id."""
    info = getattr(trajectory, "info", None) or {}
    key = info.get("rng_key") if isinstance(info, Mapping) else None
    if isinstance(key, (list, tuple)) and key and all(isinstance(k, int) and k >= 0 for k in key):
        return [seed, *key]
    tid = str(getattr(trajectory, "trajectory_id", "") or "")
    digest = hashlib.sha256(tid.encode()).digest()
    return [seed, *(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))]


@dataclass
class _Request:
    prompt: list[int]
    sampling: sampler.SamplingParams
    rng: np.random.Generator
    done: threading.Event = field(default_factory=threading.Event)
    result: sampler.Generation | None = None
    error: BaseException | None = None


class BatchingEngine:
    """One thread that samples every waiting request together (see the module docstring)."""

    def __init__(self, policy: LearnerPolicy) -> None:
        self.policy = policy
        self._queue: queue.Queue[_Request] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="learner-engine", daemon=True)
        self._thread.start()
        self.batches = 0
        self.requests = 0

    def submit(self, request: _Request) -> sampler.Generation:
        self._queue.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            deadline = threading.Event()
            deadline.wait(BATCH_WINDOW_S)
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                results = self.policy.generate(
                    [r.prompt for r in batch], [r.sampling for r in batch], [r.rng for r in batch]
                )
                for r, g in zip(batch, results):
                    r.result = g
            except BaseException as error:  # handed to every caller of the batch, never lost
                for r in batch:
                    r.error = error
            self.batches += 1
            self.requests += len(batch)
            for r in batch:
                r.done.set()


class LearnerPolicy:
    """The learner as a Job Runtime policy: base weights plus an optional LoRA adapter."""

    def __init__(
        self,
        adapter: Adapter | None = None,
        *,
        seed: int = 0,
        base: tuple[dict[str, np.ndarray], lm.ModelConfig, str] | None = None,
        batching: bool = True,
    ) -> None:
        self.params, self.config, self.base_id = base if base is not None else load_base()
        self.adapter = adapter
        self.seed = int(seed)
        # Merged once per policy: each adapter version is served with its own merged weights.
        self._weights = adapter.merged(self.params) if adapter is not None else self.params
        self.engine = BatchingEngine(self) if batching else None

    @property
    def name(self) -> str:
        step = self.adapter.step if self.adapter is not None else 0
        return f"{LABEL} ({self.base_id}, adapter step {step})"

    def generate(
        self, prompts: list[list[int]], sampling: list[sampler.SamplingParams], rngs: list[np.random.Generator]
    ) -> list[sampler.Generation]:
        from mtrl_course.learner.threads import one_blas_thread

        with one_blas_thread():
            return sampler.generate(self._weights, self.config, prompts, sampling, rngs)

    def complete(self, request: dict, trajectory: Any = None) -> dict:
        """Answer one chat-completion request (the emulator has filled in the temperature)."""
        messages = request.get("messages") or []
        effort = template.effort_of(request)
        prompt = template.generation_prompt(messages, effort)
        temperature = request.get("temperature")
        top_p = request.get("top_p")
        max_tokens = request.get("max_tokens") or request.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
        params = sampler.SamplingParams(
            1.0 if temperature is None else float(temperature),
            1.0 if top_p is None else float(top_p),
            int(max_tokens),
        )
        turn = getattr(trajectory, "sample_count", None)
        if turn is None:
            turn = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        rng = np.random.default_rng(np.random.SeedSequence([*rng_key(trajectory, self.seed), int(turn)]))
        if len(prompt) >= self.config.context:
            # The conversation no longer fits: nothing can be sampled (a real server answers 400).
            generation = sampler.Generation(prompt_tokens=len(prompt))
        elif self.engine is not None:
            generation = self.engine.submit(_Request(prompt, params, rng))
        else:
            generation = self.generate([prompt], [params], [rng])[0]
        parsed = template.parse_completion(generation.tokens, generation.stopped)
        offered = any(
            isinstance(t, dict) and (t.get("function") or {}).get("name") == template.TOOL_NAME
            for t in request.get("tools") or ()
        )
        call = parsed.tool_call if offered else None
        content = parsed.content if call is not None or parsed.guess is None else tokenizer_text(generation)
        trace = {
            "kind": "lm",
            "prompt": prompt,
            "tokens": list(generation.tokens),
            "logprobs": list(generation.logprobs),
            "temperature": params.temperature,
            "effort": effort,
            "tool_call": call is not None,
        }
        return chat_completion(
            content=content,
            tool_calls=[call] if call is not None else (),
            prompt_tokens=len(prompt),
            completion_tokens=len(generation.tokens),
            model=MODEL_NAME,
            finish_reason=parsed.finish_reason if call is not None or parsed.finish_reason != "tool_calls" else "stop",
            policy_trace=trace,
        )


def tokenizer_text(generation: sampler.Generation) -> str | None:
    """The raw text of a reply (for a well-formed call to a tool that was not offered)."""
    from mtrl_course.learner import tokenizer

    body = generation.tokens[:-1] if generation.stopped else generation.tokens
    return tokenizer.decode(body) or None
