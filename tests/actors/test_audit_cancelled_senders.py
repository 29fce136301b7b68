"""Audit of issue 3's "a send whose caller is cancelled after its commit is still delivered:
nothing stays ``queued`` forever, whether or not the caller saw the handle", for the cases the
older test (an idle session with a route: the row written claimed) leaves out: a busy lane (the
row written ``queued``), no route (``unrouted``), ``visible=False`` (``sent`` at once) and a
progress note."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.testing import writer_gate

from ..real_time import fail_after_real
from .conftest import rows, stalled_session


async def _send_cancelled_in_its_commit(rt, session_id, send) -> None:
    """Run *send(ctx.output)* in a turn while the writer is held, cancel the caller once the
    write is queued behind the gate, then let the writer go."""
    async with rt.open_turn(session_id) as ctx:
        async with writer_gate(rt.store) as gate:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send, ctx.output)
                    await trio.testing.wait_all_tasks_blocked()
                    scope.cancel()
            gate.release()
        assert scope.cancelled_caught


@pytest.mark.parametrize("case", ["busy lane", "no route", "invisible", "progress",
                                  "model_hidden"])
async def test_a_caller_cancelled_in_its_commit_leaves_nothing_queued(
        rt, db_path, autojump_clock, case) -> None:
    session_id, route = await stalled_session(rt)
    sends = {
        "busy lane": lambda out: out.send_text("behind"),
        "no route": lambda out: out.send_text("behind"),
        "invisible": lambda out: out.send_text("behind", visible=False),
        "progress": lambda out: out.progress("behind"),
        "model_hidden": lambda out: out.send_text("behind", history_policy="model_hidden"),
    }
    with fail_after_real(60), trio.fail_after(30):  # hang guards (the event feed reads)
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
        await route.wait_attempted(1)
        if case == "no route":
            rt.router.unbind(rt.router.bind(session_id, route))
        await _send_cancelled_in_its_commit(rt, session_id, sends[case])
        route.release()
        assert await first.wait() == "delivered"
        # The caller never saw its handle: follow the row's events to its end instead.
        [(delivery_id,)] = rows(db_path, "SELECT delivery_id FROM outbox WHERE seq = 2")
        async for event in rt.events(after_seq=0):
            if event.delivery_id == delivery_id and event.type in ("delivery.sent",
                                                                   "delivery.unrouted"):
                break
    expected = {"no route": "unrouted"}.get(case, "sent")
    assert rows(db_path, "SELECT status, attempts FROM outbox WHERE seq = 2") == [
        (expected, 0 if case in ("no route", "invisible") else 1)]
    assert rows(db_path, "SELECT count(*) FROM outbox WHERE status IN ('queued', 'sending')"
                ) == [(0,)]
    texts = [o.text for o in route.delivered]
    assert texts == (["first"] if case in ("no route", "invisible") else ["first", "behind"])
    [(count,)] = rows(db_path, "SELECT count(*) FROM messages")
    assert count == (1 if case == "progress" else 2)
