"""Peels what surrounds a vLLM log message: docker timestamps, ANSI colours, process tags, the logger prefix.

Every era's prefix is accepted: `INFO 06-16 21:24:15 metrics.py:341]` (0.2-0.8), `INFO 06-16 21:24:15 [loggers.py:127]`
(0.9+), a relative `[v1/metrics/loggers.py:273]`, process tags `(APIServer pid=1)` / `(VllmWorker rank=0 pid=7)` /
Ray's `(RayWorkerWrapper pid=3, ip=10.0.0.2)`, and a custom `2024-12-20 15:18:19 - vllm.x - INFO - ` format.
Records glued on one line (tqdm output in front, two records without a newline) are split at each prefix.
No pattern nests quantifiers: every one runs in linear time on hostile text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DOCKER_TS = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?) ")
_PROCESS_TAG = re.compile(r"\([A-Za-z_][\w.]*(?: [\w.=]+)* pid=\d+(?:, ip=[\w.:]+)?\) ?")
# A data-parallel engine core's tag: "(EngineCore_DP1 pid=7)" (0.10+ v1/engine/utils.py CoreEngineProcManager names
# the process "EngineCore_DP%d"), Ray's "(DPEngineCoreActor_DP1 pid=7)" (0.33.0 v1/engine/core.py), its workers'
# "(Worker_DP1_TP0 pid=9)" (0.33.0 v1/executor/multiproc_executor.py:1214-1229).
_DP_RANK = re.compile(r"\(\w{0,40}?_DP(\d{1,4})(?:_\w{1,40})? pid=")
# The vLLM prefix, found anywhere in a line (that is how glued records are split).
_VLLM_PREFIX = re.compile(
    r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? (\[?)([\w./\\-]{1,200}):(\d+)\] ?"
)
_CUSTOM_PREFIX = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.]\d+)? - ([\w.]{1,200}) - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
_LEVEL_WORDS = ("INFO", "WARNING", "DEBUG", "ERROR", "CRITICAL")


@dataclass(slots=True)
class RawRecord:
    message: str
    time: str | None = None  # as printed ("06-16 21:24:15"), or the docker/custom timestamp
    seconds: float | None = None  # the time on one axis, for rates
    level: str | None = None
    source_file: str | None = None  # "metrics.py", "v1/metrics/loggers.py"
    has_prefix: bool = False
    bracketed: bool | None = None  # "[metrics.py:481]" (0.8+) rather than "metrics.py:341]"
    dp_rank: int | None = None  # the data-parallel engine core that printed it ("(EngineCore_DP1 pid=7)")


def vllm_time_seconds(stamp: str) -> float:
    """`MM-DD HH:MM:SS` (no year) on a monotone axis: 31-day months keep month ends in order."""
    month, day = int(stamp[0:2]), int(stamp[3:5])
    hour, minute, second = int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14])
    return (((month - 1) * 31 + day - 1) * 24 + hour) * 3600 + minute * 60 + second


def iso_seconds(stamp: str) -> float | None:
    text = stamp.replace("Z", "+00:00")
    if "." in text:  # docker prints nanoseconds; datetime takes at most microseconds
        head, _, tail = text.partition(".")
        digits = len(tail) - len(tail.lstrip("0123456789"))
        text = head + "." + tail[: min(digits, 6)] + tail[digits:]
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def has_level_word(line: str) -> bool:
    return any(word in line for word in _LEVEL_WORDS)


def split_records(line: str) -> list[RawRecord]:
    """The records in one physical line (usually one; several when glued; the bare line when it has no prefix)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    docker_seconds = None
    docker_time = None
    match = _DOCKER_TS.match(line)
    if match:
        docker_time = match.group(1)
        docker_seconds = iso_seconds(docker_time)
        line = line[match.end() :]
    dp_rank = None
    if "pid=" in line:
        if "_DP" in line:
            rank = _DP_RANK.search(line)
            dp_rank = int(rank.group(1)) if rank else None
        line = _PROCESS_TAG.sub("", line)
    starts = list(_VLLM_PREFIX.finditer(line))
    if not starts:
        bare = _custom_or_bare(line, docker_time, docker_seconds)
        bare.dp_rank = dp_rank
        return [bare]
    records = []
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(line)
        stamp = start.group(2)
        records.append(
            RawRecord(
                message=line[start.end() : end].rstrip(),
                time=stamp,
                seconds=docker_seconds if docker_seconds is not None else vllm_time_seconds(stamp),
                level=start.group(1),
                source_file=start.group(4),
                has_prefix=True,
                bracketed=bool(start.group(3)),
                dp_rank=dp_rank,
            )
        )
    return records


def _custom_or_bare(line: str, docker_time: str | None, docker_seconds: float | None) -> RawRecord:
    match = _CUSTOM_PREFIX.search(line)
    if match:
        stamp = match.group(1)
        seconds = docker_seconds if docker_seconds is not None else iso_seconds(stamp)
        return RawRecord(
            message=line[match.end() :].rstrip(),
            time=stamp,
            seconds=seconds,
            level=match.group(3),
            source_file=match.group(2),
            has_prefix=True,
        )
    return RawRecord(message=line.strip(), time=docker_time, seconds=docker_seconds, has_prefix=docker_time is not None)
