"""A turn's lifecycle in the event feed (DESIGN.md "Lifecycle reasons = cancel scopes": exactly
one terminal lifecycle event per turn): ``turn.started`` when it opens, then one of
``turn.completed``, ``turn.cancelled`` (with its reason) or ``turn.failed`` (with its error),
each in the transaction that records it in the turns table."""

from __future__ import annotations

import pytest
import trio

from tidings.store import end_turn
from tidings.testing import MemoryRoute

from .conftest import rows


async def _feed(rt) -> list:
    """Every event the feed has now (it would wait for the next commit after them)."""
    seen = []
    feed = rt.events(after_seq=0)
    while True:
        with trio.move_on_after(1) as waited:
            seen.append(await feed.__anext__())
        if waited.cancelled_caught:
            return seen


async def test_each_turn_has_one_start_and_one_terminal_event(rt, quick_autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    turn_ids = []
    async with rt.open_turn(session_id) as ctx:
        turn_ids.append(ctx.turn_id)
        sent = await ctx.output.send_text("done")
        assert await sent.wait() == "delivered"
    with trio.move_on_after(5):
        async with rt.open_turn(session_id) as ctx:
            turn_ids.append(ctx.turn_id)
            await trio.sleep_forever()
    async with rt.open_turn(session_id) as ctx:
        turn_ids.append(ctx.turn_id)
        ctx.cancel("cancel_command")
        await trio.sleep_forever()

    async def failing_turn() -> None:
        async with rt.open_turn(session_id, slot="input", mode="parallel") as ctx:
            turn_ids.append(ctx.turn_id)
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await failing_turn()
    events = [event for event in await _feed(rt) if event.type.startswith("turn.")]
    assert [(event.type, event.data["turn_id"]) for event in events] == [
        (kind, turn_id) for turn_id, end in zip(turn_ids, ("completed", "cancelled", "cancelled",
                                                           "failed"), strict=True)
        for kind in ("turn.started", f"turn.{end}")]
    assert {event.session_id for event in events} == {session_id}
    assert [(event.data["reason"], event.data["error"]) for event in events[1::2]] == [
        (None, None), ("timeout", None), ("cancel_command", None), (None, "ValueError: boom")]
    assert [(event.data["slot"], event.data["mode"]) for event in events[::2]] == [
        ("output", "serial")] * 3 + [("input", "parallel")]
    # As the turns table records them: one terminal state each, the event in its transaction.
    assert rows(rt.store.path, "SELECT status, reason FROM turns ORDER BY started_at") == [
        ("completed", None), ("cancelled", "timeout"), ("cancelled", "cancel_command"),
        ("failed", None)]


async def test_a_turns_deliveries_come_between_its_start_and_its_end(
        rt, quick_autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("done")
        assert await handle.wait() == "delivered"
    types = [event.type for event in await _feed(rt) if event.session_id == session_id]
    assert types == ["session.created", "turn.started", "delivery.queued", "delivery.sending",
                     "delivery.sent", "turn.completed"]


async def test_ending_a_turn_again_appends_no_event(rt, quick_autojump_clock) -> None:
    # The end is recorded again after an uncertain write (the writer process died before it
    # answered): the row changes only once, and so the feed says it once.
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        turn_id = ctx.turn_id
    await rt.store.commit(end_turn(turn_id, status="failed", now=rt.store.clock(), error="x"))
    ends = [event.type for event in await _feed(rt)
            if event.type != "turn.started" and event.type.startswith("turn.")]
    assert ends == ["turn.completed"]
    assert rows(rt.store.path, "SELECT status, error FROM turns") == [("completed", None)]
