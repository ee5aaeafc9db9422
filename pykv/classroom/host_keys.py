"""Who may start a class on this server, from the environment the host started it with.

    PYKV_INSTRUCTOR_KEY=<passphrase>  Start a class asks for it.
    (unset)                           the same, with a passphrase this process makes at start and prints once on
                                      the server's terminal (where whoever ran ``streamlit run`` reads it)
    PYKV_OPEN_CLASSES=1               no passphrase: anyone who reaches the server may start a class, held to the
                                      caps per session and per address and to a server-wide rate of starts
                                      (OPEN_STARTS per OPEN_WINDOW_S): for a room the host trusts
    PYKV_ADMIN_KEY=<key>              the operator's key: drives or ends any class, and starts one

Why a passphrase by default: behind a reverse proxy or tunnel on the same host every visitor's address is the
proxy's (Streamlit reports none for 127.0.0.1 and ::1, and an address read from X-Forwarded-For is what the
visitor wrote), and each new tab is a new session, so no cap per owner stops one visitor from starting every
class: 17 sessions started all 50 in 44 s, and the workshop's instructor then found the server full.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

INSTRUCTOR_KEY_ENV, ADMIN_KEY_ENV, OPEN_CLASSES_ENV = "PYKV_INSTRUCTOR_KEY", "PYKV_ADMIN_KEY", "PYKV_OPEN_CLASSES"
_GENERATED_WORDS = 3  # 3 x 4 characters from secrets: ~1e14 passphrases, typed from a terminal


@dataclass(frozen=True)
class HostKeys:
    instructor_key: str | None  # None: anyone may start a class (PYKV_OPEN_CLASSES=1)
    admin_key: str | None
    generated: bool  # instructor_key was made by this process: the server prints it once

    @property
    def open(self) -> bool:
        return self.instructor_key is None


def generated_key() -> str:
    """A passphrase that reads off a terminal: ``k7qm-2xpa-9dfe``."""
    alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
    return "-".join("".join(secrets.choice(alphabet) for _ in range(4)) for _ in range(_GENERATED_WORDS))


def host_keys(environ: Mapping[str, str] = os.environ) -> HostKeys:
    """The keys class mode runs with (see the module's table); makes a passphrase where the host set none."""
    admin = environ.get(ADMIN_KEY_ENV) or None
    key = environ.get(INSTRUCTOR_KEY_ENV) or None
    if key is not None:
        return HostKeys(key, admin, generated=False)
    if environ.get(OPEN_CLASSES_ENV, "").strip().lower() in ("1", "true", "yes"):
        return HostKeys(None, admin, generated=False)
    return HostKeys(generated_key(), admin, generated=True)


def announcement(keys: HostKeys) -> str | None:
    """The line the server prints at start about class mode's passphrase (None when there is nothing to say)."""
    if keys.generated:
        return (
            f"pykv class mode: Start a class asks for this server's instructor passphrase: {keys.instructor_key} "
            f"(set {INSTRUCTOR_KEY_ENV} to choose it, or {OPEN_CLASSES_ENV}=1 to let anyone who reaches the server "
            "start a class)"
        )
    if keys.open:
        return (
            f"pykv class mode: {OPEN_CLASSES_ENV}=1: anyone who reaches this server may start a class "
            "(per-session and per-address caps, and a server-wide rate of starts)"
        )
    return None
