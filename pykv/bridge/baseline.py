"""A diagnosis saved as a baseline (JSON with config, release, figures) and a new one compared to it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pykv.border.files import NotAFile, open_regular, write_atomic
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.base.numbers import bounded_float
from pykv.bridge.diagnosis import Diagnosis

BASELINE_VERSION = 1


def figures(diagnosis: Diagnosis) -> dict:
    """Preemptions per minute, mean / peak GPU KV usage, mean generation throughput (None when not seen; the
    preemptions None when nothing read counts them, a V1 log alone)."""
    samples = diagnosis.samples
    times = [s.seconds for s in samples if s.seconds is not None]
    minutes = (max(times) - min(times)) / 60.0 if len(times) >= 2 else None
    usage = [s.gpu_kv_usage for s in samples if s.gpu_kv_usage is not None]
    gen = [s.gen_tps for s in samples if s.gen_tps is not None]
    counted = diagnosis.preemptions_counted
    return {
        "preemptions_per_min": round(diagnosis.preemptions_at_least / minutes, 3) if minutes and counted else None,
        "preemptions_at_least": diagnosis.preemptions_at_least if counted else None,
        "mean_gpu_kv_usage": round(sum(usage) / len(usage), 4) if usage else None,
        "peak_gpu_kv_usage": max(usage) if usage else None,
        "mean_gen_tps": round(sum(gen) / len(gen), 2) if gen else None,
    }


MAX_BASELINE_BYTES = 1_000_000  # a baseline is a few hundred bytes of JSON
MAX_FIGURE = 1e18  # a figure's magnitude (preemptions per minute, tokens/s): past it, no server's


def baseline_body(diagnosis: Diagnosis) -> dict:
    """What a baseline keeps: the release, the config seen, the figures and the findings' ids."""
    return {
        "baseline_version": BASELINE_VERSION,
        "release": diagnosis.release.text,
        "engine": diagnosis.engine,
        "config": diagnosis.config.to_json_dict(),
        "figures": figures(diagnosis),
        "findings": [f.id for f in diagnosis.findings],
    }


def baseline_bytes(body: dict) -> bytes:
    """A baseline's file: JSON, finite numbers only (``allow_nan=False``: never an ``Infinity``)."""
    return (json.dumps(body, indent=2, allow_nan=False) + "\n").encode()


def save_baseline(diagnosis: Diagnosis, path: str | Path) -> dict:
    """Write the baseline atomically (a failed write keeps the old file; a FIFO or a device is refused)."""
    body = baseline_body(diagnosis)
    try:
        write_atomic(path, baseline_bytes(body))
    except NotAFile as exc:
        raise BridgeInputError(str(exc)) from None
    return body


def parse_baseline(raw: bytes, source: str = "the baseline") -> dict:
    """A baseline from its bytes; one-line BridgeInputError for anything else (too big, not JSON, not ours)."""
    if len(raw) > MAX_BASELINE_BYTES:
        raise BridgeInputError(f"{source} is {len(raw):,} bytes; a baseline is a small JSON file: save one again")
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise BridgeInputError(f"{source} is JSON nested too deeply to be a baseline: save one again") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise BridgeInputError(f"cannot read {source}: {exc}; save one first with save_baseline") from None
    if (
        not isinstance(body, dict)
        or body.get("baseline_version") != BASELINE_VERSION
        or not isinstance(body.get("figures"), dict)
    ):
        raise BridgeInputError(f"{source} is not a bridge baseline (version {BASELINE_VERSION}): save it again")
    for key, value in body["figures"].items():
        if value is not None and bounded_float(value, MAX_FIGURE, -MAX_FIGURE) is None:
            raise BridgeInputError(f"{source}: figure {str(key)[:40]!r} is not a number: save the baseline again")
    return body


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def load_baseline(path: str | Path) -> dict:
    try:
        with open_regular(path) as f:  # never blocks on a FIFO; a folder or a device is refused
            raw = f.read(MAX_BASELINE_BYTES + 1)
    except NotAFile as exc:
        raise BridgeInputError(f"the baseline {exc}") from None
    except OSError as exc:
        raise BridgeInputError(f"cannot read the baseline {path}: {exc.strerror or exc}") from None
    return parse_baseline(raw, str(path)[:200])


@dataclass
class Comparison:
    changes: dict[str, tuple]  # figure -> (baseline, now)
    verdict: str  # one line


def compare(diagnosis: Diagnosis, baseline: dict, tolerance: float = 0.10) -> Comparison:
    now, before = figures(diagnosis), baseline["figures"]
    changes = {key: (before.get(key), now[key]) for key in ("preemptions_per_min", "mean_gpu_kv_usage", "mean_gen_tps")}
    better: list[str] = []
    worse: list[str] = []
    for key, lower_is_better in (("preemptions_per_min", True), ("mean_gen_tps", False)):
        old, new = changes[key]
        if old is None or new is None:
            continue
        if abs(new - old) <= tolerance * max(abs(old), 1e-9) and not (old == 0 and new > 0):
            continue
        (better if (new < old) == lower_is_better else worse).append(f"{key.replace('_', ' ')} {old} -> {new}")
    if worse and not better:
        verdict = "worse than the baseline: " + ", ".join(worse)
    elif better and not worse:
        verdict = "better than the baseline: " + ", ".join(better)
    elif better:
        verdict = "mixed: better " + ", ".join(better) + "; worse " + ", ".join(worse)
    else:
        verdict = f"same as the baseline (within {tolerance:.0%}) on preemptions and throughput"
    return Comparison(changes, verdict)
