"""Triton's interpreter is switched on only on the way into the Triton kernels, never by ``import pykv``.

Each check runs in a fresh process without ``TRITON_INTERPRET`` and with CUDA hidden, since this test
process has long since imported triton and the kernels.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run_fresh(code: str, timeout: int = 60) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split()


def test_importing_pykv_leaves_triton_and_the_environment_alone():
    code = (
        "import os, sys\n"
        "import pykv, pykv_kernels.reference, pykv_kernels.launch_utils\n"
        "from pykv.engine.model.attention import resolve_backend\n"
        "assert resolve_backend('torch', 'cpu').name == 'torch' and resolve_backend('auto', 'cpu').name == 'torch'\n"
        "print(os.environ.get('TRITON_INTERPRET'), 'triton' in sys.modules)\n"
    )
    assert run_fresh(code) == ["None", "False"]


def test_choosing_triton_on_cpu_switches_the_interpreter_on_before_triton_is_imported():
    if importlib.util.find_spec("triton") is None:  # not importorskip: this process imports no triton either
        pytest.skip("triton is not installed")
    code = (
        "import os, pykv.engine.model.attention as a\n"
        "b = a.resolve_backend('triton', 'cpu')\n"
        "from pykv_kernels.triton_utils import interpreted\n"
        "print(os.environ.get('TRITON_INTERPRET'), interpreted(), b.name)\n"
    )
    assert run_fresh(code) == ["1", "True", "triton"]


def test_triton_imported_too_early_is_a_clear_error():
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed here")
    code = (
        "import triton\n"  # as torch._dynamo does, before pykv could switch the interpreter on
        "from pykv.engine.model.attention import resolve_backend\n"
        "try:\n"
        "    resolve_backend('triton', 'cpu')\n"
        "except ValueError as e:\n"
        "    print('TRITON_INTERPRET=1' in str(e), len(str(e).splitlines()))\n"
    )
    assert run_fresh(code) == ["True", "1"]


def test_the_documented_triton_engine_runs_from_a_plain_script():
    """The manual: ``LLMEngine(EngineConfig(attention_backend="triton"))`` on a CPU, as a user's script runs it: the
    engine switches the interpreter on before its model load imports triton (through torch._dynamo)."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed here")
    code = (
        "import os\n"
        "from pykv import EngineConfig, LLMEngine, SamplingParams\n"
        "engine = LLMEngine(EngineConfig(attention_backend='triton'))\n"
        "rid = engine.add_request('def fib(n):', SamplingParams(max_tokens=2))\n"
        "report = engine.step()\n"
        "print(engine.backend.name, os.environ.get('TRITON_INTERPRET'), rid in report.scheduled)\n"
    )
    assert run_fresh(code, timeout=240) == ["triton", "1", "True"]
