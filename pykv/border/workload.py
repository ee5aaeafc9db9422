"""Named, seeded workloads (burst, shared system prompt, long context, storm and its small twin, spread arrivals)
and their JSON form. A preset named without sizes means the same requests everywhere (``preset_defaults``). A
border type: it imports nothing from the engine (``pykv.lab.workload_runner`` feeds one to an engine)."""

from __future__ import annotations

import functools
import inspect
import json
import random
import re
from pathlib import Path
from typing import Annotated, Callable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pykv.border.limits import MAX_N

# Limits on what a workload may ask for (a file, a preset's arguments): past these it is a typo or an attack.
MAX_WORKLOAD_BYTES = 5_000_000  # a workload file, checked before it is read
MAX_JSON_DEPTH = 32  # nesting of a workload file (a real one nests 4 deep)
MAX_REQUESTS = 10_000  # requests in one workload (a file or a preset's n)
MAX_PROMPT_CHARS = 100_000  # one prompt's text, before tokenizing
MAX_PROMPT_TOKENS = 100_000  # one prompt given as token ids
MAX_TOKEN_ID = 2**31 - 1
MAX_OUTPUT_TOKENS = 65_536  # max_tokens of one request
MAX_ARRIVAL_STEP = 100_000  # the CLI's default --max-steps
MAX_NAME_CHARS = 200  # a workload's name, a request id
MAX_SEED = 2**63 - 1
MAX_MESSAGE_CHARS = 300  # an error message about a workload is cut to this length

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

    model_config = ConfigDict(extra="forbid", strict=True)  # strict: no silent int("3"), 2.0 or True as 1
    prompt: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)
    prompt_token_ids: list[Annotated[int, Field(ge=0, le=MAX_TOKEN_ID)]] | None = Field(
        default=None, min_length=1, max_length=MAX_PROMPT_TOKENS
    )
    max_tokens: int = Field(ge=1, le=MAX_OUTPUT_TOKENS)
    arrival_step: int = Field(default=0, ge=0, le=MAX_ARRIVAL_STEP)
    request_id: str | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    ignore_eos: bool = False  # generate exactly max_tokens, as vLLM's benchmarks do
    priority: int = Field(default=0, ge=-(2**31), lt=2**31)  # vLLM's: lower runs first (preemption_victim=priority)
    n: int = Field(default=1, ge=1, le=MAX_N)  # parallel sampling: sequences forked on the first token

    @model_validator(mode="after")
    def _one_prompt(self) -> "WorkloadRequest":
        if (self.prompt is None) == (self.prompt_token_ids is None):
            raise ValueError("give exactly one of 'prompt' (text) or 'prompt_token_ids'")
        if self.prompt is not None and not self.prompt:
            raise ValueError("'prompt' is empty")
        return self


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(max_length=MAX_NAME_CHARS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    requests: list[WorkloadRequest] = Field(min_length=1, max_length=MAX_REQUESTS)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, exclude_none=True)

    @classmethod
    def from_json(cls, text: str, source: str = "workload") -> "Workload":
        """Parse a workload file; a malformed one raises a one-line ValueError naming the source and the
        field (at most MAX_MESSAGE_CHARS long). Size and nesting are bounded before any parsing."""
        source = _short(source, 120)
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text[: MAX_WORKLOAD_BYTES + 1]).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{source}: not UTF-8 text (byte {e.start}).") from None
        if not isinstance(text, str):
            raise ValueError(f"{source}: a workload is JSON text, got {type(text).__name__}.")
        if len(text) > MAX_WORKLOAD_BYTES:
            raise ValueError(f"{source}: {len(text):,} characters; a workload may have at most {MAX_WORKLOAD_BYTES:,}.")
        depth = _json_depth(text)
        if depth > MAX_JSON_DEPTH:
            raise ValueError(
                f"{source}: JSON nested more than {MAX_JSON_DEPTH} levels deep; a workload nests 4 "
                "(workload -> requests -> request -> prompt_token_ids)."
            )
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}).") from None
        except RecursionError:  # unreachable after the depth check; kept as a guard
            raise ValueError(f"{source}: JSON nested too deeply.") from None
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ValueError(_short(f"{source}: {validation_problems(e)}")) from None

    @classmethod
    def load(cls, path: str | Path) -> "Workload":
        """Read a workload file: ValueError (one line) if it is missing, too big, not UTF-8 or malformed."""
        path = Path(path)
        name = _short(str(path), 120)
        try:
            if not path.is_file():
                raise ValueError(f"Workload file {name} does not exist (or is not a file).")
            size = path.stat().st_size
            if size > MAX_WORKLOAD_BYTES:
                raise ValueError(f"Workload file {name} is {size:,} bytes; the limit is {MAX_WORKLOAD_BYTES:,}.")
            with path.open("rb") as f:
                raw = f.read(MAX_WORKLOAD_BYTES + 1)  # the file may have grown since stat()
        except OSError as e:
            raise ValueError(f"Cannot read workload file {name}: {e.strerror or e}.") from None
        if len(raw) > MAX_WORKLOAD_BYTES:
            raise ValueError(f"Workload file {name} is over {MAX_WORKLOAD_BYTES:,} bytes, the limit.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"Workload file {name} is not UTF-8 text (byte {e.start}).") from None
        return cls.from_json(text, source=str(path))


def _short(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validation_problems(error: ValidationError, limit: int = 3) -> str:
    """A pydantic error as one line: the first ``limit`` problems, each ``field.path: message``."""
    errors = error.errors(include_url=False, include_input=False)
    problems = [
        f"{'.'.join(_short(str(p), 40) for p in err['loc']) or '(top level)'}: {_short(err['msg'], 120)}"
        for err in errors[:limit]
    ]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return _short("; ".join(problems) + more)


def _json_depth(text: str) -> int:
    """How deep the JSON in ``text`` nests (brackets inside strings do not count), without parsing it:
    regular expressions and numpy run in C, so a 5 MB file takes a tenth of a second at most."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub('""', text))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    return int(np.cumsum(np.where((codes == ord("[")) | (codes == ord("{")), 1, -1), dtype=np.int64).max())


# A string, or an unclosed one up to the end: a match never fails once it starts at a quote, so sub() is
# one linear pass (with the closing quote required, every escaped quote of an unclosed string started a
# new scan to the end: quadratic, an 80 KB file took 17 s).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


# Bounds of the presets' arguments (inclusive).
PRESET_ARG_BOUNDS = {
    "n": (1, MAX_REQUESTS),
    "max_tokens": (1, MAX_OUTPUT_TOKENS),
    "every": (0, 1000),
    "seed": (0, MAX_SEED),
}


def _check_args(func: Callable[..., Workload], args: tuple, kwargs: dict) -> inspect.BoundArguments:
    signature = inspect.signature(func)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        takes = ", ".join(signature.parameters)
        unknown = ", ".join(repr(k) for k in kwargs if k not in signature.parameters) or "too many positional"
        raise ValueError(f"preset {func.__name__!r} takes the arguments {takes}; got {_short(unknown, 120)}.") from None
    bound.apply_defaults()
    for name, value in bound.arguments.items():
        low, high = PRESET_ARG_BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(
                f"preset {func.__name__!r}: {name} must be a whole number, got "
                f"{_short(repr(value), 60)} ({type(value).__name__})."
            )
        if not low <= value <= high:
            raise ValueError(
                f"preset {func.__name__!r}: {name}={_short(repr(value), 60)} is out of range; use {low} to {high:,}."
            )
    if "every" in bound.arguments and (bound.arguments["n"] - 1) * bound.arguments["every"] > MAX_ARRIVAL_STEP:
        raise ValueError(
            f"preset {func.__name__!r}: the last request would arrive after step "
            f"{MAX_ARRIVAL_STEP:,}; use a smaller n or every."
        )
    return bound


def _preset(func: Callable[..., Workload]) -> Callable[..., Workload]:
    """A preset whose arguments are checked (types and PRESET_ARG_BOUNDS) before anything is built: a
    bad one is a one-line ValueError, never a MemoryError from ``n=10**8``."""

    @functools.wraps(func)
    def checked(*args, **kwargs) -> Workload:
        bound = _check_args(func, args, kwargs)
        return func(*bound.args, **bound.kwargs)

    return checked


def _code(rng: random.Random, num_snippets: int) -> str:
    return "".join(rng.choice(SNIPPETS) for _ in range(num_snippets))


@_preset
def burst(n: int = 8, max_tokens: int = 32, seed: int = 0) -> Workload:
    """n requests arriving together, short code prompts."""
    rng = random.Random(seed)
    reqs = [WorkloadRequest(prompt=_code(rng, rng.randint(1, 2)), max_tokens=max_tokens) for _ in range(n)]
    return Workload(name="burst", seed=seed, requests=reqs)


@_preset
def shared_prefix(n: int = 6, max_tokens: int = 24, seed: int = 0) -> Workload:
    """One long system prompt shared by every request, each with its own short tail."""
    rng = random.Random(seed)
    reqs = [
        WorkloadRequest(prompt=SYSTEM_PROMPT + _code(rng, 1), max_tokens=max_tokens, arrival_step=2 * i)
        for i in range(n)
    ]
    return Workload(name="shared_prefix", seed=seed, requests=reqs)


@_preset
def long_context(n: int = 4, max_tokens: int = 32, seed: int = 0) -> Workload:
    """A few long prompts (several hundred tokens) beside short ones."""
    rng = random.Random(seed)
    reqs = [
        WorkloadRequest(prompt=_code(rng, 8 if i % 2 == 0 else 1), max_tokens=max_tokens, arrival_step=i)
        for i in range(n)
    ]
    return Workload(name="long_context", seed=seed, requests=reqs)


def _storm(name: str, n: int, max_tokens: int, seed: int) -> Workload:
    rng = random.Random(seed)
    body = rng.choice(SNIPPETS)
    reqs = [
        WorkloadRequest(prompt=f"# task {i:03d}\n" + body, max_tokens=max_tokens, ignore_eos=True) for i in range(n)
    ]
    return Workload(name=name, seed=seed, requests=reqs)


@_preset
def storm(n: int = 12, max_tokens: int = 128, seed: int = 0) -> Workload:
    """Over-subscription: many equal short prompts with long, fixed-length outputs, all at once.
    Admission is cheap, so the pool fills as the outputs grow in lockstep, and every shrink of the
    pool forces more preemptions."""
    return _storm("storm", n, max_tokens, seed)


@_preset
def small_storm(n: int = 8, max_tokens: int = 48, seed: int = 0) -> Workload:
    """The storm's requests, fewer and shorter (8 x 48 tokens): the Sweep's default, small enough that its runs, each
    point three times, take seconds. ``small_storm(n=12, max_tokens=128)`` makes the storm's very requests."""
    return _storm("small_storm", n, max_tokens, seed)


@_preset
def spread(n: int = 8, max_tokens: int = 32, every: int = 4, seed: int = 0) -> Workload:
    """Arrivals spread over steps: one request every `every` steps."""
    rng = random.Random(seed)
    reqs = [WorkloadRequest(prompt=_code(rng, 1), max_tokens=max_tokens, arrival_step=i * every) for i in range(n)]
    return Workload(name="spread", seed=seed, requests=reqs)


PRESETS: dict[str, Callable[..., Workload]] = {
    "burst": burst,
    "shared_prefix": shared_prefix,
    "long_context": long_context,
    "storm": storm,
    "small_storm": small_storm,
    "spread": spread,
}
STORM_PRESETS = ("storm", "small_storm")  # n equal prompts at once, outputs of one fixed length (see StormShape)


def preset_defaults(name: str) -> dict[str, int]:
    """The arguments a preset runs with when none is given (``{"n": 12, "max_tokens": 128}`` for the storm), so
    that every page, command and lesson that names a preset without sizing it means the same requests."""
    if name not in PRESETS:
        raise ValueError(f"Unknown workload preset {_short(repr(name), 80)}; choose one of {', '.join(PRESETS)}.")
    parameters = inspect.signature(inspect.unwrap(PRESETS[name])).parameters.values()
    return {p.name: p.default for p in parameters if p.name != "seed"}


def check_preset_args(name: str, seed: int = 0, **kwargs) -> None:
    """What :func:`make_workload` would refuse, checked without building anything (one-line ValueError)."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(f"Unknown workload preset {_short(repr(name), 80)}; choose one of {', '.join(PRESETS)}.")
    _check_args(inspect.unwrap(PRESETS[name]), (), {"seed": seed, **kwargs})


def make_workload(name: str, seed: int = 0, **kwargs) -> Workload:
    """A preset by name; ValueError (one line) for an unknown name or arguments out of PRESET_ARG_BOUNDS."""
    check_preset_args(name, seed, **kwargs)
    return PRESETS[name](seed=seed, **kwargs)
