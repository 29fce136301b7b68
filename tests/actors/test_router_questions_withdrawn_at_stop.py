"""A host's own ``rt.router.prompt_user`` / ``request_approval`` still waiting when the
runtime stops is withdrawn, as a turn's question is: the host gets :class:`RuntimeClosedError`
and the route's wait is cancelled.

The stop withdrew only turns' questions (``ctx.prompt_user``), and the router refused only
calls made after it: a host call already waiting went on asking through the route of a
runtime that was gone, until its expiry, or for ever with none (its nursery never finished).
An approval withdrawn so is never an allow: the host gets the error, not a decision.
"""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.actors import ApprovalRequest, Prompt
from tidings.errors import RuntimeClosedError

from ..real_time import fail_after_real
from .test_questions_turn_ended import WaitingRoute

ASKS = {
    "prompt": lambda router, session_id: router.prompt_user(Prompt(
        session_id, "still there?", "prompt_host")),
    "approval": lambda router, session_id: router.request_approval(ApprovalRequest(
        session_id, "deploy", "request_host")),
}


class _RaisingWhenCancelledRoute(WaitingRoute):
    """A route whose cancelled wait ends with an error of its own (as some platform libraries
    end a request they were cancelled in)."""

    async def _wait(self) -> None:
        try:
            await super()._wait()
        except trio.Cancelled:
            raise ConnectionError("request aborted") from None


@pytest.mark.parametrize("route_class", [WaitingRoute, _RaisingWhenCancelledRoute],
                         ids=["waits", "raises_when_cancelled"])
@pytest.mark.parametrize("ask", ASKS.values(), ids=ASKS.keys())
async def test_a_host_s_router_question_waiting_at_stop_is_withdrawn(
        db_path, workspace, autojump_clock, ask, route_class) -> None:
    outcome: list[object] = []
    route = route_class()

    async def host_asks(rt, session_id) -> None:
        try:
            outcome.append(await ask(rt.router, session_id))
        except RuntimeClosedError as exc:
            outcome.append(exc)

    with fail_after_real(20):  # hang guard: the host's call waited for ever
        async with trio.open_nursery() as nursery, \
                tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            nursery.start_soon(host_asks, rt, session_id)
            await route.asked.wait()
    assert route.withdrawn.is_set()
    [error] = outcome
    assert isinstance(error, RuntimeClosedError), error
    assert "withdrawn" in str(error)


async def test_a_host_s_question_answered_before_the_stop_keeps_its_answer(
        db_path, workspace, autojump_clock) -> None:
    class Answering(WaitingRoute):
        async def prompt_user(self, prompt) -> str:
            return "blue"

    with fail_after_real(20):
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, Answering())
            answer = await ASKS["prompt"](rt.router, session_id)
    assert answer.text == "blue"
