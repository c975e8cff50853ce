"""One conversation between the coder and the user, scored by the composite reward.

The environment owns the state (the task, the user, the turns so far) and computes the reward
from it when the conversation ends: committing code ends it, and so does running out of turns
(then nothing was committed: correctness 0 and no asking credit, which closes the "ask
forever" loophole).

The coder here is the stand-in, so its actions are the post's four kinds of move rather than
free text: ask about a hidden detail, ask a generic question, repeat the previous message, or
commit code. Committed code is real code: the reference solution with every detail the user has
revealed, and the default guess for every detail it has not (`Task.code_knowing`). It runs in
the sandbox against the hidden tests like anything a model would write.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coding_agent import reward, sandbox
from coding_agent.simulator import GENERIC_QUESTION, SimulatorFactory, rule_based
from coding_agent.tasks import Task, get as get_task

ASK_RELEVANT, ASK_GENERIC, REPEAT, COMMIT = range(4)
ACTIONS = ("ask_relevant", "ask_generic", "repeat", "commit")
MAX_TURNS = 5


@dataclass(frozen=True)
class EnvConfig:
    """How the environment runs; the defaults are the healthy setup."""

    max_turns: int = MAX_TURNS
    # None: the harness calls the task's own entry point. A name here is the silent bug the post
    # describes: every submission is looked up under the wrong name, so correctness is always 0.
    harness_entry_point: str | None = None
    # Chance that the stand-in codes a revealed detail right (1.0: always). Below 1 it models
    # hard tasks, where knowing the specification is not enough to pass the tests.
    skill: float = 1.0
    limits: sandbox.Limits = sandbox.DEFAULT_LIMITS

    def __post_init__(self) -> None:
        if self.max_turns < 2:
            raise ValueError(f"max_turns must be at least 2 (one question, then code), got {self.max_turns}")
        if not 0.0 <= self.skill <= 1.0:
            raise ValueError(f"skill must be in [0, 1], got {self.skill}")
        if self.harness_entry_point is not None and not self.harness_entry_point.isidentifier():
            raise ValueError(f"harness_entry_point must be a Python identifier, got {self.harness_entry_point!r}")


@dataclass
class Rollout:
    """A finished conversation: turns, the user's replies, the verdict and the reward."""

    task_id: str
    turns: list[reward.Turn] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list, repr=False)
    revealed: list[str] = field(default_factory=list)
    verdict: sandbox.Verdict | None = None
    values: dict[str, float] = field(default_factory=dict)
    total: float = 0.0
    sample_id: str = ""

    @property
    def committed(self) -> bool:
        return bool(self.turns) and self.turns[-1].kind == "code"

    @property
    def asked_first(self) -> bool:
        return bool(self.turns) and self.turns[0].kind == "question"

    def report(self, spec: reward.RewardSpec = reward.TAUGHT) -> dict[str, Any]:
        """The bring-your-own-orchestrator report for this rollout."""
        status = self.verdict.status if self.verdict else "no_commit"
        metrics = {
            "turns": float(len(self.turns)),
            "details_revealed": float(len(self.revealed)),
            "sandbox_ok": float(status == sandbox.OK),
        }
        return reward.byoo_report(self.sample_id or self.task_id, self.values, spec, metrics)

    def transcript(self) -> str:
        lines = []
        for turn, reply in zip(self.turns, [*self.replies, ""]):
            lines.append(f"coder ({turn.kind}): {turn.text.strip()}")
            if reply:
                lines.append(f"user: {reply}")
        if self.verdict:
            lines.append(f"verdict: {self.verdict.status}, {self.verdict.passed}/{self.verdict.total} tests")
        return "\n".join(lines)


class CodingEnv:
    """The conversation for one task; `step(action)` until `done`, then read `rollout`."""

    def __init__(
        self,
        task: Task,
        config: EnvConfig = EnvConfig(),
        spec: reward.RewardSpec = reward.TAUGHT,
        user: SimulatorFactory = rule_based,
        rng: random.Random | None = None,
        sample_id: str = "",
    ):
        self.task = task
        self.config = config
        self.spec = spec
        self.user = user(task)
        self.rng = rng or random.Random(0)
        self.rollout = Rollout(task.id, sample_id=sample_id)
        self.done = False
        self.last_reply_kind = "none"  # "new", "nothing_new" or "none": what the coder can observe

    def observation(self) -> dict[str, Any]:
        return {"turn": len(self.rollout.turns), "max_turns": self.config.max_turns, "last_reply": self.last_reply_kind}

    def step(self, action: int) -> None:
        if self.done:
            raise RuntimeError(f"the conversation for task {self.task.id} has ended; start a new CodingEnv")
        if action not in range(len(ACTIONS)):
            raise ValueError(f"action must be one of 0..{len(ACTIONS) - 1} {ACTIONS}, got {action!r}")
        r = self.rollout
        r.actions.append(action)
        if action == COMMIT:
            r.turns.append(reward.Turn("code", self._write_code()))
            self._finish()
            return
        question = self._question(action)
        r.turns.append(reward.Turn("question", question))
        before = len(self.user.revealed)
        r.replies.append(self.user.answer(question))
        self.last_reply_kind = "new" if len(self.user.revealed) > before else "nothing_new"
        r.revealed = list(self.user.revealed)
        if len(r.turns) >= self.config.max_turns:
            self._finish()

    def _question(self, action: int) -> str:
        turns = self.rollout.turns
        if action == REPEAT and turns:
            return turns[-1].text
        if action == ASK_RELEVANT:
            unknown = [d for d in self.task.hidden_details if d.key not in self.user.revealed]
            # With nothing left to learn it asks about the last detail again (and hears "as I said").
            return (unknown[0] if unknown else self.task.hidden_details[-1]).question
        return GENERIC_QUESTION

    def _write_code(self) -> str:
        known = {key for key in self.user.revealed if self.rng.random() < self.config.skill}
        return self.task.code_knowing(known)

    def _finish(self) -> None:
        r = self.rollout
        correctness = 0.0
        if r.committed:
            entry = self.config.harness_entry_point or self.task.entry_point
            r.verdict = sandbox.run_tests(r.turns[-1].text, entry, self.task.tests, self.config.limits)
            correctness = r.verdict.correctness
        r.values = reward.components(r.turns, correctness, self.config.max_turns, self.spec)
        r.total = reward.aggregate(r.values, self.spec)
        self.done = True


def warm_cache(tasks: Sequence[Task], config: EnvConfig = EnvConfig(), workers: int = 2) -> int:
    """Judge every submission the stand-in can write for `tasks` once, so training hits the cache.

    Returns how many were judged. The stand-in's submissions are the reference with any subset of
    hidden details guessed: at most 2**3 per task.
    """
    import itertools
    from concurrent.futures import ThreadPoolExecutor

    jobs = []
    for task in tasks:
        keys = list(task.hidden)
        for n in range(len(keys) + 1):
            for known in itertools.combinations(keys, n):
                jobs.append((task.code_knowing(set(known)), config.harness_entry_point or task.entry_point, task.tests))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(lambda job: sandbox.run_tests(*job, config.limits), jobs))
    return len(jobs)


def summary(rollouts: Sequence[Rollout]) -> Mapping[str, float]:
    """Behaviour rates over a batch: what the lesson's tables and curves show."""
    n = max(len(rollouts), 1)
    committed = [r for r in rollouts if r.verdict is not None]
    return {
        # Of the committed code, the share the harness actually ran to a result: 0 means every
        # correctness score this step is a harness problem, not a model problem.
        "harness_ran_rate": sum(r.verdict.status == sandbox.OK for r in committed) / max(len(committed), 1),
        "asking_rate": sum(r.asked_first for r in rollouts) / n,
        "guess_rate": sum(r.turns[0].kind == "code" for r in rollouts if r.turns) / n,
        "commit_rate": sum(r.committed for r in rollouts) / n,
        "correctness": sum(r.values.get("correctness", 0.0) for r in rollouts) / n,
        "loop_rate": sum(r.values.get("loop_penalty", 0.0) != 0 for r in rollouts) / n,
        "turns": sum(len(r.turns) for r in rollouts) / n,
        "reward": sum(r.total for r in rollouts) / n,
    }


def question_quality(rollouts: Sequence[Rollout]) -> Mapping[str, float]:
    """What the coder's questions found out, which the reward's asking term does not look at.

    `asked_before_coding` pays for any question before a commit, relevant or not, so a policy
    trained without a working correctness term can ask and still commit half-informed. Two
    shares tell that apart: first questions that were about a hidden detail, and the hidden
    details the coder had heard when it committed (over committed rollouts).
    """
    asked = [r for r in rollouts if r.actions and r.actions[0] != COMMIT]
    committed = [r for r in rollouts if r.committed]
    heard = [len(r.revealed) / len(get_task(r.task_id).hidden) for r in committed]
    return {
        "first question about a hidden detail": sum(r.actions[0] == ASK_RELEVANT for r in asked) / max(len(asked), 1),
        "hidden details heard before committing": sum(heard) / max(len(heard), 1),
    }
