"""A lesson's side run is measured once per server and recalled after (pykv.lessons.run.run_cache): the same model,
config, workload and step bound give the summary measured the first time, anything else runs again; a folder set
in PYKV_SIDE_RUN_CACHE_DIR carries the summaries to other processes."""

from __future__ import annotations

import shutil

import pytest

from pykv.border.workload import burst
from pykv.engine.model.loader import load_model
from pykv.lab.lab import lab_config
from pykv.lessons.run import run_cache, runs


@pytest.fixture
def measured(monkeypatch):
    """The side runs actually run (not recalled), by name; memory and the shared folder start empty."""
    monkeypatch.delenv(run_cache.CACHE_DIR_ENV, raising=False)
    run_cache.forget()
    names: list[str] = []
    real = runs._measure

    def counting(name, *args):
        names.append(name)
        return real(name, *args)

    monkeypatch.setattr(runs, "_measure", counting)
    yield names
    run_cache.forget()


def _config(tiny, **knobs):
    return lab_config(model=str(tiny.path), device="cpu", dtype="float32", **knobs)


def test_the_same_run_is_measured_once_and_recalled_under_its_new_name(tiny, measured):
    config, workload = _config(tiny, num_gpu_blocks=12), burst(n=3, max_tokens=6)
    first = runs.side_run("a", config, workload, tiny)
    again = runs.side_run("b", config, workload, tiny)
    assert measured == ["a"]
    assert again.name == "b" and again.wall_s == first.wall_s and again.outputs == first.outputs


def test_another_knob_another_workload_or_another_bound_runs_again(tiny, measured):
    config, workload = _config(tiny, num_gpu_blocks=12), burst(n=3, max_tokens=6)
    runs.side_run("base", config, workload, tiny)
    runs.side_run("pool", config.replace(num_gpu_blocks=16), workload, tiny)
    runs.side_run("work", config, burst(n=3, max_tokens=7), tiny)
    runs.side_run("bound", config, workload, tiny, max_steps=5_000)
    assert measured == ["base", "pool", "work", "bound"]


def test_a_run_that_does_not_finish_is_not_kept(tiny, measured):
    config, workload = _config(tiny, num_gpu_blocks=12), burst(n=3, max_tokens=6)
    for _ in range(2):
        with pytest.raises(ValueError, match="did not finish within 2 engine steps"):
            runs.side_run("short", config, workload, tiny, max_steps=2)
    assert measured == ["short", "short"]


def test_a_shared_folder_carries_a_run_to_another_process(tiny, measured, tmp_path, monkeypatch):
    monkeypatch.setenv(run_cache.CACHE_DIR_ENV, str(tmp_path))
    config, workload = _config(tiny, num_gpu_blocks=12), burst(n=3, max_tokens=6)
    first = runs.side_run("a", config, workload, tiny)
    run_cache.forget()  # what a second process starts with: nothing in memory
    again = runs.side_run("a", config, workload, tiny)
    assert measured == ["a"] and again == first
    assert [p.suffix for p in tmp_path.iterdir()] == [".pickle"]


def test_a_damaged_file_in_the_folder_is_measured_again(tiny, measured, tmp_path, monkeypatch):
    monkeypatch.setenv(run_cache.CACHE_DIR_ENV, str(tmp_path))
    config, workload = _config(tiny, num_gpu_blocks=12), burst(n=3, max_tokens=6)
    runs.side_run("a", config, workload, tiny)
    run_cache.forget()
    next(tmp_path.iterdir()).write_bytes(b"not a pickle")
    runs.side_run("a", config, workload, tiny)
    assert measured == ["a", "a"]


def test_a_checkpoint_rewritten_in_place_is_another_model(tiny, measured, tmp_path):
    copy = shutil.copytree(tiny.path, tmp_path / "tiny")
    other = load_model(str(copy), "cpu", "float32")
    config, workload = _config(tiny, num_gpu_blocks=12), burst(n=3, max_tokens=6)
    key = run_cache.run_key(config, workload, other, 100)
    weights = next(copy.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes() + b" ")  # another size: another model as far as the key knows
    assert run_cache.run_key(config, workload, other, 100) != key


def test_the_model_knob_is_only_a_name_for_the_files(tiny, measured):
    workload = burst(n=3, max_tokens=6)
    runs.side_run("by name", lab_config(model="tiny", num_gpu_blocks=12), workload, tiny)
    runs.side_run("by path", _config(tiny, num_gpu_blocks=12), workload, tiny)
    assert measured == ["by name"]
