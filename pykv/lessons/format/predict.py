"""Predict, then step: a step's optional ```` ```predict ```` block, and what the engine answered.

The learner sees the question while the screen still shows the state *before* the step's actions;
the step's actions then run, and the value the ``answer`` path reads *after* them decides the right
choice::

    ```predict
    question: Which request will be preempted?
    choices: [a, b, c]
    answer: last_step.preempted.0.request_id     # a value path, read after this step's actions
    why: The victim is the last request of the running queue.   # optional, shown on reveal
    ```

A value matches a choice when its text (``answer_text``) equals the choice exactly: numbers as
written by ``str`` (``2.0`` is ``"2"``), booleans ``"true"`` / ``"false"``, ``None`` ``"none"``.
Choices written as YAML numbers or booleans become the same text (``[0, 1, 2]``, ``[true, false]``).
A value that is none of the choices is a failed check of the step (the CI replay catches it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import MAX_PATH_CHARS, MAX_WHY_CHARS, shown

MAX_QUESTION_CHARS = 300
MAX_CHOICE_CHARS = 60
MIN_CHOICES, MAX_CHOICES = 2, 6
FIELDS = ("question", "choices", "answer", "why")
CHECK_DESCRIPTION = "prediction: the engine's answer is one of the choices"


def answer_text(value: Any) -> str:
    """The text a value is matched against the choices with: ``7``, ``2.5``, ``true``, ``none``, ``c``,
    ``[a, b]``; a whole float is written as an int (metrics are floats)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(answer_text(v) for v in value) + "]"
    return str(value)


class Prediction(BaseModel):
    """A step's question: ``answer`` (a value path) read after the step's actions names the right choice."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    choices: tuple[str, ...] = Field(min_length=MIN_CHOICES, max_length=MAX_CHOICES)
    answer: str = Field(min_length=1, max_length=MAX_PATH_CHARS)
    why: str | None = Field(default=None, max_length=MAX_WHY_CHARS)  # shown when the answer is revealed

    @field_validator("choices")
    @classmethod
    def _distinct(cls, choices: tuple[str, ...]) -> tuple[str, ...]:
        if any(not 1 <= len(c) <= MAX_CHOICE_CHARS for c in choices):
            raise ValueError(f"each choice has 1 to {MAX_CHOICE_CHARS} characters")
        if len(set(choices)) != len(choices):
            raise ValueError("the choices must be distinct")
        return choices

    def match(self, answer: str | None) -> str | None:
        """The choice ``answer`` (an ``answer_text``) is, or None."""
        return answer if answer is not None and answer in self.choices else None


def _text(raw: dict, key: str, most: int, what: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise FieldError(key, f"must be {what} (text), got {shown(value)}")
    if len(value) > most:
        raise FieldError(key, f"{len(value)} characters; at most {most}")
    return value.strip()


def _choices(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise FieldError(
            "choices", f"must be a YAML list of {MIN_CHOICES} to {MAX_CHOICES} choices like [a, b, c], got {shown(raw)}"
        )
    if not MIN_CHOICES <= len(raw) <= MAX_CHOICES:
        raise FieldError(
            "choices",
            f"{len(raw)} choice{'s' if len(raw) != 1 else ''}; a prediction offers {MIN_CHOICES} to {MAX_CHOICES}",
        )
    choices: list[str] = []
    for i, item in enumerate(raw):
        if isinstance(item, (list, dict)) or item is None:
            raise FieldError(f"choices[{i}]", f"must be one short text or number, got {shown(item)}")
        text = item.strip() if isinstance(item, str) else answer_text(item)
        if not text or "\n" in text or len(text) > MAX_CHOICE_CHARS:
            raise FieldError(
                f"choices[{i}]", f"a choice is one line of 1 to {MAX_CHOICE_CHARS} characters, got {shown(item)}"
            )
        if text in choices:
            raise FieldError(
                f"choices[{i}]", f"{text!r} is already choice {choices.index(text)}; the choices must be distinct"
            )
        choices.append(text)
    return tuple(choices)


def parse_prediction(raw: Any) -> Prediction:
    """The mapping of a ```predict block; FieldError names the field that is wrong. The answer path is
    checked against the lesson by the loader (it knows what exists after the step's actions)."""
    if not isinstance(raw, dict):
        raise FieldError("", f"a predict block is a YAML mapping ({', '.join(FIELDS)}), got {shown(raw)}")
    for key in raw:
        if key not in FIELDS:
            raise FieldError(str(key)[:40], f"unknown field; a predict block takes {', '.join(FIELDS)}")
    for key in ("question", "choices", "answer"):
        if key not in raw:
            raise FieldError(key, "missing (this field is required)")
    question = _text(raw, "question", MAX_QUESTION_CHARS, "the question shown to the learner")
    answer = _text(raw, "answer", MAX_PATH_CHARS, "a value path such as preemptions.last.request_id")
    why = _text(raw, "why", MAX_WHY_CHARS, "an explanation shown on reveal") if raw.get("why") is not None else None
    return Prediction(question=question, choices=_choices(raw["choices"]), answer=answer, why=why)


@dataclass(frozen=True)
class PredictionResult:
    """What the engine answered to a step's prediction (``StepState.prediction``)."""

    question: str
    choices: tuple[str, ...]
    answer: str | None  # the answer path's value after the step's actions, as text (None: it could not be read)
    correct: str | None  # the choice that value is (None: it is none of them, or it could not be read)
    why: str | None = None  # the lesson's explanation, shown on reveal

    @classmethod
    def of(cls, prediction: Prediction, answer: str | None) -> "PredictionResult":
        return cls(
            question=prediction.question,
            choices=prediction.choices,
            answer=answer,
            correct=prediction.match(answer),
            why=prediction.why,
        )
