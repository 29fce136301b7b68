"""``/resume`` over the gateway, its connection killed (too slow, a stop) while it hands the
resumed session's ``unrouted`` rows back, one page after another.

The gateway handles a message, commands included, shielded from a kill of its connection
(accepting it and remembering its id are one step: ``channels/_gateway_inbound.py``), but not
its hand-back of ``unrouted`` rows: that stops between pages, as on other channels
(tests/channels/test_resume_handback_cut.py), and the rows left go out at the conversation's
next hello or message, without a restart (``LeftBehind``). A stop held for every page:
tests/gateway/test_resume_handback_held_stop.py.
"""

from __future__ import annotations

import trio

from .test_resume_handback_error_gateway import ROWS, _deliveries, left_with_unrouted_rows


async def test_a_resume_whose_connection_is_killed_mid_hand_back_leaves_the_rest_to_a_hello(
        rt, serve_gateway, connect, monkeypatch) -> None:
    async with serve_gateway(rt) as (gateway, url):
        async with connect(url, "alpha") as client:
            left, late = await left_with_unrouted_rows(rt, client)
            pages = []
            requeue = rt.requeue
            hub = gateway.hubs[gateway.conversation_named("alpha").key]

            async def killing(session_id, delivery_ids):
                moved = await requeue(session_id, delivery_ids)
                pages.append(moved)
                for conn in list(hub.connections):  # after a page: the connection goes
                    conn.kill(4009, "too slow")
                return moved

            monkeypatch.setattr(rt, "requeue", killing)
            await client.message(f"/resume {left}")
            with trio.fail_after(10):  # a guard against hanging, not a wait
                await gateway.runtime.dispatcher.unrouted_written(left)
                while hub.connections:
                    await trio.testing.wait_all_tasks_blocked()
        monkeypatch.undo()
        assert len(pages) == 1  # killed during its hand-back: cut off after that page
        left_rows = await rt.stored_deliveries(left, statuses=("unrouted",))
        # Durable. The page handed back, and the answer, may have gone unrouted since (to
        # nobody connected): both go out at the next hello too.
        answer = f"Resumed session {left}."
        assert [row.outbound.text for row in left_rows
                if row.outbound.text not in (late[0], answer)] == late[1:]
        async with connect(url, "alpha", session_id=left) as again:  # no restart
            texts = await _deliveries(again, ROWS + 1)
        assert texts == [*late, answer]  # in seq order: no client had it
