"""One BLAS thread while the learner computes.

The learner's matrix products are small (a 128-wide model), and on a shared two-core machine a
second OpenBLAS thread spends its time waiting for a busy core: measured with other jobs
running, a training step took 8.3 s with two threads and 0.66 s with one. `threadpoolctl` (a
dependency of scikit-learn, already installed) sets the limit at run time; without it this does
nothing and `OPENBLAS_NUM_THREADS=1` in the environment does the same job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
