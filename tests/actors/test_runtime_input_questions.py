"""A turn's questions are checked like its messages: ``ctx.prompt_user`` refuses an empty
text, a text that is not valid Unicode or over ``MAX_TEXT_BYTES``, and ``request_approval``
an ``action`` the same way and ``details`` over ``MAX_JSON_BYTES``, each by name before
anything is asked. They were handed to the route as given: an empty question, one no
platform could encode, or megabytes the gateway could only refuse as ``frame_too_big``."""

from __future__ import annotations

import pytest

from tidings.actors import MAX_JSON_BYTES, MAX_TEXT_BYTES
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

OVER = "x" * (MAX_TEXT_BYTES + 1)


@pytest.mark.parametrize(("call", "field"), [
    (lambda ctx: ctx.prompt_user(""), "text"),
    (lambda ctx: ctx.prompt_user("q\ud800?"), "text"),
    (lambda ctx: ctx.prompt_user(OVER), "text"),
    (lambda ctx: ctx.request_approval("deploy\udcff"), "action"),
    (lambda ctx: ctx.request_approval(OVER), "action"),
    (lambda ctx: ctx.request_approval("deploy", details={"blob": "x" * MAX_JSON_BYTES}),
     "details"),
], ids=["empty", "surrogate", "over", "action-surrogate", "action-over", "details-over"])
async def test_a_question_is_checked_like_a_message(rt, call, field) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await call(ctx)
        assert caught.value.field == field
        assert (route.prompts, route.approvals) == ([], [])
        assert (await ctx.prompt_user("still there?")).text == "yes"  # the turn goes on


async def test_questions_at_the_caps_are_asked(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("ok")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    at_cap = "q" * MAX_TEXT_BYTES
    async with rt.open_turn(session_id) as ctx:
        assert (await ctx.prompt_user(at_cap)).text == "ok"
        decision = await ctx.request_approval(at_cap, details={"env": "prod"})
    assert decision.allowed
    assert [p.text for p in route.prompts] == [at_cap]
    assert [a.action for a in route.approvals] == [at_cap]
