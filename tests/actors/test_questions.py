"""``ctx.prompt_user`` / ``ctx.request_approval`` (and an agent's ``turn.prompt_user`` /
``turn.request_approval``): bad input is refused by name before anything is asked, and a turn
that ended asks nothing."""

from __future__ import annotations

import math

import pytest

from tidings.channels import ChannelBase, ChannelConfig, Inbound
from tidings.errors import RuntimeClosedError, ValidationError
from tidings.testing import MemoryRoute


@pytest.mark.parametrize(("call", "field"), [
    (lambda ctx: ctx.prompt_user(42), "text"),
    (lambda ctx: ctx.prompt_user("q?", expires_in=math.nan), "expires_in"),
    (lambda ctx: ctx.prompt_user("q?", expires_in=-1), "expires_in"),
    (lambda ctx: ctx.prompt_user("q?", expires_in="5"), "expires_in"),
    (lambda ctx: ctx.request_approval(""), "action"),
    (lambda ctx: ctx.request_approval(None), "action"),
    (lambda ctx: ctx.request_approval("deploy", details="prod"), "details"),
    (lambda ctx: ctx.request_approval("deploy", details=[("env", "prod")]), "details"),
    (lambda ctx: ctx.request_approval("deploy", details={"when": object()}), "details"),
    (lambda ctx: ctx.request_approval("deploy", expires_in=math.inf * 0), "expires_in"),
])
async def test_bad_questions_are_refused_by_name_and_nothing_is_asked(rt, call, field) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await call(ctx)
    assert caught.value.field == field
    assert (route.prompts, route.approvals) == ([], [])


async def _ready_to_answer(rt, answer: str):
    """A session bound to a route that would answer *answer* and allow, if it were asked."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append(answer)
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    return session_id, route


async def test_a_turn_that_ended_asks_nothing(rt) -> None:
    session_id, route = await _ready_to_answer(rt, "late")
    async with rt.open_turn(session_id) as ctx:
        pass
    with pytest.raises(RuntimeClosedError):
        await ctx.prompt_user("still there?")
    with pytest.raises(RuntimeClosedError):
        await ctx.request_approval("deploy")
    assert (route.prompts, route.approvals) == ([], [])


async def test_an_agent_s_bad_timeout_is_refused_under_its_own_name(rt) -> None:
    errors: list[ValidationError] = []

    class Asking:
        async def run(self, turn) -> None:
            for ask in (lambda: turn.prompt_user("q?", timeout=-1),
                        lambda: turn.request_approval("deploy", timeout=math.nan)):
                try:
                    await ask()
                except ValidationError as exc:
                    errors.append(exc)

    class Quiet(ChannelBase):
        async def deliver(self, outbound) -> None:
            pass

    channel = Quiet(rt, ChannelConfig(name="ops"), agent=Asking())
    await channel.handle_inbound(Inbound(chat_id="c1", sender_id="u1", text="go",
                                         message_id="m1"))
    await channel.wait_idle()
    assert [exc.field for exc in errors] == ["timeout", "timeout"]


async def test_a_question_already_expired_is_not_asked(rt) -> None:
    session_id, route = await _ready_to_answer(rt, "too late")
    async with rt.open_turn(session_id) as ctx:
        answer = await ctx.prompt_user("q?", expires_in=0)
        decision = await ctx.request_approval("deploy", expires_in=0)
    assert (answer.text, answer.reason) == (None, "expired")
    assert (decision.allowed, decision.reason) == (False, "expired")
    assert (route.prompts, route.approvals) == ([], [])  # nobody was shown a void question


async def test_an_expiry_past_a_float_s_range_never_expires(rt) -> None:
    """``expires_in`` is seconds >= 0: an integer too large for a float (JSON and Python carry
    any) is asked as one that never expires, as ``math.inf`` is, not an ``OverflowError``."""
    session_id, route = await _ready_to_answer(rt, "yes")
    async with rt.open_turn(session_id) as ctx:
        answer = await ctx.prompt_user("q?", expires_in=10**400)
        decision = await ctx.request_approval("deploy", expires_in=10**400)
    assert (answer.text, decision.allowed) == ("yes", True)
    assert [prompt.expires_at for prompt in route.prompts] == [math.inf]
    assert [request.expires_at for request in route.approvals] == [math.inf]
