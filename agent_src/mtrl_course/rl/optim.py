"""Adam with decoupled weight decay and global gradient-norm clipping, over named numpy arrays.

One optimizer for every learner: the tiny model's base pretraining (every weight) and its GRPO
adapter (the LoRA matrices), the stand-in's adapter vector and the coding stand-in's weights. Its
defaults are the service's documented ones (`adam_beta1` 0.9, `adam_beta2` 0.95, eps 1e-8,
`adam_grad_clip_norm` 1.0). It *descends* the loss it is given: a learner that ascends an
objective J hands it -grad J.

Per step, for each array p with gradient g (after clipping the global norm to `grad_clip_norm`):

    m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
    p = p (1 - lr weight_decay) - lr (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

Weight decay applies to the arrays `decays(name, array)` accepts: by default the matrices
(biases and layer-norm gains are not decayed, the usual practice); an adapter vector is decayed
whole (`decays=every_array`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from mtrl_course.numerics import norm


def matrices_only(name: str, array: np.ndarray) -> bool:
    return array.ndim > 1


def every_array(name: str, array: np.ndarray) -> bool:
    return True


@dataclass
class AdamW:
    learning_rate: float
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.0
    grad_clip_norm: float = 1.0  # 0 turns clipping off
    decays: Callable[[str, np.ndarray], bool] = matrices_only
    m: dict[str, np.ndarray] = field(default_factory=dict)
    v: dict[str, np.ndarray] = field(default_factory=dict)
    t: int = 0

    def step(
        self, params: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray], learning_rate: float | None = None
    ) -> tuple[dict[str, np.ndarray], float]:
        """New parameters after one step, and the gradient's global norm before clipping."""
        present = [np.asarray(g, dtype=np.float64).reshape(-1) for g in grads.values()]
        total = norm(present[0] if len(present) == 1 else np.concatenate(present)) if present else 0.0
        clip = self.grad_clip_norm / total if self.grad_clip_norm > 0 and total > self.grad_clip_norm else None
        lr = self.learning_rate if learning_rate is None else learning_rate
        self.t += 1
        c1, c2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        out = {}
        for name, p in params.items():
            g = grads.get(name)
            if g is None:
                out[name] = p
                continue
            g = (g * clip if clip is not None else g).astype(p.dtype, copy=False)
            m = self.m.get(name)
            if m is None or m.shape != p.shape:
                m = self.m[name] = np.zeros_like(p)
                self.v[name] = np.zeros_like(p)
            m *= self.beta1
            m += (1 - self.beta1) * g
            v = self.v[name]
            v *= self.beta2
            v += (1 - self.beta2) * g**2
            decayed = p * (1 - lr * self.weight_decay) if self.decays(name, p) else p
            out[name] = (decayed - lr * (m / c1) / (np.sqrt(v / c2) + self.eps)).astype(p.dtype, copy=False)
        return out, total
