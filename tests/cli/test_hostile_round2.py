"""Issue 29, the CLI and API holes: a workload file that hangs the nesting check, a sweep that silently
changes release, argparse's usage block, ``SamplingParams(stop=...)``, a capped max_model_len."""

from __future__ import annotations

import pytest
from growth import assert_growth, raising

from pykv import EngineConfig, SamplingParams
from pykv.border.workload import Workload
from pykv.cli.main import main
from pykv.engine.max_model_len import fit_max_model_len


def test_escaped_quotes_without_a_closing_quote_are_linear():
    with pytest.raises(ValueError, match="not valid JSON"):
        Workload.from_json('"' + '\\"' * 10_000)
    # 20 KB took seconds with the quadratic string regex (80 KB: 17 s or more)
    assert_growth(lambda n: '"' + '\\"' * n, raising(Workload.from_json), 2_500)


def test_a_trailing_backslash_is_linear_too():
    assert_growth(lambda n: '["' + 'a\\"' * n + "\\", raising(Workload.from_json), 2_500)


def test_sweep_refuses_offload_on_a_release_without_the_tier(random_llama_path, capsys):
    """Issue 47: no silent move to another release; one line saying how to ask for it."""
    argv = ["sweep", "--modes", "recompute+offload", "--vllm-profile", "v0.6", "--pool-sizes", "64"]
    assert main([*argv, "--model", str(random_llama_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vLLM 0.6.3 (V0) lacks" in err and "recompute+offload@v0.33" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--num-requests", "abc"],
        ["run", "--vllm-profile", "v9"],
        ["sweep", "--bogus"],
        [],
    ],
)
def test_argparse_errors_are_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "usage:" not in err


def test_sampling_params_stop_is_a_value_error_naming_the_field():
    with pytest.raises(ValueError, match="stop"):
        SamplingParams(stop=["\n"])
    with pytest.raises(ValueError, match="stop_token_ids"):
        SamplingParams(stop="x")


def test_max_model_len_above_the_models_limit_is_capped_with_a_note():
    config = EngineConfig(num_gpu_blocks=4096, block_size=16, max_model_len=4096, max_num_batched_tokens=8192)
    fitted, lines = fit_max_model_len(config, model_max=2048, bytes_per_block=1024)
    assert fitted == 2048
    assert any("max_model_len 4096" in line and "2048" in line for line in lines), lines


def test_a_review_pack_too_big_for_memory_is_refused_up_front(tmp_path, capsys):
    assert (
        main(
            [
                "report",
                "--num-requests",
                "10000",
                "--max-tokens",
                "64",
                "--max-steps",
                "3000",
                "--out",
                str(tmp_path / "p.html"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "1,000,000" in err and "--max-steps" in err and err.count("\n") == 1
    assert not (tmp_path / "p.html").exists()
