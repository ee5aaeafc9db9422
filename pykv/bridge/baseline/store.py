"""A diagnosis saved as a baseline: JSON with the release, the model, the config seen, the figures and the findings
(ids and titles), written atomically and read back with every number checked."""

from __future__ import annotations

import json
from pathlib import Path

from pykv.border.files import NotAFile, open_regular, write_atomic
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.base.numbers import bounded_float
from pykv.bridge.baseline.figures import figures
from pykv.bridge.diagnosis import Diagnosis

BASELINE_VERSION = 1


MAX_BASELINE_BYTES = 1_000_000  # a baseline is a few hundred bytes of JSON
FLAG_FIGURES = ("preemptions_since_start",)  # true / false, not a number
MAX_FIGURE = 1e18  # a figure's magnitude (preemptions per minute, tokens/s): past it, no server's


def baseline_body(diagnosis: Diagnosis) -> dict:
    """What a baseline keeps: the release (as read, and its range), the model, the config seen, the figures and the
    findings (ids, and their titles for the comparison to name them). Files saved before the range, the model and
    the titles were kept still load: the comparison says what they lack."""
    release = diagnosis.release
    return {
        "baseline_version": BASELINE_VERSION,
        "release": release.text,
        "release_range": [release.low, release.high],
        "engine": diagnosis.engine,
        "model": getattr(diagnosis.config, "model", None),
        "config": diagnosis.config.to_json_dict(),
        "figures": figures(diagnosis),
        "findings": [f.id for f in diagnosis.findings],
        "finding_titles": {f.id: f.title for f in diagnosis.findings},
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
        if key in FLAG_FIGURES:
            if not isinstance(value, bool):
                raise BridgeInputError(f"{source}: {str(key)[:40]!r} is not true or false: save the baseline again")
            continue
        if value is not None and (isinstance(value, str) or bounded_float(value, MAX_FIGURE, -MAX_FIGURE) is None):
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
