"""The floating-point operations whose last bits depend on the machine, and a switch to perturb them.

numpy and OpenBLAS pick SIMD kernels by CPU (AVX2 against AVX-512, say). Two kinds of operation
round differently from one CPU to another:

- BLAS products (`@`, `np.dot`, `np.linalg.norm` of a vector, `svd`): each kernel blocks and
  accumulates the shared axis in its own order, with or without fused multiply-adds;
- numpy's vectorised transcendental functions (`exp`, `log`): each SIMD width has its own
  implementation, accurate to within a few units in the last place, not correctly rounded.

What does not depend on the CPU: element-wise `+ - * /` and `sqrt` (IEEE 754 rounds each one
correctly), numpy's own sums and means (a pairwise sum in a fixed order), `cumsum`, comparisons,
`argmax`, integer arithmetic. Downstream of the first kind, though, everything moves.

In a sampled policy a last-bit difference eventually moves a draw across a probability boundary,
and from there two runs play different games: training metrics, token counts that depend on
sampled text and rewards averaged over games then differ in their last printed digits
(measured: 4,536,181 against 4,536,581 billable prefill tokens for the same training run on two
CPUs).

The rule that follows (docs/DESIGN.md, "Comparing numbers across machines"): committed outputs
and stored results are compared exactly only where they are machine-independent; everything
downstream of these operations is compared within a measured tolerance.

`MTRL_PERTURB_ARITHMETIC=1` is a test-only switch that proves the tolerances hold. Every float
path of the course (the stand-in policy and its GRPO, the tiny language model's forward and
backward passes, its sampler, optimizer and GRPO, the GRPO anatomy, the coding stand-in) takes
its machine-dependent operations from this module, so under the switch all of them change:

- `matmul` and `matvec` sum the same products in reverse order along the shared axis
  (mathematically equal, rounded differently: what another kernel's accumulation order does);
- `exp` and `log` return their result larger in magnitude by one part in 2**23 (float32) or
  2**52 (float64), one or two units in the last place (what another implementation's last-place
  error does); zero and infinity stay as they are.

It is read once, at import; with the switch off, these names are numpy's own functions, so the
course pays nothing for them. Never set it outside the tests.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

PERTURB_ENV_VAR = "MTRL_PERTURB_ARITHMETIC"
PERTURBED = os.environ.get(PERTURB_ENV_VAR, "").strip() == "1"


def _reversed_matmul(a: Any, b: Any) -> Any:
    """`a @ b` with the shared axis read backwards: the same products, summed in reverse order."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return np.flip(a, -1) @ np.flip(b, 0 if b.ndim == 1 else -2)


def _one_step_larger(y: Any) -> Any:
    """`y` times (1 + machine epsilon): one or two units in the last place away from zero."""
    y = np.asarray(y)
    if not np.issubdtype(y.dtype, np.floating):
        return y
    return y * (1 + np.finfo(y.dtype).eps)


def _perturbed_exp(x: Any) -> Any:
    return _one_step_larger(np.exp(x))


def _perturbed_log(x: Any) -> Any:
    return _one_step_larger(np.log(x))


# `a @ b`, `np.exp` and `np.log`: numpy's own functions, or their perturbed forms under the switch.
matmul: Callable[[Any, Any], Any] = _reversed_matmul if PERTURBED else np.matmul
exp: Callable[[Any], Any] = _perturbed_exp if PERTURBED else np.exp
log: Callable[[Any], Any] = _perturbed_log if PERTURBED else np.log


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """`matrix @ vector`; under the test-only switch, the same sums in reverse order."""
    if not PERTURBED:
        return matrix @ vector
    return (matrix[..., ::-1] * vector[::-1]).sum(axis=-1)


def norm(vector: np.ndarray) -> float:
    """The Euclidean norm of a vector (`np.linalg.norm`, a BLAS product); perturbed like `matmul`."""
    flat = np.asarray(vector).reshape(-1)
    if not PERTURBED:
        return float(np.linalg.norm(flat))
    return math.sqrt(float(_reversed_matmul(flat, flat)))


# Re-runs of stored experiments (a notebook's one-seed re-run, the suite's cheap re-runs) are
# compared with the stored numbers within this tolerance, not exactly. Measured: the re-runs
# differ from the stored numbers by at most 2.2e-16 (one rounding step) under the reversed
# summation, and by 0 on the machine that recorded them. A relative 1e-6 leaves ten orders of
# magnitude for other kernels and is still far below the smallest real change: one game of 256
# moves a rate by 0.004.
RERUN_REL_TOL = 1e-6
RERUN_ABS_TOL = 1e-9


def rerun_matches(fresh: float, stored: float) -> bool:
    """Whether a re-run's number equals the stored one up to how CPUs round (NaN matches NaN)."""
    if math.isnan(fresh) or math.isnan(stored):
        return math.isnan(fresh) and math.isnan(stored)
    return math.isclose(fresh, stored, rel_tol=RERUN_REL_TOL, abs_tol=RERUN_ABS_TOL)
