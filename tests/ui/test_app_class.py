"""Class mode through streamlit.testing.v1.AppTest: several sessions in one process share the classes,
as the tabs of one server do. An instructor's Next moves a follower; a follower cannot move the class;
predictions are answered, tallied and revealed; explore and rejoin; ending frees the class; bad codes
and forged keys are messages that affect nobody else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import streamlit as st
from app_helpers import lessons_page, ok
from app_helpers import step_line as shown
from streamlit.testing.v1 import AppTest

from pykv.review_pack.deep_link import PUBLIC_URL_ENV
from pykv.ui.session import classroom, routes

LESSON = """---
id: classy
title: A class lesson
summary: Three steps made for the class tests.
takeaway: Followers follow.
seed: 0
config: {num_gpu_blocks: 16, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 4, ignore_eos: true}
---

## First

One engine step.

```actions
- step: 1
```

## Guess

How many requests run after one more step?

```predict
question: How many requests will be running after this step?
choices: ["0", "1", "2"]
answer: queue.running.length
why: Only a was ever sent.
```

```actions
- step: 1
```

```notes
Answer: 1.
```

## Third {optional}

Still here at engine step {{ engine.step }}.

```actions
- step: 1
```
"""


@pytest.fixture
def course(course_folder, monkeypatch, random_llama_path):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    return course_folder(("01-classy.md", LESSON))


def session() -> AppTest:
    return AppTest.from_function(lessons_page, default_timeout=120)


def param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def start_class(at: AppTest) -> tuple[str, str]:
    at.query_params["lesson"], at.query_params["step"] = "classy", "1"
    ok(at.run())
    at.button(key="class_start").click()
    ok(at.run())
    code, key = param(at, "class"), param(at, "key")
    assert code and key and any(f"`{code}`" in m.value for m in at.markdown)
    return code, key


def follow(code: str) -> AppTest:
    at = session()
    at.query_params["class"] = code
    return ok(at.run())


def test_the_instructors_next_moves_a_follower_who_cannot_move_the_class(course):
    teacher = session()
    code, _ = start_class(teacher)
    learner = follow(code.lower())  # a code typed in lower case is the same class
    assert shown(learner) == (1, 3)
    assert not [b for b in learner.button if b.key in ("lesson_next", "lesson_prev", "class_end", "class_reveal")]
    assert "key" not in learner.query_params

    teacher.button(key="lesson_next").click()
    ok(teacher.run())
    assert classroom.classes().get(code).step == 2
    ok(learner.run())  # what the follower's one-second poll does once it sees the new version
    assert shown(learner) == (2, 3)
    # the prediction step: the question over the state before it, no narration, no speaker notes
    assert any("How many requests will be running" in m.value for m in learner.markdown)
    assert not any("Answer: 1." in m.value for m in learner.markdown)
    assert classroom.classes().presence(code).following == 1


def answer(at: AppTest, choice: str) -> None:
    at.radio(key="class_predict_2").set_value(choice)
    next(b for b in at.button if "my answer" in b.label).click()
    ok(at.run())
    assert f"Your answer: **{choice}**" in " ".join(c.value for c in at.caption)


def test_predict_answer_tally_and_reveal(course):
    teacher = session()
    code, _ = start_class(teacher)
    teacher.button(key="lesson_next").click()
    ok(teacher.run())
    learners = [follow(code) for _ in range(3)]
    for at, choice in zip(learners, ["1", "1", "2"]):
        answer(at, choice)
    spammer = learners[2]
    for choice in ["0", "2", "0"]:  # a learner spamming answers counts once: the last one
        answer(spammer, choice)
    assert {k: v for k, v in classroom.classes().tally(code, 2).items() if v} == {"0": 1, "1": 2}

    ok(teacher.run())
    teacher.button(key="class_reveal").click()
    ok(teacher.run())
    assert classroom.classes().get(code).revealed
    ok(learners[0].run())
    assert any("right" in s.value for s in learners[0].success)  # answered "1": the engine says 1
    assert any("Only a was ever sent." in c.value for c in learners[0].caption)
    ok(learners[2].run())
    assert any("The engine says **1**" in i.value for i in learners[2].info)
    assert not [b for b in learners[2].button if "answer" in b.label]  # answers are closed


def test_a_forged_key_follows_and_cannot_drive(course):
    teacher = session()
    code, key = start_class(teacher)
    forger = session()
    forger.query_params.update({"lesson": "classy", "step": "3", "class": code, "key": key[:-2] + "xx"})
    ok(forger.run())
    assert any("does not drive class" in w.value for w in forger.warning)
    assert shown(forger) == (1, 3) and classroom.classes().get(code).step == 1


def test_bad_and_unknown_codes_are_messages_and_the_course_still_lists(course):
    for raw in ["ZZZZZZ", "not a code!", "<script>", "K" * 5000]:
        at = follow(raw)
        assert at.error and not at.exception
        assert any(b.key == "open_classy" for b in at.button)  # the course is still there
        assert "class" not in at.query_params


def playground_page():
    from pykv.ui.pages import playground

    playground.render()


def test_explore_forks_a_private_lab_and_rejoin_returns(course, monkeypatch):
    teacher = session()
    code, _ = start_class(teacher)
    learner = follow(code)
    went = []

    def switch_page(page, query_params=None):  # AppTest runs one page: record where it would go, and stop there
        went.append((page.title, query_params))
        st.stop()

    monkeypatch.setattr(st, "switch_page", switch_page)
    monkeypatch.setattr(routes, "page", lambda url_path: SimpleNamespace(title=url_path.title()))  # app.py routes them
    learner.button(key="class_explore").click()
    ok(learner.run())
    assert went and went[-1][0] == "Playground"
    lab = learner.session_state["lab"]
    assert learner.session_state[classroom.EXPLORING] == code
    shared = classroom.shared_lesson(_lesson())
    head = shared.state(0).lab.head
    assert lab.cursor == head
    assert lab.step() and lab.cursor == head + 1  # its own engine: the class's step is untouched
    assert shared.state(0).lab.head == head and shared.state(1).lab.head == head + 1

    explorer = AppTest.from_function(playground_page, default_timeout=120)  # the Playground, this learner's lab
    for name in ("lab", classroom.EXPLORING, "class_learner", "engine_seat"):
        explorer.session_state[name] = learner.session_state[name]
    ok(explorer.run())
    assert any("exploring on your own" in i.value for i in explorer.info)
    assert classroom.classes().presence(code).exploring == 1
    from pykv.ui.session import seats

    held = seats.seats().in_use()[0]
    explorer.button(key="class_rejoin").click()
    ok(explorer.run())
    assert went[-1] == ("Lessons", {"class": code}) and "lab" not in explorer.session_state
    assert seats.seats().in_use()[0] == held - 1  # the engine seat is given back, not kept until the tab closes


def _lesson():
    from pykv.ui.session import course_files

    return course_files.course()[0][0]


def test_ending_the_class_frees_it_and_followers_are_told_and_stay_on_its_step(course):
    teacher = session()
    code, _ = start_class(teacher)
    learner = follow(code)
    teacher.button(key="lesson_dot_3").click()
    ok(teacher.run())
    ok(learner.run())
    assert shown(learner) == (3, 3)
    teacher.button(key="class_end").click()
    ok(teacher.run())
    assert "class" not in teacher.query_params and classroom.classes().version(code) is None
    ok(learner.run())
    assert any(f"Class {code} has ended" in i.value for i in learner.info)  # not "ask your instructor for the code"
    assert not any("Ask your instructor" in m.value for m in [*learner.error, *learner.info])
    # the learner stays on the lesson and step the class ended on, now on a player of their own (not the course list)
    assert shown(learner) == (3, 3) and (param(learner, "lesson"), param(learner, "step")) == ("classy", "3")
    assert "class" not in learner.query_params and learner.button(key="lesson_prev").disabled is False
    learner.button(key="lesson_prev").click()
    assert shown(ok(learner.run())) == (2, 3)
    other, _ = classroom.classes().start("classy")  # the registry itself still serves other classes
    assert classroom.classes().get(other.code).step == 1 and other.code != code


def test_the_speaker_view_has_notes_and_answers_and_both_windows_move_together(course):
    projector = session()
    code, key = start_class(projector)
    projector.button(key="lesson_next").click()
    ok(projector.run())
    assert not any("Answer: 1." in m.value for m in projector.markdown)  # notes never on the projector

    speaker = session()
    speaker.query_params.update({"lesson": "classy", "step": "2", "class": code, "key": key, "speaker": "1"})
    ok(speaker.run())
    text = " ".join(m.value for m in speaker.markdown)
    assert "Answer: 1." in text and "**Prediction's answer:** 1" in text and "step 2 of 3" in text

    speaker.button(key="lesson_next").click()  # the speaker view moves the class ...
    ok(speaker.run())
    assert classroom.classes().get(code).step == 3 and shown(speaker) == (3, 3)
    ok(projector.run())  # ... and the projector follows (its poll reruns it)
    assert shown(projector) == (3, 3)
    projector.button(key="lesson_prev").click()  # and the other way round
    ok(projector.run())
    ok(speaker.run())
    assert shown(speaker) == (2, 3) and classroom.classes().get(code).step == 2


def projector_of(code: str, path: str = "") -> AppTest:
    at = session()
    at.query_params["class"], at.query_params["presenter"] = code, "1"
    if path:
        at.query_params["path"] = path
    return ok(at.run())


def takeaways(at: AppTest) -> list[str]:
    return [s.value for s in at.success if "Takeaway" in s.value]


def test_the_class_projector_shows_the_takeaway_at_the_lessons_end(course):
    teacher = session()
    teacher.query_params["path"] = "core"
    code, key = start_class(teacher)
    (link,) = [b.proto.url for b in teacher.get("link_button") if b.proto.label == "Projector"]
    assert link == f"lessons?class={code}&presenter=1&path=core"  # the room's screen ends lessons where she does
    full, core = projector_of(code), projector_of(code, "core")
    assert not takeaways(full) and not takeaways(core)
    teacher.button(key="lesson_next").click()
    ok(teacher.run())
    classroom.classes().drive(code, key, revealed=True)
    ok(core.run()), ok(full.run())
    assert shown(core) == (2, 3)
    # step 2 is the last core step: the workshop path's projector ends the lesson there, the full course's not
    assert takeaways(core) == ["**Takeaway** · Followers follow."] and not takeaways(full)
    assert not any(m.value == "**This step**" for m in core.markdown)  # the takeaway took the step log's place
    teacher.button(key="lesson_dot_3").click()  # the dots still open the optional step
    ok(teacher.run())
    ok(full.run())
    assert shown(full) == (3, 3) and takeaways(full) == ["**Takeaway** · Followers follow."]


def qr_images(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.get("html") if '<img src="data:image/svg+xml' in h.proto.body]


def test_the_projector_shows_the_class_code_and_link(course):
    code, key = start_class(session())
    projector = session()
    projector.query_params["class"], projector.query_params["presenter"] = code, "1"
    ok(projector.run())
    assert any(f"`{code}`" in m.value and f"lessons?class={code}" in m.value for m in projector.markdown)
    # the QR code is an image (an inline <svg> is stripped by st.html's sanitiser); the browser test decodes it
    assert len(qr_images(projector)) == 1
    classroom.classes().drive(code, key, step=2, revealed=True)  # the room's answers take the QR code's place ...
    ok(projector.run())
    assert shown(projector) == (2, 3) and not qr_images(projector)
    assert any(m.value.startswith(f"Class `{code}` · ") for m in projector.markdown)  # ... the code stays on screen


def test_a_public_url_makes_the_link_and_a_loopback_link_is_warned(course, monkeypatch):
    assert classroom.loopback("http://localhost:8501/lessons?class=K7QM2X")
    assert classroom.loopback("http://127.0.0.1:8501/x") and not classroom.loopback("https://lab.example.org/x")
    monkeypatch.setenv(PUBLIC_URL_ENV, "https://lab.example.org/")
    teacher = session()
    code, _ = start_class(teacher)
    assert any(f"https://lab.example.org/lessons?class={code}" in m.value for m in teacher.markdown)
    assert not any("loopback" in w.value for w in teacher.warning)
    monkeypatch.setenv(PUBLIC_URL_ENV, "http://localhost:8501")
    ok(teacher.run())
    assert any("loopback" in w.value and PUBLIC_URL_ENV in w.value for w in teacher.warning)


def test_by_default_a_class_needs_the_passphrase_the_server_printed(course, monkeypatch, capsys):
    """Issue 50 #1: a server whose host set no key makes a passphrase and prints it; Start a class asks for it."""
    from pykv.classroom.host_keys import OPEN_CLASSES_ENV, host_keys

    monkeypatch.delenv(OPEN_CLASSES_ENV, raising=False)
    monkeypatch.delenv("PYKV_INSTRUCTOR_KEY", raising=False)
    keys = host_keys()
    registry = classroom.make_classes(keys)
    monkeypatch.setattr(classroom, "classes", lambda: registry)
    visitor = session()
    visitor.query_params["lesson"], visitor.query_params["step"] = "classy", "1"
    ok(visitor.run())
    assert visitor.text_input(key="class_passphrase") is not None
    visitor.button(key="class_start").click()
    ok(visitor.run())
    assert param(visitor, "class") is None and any("passphrase" in e.value for e in visitor.error)
    visitor.text_input(key="class_passphrase").set_value(keys.instructor_key)
    visitor.button(key="class_start").click()
    ok(visitor.run())
    assert param(visitor, "class") and param(visitor, "key")
