"""Where the common claim, vLLM's code and pykv part ways: a step's optional ```` ```differs ```` block,
shown as one compact three-row callout beside the narration::

    ```differs
    claim: New arrivals evict running requests.            # what an article, a guide or the room believes
    vllm: A running request that needs a block preempts the last running one; arrivals wait.
    pykv: Same rule: c is preempted for a's next block, with nobody arriving.
    versions: 0.6.3, 0.10.2, 0.33.0                        # optional: the vLLM releases the vllm row holds for
    ```

Each field is one line of Markdown (no ``{{ }}`` templates: the callout is the same on every replay).
``callout_markdown`` turns one into the Markdown the player and a class follower's page draw.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import shown

MAX_ROW_CHARS = 300  # claim, vllm, pykv: one line each
MAX_VERSIONS_CHARS = 60
FIELDS = ("claim", "vllm", "pykv", "versions")
LABELS = ("Claim", "vLLM", "pykv")  # the callout's three rows, in order


class Differs(BaseModel):
    """The claim as it is usually told, what vLLM's code does, and what pykv does (and the lesson shows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: str = Field(min_length=1, max_length=MAX_ROW_CHARS)
    vllm: str = Field(min_length=1, max_length=MAX_ROW_CHARS)
    pykv: str = Field(min_length=1, max_length=MAX_ROW_CHARS)
    versions: str | None = Field(default=None, min_length=1, max_length=MAX_VERSIONS_CHARS)

    @field_validator("claim", "vllm", "pykv", "versions")
    @classmethod
    def _one_line(cls, text: str | None) -> str | None:
        if text is None:
            return None
        if "\n" in text.strip() or "\r" in text:
            raise ValueError("must be one line (the callout has one row per field)")
        if "{{" in text:
            raise ValueError("holds a {{ }} template; a differs block is not filled in, write the value out")
        return text.strip()


def parse_differs(raw: Any) -> Differs:
    """A ```differs block's YAML as a Differs; FieldError names the field (``vllm``) that is wrong."""
    if not isinstance(raw, dict):
        raise FieldError(
            "", f"a differs block is a mapping of {', '.join(FIELDS)} (claim, vllm and pykv required), got {shown(raw)}"
        )
    for key in raw:
        if key not in FIELDS:
            raise FieldError(str(key)[:40], f"unknown field {shown(key)}; a differs block takes {', '.join(FIELDS)}")
    try:
        return Differs.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        message = (
            "missing (this field is required)" if err["type"] == "missing" else err["msg"].removeprefix("Value error, ")
        )
        raise FieldError(field, message) from None


def callout_markdown(differs: Differs) -> str:
    """One compact three-row callout (a Markdown quote): the claim, vLLM (with its releases), pykv."""
    vllm = f"vLLM {differs.versions}" if differs.versions else "vLLM"
    rows = [(":material/campaign: **Claim**", differs.claim), (f"**{vllm}**", differs.vllm), ("**pykv**", differs.pykv)]
    return "  \n".join(f"> {label} · {text}" for label, text in rows)
