"""Named, seeded workloads (burst, shared system prompt, long context, storm, spread arrivals) and their
JSON form. A border type: it imports nothing from the engine (``pykv.workload_runner`` feeds one to an engine)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

SNIPPETS = [
    "def parse_header(line):\n    key, _, value = line.partition(':')\n    return key.strip(), value.strip()\n",
    "class Cache:\n    def __init__(self, size):\n        self.size = size\n        self.data = {}\n",
    "for name in sorted(os.listdir(path)):\n    if name.endswith('.py'):\n        files.append(name)\n",
    "try:\n    import json\nexcept ImportError:\n    json = None\n",
    "def read_config(path):\n    with open(path) as f:\n        return f.read().splitlines()\n",
    "if not isinstance(value, int):\n    raise TypeError('expected an int, got %r' % (value,))\n",
    "    def __repr__(self):\n        return '%s(%r)' % (self.__class__.__name__, self.name)\n",
    "while queue:\n    item = queue.pop(0)\n    result.append(transform(item))\n",
    "import sys\nimport os\nfrom collections import defaultdict\n",
    "    @property\n    def length(self):\n        return len(self._items)\n",
]
SYSTEM_PROMPT = (
    "# You are a careful Python assistant. Answer with code only, following PEP 8,\n"
    "# with docstrings on public functions and no external dependencies.\n"
    "# The project uses the standard library and supports Python 3.8 and newer.\n"
)


class WorkloadRequest(BaseModel):
    """One request of a workload: a prompt (text or token ids), its max_tokens and when it arrives."""

    model_config = ConfigDict(extra="forbid")
    prompt: Optional[str] = None
    prompt_token_ids: Optional[list[int]] = None
    max_tokens: int = Field(ge=1)
    arrival_step: int = Field(default=0, ge=0)
    request_id: Optional[str] = None
    ignore_eos: bool = False  # generate exactly max_tokens, as vLLM's benchmarks do

    @model_validator(mode="after")
    def _one_prompt(self) -> "WorkloadRequest":
        if (self.prompt is None) == (self.prompt_token_ids is None):
            raise ValueError("give exactly one of 'prompt' (text) or 'prompt_token_ids'")
        if self.prompt is not None and not self.prompt:
            raise ValueError("'prompt' is empty")
        return self


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    seed: int = 0
    requests: list[WorkloadRequest] = Field(min_length=1)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, exclude_none=True)

    @classmethod
    def from_json(cls, text: str, source: str = "workload") -> "Workload":
        """Parse a workload file; a malformed one raises ValueError naming the source and the field."""
        try:
            return cls.model_validate(json.loads(text))
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}).") from None
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                                 for err in e.errors())
            raise ValueError(f"{source}: {problems}") from None

    @classmethod
    def load(cls, path: str | Path) -> "Workload":
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"Workload file {path} does not exist.")
        return cls.from_json(path.read_text(), source=str(path))


def _code(rng: random.Random, num_snippets: int) -> str:
    return "".join(rng.choice(SNIPPETS) for _ in range(num_snippets))


def burst(n: int = 8, max_tokens: int = 32, seed: int = 0) -> Workload:
    """n requests arriving together, short code prompts."""
    rng = random.Random(seed)
    reqs = [WorkloadRequest(prompt=_code(rng, rng.randint(1, 2)), max_tokens=max_tokens) for _ in range(n)]
    return Workload(name="burst", seed=seed, requests=reqs)


def shared_prefix(n: int = 6, max_tokens: int = 24, seed: int = 0) -> Workload:
    """One long system prompt shared by every request, each with its own short tail."""
    rng = random.Random(seed)
    reqs = [WorkloadRequest(prompt=SYSTEM_PROMPT + _code(rng, 1), max_tokens=max_tokens, arrival_step=2 * i)
            for i in range(n)]
    return Workload(name="shared_prefix", seed=seed, requests=reqs)


def long_context(n: int = 4, max_tokens: int = 32, seed: int = 0) -> Workload:
    """A few long prompts (several hundred tokens) beside short ones."""
    rng = random.Random(seed)
    reqs = [
        WorkloadRequest(prompt=_code(rng, 8 if i % 2 == 0 else 1), max_tokens=max_tokens, arrival_step=i)
        for i in range(n)
    ]
    return Workload(name="long_context", seed=seed, requests=reqs)


def storm(n: int = 12, max_tokens: int = 128, seed: int = 0) -> Workload:
    """Over-subscription: many equal short prompts with long, fixed-length outputs, all at once.
    Admission is cheap, so the pool fills as the outputs grow in lockstep, and every shrink of the
    pool forces more preemptions."""
    rng = random.Random(seed)
    body = rng.choice(SNIPPETS)
    reqs = [WorkloadRequest(prompt=f"# task {i:03d}\n" + body, max_tokens=max_tokens, ignore_eos=True)
            for i in range(n)]
    return Workload(name="storm", seed=seed, requests=reqs)


def spread(n: int = 8, max_tokens: int = 32, every: int = 4, seed: int = 0) -> Workload:
    """Arrivals spread over steps: one request every `every` steps."""
    rng = random.Random(seed)
    reqs = [WorkloadRequest(prompt=_code(rng, 1), max_tokens=max_tokens, arrival_step=i * every) for i in range(n)]
    return Workload(name="spread", seed=seed, requests=reqs)


PRESETS: dict[str, Callable[..., Workload]] = {
    "burst": burst, "shared_prefix": shared_prefix, "long_context": long_context, "storm": storm, "spread": spread,
}


def make_workload(name: str, seed: int = 0, **kwargs) -> Workload:
    if name not in PRESETS:
        raise ValueError(f"Unknown workload {name!r}; choose one of {', '.join(PRESETS)} or load a JSON file.")
    return PRESETS[name](seed=seed, **kwargs)
