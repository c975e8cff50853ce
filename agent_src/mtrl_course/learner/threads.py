"""One BLAS thread while the learner computes, and Python threads where a step has independent parts.

The learner's matrix products are small (a 128-wide model), and on a shared two-core machine a
second OpenBLAS thread spends its time waiting for a busy core: measured with other jobs
running, a training step took 8.3 s with two threads and 0.66 s with one. `threadpoolctl` (a
dependency of scikit-learn, already installed) sets the limit at run time; without it this does
nothing and `OPENBLAS_NUM_THREADS=1` in the environment does the same job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def parallel_map(fn: Callable[[T], R], items: Iterable[T], threads: int = 1) -> list[R]:
    """`[fn(x) for x in items]`, with up to `threads` calls at once (1: in this thread, in order).

    Worth it only where `fn` spends its time in numpy's products and large element-wise loops,
    which release the GIL, and only on cores nothing else is using: with one BLAS thread each,
    two threads keep two cores busy. The results come back in the items' order either way."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))
