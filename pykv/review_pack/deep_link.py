"""The Playground link that reproduces a run, built as the app builds its own address bar
(``pykv.ui.session.state.query_for``: the preset, the step, and every knob exposed to URLs that differs from
the lab's default), and what such a link cannot carry, said plainly.

A link is built relative (``?preset=...``, ``lessons?lesson=...``) and handed out absolute, under the lab's
address, so that pasted into a design doc it can be clicked: ``PYKV_PUBLIC_URL`` where the host set it, else the
address the browser used (the app passes it in), else it stays relative and says so (the CLI without
``PYKV_PUBLIC_URL``)."""

from __future__ import annotations

import os
from urllib.parse import urlencode

from pykv.border.config import EngineConfig, knobs
from pykv.border.knob_table import knob_text
from pykv.lab.lab import lab_config
from pykv.lab.replay_spec import REPLAY_PARAM

APP_OWNED_NOTE = ("model", "dtype")  # the app runs its own model and dtype whatever the link says
PUBLIC_URL_ENV = "PYKV_PUBLIC_URL"  # the lab's address as the host publishes it (https://lab.example.org)
RELATIVE_LABEL = "link (append to the lab's address)"  # an exported figure's link line where no address is known
RELATIVE_NOTE = (
    f"The lab's address was not known where this was made, so the link is relative: append it to the lab's "
    f"address, or set {PUBLIC_URL_ENV} to the lab's address before making it to get a full link."
)


def public_root() -> str | None:
    """``PYKV_PUBLIC_URL`` without its trailing slash, when set to an http(s) address."""
    public = os.environ.get(PUBLIC_URL_ENV, "").strip().rstrip("/")
    return public if public.startswith(("http://", "https://")) else None


def absolute(link: str | None) -> bool:
    return link is not None and link.startswith(("http://", "https://"))


def app_address(link: str, root: str | None) -> str:
    """``link`` (relative to the lab's root: ``?preset=...``, ``lessons?...``) under ``root`` (the lab's address,
    no trailing slash), or as it is where ``root`` is None or the link is absolute already."""
    if root is None or absolute(link):
        return link
    return f"{root}/{link.removeprefix('./')}"


def playground_query(config: EngineConfig, preset: str | None, step: int) -> str:
    """``?preset=storm&step=42&num_gpu_blocks=24...``: exactly what the Playground writes for this view."""
    base = lab_config(model=config.model)
    query = {"preset": preset or "none", "step": str(step)}
    for spec in knobs("url"):
        value = getattr(config, spec.name)
        if value != getattr(base, spec.name):
            query[spec.name] = knob_text(value)
    return "?" + urlencode(query)


def replay_query(config: EngineConfig, token: str, step: int) -> str:
    """A server replay's Playground link: its config as the Playground writes it, and ``replay=<token>``, the
    workload itself (``pykv.lab.replay_spec``), so that it opens the same run in any session."""
    return playground_query(config, None, step) + "&" + urlencode({REPLAY_PARAM: token})


def link_caveats(
    config: EngineConfig,
    file_workload: bool = False,
    seed: int = 0,
    preset_args: dict | None = None,
    manual_requests: int = 0,
) -> list[str]:
    """Why the Playground, opened on :func:`playground_query`, would not replay this run exactly (empty: it would).
    ``file_workload``: the workload came from a file or a lesson, not from a preset."""
    notes: list[str] = []
    if file_workload:
        return notes
    if preset_args:
        given = ", ".join(f"{k}={v}" for k, v in sorted(preset_args.items()))
        notes.append(f"The run sized the preset ({given}); the Playground runs presets at their default size.")
    if seed:
        notes.append(f"The run used seed {seed}; the Playground seeds its presets with 0.")
    if manual_requests:
        notes.append(f"{manual_requests} request(s) added by hand are not in the link.")
    base, url = lab_config(model=config.model), {spec.name for spec in knobs("url")}
    hidden = [
        f"{spec.name}={knob_text(getattr(config, spec.name))}"
        for spec in knobs()
        if spec.name not in url
        and spec.name not in APP_OWNED_NOTE
        and getattr(config, spec.name) != getattr(base, spec.name)
    ]
    if hidden:
        notes.append("Not in the link (the Playground does not set these): " + ", ".join(hidden) + ".")
    over = [
        f"{spec.name}={getattr(config, spec.name)} (the app allows at most {spec.maximum})"
        for spec in knobs("url")
        if isinstance(getattr(config, spec.name), int)
        and not isinstance(getattr(config, spec.name), bool)
        and spec.maximum is not None
        and getattr(config, spec.name) > spec.maximum
    ]
    if over:
        notes.append("Over the app's limits, so the link's value is refused: " + ", ".join(over) + ".")
    return notes
