"""A cancelled turn asks nothing from a shielded section either: there no ``Cancelled`` can
stop the question, and the route was handed it (the user, who had just been told the request
was cancelled, was then asked about it)."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import RuntimeClosedError
from tidings.testing import MemoryChannel, MemoryRoute

from ..real_time import fail_after_real
from .conftest import rows

ASKS = [lambda ctx: ctx.prompt_user("keep the partial results?"),
        lambda ctx: ctx.request_approval("roll back")]


@pytest.mark.parametrize("ask", ASKS, ids=["prompt", "approval"])
async def test_a_cancelled_turn_asks_nothing_from_a_shielded_section(rt, db_path, ask) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        ctx.cancel("cancel_command")
        with trio.CancelScope(shield=True), pytest.raises(RuntimeClosedError,
                                                          match="cancelled"):
            await ask(ctx)
    assert (route.prompts, route.approvals) == ([], [])
    assert rows(db_path, "SELECT status, reason FROM turns") == [
        ("cancelled", "cancel_command")]


@pytest.mark.parametrize("ask", ASKS, ids=["prompt", "approval"])
async def test_a_turn_past_its_deadline_asks_nothing_from_a_shielded_section(
        rt, db_path, mock_clock, ask) -> None:
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            ctx.cancel_scope.deadline = trio.current_time() + 10
            mock_clock.jump(11)  # the deadline passed while the turn did not look
            with trio.CancelScope(shield=True), pytest.raises(RuntimeClosedError):
                await ask(ctx)
            await trio.lowlevel.checkpoint()  # out of the shield, the deadline cuts the turn
        assert (route.prompts, route.approvals) == ([], [])
        assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "timeout")]


class AskingChannel(MemoryChannel):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[str] = []

    async def prompt_user(self, prompt):
        self.asked.append(prompt.text)
        return "yes"


class CleansUp:
    """An agent that streams a chunk, says it is in (*entered*), waits to be cancelled, then
    asks from a shielded cleanup (after *told*, if given): *outcome* gets ``"asked"``, or
    ``"refused"`` when the cancelled turn may not ask."""

    def __init__(self, entered: trio.Event, outcome: list[str],
                 told: trio.Event | None = None) -> None:
        self.entered, self.outcome, self.told = entered, outcome, told

    async def run(self, turn) -> None:
        await turn.send_chunk("working")
        self.entered.set()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                if self.told is not None:
                    await self.told.wait()
                try:
                    await turn.prompt_user("keep the partial results?")
                    self.outcome.append("asked")
                except RuntimeClosedError:
                    self.outcome.append("refused")


async def test_an_agent_cleaning_up_after_cancel_cannot_ask(rt) -> None:
    """As the README says: a turn that is cancelled cannot ask, also from the cleanup an
    agent shields after ``/cancel``."""
    entered, told = trio.Event(), trio.Event()
    outcome: list[str] = []
    channel = AskingChannel(rt, ChannelConfig(name="ops"),
                            agent=CleansUp(entered, outcome, told))
    await channel.say("long job")
    await entered.wait()
    try:
        await channel.say("/cancel")
    finally:
        told.set()
    await channel.wait_idle()
    assert outcome == ["refused"]
    assert channel.asked == []
    assert [e.type for e in channel.events][-1] == "cancelled"


async def test_an_agent_cleaning_up_after_the_stop_cut_its_turn_cannot_ask(
        db_path, workspace, autojump_clock) -> None:
    """The runtime's stop cancels a turn still running after the grace (``shutdown``): a
    question from its agent's shielded cleanup was handed to the route (the user asked by a
    request the server was dropping), though the turn is cancelled."""
    entered = trio.Event()
    outcome: list[str] = []
    with trio.fail_after(60):  # hang guard (mock clock)
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
            channel = AskingChannel(rt, ChannelConfig(name="ops"),
                                    agent=CleansUp(entered, outcome))
            await channel.say("long job")
            await entered.wait()
    assert outcome == ["refused"]
    assert channel.asked == []
    assert [(e.type, getattr(e, "reason", None)) for e in channel.events][-1] == (
        "cancelled", "shutdown")
