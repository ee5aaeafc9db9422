"""Splitting a lesson file: YAML front matter, then ``## `` steps, each with its narration and its
fenced blocks (``BLOCKS``: actions, expect, notes, predict, differs, focus, exercise). Fence-aware: a ``## `` line
or ``{{ }}`` inside a fenced code block is code, not structure::

    ---                       <- front matter (YAML) between two --- lines
    id: ...
    ---
                              <- nothing but blank lines here
    ## Step title             <- a step: heading, narration, optional blocks in any order
                                 ("## Step title {optional}": a step the workshop path skips)
    Narration ...
    ```actions                <- lesson blocks are fences whose info string is exactly
    - step: 1                    one of BLOCKS; any other
    ```                          fence stays narration
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator

from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import MAX_LESSON_STEPS, MAX_TITLE_CHARS, clip

BLOCKS = ("actions", "expect", "notes", "predict", "differs", "focus", "exercise")
_MARKER = re.compile(r"\s*\{([A-Za-z_-]*)\}\s*$")  # "{optional}" at the end of a step heading
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass
class RawStep:
    title: str
    line: int  # 1-based line of the heading in the file
    narration: str
    blocks: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (text, line of its first text line)
    optional: bool = False  # the heading ended in {optional}


def fenced(lines: list[str]) -> Iterator[tuple[str, bool, str | None, bool]]:
    """Each line with (in_code, info of the fence it opens, closes_fence). ``in_code`` is True for
    fence lines and the lines between them."""
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if fence is None and m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            yield line, True, m.group(2).strip(), False
        elif (
            fence is not None
            and m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and not m.group(2).strip()
        ):
            fence = None
            yield line, True, None, True
        else:
            yield line, fence is not None, None, False


def split_front_matter(text: str) -> tuple[str, str, int]:
    """(front matter YAML, body, 1-based file line where the body starts)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise FieldError(
            "front matter",
            "the file must start with a '---' line, then YAML (id, title, summary, "
            "seed, config, workload), then another '---' line",
        )
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :]), i + 2
    raise FieldError("front matter", "no closing '---' line after the YAML front matter")


def split_steps(body: str, first_line: int) -> list[RawStep]:
    """The ``## `` steps of the body; FieldError for text before the first one or a repeated block."""
    steps: list[RawStep] = []
    narration: list[str] = []
    block: tuple[str, int, list[str]] | None = None  # the lesson block being read: name, line, lines

    def finish() -> None:
        if steps:
            steps[-1].narration = "\n".join(narration).strip()

    for offset, (line, in_code, info, closes) in enumerate(fenced(body.splitlines())):
        number = first_line + offset
        if block is not None:
            if closes:
                name, start, text = block
                steps[-1].blocks[name] = ("\n".join(text), start)
                block = None
            else:
                block[2].append(line)
            continue
        if not in_code and re.match(r"^##(\s|$)", line):
            finish()
            title, optional = _title_and_marker(line[2:].strip(), len(steps), number)
            if not title:
                raise FieldError(f"steps[{len(steps)}]", f"the step heading on line {number} has no title")
            if len(title) > MAX_TITLE_CHARS:
                raise FieldError(
                    f"steps[{len(steps)}] ({clip(title, 40)})",
                    f"the step title on line {number} has {len(title)} characters; at most {MAX_TITLE_CHARS}",
                )
            if len(steps) == MAX_LESSON_STEPS:
                raise FieldError(
                    f"steps[{len(steps)}]", f"more than {MAX_LESSON_STEPS} steps (line {number}); split the lesson"
                )
            steps.append(RawStep(title=title, line=number, narration="", optional=optional))
            narration = []
            continue
        if not steps:
            if line.strip():
                raise FieldError(
                    "body",
                    f"line {number} has text before the first '## ' step heading "
                    f"({line.strip()[:40]!r}); only blank lines may come between the front "
                    "matter and the first step",
                )
            continue
        if info in BLOCKS:
            where = f"steps[{len(steps) - 1}] ({steps[-1].title})"
            if info in steps[-1].blocks:
                raise FieldError(
                    f"{where}.{info}", f"a second ```{info} block (line {number}); a step has at most one {info} block"
                )
            block = (info, number + 1, [])
            continue
        narration.append(line)
    if block is not None:
        raise FieldError(
            f"steps[{len(steps) - 1}] ({steps[-1].title}).{block[0]}",
            f"the ```{block[0]} block opened on line {block[1] - 1} is never closed",
        )
    finish()
    if not steps:
        raise FieldError("body", "the lesson has no steps; start each step with a '## Title' line")
    return steps


def _title_and_marker(heading: str, index: int, number: int) -> tuple[str, bool]:
    """A step heading's title and whether it ends in ``{optional}``; FieldError for any other ``{marker}``."""
    m = _MARKER.search(heading)
    if m is None:
        return heading, False
    title = heading[: m.start()].strip()
    if m.group(1) != "optional":
        raise FieldError(
            f"steps[{index}] ({clip(title, 40)})",
            f"the step heading on line {number} ends in "
            f"{{{clip(m.group(1), 20)}}}; the only step marker "
            "is {optional}",
        )
    return title, True


def outside_code(markdown: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the text outside fenced code blocks; code is kept verbatim."""
    prose: list[str]
    out, prose = [], []
    for line, in_code, _, _ in fenced(markdown.splitlines()):
        if in_code:
            if prose:
                out.append(fn("\n".join(prose)))
                prose = []
            out.append(line)
        else:
            prose.append(line)
    if prose:
        out.append(fn("\n".join(prose)))
    return "\n".join(out)
