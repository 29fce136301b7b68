"""The last connection's leave abandons the conversation's unacked rows session by session,
and stops once a client is back: also when that client joined a new hub (another client came
and left meanwhile, and its own leave dropped the hub the first leave was watching)."""

from __future__ import annotations

import trio
import trio.testing

from ..real_time import fail_after_real
from .conftest import frame_is


async def test_a_leave_stops_abandoning_once_a_client_is_back_on_a_new_hub(
        rt, serve_gateway, connect, mock_clock) -> None:
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt) as (gateway, url):
            key = gateway.conversation_named("alpha").key
            async with connect(url, "alpha") as first:
                session_id = first.session_id
            await trio.testing.wait_all_tasks_blocked()
            assert not gateway.hubs
            # A second session of the conversation, noted first: the leave abandons it first.
            other = await rt.create_session("gateway")
            async with connect(url, "alpha") as a:
                gateway.session_keys = {other: key, **gateway.session_keys}
                entered, gate = trio.Event(), trio.Event()
                original = gateway._abandon
                held = [other]
                # Every abandon (a store write in a thread) and when it ended: a wait for the
                # leave's own end, where wait_all_tasks_blocked() returns while a write is in
                # its thread, and the status read then raced the abandon it was to catch.
                abandoning: list[str] = []
                ended = [False]  # a's abandon of ``other`` has returned
                changed = [trio.Event()]

                async def gated(sid: str) -> None:
                    gated_call = sid in held
                    if gated_call:
                        held.remove(sid)
                        entered.set()
                        await gate.wait()
                    abandoning.append(sid)
                    try:
                        await original(sid)
                    finally:
                        abandoning.remove(sid)
                        ended[0] = ended[0] or gated_call
                        changed[0].set()
                        changed[0] = trio.Event()

                gateway._abandon = gated  # type: ignore[method-assign]
                del a
            await entered.wait()  # a's leave is abandoning ``other``; the hub is still there
            async with connect(url, "alpha"):  # b comes and goes
                pass
            await trio.testing.wait_all_tasks_blocked()
            async with connect(url, "alpha") as c:  # c is back, on a new hub
                handle = await rt.notify(session_id, "for c")
                await c.receive_until(frame_is("delivery", text="for c"), ack=False)
                assert gateway.hubs[key].connections
                gate.set()  # a's leave goes on: c is connected, so it abandons nothing more
                # Once its abandon of ``other`` returned, the leave either ended or went straight
                # on (no checkpoint between) to abandon the next session: wait for that one too.
                while not ended[0] or abandoning:
                    await changed[0].wait()
                assert (await rt.delivery_status(handle.delivery_id)).status == "sending"
                assert gateway.sent.get(handle.delivery_id) == key
