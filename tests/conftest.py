import sys
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)  # small shapes: threads only add noise and contention on 2 cores
sys.path.insert(0, str(Path(__file__).parent))

from checkpoints import make_checkpoint  # noqa: E402

from pykv import EngineConfig, LLMEngine  # noqa: E402
from pykv.loader import load_model  # noqa: E402


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
