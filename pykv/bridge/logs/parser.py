"""One streaming pass over a vLLM log: samples, start-up facts, V0 preemption warnings, config, format features.

The hot path is a few substring tests per line; regexes run only on lines that can hold a record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykv.bridge.base.bounded_reader import TextSource
from pykv.bridge.base.numbers import MAX_GIB, bounded_float, bounded_int
from pykv.bridge.base.records import PreemptionWarning, Sample, ServerConfig, StartupFact
from pykv.bridge.logs.engines import EngineRounds
from pykv.bridge.logs.prefix import RawRecord, has_level_word, split_records
from pykv.bridge.logs.records import (
    KEYWORDS,
    ConfigRecord,
    FeatureRecord,
    PreemptionRecord,
    StartupRecord,
    StatsRecord,
    V0PrefixHitRecord,
    parse_message,
    parse_stats,
)
from pykv.bridge.logs.startup_facts import StartupCollector
from pykv.bridge.logs.timeline import BoundedTimeline

MAX_WARNINGS_KEPT = 500  # the first ones, as evidence; the count comes from total_num_cumulative_preemption
MAX_CONTINUATION_LINES = 3  # a record wrapped by a terminal spans at most this many extra lines
# A stats line carried "Preemptions: N", which no vLLM release prints (0.11.1 to 0.34.0 zero the interval's count
# before the check: base/release_guess.py): a patched or later build's; the counts are read, and the field's format
# (0.11.1+) raises the release range's low end.
PREEMPTIONS_FIELD = "stats_preemptions_field"


@dataclass
class LogParse:
    samples: list[Sample]
    startup: list[StartupFact]
    warnings: list[PreemptionWarning]
    warnings_seen: int
    cumulative_preemptions: int  # the largest total_num_cumulative_preemption (V0), 0 when none
    config: ServerConfig
    features: set[str]
    engine_kind: str | None
    lines_read: int
    lines_skipped: int
    timeline_stride: int
    notes: list[str] = field(default_factory=list)
    # A data-parallel server's timeline per engine ("Engine 001: " lines); `samples` is then their total, one per
    # interval (logs/engines.py says how). Empty for a single engine.
    engine_samples: dict[int, list[Sample]] = field(default_factory=dict)


class _Pending:
    """A record that looks cut off: the next prefix-less lines are glued onto it (terminal wraps mid-word)."""

    def __init__(self, record: RawRecord, line: int) -> None:
        self.record, self.line, self.joined = record, line, 0


class LogParser:
    def __init__(self, max_samples: int | None = None) -> None:
        self.timeline = BoundedTimeline(max_samples) if max_samples else BoundedTimeline()
        self.engines = EngineRounds(self.timeline, max_samples)
        self.startup = StartupCollector()
        self.warnings: list[PreemptionWarning] = []
        self.warnings_seen = 0
        self.cumulative = 0
        self._cumulative_at_last_sample = 0
        self.config = ServerConfig()
        self.features: set[str] = set()
        self.engine_kind: str | None = None
        self.lines_read = 0
        self.lines_skipped = 0
        self._last_sample: Sample | None = None
        self._pending: _Pending | None = None
        self.refused = 0  # numbers out of range, not read (base/numbers.py)

    def feed(self, number: int, line: str) -> None:
        self.lines_read += 1
        if self._pending is not None:
            if self._try_continue(line):
                return
            self._emit(self._pending.record, self._pending.line, allow_pending=False)
            self._pending = None
        if not any(word in line for word in KEYWORDS):
            if not has_level_word(line) and line.strip():
                self.lines_skipped += 1
            return
        recognised = False
        for record in split_records(line):
            recognised = self._emit(record, number, allow_pending=True) or recognised or record.has_prefix
        if not recognised and not has_level_word(line):
            self.lines_skipped += 1

    def _try_continue(self, line: str) -> bool:
        pending = self._pending
        assert pending is not None, "only called with a record pending"
        records = split_records(line)
        if len(records) != 1 or records[0].has_prefix or not records[0].message:
            return False
        pending.record.message += records[0].message
        pending.joined += 1
        if pending.joined >= MAX_CONTINUATION_LINES or _looks_complete(pending.record.message):
            self._emit(pending.record, pending.line, allow_pending=False)
            self._pending = None
        return True

    def _emit(self, record: RawRecord, number: int, allow_pending: bool) -> bool:
        parsed = parse_message(record.message)
        if parsed is None:
            return False
        if allow_pending and not _looks_complete(record.message, parsed):
            self._pending = _Pending(record, number)
            return True
        self.refused += getattr(parsed, "refused", 0)
        if isinstance(parsed, StatsRecord):
            self._add_sample(parsed, record, number)
        elif isinstance(parsed, PreemptionRecord):
            self._add_warning(parsed, record, number)
        elif isinstance(parsed, V0PrefixHitRecord):
            self.features.add("v0_prefix_hit_line")
            if self._last_sample is not None and self._last_sample.prefix_hit_rate is None:
                self._last_sample.prefix_hit_rate = parsed.gpu
        elif isinstance(parsed, StartupRecord):
            self.features.update(startup_features(parsed, record.message))
            previous = self.startup.facts[-1] if self.startup.facts else None
            if parsed.form == "concurrency" and previous is not None and previous.num_cpu_blocks is not None:
                self.features.add("startup_v0_concurrency")  # V0 prints it right after "# GPU blocks, # CPU blocks"
            if parsed.facts or parsed.error:
                engine = parsed.engine if parsed.engine is not None else record.dp_rank
                restated = parsed.form == "override_blocks"  # the blocks line repeats the override's count
                self.startup.add(parsed.facts, number, parsed.error, engine, parsed.device, restated)
        elif isinstance(parsed, FeatureRecord):
            self.features.add(parsed.feature)
        elif isinstance(parsed, ConfigRecord):
            if parsed.startup_marker:
                self.startup.new_start(record.dp_rank)
            self._add_config(parsed)
        self._note_prefix(record)
        return True

    def _note_prefix(self, record: RawRecord) -> None:
        if record.source_file is None:
            return
        if "/" in record.source_file:
            self.features.add("prefix_relative_path")
        if record.bracketed is not None:
            self.features.add("prefix_bracketed" if record.bracketed else "prefix_legacy")

    def _add_sample(self, stats: StatsRecord, record: RawRecord, number: int) -> None:
        fields = stats.fields
        v0 = "swapped" in fields or "cpu_kv_usage" in fields
        self.features.add(stats_feature(stats, record.message, v0))
        self.features.update(stats.newer_fields)
        if "preemptions" in fields:
            self.features.add(PREEMPTIONS_FIELD)
        sample = Sample(time=record.time, seconds=record.seconds, line=number, engine=stats.engine, **fields)
        if v0 and self.cumulative > self._cumulative_at_last_sample:
            sample.preemptions = self.cumulative - self._cumulative_at_last_sample  # at least this many
        self._cumulative_at_last_sample = self.cumulative
        if stats.engine is not None:
            self.engines.add(sample)  # its round's total joins the timeline when the round closes
        else:
            self.engines.close()
            self.timeline.add(sample)
        self._last_sample = sample

    def _add_warning(self, parsed: PreemptionRecord, record: RawRecord, number: int) -> None:
        self.features.add("v0_preemption_warning")
        self.warnings_seen += 1
        if parsed.cumulative is not None:
            self.cumulative = max(self.cumulative, parsed.cumulative)
        if len(self.warnings) < MAX_WARNINGS_KEPT:
            self.warnings.append(
                PreemptionWarning(number, parsed.request_id, parsed.mode, parsed.cumulative or 0, record.time)
            )

    def _add_config(self, parsed: ConfigRecord) -> None:
        if parsed.version and self.config.version is None:
            self.config.version = parsed.version
        if parsed.engine_kind:
            self.engine_kind = parsed.engine_kind
        self.features.update(parsed.features)
        apply_config_items(self.config, parsed.items)

    def finish(self) -> LogParse:
        if self._pending is not None:
            self._emit(self._pending.record, self._pending.line, allow_pending=False)
            self._pending = None
        engine_samples = self.engines.finish()
        samples = self.timeline.finish()
        if "v0_prefix_hit_line" in self.features and self.config.enable_prefix_caching is None:
            self.config.enable_prefix_caching = True  # V0 prints that line only with prefix caching on
        notes = []
        if PREEMPTIONS_FIELD in self.features:
            every = samples + [s for timeline in engine_samples.values() for s in timeline]
            for sample in every:  # the field comes only when N > 0: absence means none
                if sample.preemptions is None and sample.swapped is None:
                    sample.preemptions = 0
            notes.append(
                "the stats lines carry 'Preemptions: N', which no vLLM release prints (0.11.1 to 0.34.0 reset the "
                "count before the check): a patched or later build; its counts are used"
            )
        if self.refused:
            notes.append(f"{self.refused} number(s) too large (or not finite) for a server's were not read")
        if self.timeline.stride > 1:
            notes.append(f"timeline thinned: each sample stands for {self.timeline.stride} stats lines")
        if engine_samples:
            notes.append(
                f"{len(engine_samples)} engines (data parallel): the timeline is their total per interval (requests "
                "added up, KV usage of the fullest engine); each engine's own is kept"
            )
        return LogParse(
            samples,
            self.startup.finish(self.config.block_size),
            self.warnings,
            self.warnings_seen,
            self.cumulative,
            self.config,
            self.features,
            self.engine_kind,
            self.lines_read,
            self.lines_skipped,
            self.timeline.stride,
            notes,
            engine_samples,
        )


def stats_feature(stats: StatsRecord, message: str, v0: bool) -> str:
    if v0:
        if message.lstrip().startswith("Throughput:"):
            return "v0_stats_throughput_only"
        return "v0_stats_period" if message.rstrip().endswith("%.") else "v0_stats_no_period"
    if stats.aggregated_engines is not None:
        return "v1_stats_aggregated"
    if stats.device not in (None, "", "GPU"):
        return "v1_stats_device_named"
    return "v1_stats_engine" if stats.engine is not None else "v1_stats_no_engine"


def startup_features(parsed: StartupRecord, message: str) -> set[str]:
    """Which era's start-up line this was (see release_guess.FEATURES)."""
    features = set()
    if "blocks" in parsed.form.split("+"):
        if ", # CPU blocks" in message:  # the device's pool, then the swap pool
            named = parsed.device is not None and parsed.device.isupper()  # "GPU", "TPU"; 0.7+ "cuda", "cpu"
            features.add("startup_blocks_gpu_named" if named else "startup_blocks_device_named")
        elif parsed.device == "CPU":
            features.add("startup_cpu_backend_blocks")  # the CPU backend's own pool, no swap pool
        elif parsed.device == "GPU":
            features.add("startup_v1_blocks_only")
    if "kv_tokens" in parsed.form:
        features.add("startup_kv_tokens")
        if "concurrency" in parsed.form:
            features.add("startup_kv_tokens_one_line")
    if "kv_memory" in parsed.form and "Available KV cache memory" in message:
        features.add("startup_kv_memory")
    if "config_blocks" in parsed.form:
        if "Engines: vllm" in message:
            features.add("startup_num_gpu_blocks_engines")
        else:
            prefixed = parsed.engine is not None
            features.add("startup_num_gpu_blocks_engine" if prefixed else "startup_num_gpu_blocks_bare")
    return features


def _looks_complete(message: str, parsed: object | None = None) -> bool:
    if parsed is None:
        parsed = parse_message(message)
    if isinstance(parsed, StatsRecord):
        return parse_stats(message).complete if parsed is None else parsed.complete
    if isinstance(parsed, PreemptionRecord):
        return parsed.cumulative is not None or parsed.refused > 0
    return True


_BOOL = {"true": True, "false": False}


def apply_config_items(config: ServerConfig, items: dict) -> None:
    """Typed values onto the config; a value that does not parse (None, 'auto') is left unset."""
    casts = {
        "gpu_memory_utilization": ("gpu_memory_utilization", float),
        "max_num_seqs": ("max_num_seqs", int),
        "max_model_len": ("max_model_len", int),
        "swap_space": ("swap_space_gib", float),
        "block_size": ("block_size", int),
        "tensor_parallel_size": ("tensor_parallel_size", int),
        "kv_offloading_size": ("kv_offloading_size_gib", float),
        "enable_prefix_caching": ("enable_prefix_caching", bool),
        "enable_chunked_prefill": ("enable_chunked_prefill", bool),
    }
    for key, raw in items.items():
        if key == "model":
            config.model = config.model or raw  # the first start-up's
            continue
        target, cast = casts[key]
        value: bool | float | None
        if cast is bool:
            value = _BOOL.get(raw.lower())
        elif cast is int:
            value = bounded_int(raw)
        else:
            value = bounded_float(raw, MAX_GIB)  # a share of memory, or GiB
        if value is not None:
            setattr(config, target, value)


def parse_log(source: TextSource, max_samples: int | None = None) -> LogParse:
    parser = LogParser(max_samples)
    for number, line in source.lines():
        parser.feed(number, line)
    result = parser.finish()
    if source.stats.overlong_lines:
        result.notes.append(f"{source.stats.overlong_lines} line(s) over 64 KB: only their first 64 KB were read")
    if source.stats.stopped_at_bound:
        result.notes.append(f"stopped after {source.max_decompressed:,} bytes (the bound on decompressed input)")
    return result
