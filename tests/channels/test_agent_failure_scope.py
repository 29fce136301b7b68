"""What an agent's failure takes down. An ``Exception`` fails its own turn only: another
session's turn, running meanwhile, completes. A ``BaseException`` that is not an
``Exception`` is a request to stop (as ``KeyboardInterrupt`` or ``SystemExit``): the runtime
stops as at its exit and ``open_runtime`` raises it unwrapped, and nothing is lost on the
way: every turn is recorded ended, and the messages they did not answer are told about at
the next start."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig

from .conftest import RecordingChannel, rows


class StopEverything(BaseException):
    """Not an ``Exception``: a request to stop, like ``SystemExit``."""


class TwoChats:
    """In ``c2`` it works until ``gate`` is set; in ``c1`` it raises ``error`` once the ``c2``
    turn is running."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.working = trio.Event()
        self.gate = trio.Event()

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        if turn.text == "fail":
            await self.working.wait()
            raise self.error
        self.working.set()
        await turn.send_chunk("working")
        await self.gate.wait()
        await turn.send_chunk(" done")


async def _busy_then_failing(channel: RecordingChannel, agent: TwoChats) -> None:
    await channel.say("slow", chat_id="c2")
    await agent.working.wait()
    await channel.say("fail", chat_id="c1")


async def test_an_agent_exception_fails_its_own_turn_only(rt, db_path) -> None:
    agent = TwoChats(RuntimeError("the model fell over"))
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await _busy_then_failing(channel, agent)
    await channel.wait_for(lambda: "failed" in channel.types())
    agent.gate.set()
    await channel.wait_idle()
    await channel.wait_outbounds(1)
    assert channel.messages() == ["working done"]
    assert sorted(rows(db_path, "SELECT status, error FROM turns")) == [
        ("completed", None), ("failed", "RuntimeError: the model fell over")]


async def test_an_agent_base_exception_stops_the_runtime_and_loses_nothing(
        db_path, workspace) -> None:
    agent = TwoChats(StopEverything("stop"))

    async def serve() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
            await _busy_then_failing(channel, agent)
            await channel.wait_idle()

    with pytest.raises(StopEverything):  # unwrapped: no ExceptionGroup of the runtime's
        await serve()
    assert sorted(rows(db_path, "SELECT status, reason, error FROM turns")) == [
        ("cancelled", "shutdown", None), ("failed", None, "StopEverything: stop")]
    async with tidings.open_runtime(db_path, workspace=workspace):  # recovery tells them
        pass
    notices = [text for text, in rows(db_path, "SELECT text FROM outbox WHERE kind = 'notice'")]
    assert sorted(n.rsplit(": ", 1)[-1] for n in notices) == ['"fail"', '"slow"']


class UnprintableError(Exception):
    """An error whose ``str()`` raises (a library exception that sets no attribute its
    ``__str__`` reads)."""

    def __str__(self) -> str:
        raise AttributeError("message")


class FailsFirst:
    """Raises :class:`UnprintableError` on its first turn; answers every later one."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        self.runs += 1
        if self.runs == 1:
            raise UnprintableError
        await turn.send_chunk(f"answer to {turn.text}")


async def test_an_agent_error_that_cannot_be_printed_still_fails_its_own_turn_only(
        rt, db_path) -> None:
    """Its ``failed`` event was never emitted (building its error text raised), and the
    session's worker crashed: the message waiting behind the turn was dropped with a notice
    that the server had stopped, which it had not."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                               agent=FailsFirst())
    assert await channel.say("first") == "started"
    assert await channel.say("second") == "queued"
    await channel.wait_idle()
    await channel.wait_outbounds(1)
    assert channel.types() == ["started", "failed", "started", "text_chunk", "completed"]
    [failed] = [event for event in channel.events if event.type == "failed"]
    assert failed.error.startswith("UnprintableError")
    assert channel.messages() == ["answer to second"]
    assert channel.notices() == []
