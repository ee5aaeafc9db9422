"""Class codes and instructor secrets.

A code is CODE_LENGTH characters of CODE_ALPHABET, drawn with ``secrets`` (not guessable from earlier
codes). People read codes aloud and type them, so a typed code is forgiven case, surrounding
blanks, inner spaces and dashes ("k7qm-2x" is K7QM2X), and nothing else.

An instructor secret is ``secrets.token_urlsafe(SECRET_BYTES)``. Only its SHA-256 is stored; a
secret is checked by hashing it and comparing digests with ``hmac.compare_digest`` (constant time).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from pykv.classroom.errors import ClassError
from pykv.classroom.limits import CODE_ALPHABET, CODE_LENGTH, MAX_CODE_INPUT_CHARS, MAX_SECRET_CHARS, SECRET_BYTES

BAD_CODE = f"A class code is {CODE_LENGTH} letters and digits, e.g. K7QM2X."
_ALPHABET = frozenset(CODE_ALPHABET)


def normalize_code(raw: object) -> str:
    """The canonical code for what a user typed: stripped, upper-cased, spaces and dashes dropped.
    Anything else (wrong length, other characters, not a string, absurdly long) is a ClassError;
    the work is capped at MAX_CODE_INPUT_CHARS characters whatever the input's length."""
    if not isinstance(raw, str) or len(raw) > MAX_CODE_INPUT_CHARS:
        raise ClassError(BAD_CODE)
    code = raw.strip().replace(" ", "").replace("-", "").upper()
    if len(code) != CODE_LENGTH or not all(c in _ALPHABET for c in code):
        raise ClassError(BAD_CODE)
    return code


def is_code(code: object) -> bool:
    """True for a code already in canonical form (the cheap check on the hot path)."""
    return isinstance(code, str) and len(code) == CODE_LENGTH and all(c in _ALPHABET for c in code)


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def hash_secret(secret: str) -> str:
    """The hex SHA-256 of a secret: what the store keeps instead of the secret."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(secret: str | None, secret_hash: str) -> bool:
    """Whether ``secret`` is the one whose hash is ``secret_hash``; False for None, non-strings and
    over-long input (never hashed), in constant time for the rest."""
    if not isinstance(secret, str) or not secret or len(secret) > MAX_SECRET_CHARS:
        return False
    try:
        digest = hash_secret(secret)
    except UnicodeEncodeError:  # lone surrogates: not a secret this module made
        return False
    return hmac.compare_digest(digest, secret_hash)
