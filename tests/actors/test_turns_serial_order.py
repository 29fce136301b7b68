"""Serial turns of one session begin in the order they were opened, whatever order the reads
each one makes before it waits happen to finish in."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import SessionRecord
from tidings.errors import ValidationError

from ..until import until


async def test_serial_turns_begin_in_the_order_they_were_opened(rt, monkeypatch) -> None:
    """The first turn's read of its session is slow (a busy reader thread); a second turn
    opened meanwhile still begins after it: a host that opens a turn per message, in the order
    they came, gets its replies (and history) in that order."""
    session_id = await rt.create_session(channel="web")
    read_session = rt.session
    first_reading, first_may_go = trio.Event(), trio.Event()

    async def slow_first_read(sid: str) -> SessionRecord:
        if not first_reading.is_set():
            first_reading.set()
            await first_may_go.wait()
        return await read_session(sid)

    monkeypatch.setattr(rt, "session", slow_first_read)
    order: list[str] = []

    async def turn(name: str) -> None:
        async with rt.open_turn(session_id) as ctx:
            order.append(name)
            await ctx.output.send_text(name)

    with trio.fail_after(30):  # hang guard
        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn, "first")
            await first_reading.wait()
            nursery.start_soon(turn, "second")
            # Until the second turn has either begun (ahead of the first) or waits for the
            # session's serial slot, behind the first.
            await until(lambda: order or (
                session_id in rt.serial_turns
                and rt.serial_turns[session_id].statistics().tasks_waiting))
            first_may_go.set()
    assert order == ["first", "second"]
    assert [m.text for m in await rt.history(session_id)] == ["first", "second"]


async def test_a_session_id_that_is_no_id_is_refused_by_name_before_any_wait(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        async with rt.open_turn(["not", "an", "id"]):
            pass
    assert caught.value.field == "session_id"
