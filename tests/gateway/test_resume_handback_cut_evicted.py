"""A conversation whose ``/resume`` hand-back was cut short (rows left ``unrouted``, noted in
``handback_left`` for its next hello) and whose client then left is evicted past
``idle_conversations`` like any idle one, and its next hello still gets those rows once and
in seq order.

The note kept the conversation from eviction for as long as the server ran (its client never
came back: one conversation held per such user). Evicted, the note is forgotten and the next
hello reads the session from the store (the ``/resume`` made it current durably before its
hand-back began) and hands its ``unrouted`` rows back before anything newer, as after a
restart, or as for rows that went ``unrouted`` with nobody connected
(tests/gateway/test_left_during_turn.py).
"""

from __future__ import annotations

import trio
import trio.testing

from tidings.channels import GatewayChannel

from .conftest import frame_is
from .test_resume_handback_error_gateway import _deliveries, left_with_unrouted_rows


async def test_a_conversation_a_cut_resume_left_rows_in_is_evicted_and_gets_them_once(
        rt, serve_gateway, connect, monkeypatch) -> None:
    monkeypatch.setattr(GatewayChannel, "idle_conversations", 1)
    with trio.fail_after(60):  # hang guard
        async with serve_gateway(rt) as (gateway, url):
            key = gateway.conversation_named("alpha").key
            async with connect(url, "alpha") as client:
                left, late = await left_with_unrouted_rows(rt, client)
                hub = gateway.hubs[key]
                requeue = rt.requeue

                async def killing(session_id, delivery_ids):
                    moved = await requeue(session_id, delivery_ids)
                    for conn in list(hub.connections):  # after a page: the connection goes
                        conn.kill(4009, "too slow")
                    return moved

                with monkeypatch.context() as patched:
                    patched.setattr(rt, "requeue", killing)
                    await client.message(f"/resume {left}")
                    await gateway.runtime.dispatcher.unrouted_written(left)
                    while hub.connections:
                        await trio.testing.wait_all_tasks_blocked()
            assert key in gateway.handback_left  # the case at hand: rows left for a hello
            while key in gateway.hubs or not rt.dispatcher.settled(left):
                await trio.testing.wait_all_tasks_blocked()
                await trio.lowlevel.checkpoint()
            async with connect(url, "visitor") as visitor:  # a hold past the cap evicts
                await visitor.message("hello")
                await visitor.receive_until(frame_is("delivery", kind="message"))
            assert rt.router.binding(left) is None  # evicted: nothing of it kept
            assert key not in gateway.handback_left
            answer = f"Resumed session {left}."
            async with connect(url, "alpha") as again:
                assert again.session_id == left
                texts = await _deliveries(again, len(late) + 1)
                assert texts == [*late, answer]  # every row once, in seq order
                await rt.notify(left, "marker")  # nothing else before a row written now
                assert await _deliveries(again, 1) == ["marker"]
            async with connect(url, "alpha") as twice:
                await rt.notify(left, "marker 2")
                assert await _deliveries(twice, 1) == ["marker 2"]  # nothing comes twice
            assert await rt.stored_deliveries(left, statuses=("unrouted",)) == []
