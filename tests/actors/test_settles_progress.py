"""``settles=`` releases held messages in the commit of the reply that answers them, so that a
crash right after cannot also tell the user they were not answered. ``send(kind="progress")``
took it too, but a progress note is the one kind that is dropped rather than delivered late:
recovery fails an earlier process's queued progress (``stale_progress``), as the gateway does
one for nobody. Its held message was released all the same: after a crash the user got neither
the note nor the "not answered" notice, and the message was lost without a word. A progress
note cannot settle: refused naming ``settles``, nothing written, the message still held (a
notice can: it is kept until a route takes it)."""

from __future__ import annotations

import pytest

import tidings
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows


async def test_a_progress_note_cannot_settle_a_held_message(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute()
        route.stall()  # the platform is slow: the note is still queued when the process stops
        rt.router.bind(session_id, route)
        held = await rt.hold_inbound(session_id, notice="Not answered: please send it again")
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            await ctx.output.progress("first")
            await route.wait_attempted(1)
            with pytest.raises(ValidationError) as caught:
                await ctx.output.send("working on it", kind="progress", settles=[held])
            assert caught.value.field == "settles"
            notice = await ctx.output.send("still here", kind="notice", settles=[held])
        assert len(await rt.deliveries(session_id)) == 2  # the first note and the notice
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]  # the notice's
    assert rows(db_path, "SELECT kind, status FROM outbox WHERE delivery_id = ?",
                notice.delivery_id) == [("notice", "queued")]  # it goes out at the next start


async def test_a_message_held_past_a_stopped_progress_note_is_told(db_path, workspace) -> None:
    """The loss itself: the note is dropped at the next start and nothing is said."""
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute()
        route.stall()
        rt.router.bind(session_id, route)
        held = await rt.hold_inbound(session_id, notice="Not answered: please send it again")
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            await ctx.output.progress("first")
            await route.wait_attempted(1)
            try:
                await ctx.output.send("working on it", kind="progress", settles=[held])
            except ValidationError:
                pass
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        texts = [row.outbound.text for row in await rt.stored_deliveries(session_id)]
    assert "Not answered: please send it again" in texts


async def test_a_host_s_progress_note_cannot_settle_a_held_message(db_path, workspace) -> None:
    """``rt.notify(kind="progress", settles=...)``: the same hole, outside any turn."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        held = await rt.hold_inbound(session_id, notice="Not answered: please send it again")
        with pytest.raises(ValidationError) as caught:
            await rt.notify(session_id, "working on it", kind="progress", settles=[held])
        assert caught.value.field == "settles"
        assert await rt.deliveries(session_id) == []
        assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(1,)]
        await rt.notify(session_id, "we lost it, sorry", settles=[held])  # a notice may
        assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
