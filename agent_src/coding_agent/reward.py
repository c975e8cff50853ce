"""The composite reward, as the Nova Forge post teaches it: four components, one weighted sum.

| component | weight | value |
|---|---|---|
| correctness | 1.0 | share of hidden tests the committed code passes |
| asked_before_coding | 0.6 | 1.0 if the first turn was a question and code was committed later; 0.6 if the first question came later; else 0 |
| guessed_immediately | 0.4 | -1.0 if the first turn is code without a question |
| loop_penalty | 0.2 | -0.5 if the last two turns are more than 80% similar |

Two principles from the post are visible in the constants: the asking credit is **not gated on
correctness** (when correctness is near zero a gated bonus never fires, so it cannot teach), but
it **requires a commit** (otherwise asking forever would pay); and the failure mode is
**penalised explicitly** (guessing is strictly worse than asking, so a group that mixes the two
has spread to learn from).

`RewardSpec` also expresses the variants the lesson reproduces (the post's earlier gated design
with an efficiency term, ablations, a down-weighted saturated term). The post gives no formula
for its efficiency term; ours is `1 - (turns - 1) / (max_turns - 1)`: 1.0 for a one-turn
conversation, 0.0 for one that used every turn.

The result is reported in the bring-your-own-orchestrator shape:
`{"id", "aggregate_reward_score", "metrics_list": [{"name", "value", "type"}]}`, where `type`
is "Reward" for a component that enters the sum and "Metric" for tracking only (the Nova
client validates those two values).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

COMPONENTS = ("correctness", "asked_before_coding", "guessed_immediately", "loop_penalty")
WEIGHTS: Mapping[str, float] = {
    "correctness": 1.0,
    "asked_before_coding": 0.6,
    "guessed_immediately": 0.4,
    "loop_penalty": 0.2,
}
ASKED_ON_FIRST_TURN = 1.0
ASKED_LATER = 0.6
GUESS_PENALTY = -1.0
LOOP_PENALTY = -0.5
LOOP_SIMILARITY = 0.8  # the last two turns must be MORE than this similar (difflib ratio)
# The largest magnitude each component can take (what "saturated" is measured against).
MAX_MAGNITUDE: Mapping[str, float] = {
    "correctness": 1.0,
    "asked_before_coding": ASKED_ON_FIRST_TURN,
    "guessed_immediately": abs(GUESS_PENALTY),
    "loop_penalty": abs(LOOP_PENALTY),
    "efficiency": 1.0,
}
EFFICIENCY = "efficiency"  # the earlier design's extra term (not in the taught reward)
REWARD_TYPE = "Reward"
METRIC_TYPE = "Metric"


@dataclass(frozen=True)
class Turn:
    """One turn of the coder: a question to the user, or committed code (which ends the rollout)."""

    kind: str  # "question" or "code"
    text: str

    def __post_init__(self) -> None:
        if self.kind not in ("question", "code"):
            raise ValueError(f"a turn is a 'question' or 'code', got {self.kind!r}")


@dataclass(frozen=True)
class RewardSpec:
    """Weights and switches of one reward design. The default is the post's taught reward."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict(WEIGHTS))
    # The earlier design: asking credit only when every hidden test passes.
    gate_asking_on_correctness: bool = False
    efficiency_weight: float = 0.0

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown reward components {sorted(unknown)}; the components are {COMPONENTS}")

    def weight(self, name: str) -> float:
        if name == EFFICIENCY:
            return self.efficiency_weight
        return float(self.weights.get(name, 0.0))

    def without(self, name: str) -> RewardSpec:
        """The same design with one component's weight set to 0 (an ablation)."""
        return replace(self, weights={**self.weights, name: 0.0})

    def with_weight(self, name: str, weight: float) -> RewardSpec:
        return replace(self, weights={**self.weights, name: weight})

    @property
    def names(self) -> tuple[str, ...]:
        return COMPONENTS + ((EFFICIENCY,) if self.efficiency_weight else ())


TAUGHT = RewardSpec()
# The post's earlier design: gated asking credit, an efficiency term, no guessing penalty.
# The efficiency weight takes the slot the guessing penalty has in the taught design (our choice).
GATED_WITH_EFFICIENCY = RewardSpec(
    weights={**WEIGHTS, "guessed_immediately": 0.0}, gate_asking_on_correctness=True, efficiency_weight=0.4
)


def similarity(a: str, b: str) -> float:
    """How alike two turns are, 0..1 (difflib's ratio; the post does not name its measure)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def components(
    turns: Sequence[Turn], correctness: float, max_turns: int, spec: RewardSpec = TAUGHT
) -> dict[str, float]:
    """Each component's value (before weighting) for one finished conversation."""
    if not 0.0 <= correctness <= 1.0:
        raise ValueError(f"correctness must be in [0, 1], got {correctness}")
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    committed = bool(turns) and turns[-1].kind == "code"
    first_question = next((i for i, t in enumerate(turns) if t.kind == "question"), None)
    if not committed or first_question is None or first_question > len(turns) - 2:
        asked = 0.0
    else:
        asked = ASKED_ON_FIRST_TURN if first_question == 0 else ASKED_LATER
    if spec.gate_asking_on_correctness and correctness < 1.0:
        asked = 0.0
    values = {
        "correctness": correctness if committed else 0.0,
        "asked_before_coding": asked,
        "guessed_immediately": GUESS_PENALTY if turns and turns[0].kind == "code" else 0.0,
        "loop_penalty": LOOP_PENALTY
        if len(turns) >= 2 and similarity(turns[-2].text, turns[-1].text) > LOOP_SIMILARITY
        else 0.0,
    }
    if spec.efficiency_weight:
        values[EFFICIENCY] = 1.0 - (len(turns) - 1) / (max_turns - 1) if max_turns > 1 else 1.0
    return values


def aggregate(values: Mapping[str, float], spec: RewardSpec = TAUGHT) -> float:
    return float(sum(spec.weight(name) * value for name, value in values.items()))


def byoo_report(
    sample_id: str, values: Mapping[str, float], spec: RewardSpec = TAUGHT, metrics: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """The rollout report: the weighted total plus every component, and tracking-only metrics."""
    if not sample_id:
        raise ValueError("a rollout report needs the sample id it answers")
    listed = [
        {"name": name, "value": float(value), "type": REWARD_TYPE if spec.weight(name) else METRIC_TYPE}
        for name, value in values.items()
    ]
    listed += [{"name": name, "value": float(value), "type": METRIC_TYPE} for name, value in (metrics or {}).items()]
    return {"id": sample_id, "aggregate_reward_score": aggregate(values, spec), "metrics_list": listed}
