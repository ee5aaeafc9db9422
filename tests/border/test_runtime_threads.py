"""The lab's thread policy reaches numpy's BLAS too: Triton's interpreter runs ``tl.dot`` as numpy's matmul, and
OpenBLAS's default pool of spinning threads made those products 30-100x slower on a busy 2-core machine."""

from __future__ import annotations

import numpy  # noqa: F401  (loads its BLAS, so threadpoolctl can see it)
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from pykv.border.runtime import THREADS_ENV, configure_torch_threads


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_torch_and_numpy_blas_get_the_same_thread_count(monkeypatch):
    if not blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can see")
    torch_before, blas_before = torch.get_num_threads(), max(blas_threads())
    try:
        monkeypatch.setenv(THREADS_ENV, "2")
        assert configure_torch_threads() == 2 and torch.get_num_threads() == 2 and set(blas_threads()) == {2}
        monkeypatch.delenv(THREADS_ENV)
        assert configure_torch_threads() == 1 and torch.get_num_threads() == 1 and set(blas_threads()) == {1}
    finally:
        torch.set_num_threads(torch_before)
        threadpool_limits(limits=blas_before, user_api="blas")
