"""Groups start-up capacity lines into one StartupFact per start-up (per worker under tensor parallelism, per engine
under data parallelism).

A start-up's lines come in a fixed order (memory, blocks or KV tokens, concurrency), so a fact already known means
the next start-up (a restart) or the next worker's copy of the same line. The line a server prints once per start
(its version, "Initializing ... LLM engine") closes what came before, so a restart's blocks never pair with the
previous start's concurrency, even when that start printed only some of its lines. A start-up error printed twice
(the engine process's traceback, then the front end's re-raise: same message, no start between) is one failed
start-up. Under data parallelism each engine core prints its own lines, interleaved with the others': they are
kept apart by the engine they name.
"""

from __future__ import annotations

from pykv.bridge.base.records import StartupFact

_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_FACT_KEYS = (
    "num_gpu_blocks",
    "num_cpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
    "max_model_len",
    "kv_memory_gib",
)


class StartupCollector:
    def __init__(self) -> None:
        self.facts: list[StartupFact] = []
        self._open: dict[int | None, StartupFact] = {}  # engine -> the fact its next lines add to
        # Figures a later line of the same start-up repeats: "Overriding num_gpu_blocks=N with
        # num_gpu_blocks_override=M" comes before "# GPU blocks: M" (0.6.3.post1 engine/llm_engine.py:488).
        self._restated: dict[int, dict[str, object]] = {}  # id(fact) -> key -> value

    def new_start(self, engine: int | None) -> None:
        """A server (engine None: the whole server) or one engine core is starting: its lines begin a new fact."""
        if engine is None:
            self._open.clear()
        else:
            self._open.pop(engine, None)

    def add(
        self,
        facts: dict,
        line: int,
        error: bool,
        engine: int | None = None,
        device: str | None = None,
        restated_later: bool = False,
    ) -> None:
        if engine is not None and engine not in self._open and None in self._open and len(self._open) == 1:
            engine = None  # "Engine 000: ... num_gpu_blocks is" of a server whose engine core's lines name none
        current = self._open.get(engine)
        if current is not None and error and _agrees(current, facts):
            # The error restates this start-up's figures (its memory), or is the same failure printed again by
            # the process that re-raised it: one start-up, failed.
            for key, value in facts.items():
                setattr(current, key, value)
            current.startup_error = True
            current.lines.append(line)
            return
        restated = self._restated.get(id(current), {}) if current is not None else {}
        known = [key for key in facts if current is not None and getattr(current, key) is not None]
        if current is not None and known and all(restated.get(key) == facts[key] for key in known):
            known = []  # the line repeats what an earlier line of this start-up announced
            for key in facts:
                restated.pop(key, None)
        if current is None or current.startup_error or known:
            current = StartupFact(engine=engine)
            self.facts.append(current)
            self._open[engine] = current
        if restated_later:
            self._restated.setdefault(id(current), {}).update(facts)
        for key, value in facts.items():
            setattr(current, key, value)
        if device and current.device is None:
            current.device = device
        current.startup_error = current.startup_error or error
        current.lines.append(line)

    def finish(self, config_block_size: int | None) -> list[StartupFact]:
        engines = {fact.engine for fact in self.facts if fact.engine is not None}
        for fact in self.facts:
            fill_derived(fact, config_block_size)
            if len(engines) < 2:
                fact.engine = None  # one engine (its process tag says "EngineCore_DP0" all the same): no label
        return self.facts


def _agrees(fact: StartupFact, facts: dict) -> bool:
    """No figure of `facts` contradicts one `fact` already has."""
    return all(getattr(fact, key) in (None, value) for key, value in facts.items() if key in _FACT_KEYS)


def fill_derived(fact: StartupFact, config_block_size: int | None) -> None:
    """Block size and KV tokens follow from the others: blocks x block size = tokens = concurrency x max_model_len."""
    if fact.block_size is None:
        fact.block_size = config_block_size
    if fact.block_size is None and fact.num_gpu_blocks:
        tokens: float | None = fact.kv_cache_tokens
        if tokens is None and fact.max_concurrency is not None and fact.max_model_len:
            tokens = fact.max_concurrency * fact.max_model_len
        if tokens:
            estimate = tokens / fact.num_gpu_blocks
            nearest = min(_BLOCK_SIZES, key=lambda size: abs(size - estimate))
            if abs(nearest - estimate) <= 0.05 * nearest:  # concurrency is printed to 2 decimals: allow rounding
                fact.block_size = nearest
    if fact.kv_cache_tokens is None and fact.num_gpu_blocks is not None and fact.block_size is not None:
        fact.kv_cache_tokens = fact.num_gpu_blocks * fact.block_size
    if (
        fact.max_concurrency is None
        and not fact.startup_error
        and fact.kv_cache_tokens is not None
        and fact.max_model_len
    ):
        fact.max_concurrency = round(fact.kv_cache_tokens / fact.max_model_len, 2)
