"""The stand-in coder: a softmax policy over the four moves, linear in a few features.

It is not a language model. It sees what a coder could see (is this the first turn, did the
user's last answer tell it something new, how many turns are left) and picks one of
`env.ACTIONS`. Its logits are `W @ phi(observation)`, so the gradient of log pi needs no
autograd: d log pi(a) / dW = (onehot(a) - pi) outer phi.

Untrained, it asks a question on its first turn about a third of the time: `INITIAL_ASKING_RATE`
is set near the about 34% the Nova Forge post reports for its model before training. That is a
choice for the stand-in, not a measurement.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coding_agent.env import ACTIONS, ASK_GENERIC, ASK_RELEVANT, COMMIT, REPEAT
from mtrl_course.numerics import exp, log, matmul

FEATURES = ("bias", "first_turn", "last_reply_new", "last_reply_nothing_new", "turns_used")
N_FEATURES = len(FEATURES)
INITIAL_ASKING_RATE = 0.34  # near the post's starting clarifying-question rate
# How the untrained policy splits its non-commit probability among the three question moves.
INITIAL_QUESTION_SPLIT = {ASK_RELEVANT: 0.5, ASK_GENERIC: 0.3, REPEAT: 0.2}


def features(observation: Mapping[str, Any]) -> np.ndarray:
    turn, max_turns, last = observation["turn"], observation["max_turns"], observation["last_reply"]
    return np.array(
        [1.0, float(turn == 0), float(last == "new"), float(last == "nothing_new"), turn / max(max_turns - 1, 1)]
    )


def initial_weights(asking_rate: float = INITIAL_ASKING_RATE) -> np.ndarray:
    """Weights whose first-turn probabilities ask with `asking_rate` (all moves on the bias feature)."""
    if not 0.0 < asking_rate < 1.0:
        raise ValueError(f"asking_rate must be strictly between 0 and 1, got {asking_rate}")
    probs = np.zeros(len(ACTIONS))
    probs[COMMIT] = 1.0 - asking_rate
    for action, share in INITIAL_QUESTION_SPLIT.items():
        probs[action] = asking_rate * share
    weights = np.zeros((len(ACTIONS), N_FEATURES))
    weights[:, 0] = log(probs)
    return weights


def softmax(logits: np.ndarray) -> np.ndarray:
    z = exp(logits - logits.max())
    return z / z.sum()


@dataclass
class CoderPolicy:
    """W (actions x features). `act` samples a move and records the trace the update needs."""

    weights: np.ndarray = field(default_factory=initial_weights)

    def probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        return softmax(matmul(self.weights, features(observation)))

    def act(self, observation: Mapping[str, Any], rng: random.Random) -> tuple[int, dict[str, Any]]:
        phi = features(observation)
        probs = softmax(matmul(self.weights, phi))
        action = _sample(probs, rng)
        return action, {
            "features": phi,
            "probs": probs,
            "action": action,
            "logp": math.log(max(float(probs[action]), 1e-300)),
        }


def _sample(probs: np.ndarray, rng: random.Random) -> int:
    u, total = rng.random(), 0.0
    for i, p in enumerate(probs):
        total += float(p)
        if u < total:
            return i
    return len(probs) - 1


def log_prob_gradient(trace: Mapping[str, Any]) -> np.ndarray:
    """d log pi(action) / dW at the weights the trace was sampled with."""
    onehot = np.zeros(len(ACTIONS))
    onehot[trace["action"]] = 1.0
    return np.outer(onehot - trace["probs"], trace["features"])
