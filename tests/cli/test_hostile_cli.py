"""Hostile and careless input to the CLI, workload files and sweep values (issue 12, rows 12-16 and 29, and
more): each is one line on stderr (``error: ...``), exit code 2, no traceback, and fails before any work
(no model load, no engine, no sweep run) within a second."""

from __future__ import annotations

import json

import pytest
from app_helpers import sweep_page
from growth import assert_growth, raising

import pykv.cli.main
import pykv.lab.sweep
import pykv.lab.sweep.runner
from pykv.border.workload import MAX_JSON_DEPTH, MAX_REQUESTS, MAX_WORKLOAD_BYTES, Workload, make_workload
from pykv.cli.main import main
from pykv.lab.sweep import MAX_SWEEP_VALUES, SweepSpec, count_values, parse_values

OK_REQUEST = {"prompt": "def f(", "max_tokens": 4}


def workload_text(**changes) -> str:
    request = OK_REQUEST | changes.pop("request", {})
    return json.dumps({"name": "w", "requests": [request]} | changes)


# Files written into tmp_path by name: text, or bytes, or a callable(path) that makes the file.
FILES = {
    "deep.json": "[" * 200_000 + "]" * 200_000,  # row 13
    "deep_object.json": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "ok.json": workload_text(),
    "big.json": lambda p: p.open("wb").truncate(MAX_WORKLOAD_BYTES + 1),  # sparse: no time to write
    "latin1.json": b'{"name": "\xff"}',
    "list.json": "[1, 2, 3]",
    "many.json": json.dumps({"name": "w", "requests": [OK_REQUEST] * (MAX_REQUESTS + 1)}),
    "long_prompt.json": workload_text(request={"prompt": "x" * 100_001}),
    "huge_max_tokens.json": workload_text(request={"max_tokens": 10**9}),
    "late.json": workload_text(request={"arrival_step": 10**12}),
    "float_ids.json": workload_text(request={"prompt": None, "prompt_token_ids": [1.5, 2.0]}),
    "bool_ids.json": workload_text(request={"prompt": None, "prompt_token_ids": [True, False]}),
    "negative_ids.json": workload_text(request={"prompt": None, "prompt_token_ids": [-1]}),
    "string_max_tokens.json": workload_text(request={"max_tokens": "4"}),
    "long_key.json": workload_text(**{"k" * 10_000: 1}),
    "empty.json": "",
}


@pytest.fixture
def files(tmp_path):
    for name, content in FILES.items():
        path = tmp_path / name
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    (tmp_path / "a_file").write_text("x")
    return tmp_path


@pytest.fixture
def no_work(monkeypatch):
    """Any engine, model load or sweep run fails the test: a usage error must come before the work."""

    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(pykv.cli.main, "LLMEngine", forbidden)
    monkeypatch.setattr(pykv.lab.sweep, "run_sweep", forbidden)
    monkeypatch.setattr(pykv.lab.sweep.runner, "load_model", forbidden)


def run_cli(capsys, argv) -> tuple[int, list[str]]:
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [line for line in captured.err.splitlines() if line.strip()]


# (argv with {dir} for tmp_path and {model} for the random checkpoint, words the one line must contain)
BEFORE_WORK = [
    # row 12: outputs checked before any work
    (["run", "--export-workload", "{dir}/missing/w.json"], "does not exist"),
    (["run", "--export-workload", "{dir}"], "is a folder"),
    (["sweep", "--out", "{dir}/missing/r.csv"], "does not exist"),
    (["sweep", "--out", "{dir}"], "is a folder"),
    # row 13
    (["run", "--workload", "{dir}/deep.json"], "nested more than"),
    # row 14
    (["run", "--num-requests", "0"], "--num-requests 0 is out of range"),
    (["run", "--max-tokens", "0"], "--max-tokens 0 is out of range"),
    (["sweep", "--num-requests", "0"], "--num-requests 0 is out of range"),
    (["generate", "hi", "--max-tokens", "0"], "--max-tokens"),
    (["generate", "hi", "--temperature", "nan"], "--temperature"),
    # row 15
    (["sweep", "--pool-sizes", "1:100000000:1"], f"at most {MAX_SWEEP_VALUES}"),
    (["sweep", "--pool-sizes", "10000000000"], "up to"),
    # row 16
    (["sweep", "--pool-sizes", ""], "--pool-sizes: No values given"),
    (["sweep", "--workload", "{dir}/ok.json"], "sweep runs a preset workload"),
    # issue 47: one release per comparison unless asked, and repeats in bounds, before the model loads
    (["sweep", "--modes", "recompute,recompute@v0.33"], "--compare-across-releases"),
    (["sweep", "--vllm-profile", "v0.33"], "swap is not in vLLM 0.33.0 (V1)"),
    (["sweep", "--modes", "recompute@v9"], "names no release"),
    (["sweep", "--repeats", "0"], "--repeats 0 is out of range"),
    # more of our own
    (["run", "--export-workload", ""], "is empty"),
    (["run", "--export-workload", "{dir}/a_file/w.json"], "is not a folder"),
    (["run", "--export-workload", "a\x00b"], "not a usable path"),
    (["run", "--workload", "{dir}/deep_object.json"], "nested more than"),
    (["run", "--workload", "{dir}/big.json"], "bytes; the limit"),
    (["run", "--workload", "{dir}/latin1.json"], "not UTF-8"),
    (["run", "--workload", "{dir}/list.json"], "(top level)"),
    (["run", "--workload", "{dir}/many.json"], "requests"),
    (["run", "--workload", "{dir}/long_prompt.json"], "requests.0.prompt"),
    (["run", "--workload", "{dir}/huge_max_tokens.json"], "requests.0.max_tokens"),
    (["run", "--workload", "{dir}/late.json"], "requests.0.arrival_step"),
    (["run", "--workload", "{dir}/float_ids.json"], "prompt_token_ids"),
    (["run", "--workload", "{dir}/bool_ids.json"], "prompt_token_ids"),
    (["run", "--workload", "{dir}/negative_ids.json"], "prompt_token_ids"),
    (["run", "--workload", "{dir}/string_max_tokens.json"], "max_tokens"),
    (["run", "--workload", "{dir}/long_key.json"], "Extra inputs"),
    (["run", "--workload", "{dir}/empty.json"], "not valid JSON"),
    (["run", "--workload", "{dir}"], "does not exist"),
    (["run", "--workload", ""], "does not exist"),
    (["run", "--workload", "{dir}/ok.json", "--num-requests", "3"], "size a preset"),
    (["run", "--num-requests", "100000000"], "out of range"),
    (["run", "--max-tokens", "100000000"], "out of range"),
    (["run", "--max-steps", "0"], "--max-steps"),
    (["run", "--num-gpu-blocks", "0"], "--num-gpu-blocks"),
    (["run", "--swap-space", "inf"], "--swap-space"),
    (["run", "--swap-space", "nan"], "--swap-space"),
    (["run", "--seed", "-1"], "--seed"),
    (["sweep", "--pool-sizes", "16:64:0"], "step must be a positive"),
    (["sweep", "--pool-sizes", "16:64:-8"], "step must be a positive"),
    (["sweep", "--pool-sizes", "1:2:3:4"], "start:stop:step"),
    (["sweep", "--pool-sizes", "abc"], "Cannot read values"),
    (["sweep", "--pool-sizes", "1" * 5000], "characters"),
    (["sweep", "--pool-sizes", ",".join(["16"] * (MAX_SWEEP_VALUES + 1))], f"at most {MAX_SWEEP_VALUES}"),
    (["sweep", "--block-sizes", "512"], "--block-sizes: block_size"),
    (["sweep", "--max-num-seqs-values", "0"], "positive integers"),
    (["sweep", "--modes", "recompute,,swap"], "empty entry"),
    (["sweep", "--modes", "warp"], "Unknown modes"),
    (["sweep", "--num-requests", "100000"], "--num-requests 100000 is out of range"),
    (["sweep", "--workload", "nosuch"], "sweep runs a preset workload"),
    (["generate", "hi", "--temperature", "inf"], "--temperature"),
    (["generate", "hi", "--temperature", "1e-40"], "--temperature"),
    (["generate", "hi", "--temperature", "-1"], "--temperature"),
]


@pytest.mark.parametrize("argv, words", BEFORE_WORK, ids=[" ".join(a)[:60] for a, _ in BEFORE_WORK])
def test_bad_input_is_one_line_and_exit_2_before_any_work(argv, words, files, no_work, random_llama_path, capsys):
    argv = [a.replace("{dir}", str(files)) for a in argv] + ["--model", str(random_llama_path)]
    code, lines = run_cli(capsys, argv)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert len(lines[0]) <= 320


def test_argparse_errors_exit_2_without_a_traceback(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--num-gpu-blocks", "lots"])
    assert exit_.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_an_unexpected_failure_is_one_line_and_exit_1(monkeypatch, random_llama_path, capsys):
    def boom(*args, **kwargs):
        raise RuntimeError("the device\nfell over")

    monkeypatch.setattr(pykv.cli.main, "LLMEngine", boom)
    code, lines = run_cli(capsys, ["generate", "hi", "--model", str(random_llama_path)])
    assert code == 1 and lines == ["error: RuntimeError: the device fell over"]


def test_ctrl_c_is_one_line(monkeypatch, random_llama_path, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pykv.cli.main, "LLMEngine", interrupted)
    code, lines = run_cli(capsys, ["generate", "hi", "--model", str(random_llama_path)])
    assert code == 130 and lines == ["error: interrupted"]


def test_a_prompt_past_max_model_len_is_one_line(random_llama_path, capsys):
    code, lines = run_cli(
        capsys, ["generate", "def fib(n): return n" * 20, "--max-model-len", "8", "--model", str(random_llama_path)]
    )
    errors = [line for line in lines if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1, lines


def test_an_unfinished_run_exits_1(random_llama_path, capsys):
    code, lines = run_cli(
        capsys,
        [
            "run",
            "--workload",
            "storm",
            "--num-requests",
            "2",
            "--max-tokens",
            "8",
            "--max-steps",
            "1",
            "--model",
            str(random_llama_path),
        ],
    )
    assert code == 1 and [line for line in lines if line.startswith("error: ")] == [
        "error: stopped after --max-steps 1 with requests unfinished"
    ]


def test_a_good_run_still_exports_its_workload(random_llama_path, tmp_path, capsys):
    out = tmp_path / "w.json"
    assert (
        main(
            [
                "run",
                "--workload",
                "burst",
                "--num-requests",
                "1",
                "--max-tokens",
                "2",
                "--export-workload",
                str(out),
                "--model",
                str(random_llama_path),
            ]
        )
        == 0
    )
    assert Workload.load(out).name == "burst"


# ---- workloads and sweep values through the Python API ------------------------------------------------


def test_row_13_deep_json_is_a_value_error_in_linear_time():
    with pytest.raises(ValueError, match=f"nested more than {MAX_JSON_DEPTH}"):
        Workload.from_json("[" * 200_000 + "]" * 200_000)
    assert_growth(lambda n: "[" * n + "]" * n, raising(Workload.from_json), 50_000)


def test_brackets_inside_strings_do_not_count_as_nesting():
    w = Workload.from_json(workload_text(request={"prompt": "[" * 1000 + '\\"{{' + "}" * 10}))
    assert w.requests[0].prompt.startswith("[[[")


def test_workload_error_messages_are_short():
    with pytest.raises(ValueError) as err:
        Workload.from_json(json.dumps({"name": "w", "requests": [{"bad" * 1000: 1}] * 50}), source="x" * 1000)
    assert len(str(err.value)) <= 300 and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n": 100_000_000}, "n=100000000 is out of range"),  # row 18's preset call
        ({"n": 0}, "n=0 is out of range"),
        ({"max_tokens": 10**9}, "max_tokens"),
        ({"n": True}, "whole number"),
        ({"n": 2.0}, "whole number"),
        ({"seed": -1}, "seed"),
        ({"colour": 1}, "takes the arguments"),
    ],
)
def test_preset_arguments_are_bounded_before_anything_is_built(kwargs, words):
    with pytest.raises(ValueError, match=words):
        make_workload("storm", **kwargs)


@pytest.mark.parametrize("name, size", [("n", 1_000_000), ("max_tokens", 10**7)])
def test_a_preset_argument_out_of_range_costs_the_same_however_large(name, size):
    assert_growth(
        lambda n: {name: n}, raising(lambda kwargs: make_workload("storm", **kwargs)), size, factor=100, max_ratio=3
    )


def test_spread_arrivals_are_bounded():
    with pytest.raises(ValueError, match="arrive after step"):
        make_workload("spread", n=10_000, every=1000)


def test_an_unknown_preset_does_not_offer_a_file():
    with pytest.raises(ValueError, match="Unknown workload preset") as err:
        make_workload("file.json")
    assert "JSON" not in str(err.value)


@pytest.mark.parametrize(
    "text, words",
    [
        ("1:100000000:1", "100,000,000 values"),  # row 15
        ("10000000000", "up to"),  # row 15
        ("", "No values given"),  # row 16
        ("   ", "No values given"),
        ("1:10000000000000000000000:1", "Cannot read"),
        ("16:64:0", "step must be"),
        ("1,2," + "3" * 5000, "characters"),
    ],
)
def test_parse_values_counts_before_listing(text, words):
    with pytest.raises(ValueError, match=words):
        parse_values(text)


def test_a_range_of_too_many_values_costs_the_same_however_many():
    assert_growth(lambda n: f"1:{n}:1", raising(parse_values), 1_000_000, factor=100, max_ratio=3)


def test_count_values_is_arithmetic():
    assert count_values("1:300000:1") == 300_000 and count_values("16:128:16") == 8 and count_values("4,8") == 2
    assert parse_values("16:128:16") == (16, 32, 48, 64, 80, 96, 112, 128)


def test_sweep_spec_checks_values_workload_and_counts_runs():
    spec = SweepSpec(values=(24, 32), modes=("recompute", "swap"), repeats=3)
    assert spec.num_points == 4 and spec.num_runs == 12
    with pytest.raises(ValueError, match="up to"):
        SweepSpec(values=(10**10,))
    with pytest.raises(ValueError, match="runs a workload preset"):
        SweepSpec(workload="file.json")
    with pytest.raises(ValueError, match="n=100000000"):
        SweepSpec(workload_args={"n": 100_000_000, "max_tokens": 8})


def test_row_29_sweep_page_counts_runs_before_building_configs(random_llama_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    def forbidden(self):
        raise AssertionError("configs built before the runs were counted")

    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    monkeypatch.setattr(SweepSpec, "configs", forbidden)
    at = AppTest.from_function(sweep_page, default_timeout=60).run()
    at.text_input(key="sw_values_num_gpu_blocks").set_value("1:300000:1")
    at.button(key="FormSubmitter:sweep_form_num_gpu_blocks-Run sweep").click().run()
    assert not at.exception
    assert any("1800000 runs (600000 points x 3 repeats)" in e.value and "at most 60" in e.value for e in at.error)
