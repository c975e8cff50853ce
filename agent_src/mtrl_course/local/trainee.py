"""What a learner is to the training loop: the `Trainee` protocol, and which learners there are.

The runner (`local.runner`) runs one loop for every learner: play a batch of rollouts through the
real agent, turn each group's rewards into advantages (`rl.advantages`), hand the games' policy
traces and advantages to the trainee, log its metrics, and save or publish its adapter. The loop
never asks which learner it trains; each learner's module answers for it:

- the stand-in policy (`local.standin_lane.StandInTrainee`), the default;
- the learner, a tiny language model (`local.learner_lane.LearnerTrainee`).

A new learner is one class that satisfies `Trainee` and one entry in `start_trainee` and
`evaluation_policy`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from mtrl_course.rl.advantages import Estimator

POLICY_STANDIN, POLICY_LEARNER = "standin", "learner"
POLICIES = (POLICY_STANDIN, POLICY_LEARNER)
# The MLflow tag that says which learner a run trained or evaluated (its value: the learner's own
# description, `Trainee.tag`).
POLICY_TAG = "mtrl.offline.policy"


class Trainee(Protocol):
    """One learner's side of a training job."""

    label: str  # how the job's messages name it
    tag: str  # the value of POLICY_TAG on its MLflow runs

    def policy(self) -> Any:
        """The policy that serves the next rollouts (the adapter as it is now)."""
        ...

    def update(self, traces_by_game: Sequence[Sequence[Any]], advantages: Sequence[float], step: int) -> float:
        """One GRPO step from each game's policy traces and its advantage; returns its seconds."""
        ...

    def metrics(self, records: Sequence[Sequence[Any]], traces_by_game: Sequence[Sequence[Any]]) -> dict[str, float]:
        """The learner's own offline-only metrics after a step."""
        ...

    def save(self, directory: Path, name: str) -> Path:
        """Save the adapter as `name` in `directory` (a checkpoint); returns the file."""
        ...

    def publish(self, job: Any, directory: Path) -> None:
        """Save the trained adapter and register it as the job's output model package."""
        ...


def start_trainee(policy: str, job: Any, directory: Path, seed: int, estimator: Estimator) -> Trainee | str:
    """A training job's trainee for `policy`, from a fresh adapter or the job's input model
    package; a FailureReason string if the package holds no adapter of that learner."""
    hp = job.training_hyperparameters
    if policy == POLICY_LEARNER:
        from mtrl_course.local import learner_lane

        adapter = learner_lane.training_adapter(job, directory, seed)
        return adapter if isinstance(adapter, str) else learner_lane.LearnerTrainee(hp, adapter, seed, estimator)
    from mtrl_course.local import standin_lane

    start = standin_lane.starting_adapter(job, directory, seed)
    return start if isinstance(start, str) else standin_lane.StandInTrainee(hp, start, seed, estimator)


# What an evaluation job needs of a learner: the policy to serve, how to name it, its tag, the
# adapter's step (0: the base) and the learner's own metrics of the evaluation's games.
Evaluation = tuple[Any, str, str, int, Callable[[Sequence[Sequence[Any]]], dict[str, float]]]


def evaluation_policy(policy: str, job: Any, directory: Path, seed: int) -> Evaluation | str:
    """An evaluation job's policy for `policy` (the base, or the input model package's adapter)."""
    if policy == POLICY_LEARNER:
        from mtrl_course.local import learner_lane
        from mtrl_course.local.learner_policy import LABEL, LearnerPolicy

        adapter = learner_lane.evaluation_adapter(job, directory)
        if isinstance(adapter, str):
            return adapter
        step = adapter.step if adapter is not None else 0
        return LearnerPolicy(adapter, seed=seed), LABEL, learner_lane.TAG_VALUE, step, lambda records: {}
    from mtrl_course.local import standin_lane
    from mtrl_course.local.stand_in_policy import LABEL as STANDIN_LABEL, StandInPolicy

    start = standin_lane.starting_adapter(job, directory, seed)
    if isinstance(start, str):
        return start
    served = StandInPolicy(start, seed=seed)
    return (
        served,
        STANDIN_LABEL,
        standin_lane.TAG_VALUE,
        start.step,
        lambda records: standin_lane.evaluation_metrics(records, served, start),
    )
