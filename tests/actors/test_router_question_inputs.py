"""The public router's questions are checked as a turn's are.

``ctx.prompt_user`` / ``ctx.request_approval`` refuse a bad text, action or details by name
before anything is asked (``test_runtime_input_questions.py``), but a host may ask through
``rt.router.prompt_user(Prompt(...))`` / ``rt.router.request_approval(ApprovalRequest(...))``
itself, and those checked nothing: a non-JSON ``details`` reached the route as it was (the
gateway sent it as ``str()`` of each value), megabytes of text became a ``frame_too_big``
answer, a non-string action or session id was handed on (or answered
``no_interactive_route``). They now refuse each by name too, with nothing asked.
"""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_JSON_BYTES, MAX_TEXT_BYTES, ApprovalRequest, Prompt
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

OVER = "x" * (MAX_TEXT_BYTES + 1)
SID = "{session}"  # stands for the bound session's id


def _prompt(session_id=SID, text="ok?", prompt_id="p1", **kw) -> Prompt:
    return Prompt(session_id, text, prompt_id, **kw)


def _approval(session_id=SID, action="deploy", request_id="r1", details=None,
              **kw) -> ApprovalRequest:
    return ApprovalRequest(session_id, action, request_id, details or {}, **kw)


@pytest.mark.parametrize(("question", "field"), [
    (_prompt(text=""), "text"),
    (_prompt(text=5), "text"),
    (_prompt(text="q\ud800?"), "text"),
    (_prompt(text=OVER), "text"),
    (_prompt(session_id=""), "session_id"),
    (_prompt(session_id=7), "session_id"),
    (_prompt(session_id="s\ud800"), "session_id"),
    (_prompt(prompt_id=""), "prompt_id"),
    (_prompt(expires_at="soon"), "expires_at"),
    (_prompt(expires_at=float("nan")), "expires_at"),
    (_approval(action=5), "action"),
    (_approval(action=""), "action"),
    (_approval(action="deploy\udcff"), "action"),
    (_approval(action=OVER), "action"),
    (_approval(details={"when": object()}), "details"),
    (_approval(details={"blob": "x" * MAX_JSON_BYTES}), "details"),
    (_approval(details={"n": float("nan")}), "details"),
    (_approval(details={1: "a", "1": "b"}), "details"),
    (_approval(details={"tags": {"a", "b"}}), "details"),
    (_approval(session_id=None), "session_id"),
    (_approval(request_id=["r1"]), "request_id"),
    (_approval(expires_at=True), "expires_at"),
    ("deploy?", "prompt"),
], ids=lambda value: value if isinstance(value, str) else None)
async def test_a_question_asked_through_the_router_is_checked_as_a_turn_s_is(
        rt, question, field) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    if not isinstance(question, str) and question.session_id == SID:
        question = type(question)(session_id, *(
            getattr(question, a.name) for a in question.__attrs_attrs__[1:]))
    ask = (rt.router.request_approval if isinstance(question, ApprovalRequest)
           else rt.router.prompt_user)
    with trio.fail_after(30):  # hang guard: a question asked is answered at once
        with pytest.raises(ValidationError) as caught:
            await ask(question)
    assert caught.value.field == field
    assert (route.prompts, route.approvals) == ([], [])


async def test_good_questions_through_the_router_are_asked_with_json_details(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    at_cap = "q" * MAX_TEXT_BYTES
    with trio.fail_after(30):  # hang guard
        answer = await rt.router.prompt_user(Prompt(session_id, at_cap, "p1"))
        decision = await rt.router.request_approval(ApprovalRequest(
            session_id, "deploy", "r1", {"env": "prod", "hosts": ("a", "b"), "n": {2: 1}},
            expires_at=float("inf")))
    assert (answer.text, decision.allowed) == ("yes", True)
    assert [p.text for p in route.prompts] == [at_cap]
    [asked] = route.approvals
    # As a turn's request: the details as their JSON reads back (string keys, lists frozen).
    assert dict(asked.details) == {"env": "prod", "hosts": ("a", "b"), "n": {"2": 1}}


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_an_expires_at_past_a_float_s_range_is_no_expiry_as_inf_is(rt, kind) -> None:
    # An int of unix seconds is unix seconds: ctx.prompt_user(expires_in=10**400) asks with
    # expires_at=inf, but the router's own questions raised a bare 'OverflowError: int too
    # large to convert to float' (naming nothing) computing the time left.
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard: a question asked is answered at once
        if kind == "prompt":
            answer = await rt.router.prompt_user(Prompt(session_id, "ok?", "p1",
                                                        expires_at=10**400))
            assert answer.text == "yes"
        else:
            decision = await rt.router.request_approval(ApprovalRequest(
                session_id, "deploy", "r1", {}, expires_at=10**400))
            assert decision.allowed
    [asked] = route.prompts if kind == "prompt" else route.approvals
    assert asked.expires_at == float("inf")  # what a turn's question past it carries
