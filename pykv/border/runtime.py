"""Process-wide runtime policy: how many torch (and numpy BLAS) threads the lab and its benchmarks use."""

from __future__ import annotations

import os

THREADS_ENV = "PYKV_TORCH_THREADS"


def configure_torch_threads() -> int:
    """One intra-op thread unless $PYKV_TORCH_THREADS says otherwise, for torch and numpy's BLAS alike.
    The lab's model is tiny: extra threads buy nothing, and on a busy 2-core machine their spin-waits made
    a 5 ms CPU step take ~1 s (measured beside a training job). Triton's interpreter runs ``tl.dot`` as
    numpy's matmul: with OpenBLAS's default pool a 0.5 ms tile product took 30-130 ms under load.
    Returns the thread count set."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = max(1, int(os.environ.get(THREADS_ENV, "1")))
    torch.set_num_threads(threads)
    threadpool_limits(limits=threads, user_api="blas")  # numpy's OpenBLAS: loaded too late for $OPENBLAS_NUM_THREADS
    return threads
