"""Class mode: an instructor starts a class on a lesson, learners join with a short code, follow the
instructor's step and answer its prediction questions. No Streamlit here (pykv.ui draws it).

``Classes`` (classes.py) holds the rules; a store keeps the data: ``MemoryStore`` for one process,
``RedisStore`` for several replicas behind a load balancer; ``make_store()`` picks one from
``PYKV_CLASS_STORE``.
"""

from pykv.classroom.classes import Classes
from pykv.classroom.errors import ClassError, ClassNotFound, NotInstructor, StoreUnavailable
from pykv.classroom.limits import (
    CLASS_IDLE_S,
    CODE_ALPHABET,
    CODE_LENGTH,
    HEARTBEAT_S,
    MAX_CLASSES,
    MAX_LEARNERS,
    PRESENCE_S,
    UNJOINED_S,
)
from pykv.classroom.memory_store import MemoryStore
from pykv.classroom.state import ClassState, Presence
from pykv.classroom.store import ClassRecord, ClassStore, Outcome, Seen
from pykv.classroom.store_factory import make_store

__all__ = [
    "CLASS_IDLE_S",
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "HEARTBEAT_S",
    "MAX_CLASSES",
    "MAX_LEARNERS",
    "PRESENCE_S",
    "UNJOINED_S",
    "ClassError",
    "ClassNotFound",
    "ClassRecord",
    "ClassState",
    "ClassStore",
    "Classes",
    "MemoryStore",
    "NotInstructor",
    "Outcome",
    "Presence",
    "Seen",
    "StoreUnavailable",
    "make_store",
]
