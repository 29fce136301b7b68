"""A connection the server is closing (too slow, no heartbeat, a flood) stays in its
conversation until its frame being written is finished or given up (up to ``_FINISH_WAIT``,
2 s), and it counted as connected meanwhile: a delivery in that window was queued on no
connection (a closing one takes nothing), handed back as done, and became ``unknown`` when
the connection left, where with nobody connected a delivery goes ``unrouted`` and the next
client's hello hands it back. A question asked then was put to nobody, where with nobody
connected it fails closed at once. A closing connection counts for neither."""

from __future__ import annotations

import trio
import trio.testing

from tidings.channels._gateway_client import open_transport

from ..real_time import fail_after_real
from .conftest import deliver_big_rows_until, hello_only


async def _fill_until_closed(rt, gateway, conn, session_id: str):
    """Deliver big rows to a client that does not read until its backlog closes it (as
    tests/gateway/test_misbehaving_clients.py does): its writer is then stuck in a frame,
    which it gets ``_FINISH_WAIT`` seconds to finish. The row whose frame closes the
    connection is the last one. Returns the first row's handle."""
    return await deliver_big_rows_until(rt, gateway, session_id, lambda: not conn.alive,
                                        "the connection was never closed as too slow")


async def _settle() -> None:
    await trio.testing.wait_all_tasks_blocked()
    await trio.lowlevel.checkpoint()


async def test_a_delivery_while_the_only_connection_closes_reaches_the_next_client(
        rt, serve_gateway, connect, is_frame, wait_status, mock_clock) -> None:
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, ack_window=5000, max_backlog=16) as (gateway, url):
            async with open_transport(url) as ws:
                session_id = await hello_only(ws)
                hub = gateway.hub(gateway.conversation_named("alpha"))
                [conn] = hub.connections
                first = await _fill_until_closed(rt, gateway, conn, session_id)
                assert hub.connections == [conn]  # closing: its frame is still being written
                late = await rt.notify(session_id, "late")
                # Handed to the gateway, taken by nobody: it was queued on nothing and done
                # with, counted as sent.
                await wait_status(rt, late.delivery_id, "unrouted")
                mock_clock.jump(3)  # the frame is given up: the connection leaves
                # What it was sent and never acked becomes unknown (one write for the session).
                await wait_status(rt, first.delivery_id, "unknown")
                assert hub.connections == []
                assert (await rt.delivery_status(late.delivery_id)).status == "unrouted"
            async with connect(url, "alpha", session_id=session_id) as client:
                await client.receive_until(is_frame("delivery", text="late"))  # (acked)
                await wait_status(rt, late.delivery_id, "sent")


async def test_a_question_while_the_only_connection_closes_is_answered_at_once(
        rt, serve_gateway, mock_clock, asked_at_once) -> None:
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, ack_window=5000, max_backlog=16) as (gateway, url), \
                open_transport(url) as ws:
            session_id = await hello_only(ws)
            hub = gateway.hub(gateway.conversation_named("alpha"))
            [conn] = hub.connections
            await _fill_until_closed(rt, gateway, conn, session_id)
            assert hub.connections == [conn]  # closing: its frame is still being written
            answers = await asked_at_once(rt, session_id)
            assert [(answer.text, answer.reason) for answer in answers] == [
                (None, "no_interactive_route")]
            mock_clock.jump(3)
