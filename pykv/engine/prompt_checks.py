"""What a prompt and a request id must be before the engine takes them: text bounded in characters before
it is tokenized, token ids that are real ints, ids of sane printable text. Errors are one-line ValueErrors."""

from __future__ import annotations

import numbers
from typing import Callable, Sequence

from pykv.border.config import show_value
from pykv.border.limits import MAX_PROMPT_CHARS, MAX_REQUEST_ID_CHARS

Prompt = str | Sequence[int]


def token_ids_of(prompt: Prompt, encode: Callable[[str], list[int]], max_model_len: int, why: str = "") -> list[int]:
    """A prompt's token ids: text is bounded in characters before it is tokenized; token ids must be ints.
    ``why`` says where max_model_len comes from, for the message."""
    if isinstance(prompt, str):
        if len(prompt) > MAX_PROMPT_CHARS:
            raise ValueError(
                f"The prompt has {len(prompt)} characters; at most {MAX_PROMPT_CHARS} are accepted. Shorten it."
            )
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: no tokenizer takes it (a TypeError deep inside)
            raise ValueError(
                f"The prompt is not valid text: character {e.start} is a lone surrogate "
                f"(U+{ord(prompt[e.start]):04X}); decode the text properly (e.g. bytes.decode('utf-8'))."
            ) from None
        return encode(prompt)
    if not isinstance(prompt, (list, tuple, range)):
        hint = " Decode bytes to text first." if isinstance(prompt, (bytes, bytearray)) else ""
        raise ValueError(
            f"A prompt must be text or a list of integer token ids, got {show_value(prompt)} "
            f"({type(prompt).__name__}).{hint}"
        )
    try:
        length = len(prompt)
    except OverflowError:  # range(2**64): more items than a C size holds
        raise ValueError(
            f"The prompt has more than 2**63 tokens but max_model_len is {max_model_len}{why}; shorten it."
        ) from None
    if length > max_model_len:  # before looking at each id
        raise ValueError(f"The prompt has {length} tokens but max_model_len is {max_model_len}{why}; shorten it.")
    for i, t in enumerate(prompt):
        if not isinstance(t, numbers.Integral) or isinstance(t, bool):
            raise ValueError(
                f"Prompt token ids must be integers (not bools, floats or text); item {i} is "
                f"{show_value(t)} ({type(t).__name__})."
            )
    return [int(t) for t in prompt]


def checked_request_id(request_id: object) -> str:
    """A caller's request id: text (or an int, written out) of at most MAX_REQUEST_ID_CHARS printable characters."""
    if isinstance(request_id, numbers.Integral) and not isinstance(request_id, bool):
        if int(request_id).bit_length() > 3 * MAX_REQUEST_ID_CHARS:  # str() of a 5,000-digit int fails
            raise ValueError(
                f"request_id must be at most {MAX_REQUEST_ID_CHARS} characters, got {show_value(request_id)}."
            )
        request_id = str(int(request_id))
    if not isinstance(request_id, str):
        raise ValueError(
            f"request_id must be text (or an integer), got {show_value(request_id)} "
            f"({type(request_id).__name__}); leave it out for an automatic one."
        )
    if not 0 < len(request_id) <= MAX_REQUEST_ID_CHARS or not request_id.isprintable():
        raise ValueError(
            f"request_id must be 1 to {MAX_REQUEST_ID_CHARS} printable characters, got "
            f"{show_value(request_id)}; leave it out for an automatic one."
        )
    return request_id


MAX_PRIORITY = 2**31  # vLLM's priority is a plain int; pykv bounds it so a message never quotes a huge number


def checked_priority(priority: object) -> int:
    """A request priority: an integer (lower runs first, as in vLLM), not a bool, float or text."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, numbers.Integral)
        or not -MAX_PRIORITY <= int(priority) < MAX_PRIORITY
    ):
        raise ValueError(
            f"priority must be an integer in [-2**31, 2**31) (lower runs first, as in vLLM), got "
            f"{show_value(priority)} ({type(priority).__name__})."
        )
    return int(priority)
