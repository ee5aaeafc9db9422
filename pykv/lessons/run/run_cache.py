"""Side runs measured once per server: a lesson's ``run:`` action is a pure function of the model, the
engine config and the workload (greedy decoding, a fresh engine), so a second learner on the same step,
the class's projector, or Back and Next again gets the summary measured the first time, with its measured
times as they were, instead of running the workload again.

Kept in memory per loaded model (the server's), newest ``MAX_ENTRIES``. ``PYKV_SIDE_RUN_CACHE_DIR`` adds a
folder that processes share (the test session's workers and the app servers it starts: one measurement
per test run, whichever process gets there first). The folder holds pickles: point it only at a folder
that nobody else writes.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import threading
import weakref
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Callable

from pykv.border.config import EngineConfig
from pykv.border.workload import Workload
from pykv.engine.model.loader import LoadedModel
from pykv.lessons.values.run_summary import RunSummary

CACHE_DIR_ENV = "PYKV_SIDE_RUN_CACHE_DIR"
MAX_ENTRIES = 256  # a summary is a few KB: the whole course's side runs are about 70

_lock = threading.Lock()
_memory: dict[int, OrderedDict[str, RunSummary]] = {}  # id(LoadedModel) -> its runs, dropped with the model


def _weights_identity(loaded: LoadedModel) -> list[tuple[str, int, int]]:
    """The checkpoint's files as (name, size, mtime): a folder rewritten in place is another model."""
    folder = Path(loaded.path)
    files = sorted(folder.glob("*.safetensors")) + [folder / "config.json"]
    return [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.is_file()]


def run_key(config: EngineConfig, workload: Workload, loaded: LoadedModel, max_steps: int) -> str:
    """What the run depends on, hashed: the model's files, every knob, every request and the step bound (the
    ``model`` knob only names the files: "tiny" and the shipped folder's path are one model)."""
    parts = [
        str(Path(loaded.path).resolve()),
        repr(_weights_identity(loaded)),
        config.model_dump_json(exclude={"model"}),
        workload.model_dump_json(),
        str(max_steps),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cached_run(
    name: str,
    config: EngineConfig,
    workload: Workload,
    loaded: LoadedModel,
    max_steps: int,
    measure: Callable[[], RunSummary],
) -> RunSummary:
    """The summary of this run measured before (under this ``name`` and ``config``), or ``measure()``'s, kept
    for next time."""
    key = run_key(config, workload, loaded, max_steps)
    found = _recall(loaded, key)
    if found is None:
        found = measure()
        _keep(loaded, key, found)
    asked = config.model_dump()
    return found if (found.name, found.config) == (name, asked) else replace(found, name=name, config=asked)


def _recall(loaded: LoadedModel, key: str) -> RunSummary | None:
    with _lock:
        kept = _memory.get(id(loaded))
        if kept is not None and key in kept:
            kept.move_to_end(key)
            return kept[key]
    folder = _shared_folder()
    if folder is None:
        return None
    try:
        with open(folder / f"{key}.pickle", "rb") as f:
            found = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):  # ImportError: an older layout
        return None
    if not isinstance(found, RunSummary):
        return None
    _remember(loaded, key, found)
    return found


def _keep(loaded: LoadedModel, key: str, summary: RunSummary) -> None:
    _remember(loaded, key, summary)
    folder = _shared_folder()
    if folder is None:
        return
    try:  # written whole, then renamed: a reader never sees half a file
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as f:
            pickle.dump(summary, f)
        os.replace(f.name, folder / f"{key}.pickle")
    except OSError:
        pass  # a folder that cannot be written only costs the next process a run


def _remember(loaded: LoadedModel, key: str, summary: RunSummary) -> None:
    with _lock:
        kept = _memory.get(id(loaded))
        if kept is None:
            kept = _memory[id(loaded)] = OrderedDict()
            weakref.finalize(loaded, _memory.pop, id(loaded), None)
        kept[key] = summary
        kept.move_to_end(key)
        while len(kept) > MAX_ENTRIES:
            kept.popitem(last=False)


def _shared_folder() -> Path | None:
    raw = os.environ.get(CACHE_DIR_ENV)
    if not raw:
        return None
    folder = Path(raw)
    return folder if folder.is_dir() else None


def forget() -> None:
    """Drop every summary kept in memory (tests that time a side run)."""
    with _lock:
        _memory.clear()
