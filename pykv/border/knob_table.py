"""A config model's fields as knobs: ``knob()`` declares one (default, help, bounds, where it is exposed, its
vLLM flag per release), ``read_knobs`` turns the model's fields into ``Knob`` records the front ends read, and
a knob's value goes to and from URL text. ``pykv.border.config`` holds the one table of engine knobs."""

from __future__ import annotations

import math
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from pykv.border.vllm_flags import VllmFlags

# Where a knob is exposed: the CLI flags, the Playground sidebar, the Playground URL, a lesson's config.
EVERYWHERE = ("cli", "sidebar", "url", "lesson")
HEADLESS = ("cli", "lesson")  # engine knobs the lab's sidebar does not show


def knob(
    default: Any,
    help: str,
    *,
    expose: tuple[str, ...] = HEADLESS,
    not_in_lessons: str | None = None,
    app_owned: bool = False,
    app_max: int | None = None,
    widget: str | None = None,
    options: str | None = None,
    profiles: tuple[str, ...] | None = None,
    vllm: VllmFlags | None = None,
    **bounds,
) -> Any:
    """A config field. ``not_in_lessons`` says why a lesson may not set it; ``app_owned`` marks what the
    app decides for every engine it builds (lessons included: model, device, dtype, backend); ``app_max``
    caps the value the app's sidebar and URL accept (a shared server); ``widget`` asks the sidebar for a
    slider instead of a number box ("slider"), or for side-by-side choices however many ("segmented");
    ``options`` names a list the app fills at run time; ``profiles`` names the vLLM profiles that have the knob
    (None: all of them); ``vllm`` is how each release's ``vllm serve`` spells it (``pykv.border.vllm_flags``),
    required of every knob."""
    meta = KnobMeta(expose, not_in_lessons, app_owned, app_max, widget, options, profiles, vllm)
    # The typed record rides in the field's schema extras (never rendered: nothing asks for a JSON schema).
    return Field(default, description=help, json_schema_extra=cast(dict, {META_KEY: meta}), **bounds)


META_KEY = "pykv_knob"


@dataclass(frozen=True)
class KnobMeta:
    """What ``knob()`` says of a field beyond pydantic's type, default and bounds."""

    expose: tuple[str, ...]
    not_in_lessons: str | None
    app_owned: bool
    app_max: int | None
    widget: str | None
    options: str | None
    profiles: tuple[str, ...] | None
    vllm: VllmFlags | None


@dataclass(frozen=True)
class Knob:
    """One EngineConfig field as the front ends see it."""

    name: str
    kind: str  # "choice" | "int" | "float" | "bool" | "text"
    optional: bool  # None is allowed (and means what the help says)
    default: Any
    help: str
    choices: tuple = ()  # for kind "choice"
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    expose: tuple[str, ...] = ()
    not_in_lessons: str | None = None
    app_owned: bool = False
    app_max: int | None = None
    widget: str | None = None
    options: str | None = None
    profiles: tuple[str, ...] | None = None  # the vLLM profiles that have it (None: all)
    vllm: VllmFlags = VllmFlags()  # its flag in each vLLM release (or why there is none)

    def range_text(self) -> str:
        low = f"[{self.ge}" if self.ge is not None else (f"({self.gt}" if self.gt is not None else "(-inf")
        high = f"{self.le}]" if self.le is not None else (f"{self.lt})" if self.lt is not None else "inf)")
        return f"{low}, {high}"

    @property
    def maximum(self) -> float | None:
        """The largest value the app accepts: ``app_max`` where set, else the config's own bound."""
        return self.app_max if self.app_max is not None else self.le


def _kind(annotation: Any) -> tuple[str, bool, tuple]:
    optional = False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional, annotation = True, args[0]
    if typing.get_origin(annotation) is Literal:
        return "choice", optional, typing.get_args(annotation)
    return {int: "int", float: "float", bool: "bool", str: "text"}[annotation], optional, ()


def _bound(info, name: str) -> float | None:
    return next((getattr(m, name) for m in info.metadata if getattr(m, name, None) is not None), None)


def _make_knob(model: type[BaseModel], name: str, profile_names: tuple[str, ...]) -> Knob:
    info = model.model_fields[name]
    kind, optional, choices = _kind(info.annotation)
    meta = cast(dict, info.json_schema_extra)[META_KEY]
    assert isinstance(meta, KnobMeta), f"field {name!r} must be declared with knob()"
    return Knob(
        name=name,
        kind=kind,
        optional=optional,
        default=info.default,
        help=info.description or "",
        choices=choices,
        ge=_bound(info, "ge"),
        gt=_bound(info, "gt"),
        le=_bound(info, "le"),
        lt=_bound(info, "lt"),
        expose=meta.expose,
        not_in_lessons=meta.not_in_lessons,
        app_owned=meta.app_owned,
        app_max=meta.app_max,
        widget=meta.widget,
        options=meta.options,
        profiles=meta.profiles,
        vllm=_vllm_flags(name, meta.vllm, profile_names),
    )


def _vllm_flags(name: str, flags: VllmFlags | None, profile_names: tuple[str, ...]) -> VllmFlags:
    """A knob's flags, refused at import when a release is missing: each knob says, for every release, its flag
    or why there is none."""
    if flags is None or not flags.covers(profile_names):
        raise TypeError(f"knob {name!r} must give vllm=... for every release {profile_names}: a Flag, or why not")
    return flags


def read_knobs(model: type[BaseModel], profile_names: tuple[str, ...]) -> dict[str, Knob]:
    """The knobs of a config model declared with ``knob()``, in field order."""
    return {name: _make_knob(model, name, profile_names) for name in model.model_fields}


def parse_knob_text(spec: Knob, text: str) -> Any:
    """A knob's value from text (a URL parameter); ValueError says what was expected."""
    low = text.strip().lower()
    if spec.optional and low in ("", "none"):
        return None
    if spec.kind == "bool":
        if low not in ("true", "false", "1", "0"):
            raise ValueError(f"{spec.name} must be true or false")
        return low in ("true", "1")
    if spec.kind == "int":
        if not re.fullmatch(r"[0-9]{1,9}", low):
            raise ValueError(f"{spec.name} must be a whole number")
        return int(low)
    if spec.kind == "float":
        value = float(low)  # ValueError on junk
        if not math.isfinite(value):
            raise ValueError(f"{spec.name} must be a finite number")
        return value
    return text.strip()


def knob_text(value: Any) -> str:
    """The inverse of ``parse_knob_text``: how a value is written in a URL."""
    if value is None:
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)
