"""``rt.router.deliver``, ``prompt_user`` and ``request_approval`` after the runtime stopped
raise :class:`RuntimeClosedError`, as ``bind`` and ``ctx.prompt_user`` do: they called the
route bound before the stop (a host asking then was answered, say ``declined``, by a route of a
runtime that is gone). A turn still running in the stop's grace asks as before: the runtime is
stopping only once its grace is over."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.actors import ApprovalRequest, Outbound, Prompt
from tidings.channels import ChannelConfig
from tidings.errors import RuntimeClosedError
from tidings.testing import MemoryChannel, MemoryRoute

CALLS = {
    "deliver": lambda router, session_id: router.deliver(Outbound(
        session_id, "dlv_late", "message", (), "late")),
    "prompt_user": lambda router, session_id: router.prompt_user(Prompt(
        session_id, "Colour?", "prompt_late")),
    "request_approval": lambda router, session_id: router.request_approval(ApprovalRequest(
        session_id, "deploy", "request_late")),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
async def test_a_host_s_router_call_after_stop_is_refused_and_the_route_not_called(
        db_path, workspace, call) -> None:
    route = MemoryRoute()
    route.answers.append("blue")
    route.decisions.append("allow")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
    with pytest.raises(RuntimeClosedError, match="runtime is stopping"):
        await call(rt.router, session_id)
    assert (route.attempted, route.prompts, route.approvals) == ([], [], [])


class _AsksInTheGrace:
    """An agent that says it is in (*entered*), waits for *go* (set by the host as the last
    thing in the runtime's block: the agent runs again only once the stop has begun), then
    asks; *answers* gets whether the stop had begun, and the answer."""

    def __init__(self, entered: trio.Event, go: trio.Event, stopping,
                 answers: list[tuple[bool, str]]) -> None:
        self.entered, self.go, self.stopping, self.answers = entered, go, stopping, answers

    async def run(self, turn) -> None:
        self.entered.set()
        await self.go.wait()
        self.answers.append((self.stopping(), await turn.prompt_user("keep going?")))


class _AnsweringChannel(MemoryChannel):
    async def prompt_user(self, prompt):
        return "yes"


async def test_a_turn_running_in_the_stop_s_grace_still_asks(db_path, workspace) -> None:
    entered, go = trio.Event(), trio.Event()
    answers: list[tuple[bool, str]] = []
    with trio.fail_after(30):  # hang guard (real clock; the grace is far longer than the ask)
        async with tidings.open_runtime(db_path, workspace=workspace, grace=60) as rt:
            agent = _AsksInTheGrace(entered, go, lambda: rt.tasks.stopping, answers)
            channel = _AnsweringChannel(rt, ChannelConfig(name="ops"), agent=agent)
            await channel.say("long job")
            await entered.wait()
            go.set()  # no checkpoint from here until the stop has begun
    assert answers == [(True, "yes")]
