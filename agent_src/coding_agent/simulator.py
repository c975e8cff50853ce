"""The user who holds the full specification and reveals it one detail at a time.

The coder only sees the brief. The simulator answers each question: a question about a hidden
detail gets that detail (one per question), any other question gets a vague answer that
reveals nothing. That is the post's design: guessing should produce wrong code, asking should
surface the hidden detail.

Offline the answers come from rules (`RuleBasedUser`). Live, a language model can play the user
(`BedrockUser`): it gets the specification in its system prompt and the same one-detail rule.
Both implement `UserSimulator`, so the environment does not care which one it talks to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from coding_agent.tasks import Detail, Task

GENERIC_QUESTION = "Could you tell me a bit more about what you need?"
VAGUE_ANSWER = "Nothing special, just make it work the way you think is sensible."
ALREADY_TOLD = "As I said: "


class UserSimulator(Protocol):
    """Answers the coder's questions about one task; `revealed` lists the detail keys given so far."""

    revealed: list[str]

    def answer(self, question: str) -> str: ...


def _hits(detail: Detail, question: str) -> int:
    text = question.lower()
    return sum(1 for word in detail.keywords if re.search(r"\b" + re.escape(word), text))


def match_detail(task: Task, question: str) -> Detail | None:
    """The hidden detail a question is about, or None for a generic question.

    A question that is exactly a detail's own wording matches it; otherwise the detail whose
    keywords appear most often wins (ties go to the first in the specification).
    """
    normalised = question.strip().lower()
    for detail in task.hidden_details:
        if detail.question.lower() == normalised:
            return detail
    scored = [(_hits(d, question), -i, d) for i, d in enumerate(task.hidden_details)]
    best = max(scored, key=lambda s: (s[0], s[1]), default=None)
    return best[2] if best and best[0] > 0 else None


@dataclass
class RuleBasedUser:
    """The offline user: one hidden detail per relevant question, a vague answer otherwise."""

    task: Task
    revealed: list[str] = field(default_factory=list)

    def answer(self, question: str) -> str:
        detail = match_detail(self.task, question)
        if detail is None:
            return VAGUE_ANSWER
        text = detail.answer(self.task.hidden[detail.key])
        if detail.key in self.revealed:
            return ALREADY_TOLD + text
        self.revealed.append(detail.key)
        return text


BEDROCK_SYSTEM_PROMPT = (
    "You are a user who asked a programmer for a small function. Your full requirements are below. "
    "Answer each question in one short sentence. Reveal at most one requirement per question, and only "
    "one the question is about; if the question is vague, answer vaguely and reveal nothing. Never write code.\n"
    "Request: {brief}\nRequirements:\n{spec}"
)


@dataclass
class BedrockUser:
    """A live user played by a Bedrock model through the Converse API (never called offline).

    `client` is a boto3 bedrock-runtime client. Which detail was revealed is still decided by
    the rules (`match_detail`), so the reward and the instrumentation do not depend on parsing
    the model's prose.
    """

    task: Task
    client: Any
    model_id: str
    revealed: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = 120

    def answer(self, question: str) -> str:
        detail = match_detail(self.task, question)
        if detail is not None and detail.key not in self.revealed:
            self.revealed.append(detail.key)
        spec = "\n".join(f"- {line}" for line in self.task.spec())
        self.history.append({"role": "user", "content": [{"text": question}]})
        response = self.client.converse(
            modelId=self.model_id,
            system=[{"text": BEDROCK_SYSTEM_PROMPT.format(brief=self.task.brief, spec=spec)}],
            messages=list(self.history),  # a copy: the call sees the conversation as it was
            inferenceConfig={"maxTokens": self.max_tokens, "temperature": 0.0},
        )
        text = response["output"]["message"]["content"][0]["text"]
        self.history.append({"role": "assistant", "content": [{"text": text}]})
        return text


def rule_based(task: Task) -> RuleBasedUser:
    return RuleBasedUser(task)


SimulatorFactory = Callable[[Task], UserSimulator]
