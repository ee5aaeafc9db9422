"""Process-wide runtime policy: how many torch threads the lab and its benchmarks use."""

from __future__ import annotations

import os

THREADS_ENV = "PYKV_TORCH_THREADS"


def configure_torch_threads() -> int:
    """One intra-op thread unless $PYKV_TORCH_THREADS says otherwise. The lab's model is tiny: extra
    threads buy nothing, and on a busy 2-core machine their spin-waits made a 5 ms CPU step take
    ~1 s (measured beside a training job). Returns the thread count set."""
    import torch

    threads = max(1, int(os.environ.get(THREADS_ENV, "1")))
    torch.set_num_threads(threads)
    return threads
