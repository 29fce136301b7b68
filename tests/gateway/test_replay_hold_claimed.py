"""A hello's replay never sees a row its hold sent back as still ``sending``.

A row its lane claimed for another route (``sending``, its platform I/O not started) when a
gateway client's hello binds the session and hands older ``unrouted`` rows back goes back to
``queued`` behind them, and the hello's own hand-back moves it there before its hold ends
(``Dispatcher.hand_back_claimed``). When the lane moved it after the hold, the replay that
followed could read it ``sending`` first: it wrote the row to the client ahead of the older row,
the client's ack (after the lane's re-queue) confirmed nothing, and the row, claimed again and
suppressed as already replayed, stayed ``sending`` until the client left.
"""

from __future__ import annotations

import trio
import trio.testing

from tidings.actors import BindToken
from tidings.testing import MemoryRoute, writer_gate

HANG = 10.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


async def test_a_claimed_row_the_hello_sends_back_comes_after_the_older_row_and_is_acked(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (gateway, url):
        async with connect(url, "alpha") as before:
            session_id = before.welcome["session_id"]
        binding = rt.router.binding(session_id)
        if binding is not None:  # nobody's route: the next row finds none
            rt.router.unbind(BindToken(session_id, binding.serial))
        with trio.fail_after(HANG):
            older = await rt.notify(session_id, "older")
            assert await older.wait() == "unrouted"
            other = MemoryRoute()
            other.stall()
            rt.router.bind(session_id, other)
            first = await rt.notify(session_id, "first")
            await other.wait_attempted(1)  # the lane is inside deliver(first)
            newer = await rt.notify(session_id, "newer")
        hello_holds = trio.Event()
        rt.router.add_bind_listener(
            lambda bound: hello_holds.set() if bound == session_id
            and rt.router.binding(bound).route is gateway else None)
        claim_queued, replay_started = trio.Event(), trio.Event()
        texts: list[str] = []

        async def writes() -> None:
            async with writer_gate(rt.store) as gate:
                other.release()  # first's sent and newer's claim (for other) queue here
                await trio.testing.wait_all_tasks_blocked()
                claim_queued.set()
                await hello_holds.wait()  # the hello binds inside its hold
                unheld = rt.dispatcher.unheld(session_id)
                assert unheld is not None
                gate.release()  # the claim commits; the hello hands older back
            await unheld.wait()  # the hold has ended
            async with writer_gate(rt.store) as gate:  # nothing lands until the replay read
                await replay_started.wait()
                gate.release()

        with trio.fail_after(HANG):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(writes)
                await claim_queued.wait()  # then the client says hello
                async with connect(url, "alpha", after_seq=0) as client:
                    while len(texts) < 3:
                        frame = await client.receive()
                        if frame["type"] == "delivery":
                            texts.append(frame["text"])
                            replay_started.set()
                            await client.ack(frame["delivery_id"])
                    for handle in (older, first, newer):
                        await wait_status(rt, handle.delivery_id, "sent")
    assert texts == ["first", "older", "newer"]
    assert other.texts() == ["first"]
