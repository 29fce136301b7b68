"""A welcome's ``history_seq`` is the highest seq at or below which no row waits for a client:
every row up to it went out before the connection joined, and none of them is sent to it as
rows come (README, the ``welcome`` frame). A row its lane had claimed (``sending``) and not yet
handed to the gateway's ``deliver()`` (the lane waits for a hold of its session to end: another
device's hello, recovery) went out to no device: it comes to the new connection live, yet the
welcome counted it below ``history_seq``. A client that reconnects with ``after_seq`` from
there (``tidings chat``), dropped before it read the row, has it confirmed ``sent`` unseen.

A real gateway (real time, as the other gateway tests)."""

from __future__ import annotations

import trio
import trio.testing

from tidings.testing import writer_gate

CONVERSATION = "claimed"


async def test_a_row_claimed_but_not_delivered_at_the_welcome_is_above_history_seq(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as other:
                await other.message("hello", message_id="o1")
                [*_, reply] = await other.receive_until(is_frame("delivery", kind="message"))
                session_id = reply["session_id"]
                while not rt.dispatcher.settled(session_id):  # its ack recorded: idle
                    await trio.testing.wait_all_tasks_blocked()
                handles = []
                async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                    async def send() -> None:
                        handles.append(await rt.notify(session_id, "news"))

                    nursery.start_soon(send)  # written claimed (the session idle), gated
                    while not rt.pipeline._writing.get(session_id):
                        await trio.testing.wait_all_tasks_blocked()
                    rt.dispatcher.hold_sessions([session_id])  # as another hello's hold
                    gate.release()
                lane = rt.dispatcher.lane(session_id)
                while lane.current is None or not lane.claimed:  # it waits for the hold
                    await trio.testing.wait_all_tasks_blocked()
                async with connect(url, CONVERSATION) as late:
                    rt.dispatcher.release_sessions([session_id])
                    [*_, frame] = await late.receive_until(is_frame("delivery", text="news"))
                    welcome = late.welcome
                assert await handles[0].wait() == "delivered"
    # It came to the late connection as rows come: not history.
    assert frame["seq"] > welcome["history_seq"], (frame["seq"], welcome)
