import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

pytest_plugins = ["redis_server"]  # the class-mode tests' redis-server and Redis fixtures (tests/redis_server.py)

torch.set_num_threads(1)  # small shapes: threads only add noise and contention on 2 cores
if not torch.cuda.is_available():
    # The fixtures write checkpoints with transformers, whose torch._dynamo imports triton: switch the interpreter
    # on first (a process running the Triton backend on CPU must start so; the app and the CLI never import dynamo).
    os.environ.setdefault("TRITON_INTERPRET", "1")
# The lab's engines (Playground, Lessons) run "auto" as interpreted Triton on a CPU; the suite's many app and lesson
# replays stay on torch for speed, and the tests of the Triton path choose it explicitly (pykv.engine.model.attention).
os.environ.setdefault("PYKV_STEPWISE_CPU_BACKEND", "torch")
os.environ.setdefault("PYKV_VALIDATE_FIGURES", "1")  # every figure a test draws is validated (the app skips it: speed)
# A lesson's side runs are measured once per test run, not once per test that replays the lesson: one fresh folder
# for this run, made by the first process (the xdist controller) and inherited by its workers and the app servers.
if "PYKV_SIDE_RUN_CACHE_DIR" not in os.environ:
    os.environ["PYKV_SIDE_RUN_CACHE_DIR"] = tempfile.mkdtemp(prefix="pykv-side-runs-")
    atexit.register(shutil.rmtree, os.environ["PYKV_SIDE_RUN_CACHE_DIR"], True)

from spec_parity import ParityCheckedSpecFigure  # noqa: E402
from suite_order import file_rank  # noqa: E402

from pykv import EngineConfig, LLMEngine  # noqa: E402
from pykv.engine.model.loader import load_model  # noqa: E402
from pykv.viz import theme  # noqa: E402
from testkit.checkpoints import make_checkpoint  # noqa: E402

theme.SpecFigure = ParityCheckedSpecFigure  # every figure a test draws is served as plotly's own would be

# Hypothesis profile for the property tests: 200 examples by default (CI); PYKV_HYPOTHESIS_EXAMPLES=1000 asks for more.
# Engines are built per example and steps are not timed, so no deadline; the fixtures are session-scoped models.
_EXAMPLES = os.environ.get("PYKV_HYPOTHESIS_EXAMPLES", "200").strip()
if not _EXAMPLES.isdigit() or not 1 <= int(_EXAMPLES) <= 1_000_000:
    raise pytest.UsageError(f"PYKV_HYPOTHESIS_EXAMPLES must be a whole number from 1 to 1000000, got {_EXAMPLES!r}")
settings.register_profile(
    "pykv",
    max_examples=int(_EXAMPLES),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("pykv")


@pytest.fixture(scope="session")
def random_llama_path(tmp_path_factory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("llama"), "llama")


@pytest.fixture(scope="session")
def random_llama(random_llama_path):
    """One loaded random model shared by every engine in the run (engines never modify weights)."""
    return load_model(str(random_llama_path))


@pytest.fixture
def make_engine(random_llama, random_llama_path):
    def make(**overrides) -> LLMEngine:
        cfg = EngineConfig(model=str(random_llama_path), **overrides)
        return LLMEngine(cfg, loaded=random_llama)

    return make


def pytest_collection_modifyitems(config, items):
    items.sort(key=file_rank)  # suite_order.py: the slowest files first; stable within a file and among the rest
