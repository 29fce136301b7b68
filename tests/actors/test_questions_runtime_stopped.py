"""A question a host's turn is waiting on when its runtime stops is withdrawn: the asker gets
:class:`RuntimeClosedError` and the route's wait is cancelled.

A question asked after the stop was refused (test_questions_turn_ended.py), but one already
waiting went on: the runtime's stop cancels the turns it runs, not a host's own (``rt.open_turn``
from a nursery around the runtime), so the route kept asking the person, for ever without an
expiry, on behalf of a turn that could no longer send the answer anywhere or record its own
end. The host's nursery then never finished: its shutdown hung on the question."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import RuntimeClosedError

from .test_questions_turn_ended import WaitingRoute


@pytest.mark.parametrize("ask", [lambda ctx: ctx.prompt_user("still there?"),
                                 lambda ctx: ctx.request_approval("deploy")],
                         ids=["prompt", "approval"])
async def test_a_question_waiting_when_the_runtime_stops_is_withdrawn(db_path, workspace,
                                                                       ask) -> None:
    outcome: list[object] = []
    route = WaitingRoute()

    async def host_turn(rt, session_id) -> None:
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            try:
                outcome.append(await ask(ctx))
            except RuntimeClosedError as exc:
                outcome.append(exc)

    with trio.fail_after(30):  # hang guard: the asker waited for ever
        async with trio.open_nursery() as nursery, \
                tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            nursery.start_soon(host_turn, rt, session_id)
            await route.asked.wait()
    assert route.withdrawn.is_set()
    [error] = outcome
    assert isinstance(error, RuntimeClosedError), error
    assert "runtime" in str(error)
