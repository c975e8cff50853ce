"""The floating-point reductions whose last bits depend on the machine, and a switch to perturb them.

numpy and OpenBLAS pick SIMD kernels by CPU (AVX2 against AVX-512, say), so a dot product or a
vectorised `exp` can round differently in the last bit on two machines. In a sampled policy a
last-bit difference eventually moves a draw across a probability boundary, and from there the
two runs play different games: training metrics, token counts that depend on sampled text and
rewards averaged over games then differ in their last printed digits (measured: 4,536,181
against 4,536,581 billable prefill tokens for the same training run on two CPUs).

The rule that follows (docs/DESIGN.md, "Comparing numbers across machines"): committed outputs
and stored results are compared exactly only where they are machine-independent; everything
downstream of these reductions is compared within a measured tolerance.

`MTRL_PERTURB_ARITHMETIC=1` is a test-only switch that proves the tolerances hold: it replaces
the policy's matrix-vector products with the same sums taken in reverse order (mathematically
equal, different rounding), which is what another CPU's kernel does to them. It is read once, at
import; nothing else in the course changes with it. Never set it outside the tests.
"""

from __future__ import annotations

import math
import os

import numpy as np

PERTURB_ENV_VAR = "MTRL_PERTURB_ARITHMETIC"
PERTURBED = os.environ.get(PERTURB_ENV_VAR, "").strip() == "1"


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """`matrix @ vector`; under the test-only switch, the same sums in reverse order."""
    if not PERTURBED:
        return matrix @ vector
    return (matrix[..., ::-1] * vector[::-1]).sum(axis=-1)


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
