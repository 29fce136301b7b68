"""Between a send's commit and its on_commit, its row is already visible to the lanes' reads
(a lane refilling after a crash, say). A lane must then find the send's own delivery, not
build a second copy that the send's handle never hears about."""

from __future__ import annotations

import sqlite3

import trio
import trio.testing

import tidings
from tidings.store import Call
from tidings.testing import MemoryRoute, writer_gate


async def test_a_row_read_before_its_on_commit_is_the_sends_own_delivery(db_path,
                                                                         workspace) -> None:
    seen: list[tuple[str, bool]] = []
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        route.stall()
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("busy")  # the session is busy: the next send is queued
            await route.wait_attempted(1)

            def in_the_window(_results: object) -> None:
                """Runs after the batch committed, before the send behind it hears of it."""
                conn = sqlite3.connect(db_path)
                try:
                    [(delivery_id,)] = conn.execute(
                        "SELECT delivery_id FROM outbox WHERE session_id = ? AND seq = 2",
                        (session_id,)).fetchall()
                finally:
                    conn.close()
                seen.append((delivery_id, rt.registry.get(delivery_id) is not None))

            handles = []
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                nursery.start_soon(lambda: rt.store.commit([Call(lambda conn: None)],
                                                           on_commit=in_the_window))
                await trio.testing.wait_all_tasks_blocked()

                async def send() -> None:
                    handles.append(await ctx.output.send_text("queued"))

                nursery.start_soon(send)
                await trio.testing.wait_all_tasks_blocked()
                gate.release()
        route.release()
        assert await handles[0].wait() == "delivered"
    assert seen == [(handles[0].delivery_id, True)]
