"""Test doubles for the channel layer: a turn that records what an agent does with it, a
channel that records what it is handed, an agent whose timing tests control, and a runtime."""

from __future__ import annotations

import logging
import pathlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import attrs
import pytest
import trio

import tidings
from tidings.actors import Outbound, Runtime
from tidings.channels import AgentTurn, ChannelConfig, ToolCall
from tidings.supervisor._testing_invariants import lifecycle_violations
from tidings.testing import MemoryChannel

from ..database_template import fresh_database


@attrs.define
class FakeTurn:
    """An :class:`~tidings.channels.AgentTurn` that records chunks and tool calls.

    ``chunk_seen`` is set on every chunk (tests wait on it instead of sleeping); ``on_chunk``
    may react to a chunk (e.g. cancel a scope once the child says it is ready).
    """

    prompt: str
    text: str = ""
    session_id: str = "s1"
    message_id: str | None = "m1"
    output: Any = None
    chunks: list[str] = attrs.Factory(list)
    tool_calls: list[ToolCall] = attrs.Factory(list)
    events: list[tuple[str, object]] = attrs.Factory(list)
    on_chunk: Callable[[str], None] | None = None
    chunk_seen: trio.Event = attrs.Factory(trio.Event)

    @property
    def reply(self) -> str:
        return "".join(self.chunks)

    async def send_chunk(self, text: str) -> None:
        await trio.lowlevel.checkpoint()
        self.chunks.append(text)
        self.events.append(("chunk", text))
        self.chunk_seen.set()
        if self.on_chunk is not None:
            self.on_chunk(text)

    async def report_tool_call(self, call: ToolCall) -> None:
        await trio.lowlevel.checkpoint()
        self.tool_calls.append(call)
        self.events.append(("tool_call", call))

    async def prompt_user(self, text: str, *,
                          timeout: float | None = None) -> str | None:  # noqa: ASYNC109
        await trio.lowlevel.checkpoint()
        return None

    async def request_approval(self, action: str, *, details: Mapping[str, Any] | None = None,
                               timeout: float | None = None) -> Any:  # noqa: ASYNC109
        await trio.lowlevel.checkpoint()
        return None


@pytest.fixture
def fake_turn() -> Callable[..., FakeTurn]:
    """``fake_turn(prompt, text=..., ...)`` builds a :class:`FakeTurn`."""
    return FakeTurn


# --- the channel base over a real runtime ------------------------------------------------------


class RecordingChannel(MemoryChannel):
    """``tidings.testing.MemoryChannel`` with the waits and views these tests use, and the
    ids ``c1`` / ``u1`` as the default chat and sender."""

    async def wait_events(self, *types: str) -> None:
        """Block until the event types seen so far end with *types* (in order)."""
        await self.wait_for(lambda: self.types()[-len(types):] == list(types))

    async def wait_outbounds(self, n: int) -> list[Outbound]:
        await self.wait_for(lambda: len(self.outbounds) >= n)
        return self.outbounds[:n]

    def types(self) -> list[str]:
        return [event.type for event in self.events]

    def messages(self) -> list[str]:
        return self.texts("message")

    def notices(self) -> list[str]:
        return self.texts("notice")

    async def say(self, text: str, *, chat_id: str = "c1", sender_id: str = "u1",
                  message_id: str | None = None, thread_id: str | None = None) -> Any:
        return await super().say(text, chat_id=chat_id, sender_id=sender_id,
                                 message_id=message_id, thread_id=thread_id)


class Lingering:
    """Works until cancelled (by a steer, ``/clear`` or the shutdown), then takes a trio second
    to stop, so the turns behind it are still waiting when the cancel (or the runtime's stop)
    has begun; given *stop*, it stops only once that is set (whatever the clock does, while
    the test looks at the database). Records the text of each turn it ran (``texts``)."""

    def __init__(self, stop: trio.Event | None = None) -> None:
        self.entered = trio.Event()
        self.stop = stop
        self.texts: list[str] = []

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        self.texts.append(turn.text)
        await turn.send_chunk("working")
        self.entered.set()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                if self.stop is None:
                    await trio.sleep(1)
                else:
                    await self.stop.wait()


class GatedAgent:
    """Streams ``chunks``, then blocks until ``release()`` (or forever); records every turn
    it saw (``turns``), how many of its runs overlapped at most (``max_running``) and when
    (trio time) a run was cancelled (``cancelled_at``)."""

    def __init__(self, *chunks: str, block: bool = True) -> None:
        self.chunks = chunks or ("working",)
        self.block = block
        self.turns: list[AgentTurn] = []
        self.running = 0
        self.max_running = 0
        self.cancelled_at: list[float] = []
        self.entered = trio.Event()
        self.gate = trio.Event()

    def release(self) -> None:
        """Let the turns blocked now go on (later turns block again)."""
        self.gate.set()
        self.gate = trio.Event()

    async def wait_turns(self, n: int) -> None:
        while len(self.turns) < n:
            await self.entered.wait()

    async def run(self, turn: AgentTurn) -> None:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            self.turns.append(turn)
            for chunk in self.chunks:
                await turn.send_chunk(chunk)
            entered, self.entered = self.entered, trio.Event()
            entered.set()
            if self.block:
                await self.gate.wait()
        except trio.Cancelled:
            self.cancelled_at.append(trio.current_time())
            raise
        finally:
            self.running -= 1


@pytest.fixture
def rt_grace() -> float:
    """The grace of :func:`rt`'s runtime, in seconds: 0.5, for a turn still running at a
    test's end. Its stop waits that long in real time for a delivery that never ends, so a
    test that leaves one sets none: ``@pytest.mark.parametrize("rt_grace", [0.0])``."""
    return 0.5


@pytest.fixture
async def rt(db_path: pathlib.Path, workspace: pathlib.Path,
             rt_grace: float) -> AsyncIterator[Runtime]:
    """A runtime with a short grace (:func:`rt_grace`), on a copy of a migrated database (not
    a new file: see tests/database_template.py)."""
    async with tidings.open_runtime(fresh_database(db_path), workspace=workspace,
                                    grace=rt_grace) as runtime:
        yield runtime


async def cut_short(db_path: pathlib.Path, workspace: pathlib.Path,
                    config: ChannelConfig | None = None) -> None:
    """A runtime (no grace) whose stop cuts short a turn of conversation ``c1`` (``u1``) of
    a channel with *config* (``ops`` by default): the next start's recovery writes its "not
    answered" notice, ``unrouted`` until the conversation speaks."""
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, config or ChannelConfig(name="ops"), agent=agent)
        assert await channel.say("cut short") == "started"
        await agent.wait_turns(1)


def rows(db_path: pathlib.Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Read the database directly (what an operator would see)."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def assert_m1_ended_and_m2_told(channel: RecordingChannel, db_path: pathlib.Path,
                                caplog: pytest.LogCaptureFixture) -> str:
    """A worker's end dropped m1, cancelled (``/cancel``) before it began, and m2, waiting:
    m1 ended once (``started``, ``cancelled`` with ``cancel_command``), m2 was told once it
    was not answered (the one notice, returned), and one ``turns_dropped`` warning counts both
    and the notice."""
    assert [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.message_id in ("m1", "m2")] == [
        ("m1", "started", None), ("m1", "cancelled", "cancel_command")]
    assert lifecycle_violations(channel.events) == []
    [notice] = [text for (text,) in rows(
        db_path, "SELECT text FROM outbox WHERE kind = 'notice' ORDER BY seq")]
    assert '"waiting"' in notice
    [record] = [r for r in caplog.records if "event=turns_dropped" in r.getMessage()]
    assert "count=2" in record.getMessage()
    assert "notices=1" in record.getMessage()
    assert record.levelno == logging.WARNING
    return notice
