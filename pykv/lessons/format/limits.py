"""Every limit a lesson file is held to, in one place. A lesson is untrusted input (anyone can hand the
app one), so each limit bounds time or memory when the file loads or plays; each is far above what
the course uses (the largest shipped lesson is 12 KB, 7 steps, 7 side runs, 6 requests).

Engine config values in a lesson (front matter ``config``, ``configure``, ``run`` configs) are held
to the app's own limits: each knob's ``maximum`` in EngineConfig's table (``pykv.border.config``), plus
``CONFIG_CAPS`` below for the knobs whose size costs memory and that the table leaves open.
"""

from __future__ import annotations

import re
import reprlib
from typing import Any

from pykv.border.limits import MAX_STEPS

# ---- the file -----------------------------------------------------------------------------------
MAX_FILE_BYTES = 256 * 1024  # checked before the file is read
MAX_LESSON_STEPS = 100  # "## " steps in one lesson
MAX_ACTIONS_PER_STEP = 50  # items of one ```actions block
MAX_CHECKS_PER_STEP = 50  # items of one ```expect block

# ---- YAML (front matter and every block) ---------------------------------------------------------
MAX_YAML_DEPTH = 32  # nested mappings/lists; the course nests 6 deep
MAX_YAML_NODES = 1000  # values in one YAML block (front matter or one step's actions / expect)
MAX_YAML_NODES_PER_LESSON = 5000  # values in all of a lesson's YAML together (the course uses at most 384)
MAX_SCALAR_CHARS = 20_000  # one YAML value written out (a prompt is the longest)
# Anchors and aliases (&a, *a) are refused outright: a lesson never needs them, and they are how a
# 7 KB "billion laughs" file expands to gigabytes.

# ---- text fields (characters) ------------------------------------------------------------------
MAX_TITLE_CHARS = 200  # the lesson's title and each step's "## " title
MAX_SUMMARY_CHARS = 500
MAX_OBJECTIVE_CHARS = 300  # the front matter's objective: one sentence
MAX_TAKEAWAY_CHARS = 500  # the front matter's takeaway: one or two sentences
MAX_NARRATION_CHARS = 20_000  # one step's narration
MAX_NOTES_CHARS = 20_000  # one step's speaker notes
MAX_NAME_CHARS = 64  # request ids, run and tokenization names
MAX_PATH_CHARS = 200  # a value path (that:, value_of:, {{ }})
MAX_WHY_CHARS = 500
MAX_PROMPT_CHARS = 16_384  # a prompt (workload, add_request) or a tokenize text; the model's context is checked at play

# ---- workloads and actions -----------------------------------------------------------------------
MAX_REQUESTS = 64  # a workload's requests (preset n or a requests: list), and the lesson's total with add_request
MAX_TOKENS = 1024  # max_tokens of one request (preset or explicit)
MAX_PROMPT_TOKEN_IDS = 2048  # a request given as prompt_token_ids
MAX_ARRIVAL_STEP = MAX_STEPS  # arrival_step of an explicit request
MAX_SIDE_RUNS = 20  # run: actions in one lesson (each runs a workload to the end)
MAX_SEED = 2**32 - 1  # the front matter's seed: 0 to this
MAX_LESSON_MINUTES = 240  # the front matter's minutes (1 to this) and core_minutes (0 to this)
# (low, high) of each preset argument; every x n stays within MAX_STEPS
PRESET_ARGS = {"n": (1, MAX_REQUESTS), "max_tokens": (1, MAX_TOKENS), "every": (0, MAX_STEPS // MAX_REQUESTS)}

# Knobs whose size costs memory but that EngineConfig's table leaves without a maximum.
CONFIG_CAPS: dict[str, float] = {"swap_space": 1.0}  # GiB of CPU swap pool; lessons size it with num_cpu_blocks

# ---- messages -------------------------------------------------------------------------------------
MAX_FIELD_CHARS = 200  # the field part of a LessonError
MAX_PROBLEM_CHARS = 600  # the problem part (room for a list of the metric names)
MAX_SHOWN_CHARS = 80  # a value echoed in a message

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = _repr.maxlong = MAX_SHOWN_CHARS
_repr.maxlist = _repr.maxdict = _repr.maxtuple = _repr.maxset = 6
_repr.maxlevel = 3


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with "… (N chars)" when cut."""
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text)} chars)"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def one_line(text: str, limit: int) -> str:
    """``text`` clipped to ``limit`` characters, line breaks and other control characters made spaces."""
    return _CONTROL.sub(" ", clip(text, limit))


def shown(value: Any) -> str:
    """The repr of a value as a message echoes it: short whatever the value is."""
    try:
        text = _repr.repr(value)
    except Exception:  # noqa: BLE001 - a value too odd to repr (an int over the digit limit)
        text = f"<{type(value).__name__}>"
    return clip(text, MAX_SHOWN_CHARS)
