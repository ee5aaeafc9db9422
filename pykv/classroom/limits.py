"""Every limit class mode is held to, in one place.

A class is driven from browsers over the network: the code a learner types, the ids and answers the
app sends, and the number of classes, learners and steps are all bounded here, so one class (or one
hostile tab) cannot grow a store without end. Each bound is far above what a workshop uses.
"""

from __future__ import annotations

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O/1/I: a code is read aloud and typed
CODE_LENGTH = 6  # 32**6 ~ 1.07e9 codes: a guessed code hits one of 50 classes with p ~ 5e-8
MAX_CODE_INPUT_CHARS = 64  # a typed code is cut here before any work ("k7qm-2x " is 8)

CLASS_IDLE_S = 3 * 3600  # a class with no instructor action for this long ends (the UI states it)
PRESENCE_S = 15  # a learner not seen for this long no longer counts as connected
HEARTBEAT_S = 4.0  # a learner's presence is written at most this often (each page run and long poll renews it)
MAX_CLASSES = 50  # per store: starting one more is a ClassError saying the server is full
MAX_CLASSES_PER_OWNER = 3  # live classes one browser session, or one client address, may start (per replica)
OPEN_STARTS, OPEN_WINDOW_S = 20, 10 * 60  # without an instructor key (PYKV_OPEN_CLASSES=1): class starts per window
#                    per replica: a script needs 25 minutes, not 44 s, to start all 50, and the host sees it coming
UNJOINED_S = 10 * 60  # a class no learner has joined ends this long after its last instructor action
MAX_PASSPHRASE_CHARS = 200  # PYKV_INSTRUCTOR_KEY / PYKV_ADMIN_KEY as typed

MAX_LEARNERS = 200  # learners one class takes at once (connected ones; answers to one step): what one quiet
#                    2-core server redraws within p95 ~2 s after a step (bench/results/class_load.txt)
MAX_STEP = 100  # a lesson has at most this many steps (pykv.lessons.format.limits.MAX_LESSON_STEPS)
MAX_LESSON_ID_CHARS = 100
MAX_LEARNER_ID_CHARS = 64  # the app makes uuid4 hex ids (32 characters)
MAX_SECRET_CHARS = 200  # instructor secrets are token_urlsafe(16): 22 characters
MAX_CHOICES = 26  # choices of one prediction question
MAX_CHOICE_CHARS = 200
SECRET_BYTES = 16  # secrets.token_urlsafe(SECRET_BYTES)

LEARNER_MODES = ("following", "exploring")  # what a learner's tab is doing (Presence counts both)
