"""The Nova Forge entry point: `load_environment()` for the bring-your-own-orchestrator container.

Nova Forge's starter kit installs a custom environment from a bundle and calls its
`load_environment(**kwargs)`, which must return a `verifiers` environment; a multi-turn one
implements `env_response` (the user's reply, or the end of the rollout). `verifiers` ships with
the starter kit, so it is imported inside the function and the course never runs this offline:
check the method signatures against the version your kit ships before a paid run.

What the container does per rollout, as the post describes: run the user simulator, execute the
committed code in the sandbox, score it, and report `aggregate_reward_score` plus every component
in `metrics_list`. A model turn that contains a fenced Python block is a commit; anything else is
a question for the user.
"""

from __future__ import annotations

import re
from typing import Any

from coding_agent import reward, sandbox, tasks
from coding_agent.simulator import RuleBasedUser

CODE_BLOCK = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)
SYSTEM_PROMPT = (
    "You are a programmer helping a user. The request is under-specified. Each turn, either ask the user "
    "one clarifying question, or commit your final code in a single ```python block (this ends the conversation)."
)


def split_turn(text: str) -> reward.Turn:
    """A model turn as the reward sees it: code when it holds a fenced block, a question otherwise."""
    match = CODE_BLOCK.search(text)
    return reward.Turn("code", match.group(1)) if match else reward.Turn("question", text.strip())


def score_conversation(
    task: tasks.Task, model_turns: list[str], max_turns: int, sample_id: str, spec: reward.RewardSpec = reward.TAUGHT
) -> dict[str, Any]:
    """The rollout report for a finished conversation (what the container sends back)."""
    turns = [split_turn(t) for t in model_turns]
    correctness, status = 0.0, "no_commit"
    if turns and turns[-1].kind == "code":
        verdict = sandbox.run_tests(turns[-1].text, task.entry_point, task.tests)
        correctness, status = verdict.correctness, verdict.status
    values = reward.components(turns, correctness, max_turns, spec)
    return reward.byoo_report(
        sample_id, values, spec, {"sandbox_ok": float(status == sandbox.OK), "turns": float(len(turns))}
    )


def load_environment(max_turns: int = 5, **kwargs: Any) -> Any:  # pragma: no cover - needs the starter kit
    import verifiers as vf
    from datasets import Dataset

    rows = [
        {
            "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": t.brief}],
            "answer": t.id,
            "info": {"task_id": t.id},
        }
        for t in tasks.all_tasks()
    ]

    class CollaborativeCoding(vf.MultiTurnEnv):
        async def is_completed(self, messages: list[dict], state: dict, **_: Any) -> bool:
            return bool(state.get("done"))

        async def env_response(self, messages: list[dict], state: dict, **_: Any) -> tuple[list[dict], dict]:
            task = tasks.get(state["info"]["task_id"])
            user = state.setdefault("user", RuleBasedUser(task))
            turn = split_turn(messages[-1]["content"])
            model_turns = [m["content"] for m in messages if m["role"] == "assistant"]
            if turn.kind == "code" or len(model_turns) >= max_turns:
                state["done"] = True
                state["report"] = score_conversation(task, model_turns, max_turns, state["info"]["task_id"])
                return [], state
            return [{"role": "user", "content": user.answer(turn.text)}], state

    def component(name: str):
        def value(state: dict, **_: Any) -> float:
            listed = {m["name"]: m["value"] for m in state.get("report", {}).get("metrics_list", [])}
            return float(listed.get(name, 0.0))

        value.__name__ = name
        return value

    rubric = vf.Rubric(
        funcs=[component(n) for n in reward.COMPONENTS], weights=[reward.WEIGHTS[n] for n in reward.COMPONENTS]
    )
    return CollaborativeCoding(dataset=Dataset.from_list(rows), rubric=rubric, max_turns=max_turns, **kwargs)
