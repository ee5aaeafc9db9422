"""The configuration section: every knob with its value and the flag of the vLLM release the profile
follows (or why there is none), then the matching ``vllm serve`` command and ``LLM(...)`` call."""

from __future__ import annotations

from pykv.border.config import EngineConfig
from pykv.border.knob_table import knob_text
from pykv.border.vllm_command import command_caveat, knob_mappings, llm_call, release_pins, serve_command
from pykv.review_pack.page import Code, Section, code_block, esc, para, table

STATUS_TEXT = {
    "release": "the release itself",
    "unset": "not set (the release's default)",
    "not_in_release": "no flag in this release",
    "pykv_only": "pykv only, no vLLM flag",
}


def config_section(
    config: EngineConfig,
    bytes_per_block: int | None,
    sid: str = "config",
    title: str = "Configuration",
    max_model_len: int | None = None,
) -> Section:
    """``bytes_per_block`` (a snapshot's) turns num_cpu_blocks into V0's --swap-space; ``max_model_len`` is the
    length the engine ran with (pykv fits an unset one to the pool, which vLLM must be told)."""
    p, mappings = config.profile, knob_mappings(config, bytes_per_block, max_model_len)
    rows = []
    for k in mappings + release_pins(config):
        vllm = Code(" ".join(k.args)) if k.args else "(no flag)" if k.status == "flag" else STATUS_TEXT[k.status]
        rows.append((k.knob, knob_text(k.value), vllm, k.note))
    pykv_only = [k.knob for k in mappings if k.status == "pykv_only"]
    caveat = command_caveat(config)
    return Section(
        sid,
        title,
        (
            para(f"The engine followed vllm_profile={p.name}: vLLM {p.release} ({p.engine}), {p.summary}."),
            table(["knob", "value", f"vLLM {p.release}", "note"], rows, "config", widths=["29%", "15%", "26%", "30%"]),
            f"<h3>The same engine in vLLM {esc(p.release)}: vllm serve</h3>",
            *((para(caveat),) if caveat else ()),
            code_block(serve_command(config, bytes_per_block, max_model_len), "serve"),
            "<h3>… or LLM(...) keyword arguments</h3>",
            code_block(llm_call(config, bytes_per_block, max_model_len), "llm"),
            para(
                "pykv only, no vLLM flag: " + ", ".join(pykv_only) + ". Each flag was read in that release's "
                "vllm/engine/arg_utils.py; none is made up.",
                "muted",
            ),
        ),
    )
