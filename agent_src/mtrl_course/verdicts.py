"""The course's one verdict rule for a statistic measured over a few training seeds.

An effect is called an effect when its mean over the seeds is further from zero than the
two-sided 95% cutoff of Student's t with n - 1 degrees of freedom times its standard error
(the standard deviation over seeds, ddof=1, over sqrt(n)). With few seeds that cutoff is large:
4.30 standard errors for 3 seeds, 3.18 for 4, 2.78 for 5; the normal distribution's 1.96 (or
the rounder "2 SE") is only reached with many seeds. A rule of "more than 2 SE" over 3 seeds
calls 18% of null results an effect (P(|t| > 2) with 2 degrees of freedom) instead of 5%.

    verdict([0.06, 0.03, 0.07])  # Verdict(mean=0.0533, se=0.012, n=3, cutoff=4.303, label="gain")

The cutoffs come from scipy (`scipy.stats.t.ppf`, installed with the course); `T_CUTOFF_95`
holds the first ones for readers, and tests/test_verdicts.py checks the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
# Two-sided 95% cutoffs of Student's t by degrees of freedom (n seeds - 1), to three decimals.
T_CUTOFF_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
GAIN, LOSS, NULL, UNDECIDED = "gain", "loss", "no effect shown", "one seed: no verdict"


def cutoff(n: int, confidence: float = CONFIDENCE) -> float:
    """How many standard errors from zero a mean of `n` seeds must be to count (two-sided)."""
    if n < 2:
        raise ValueError(f"a verdict needs at least 2 seeds to estimate its noise; got {n}")
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, n - 1))


@dataclass(frozen=True)
class Verdict:
    """A statistic over seeds: its mean, standard error, seed count, the cutoff used and the label."""

    mean: float
    se: float
    n: int
    cutoff: float
    label: str

    @property
    def beyond_noise(self) -> bool:
        return self.label in (GAIN, LOSS)

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:+.3f} ({self.label})"
        return f"{self.mean:+.3f} ± {self.se:.3f} (SE, {self.n} seeds; cutoff {self.cutoff:.2f} SE): {self.label}"


def verdict(values: Sequence[float], *, names: tuple[str, str] = (GAIN, LOSS)) -> Verdict:
    """The rule applied to one statistic's values, one per seed (gains, differences, ...).

    `names` labels a positive and a negative effect (for example ("higher", "lower")); a mean
    within the cutoff is `NULL`, and a single seed gets no verdict at all.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a verdict needs at least one value")
    mean = math.fsum(values) / n
    if n < 2:
        return Verdict(mean, float("nan"), n, float("nan"), UNDECIDED)
    se = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1) / n)
    limit = cutoff(n)
    if abs(mean) > limit * se:
        label = names[0] if mean > 0 else names[1]
    else:
        label = NULL
    return Verdict(mean, se, n, limit, label)
