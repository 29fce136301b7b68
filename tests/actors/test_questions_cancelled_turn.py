"""A turn already cancelled asks nothing: ``ctx.prompt_user`` / ``ctx.request_approval``
raise its ``Cancelled`` before the route is called.

Before, the route was handed the question (a platform shows it: a message, buttons) and only
then did the wait see the cancel: a question nobody would ever read the answer to was left on
the user's screen, as for a turn that had ended (which is refused for that reason)."""

from __future__ import annotations

import pytest
import trio

from tidings.testing import MemoryRoute

from ..real_time import fail_after_real
from .conftest import rows


async def _answering(rt) -> tuple[str, MemoryRoute]:
    """A web session bound to a route that would answer "yes" and allow, if it were asked."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    return session_id, route


@pytest.mark.parametrize("ask", [lambda ctx: ctx.prompt_user("still there?"),
                                 lambda ctx: ctx.request_approval("deploy")],
                         ids=["prompt", "approval"])
async def test_a_cancelled_turn_asks_nothing(rt, db_path, ask) -> None:
    session_id, route = await _answering(rt)
    asked = False
    async with rt.open_turn(session_id) as ctx:
        ctx.cancel("cancel_command")
        await ask(ctx)
        asked = True
    assert not asked
    assert (route.prompts, route.approvals) == ([], [])
    assert rows(db_path, "SELECT status, reason FROM turns") == [
        ("cancelled", "cancel_command")]


@pytest.mark.parametrize("ask", [lambda ctx: ctx.prompt_user("still there?"),
                                 lambda ctx: ctx.request_approval("deploy")],
                         ids=["prompt", "approval"])
async def test_a_turn_past_its_timeout_asks_nothing(rt, db_path, mock_clock, ask) -> None:
    """The turn's timeout passed while the agent ran without a checkpoint (a blocking call):
    trio cancels the turn's scope only at the next schedule point, and a check of "already
    cancelled" alone does not see it yet, so the route showed the question first."""
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
        session_id, route = await _answering(rt)
        asked = False
        async with rt.open_turn(session_id) as ctx:
            ctx.cancel_scope.deadline = trio.current_time() + 30  # as a channel's turn_timeout
            mock_clock.jump(31)  # the agent blocked past it, never reaching a checkpoint
            await ask(ctx)
            asked = True
        assert not asked
        assert (route.prompts, route.approvals) == ([], [])
        assert rows(db_path, "SELECT status FROM turns") == [("cancelled",)]
