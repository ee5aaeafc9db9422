"""Workload presets and files, and the headless CLI."""

import json

import pytest

from pykv.border.workload import PRESETS, Workload, make_workload
from pykv.cli.main import main
from pykv.lab.workload_runner import WorkloadRunner


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_seeded_and_round_trip_through_json(name):
    w = make_workload(name, seed=5)
    assert w == make_workload(name, seed=5)
    assert Workload.from_json(w.to_json()) == w
    assert w != make_workload(name, seed=6) or name == "shared_prefix"


@pytest.mark.parametrize(
    "text, words",
    [
        ("{not json", "not valid JSON"),
        ('{"name": "x", "requests": []}', "requests: List should have at least 1 item"),
        ('{"name": "x", "requests": [{"prompt": "a", "max_tokens": 0}]}', "requests.0.max_tokens"),
        ('{"name": "x", "requests": [{"max_tokens": 3}]}', "exactly one of 'prompt'"),
        ('{"name": "x", "colour": 1, "requests": [{"prompt": "a", "max_tokens": 3}]}', "colour: Extra inputs"),
    ],
)
def test_malformed_workload_names_the_source_and_field(text, words):
    with pytest.raises(ValueError, match="my.json: .*" + words.split(":")[0]) as err:
        Workload.from_json(text, source="my.json")
    assert words.split(": ")[-1] in str(err.value)


def test_runner_adds_requests_at_their_arrival_step(make_engine):
    engine = make_engine(num_gpu_blocks=64, block_size=4)
    w = Workload.model_validate(
        {
            "name": "t",
            "requests": [
                {"prompt_token_ids": [1, 2, 3], "max_tokens": 8, "arrival_step": 0},
                {"prompt_token_ids": [4, 5], "max_tokens": 2, "arrival_step": 3, "request_id": "late"},
            ],
        }
    )
    runner = WorkloadRunner(engine, w)
    reports = runner.run()
    assert runner.done() and runner.request_ids == ["0", "late"]
    assert [r.step for r in reports if "late" in r.scheduled][0] == 4  # added before step 4 (after 3 steps)


def test_cli_run_prints_logs_and_summary(random_llama_path, tmp_path, capsys):
    out_file = tmp_path / "w.json"
    code = main(
        [
            "run",
            "--model",
            str(random_llama_path),
            "--workload",
            "storm",
            "--num-requests",
            "4",
            "--max-tokens",
            "40",
            "--num-gpu-blocks",
            "16",
            "--vllm-profile",
            "v0.6",
            "--preemption-mode",
            "swap",
            "--num-cpu-blocks",
            "32",
            "--enable-prefix-caching",
            "--export-workload",
            str(out_file),
            "--log-stats-interval",
            "5",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "request" in captured.out and "preemptions:" in captured.out and "finished_length" in captured.out
    assert captured.err.startswith("pykv: vllm_profile=v0.6 follows vLLM 0.6.3.post1 (V0)")
    assert json.loads(out_file.read_text())["name"] == "storm"
    assert main(["run", "--model", str(random_llama_path), "--workload", str(out_file), "--num-gpu-blocks", "16"]) == 0


def test_cli_bad_input_is_a_message_not_a_traceback(random_llama_path, capsys):
    assert main(["run", "--model", str(random_llama_path), "--num-gpu-blocks", "0"]) == 2
    assert "num_gpu_blocks must be a positive integer" in capsys.readouterr().err
    assert main(["run", "--model", str(random_llama_path), "--workload", "nope.json"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["run", "--model", str(random_llama_path), "--vllm-profile", "v0.6", "--preemption-mode", "swap"]) == 2
    assert "needs a CPU swap pool" in capsys.readouterr().err
    assert main(["run", "--model", str(random_llama_path), "--preemption-mode", "swap"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --preemption-mode: ") and "vllm_profile='v0.6'" in err and err.count("\n") == 1
