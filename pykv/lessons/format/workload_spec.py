"""A lesson's workload as written (front matter ``workload`` or a ``run`` action's): a pykv.border.workload
preset with its args, or explicit requests, held to the lesson limits; ``build`` names every request.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from pydantic import Field, ValidationError, model_validator

from pykv.border.limits import MAX_STEPS
from pykv.border.workload import PRESETS, Workload, WorkloadRequest, make_workload
from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import (
    MAX_ARRIVAL_STEP,
    MAX_NAME_CHARS,
    MAX_PROMPT_CHARS,
    MAX_PROMPT_TOKEN_IDS,
    MAX_REQUESTS,
    MAX_TOKENS,
    PRESET_ARGS,
    clip,
    shown,
)
from pykv.lessons.format.model_base import NAME, PATTERN_HINTS, StrictModel, pydantic_problems


class WorkloadSpec(StrictModel):
    """Exactly one of ``preset`` (+ ``args``) or explicit ``requests``."""

    preset: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    requests: list[WorkloadRequest] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "WorkloadSpec":
        if (self.preset is None) == (self.requests is None):
            raise ValueError("give exactly one of 'preset' (a pykv.border.workload preset) or 'requests' (a list)")
        if self.args and self.preset is None:
            raise ValueError("'args' go with 'preset'; explicit requests take none")
        if self.requests is not None and not self.requests:
            raise ValueError("'requests' is empty; give at least one request")
        return self

    def build(self, seed: int) -> Workload:
        """The Workload, every request named: explicit ids as written, the others "0", "1", ... in
        arrival order (the ids the engine would give them). FieldError on a bad preset, args or id."""
        if self.preset is not None:
            if self.preset not in PRESETS:
                raise FieldError("preset", f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}")
            takes = [p for p in inspect.signature(PRESETS[self.preset]).parameters if p != "seed"]
            for name, value in self.args.items():
                if name not in takes:
                    raise FieldError(
                        f"args.{clip(name, 40)}",
                        f"preset {self.preset!r} takes no argument {shown(name)} (it takes {', '.join(takes)})",
                    )
                if isinstance(value, bool) or not isinstance(value, int):
                    raise FieldError(f"args.{name}", f"must be a whole number, got {shown(value)}")
                low, high = PRESET_ARGS.get(name, (0, MAX_STEPS))
                if name == "n" and value < low:
                    raise FieldError(
                        "args",
                        f"preset {self.preset!r} rejects these args: these args give no "
                        f"requests (n must be at least {low})",
                    )
                if not low <= value <= high:
                    raise FieldError(
                        f"args.{name}", f"{name}={shown(value)} is out of a lesson's range: use {low} to {high}"
                    )
            try:
                workload = make_workload(self.preset, seed=seed, **self.args)
            except ValidationError as e:
                problem = pydantic_problems(e)
                why = "these args give no requests (n must be at least 1)" if problem.field == "requests" else problem
                raise FieldError("args", f"preset {self.preset!r} rejects these args: {why}") from None
            except (TypeError, ValueError) as e:
                raise FieldError("args", str(e)) from None
        else:
            assert self.requests is not None  # _one_source: requests where there is no preset
            _check_requests(self.requests)
            workload = Workload(name="lesson", seed=seed, requests=list(self.requests))
        order = sorted(range(len(workload.requests)), key=lambda i: workload.requests[i].arrival_step)
        named = list(workload.requests)
        for rank, i in enumerate(order):
            if named[i].request_id is None:
                named[i] = named[i].model_copy(update={"request_id": str(rank)})
        seen: set[str] = set()
        for i, r in enumerate(named):
            assert r.request_id is not None  # every request was named above
            if not re.fullmatch(NAME, r.request_id) or len(r.request_id) > MAX_NAME_CHARS:
                raise FieldError(
                    f"requests[{i}].request_id",
                    f"{shown(r.request_id)} {PATTERN_HINTS[NAME]}, at most {MAX_NAME_CHARS} characters",
                )
            if r.request_id in seen:
                raise FieldError(f"requests[{i}].request_id", f"request id {shown(r.request_id)} is used twice")
            seen.add(r.request_id)
        return workload.model_copy(update={"requests": named})


def _check_requests(requests: list[WorkloadRequest]) -> None:
    """A lesson's explicit requests within the lesson limits (a preset's args are checked before it runs)."""
    if len(requests) > MAX_REQUESTS:
        raise FieldError("requests", f"{len(requests)} requests; a lesson's workload has at most {MAX_REQUESTS}")
    for i, r in enumerate(requests):
        if r.max_tokens > MAX_TOKENS:
            raise FieldError(f"requests[{i}].max_tokens", f"{r.max_tokens} is above a lesson's limit of {MAX_TOKENS}")
        if r.prompt is not None and len(r.prompt) > MAX_PROMPT_CHARS:
            raise FieldError(f"requests[{i}].prompt", f"{len(r.prompt)} characters; at most {MAX_PROMPT_CHARS}")
        if r.prompt_token_ids is not None:
            if len(r.prompt_token_ids) > MAX_PROMPT_TOKEN_IDS:
                raise FieldError(
                    f"requests[{i}].prompt_token_ids",
                    f"{len(r.prompt_token_ids)} token ids; at most {MAX_PROMPT_TOKEN_IDS}",
                )
            if any(t < 0 or t >= 2**31 for t in r.prompt_token_ids):
                raise FieldError(f"requests[{i}].prompt_token_ids", "token ids are whole numbers from 0 to 2**31 - 1")
        if r.arrival_step > MAX_ARRIVAL_STEP:
            raise FieldError(
                f"requests[{i}].arrival_step", f"{r.arrival_step} is above a lesson's limit of {MAX_ARRIVAL_STEP}"
            )
