"""Edges of the gateway's client protocol where two devices share a conversation, or a client
sends frames that cost the server work: each test forces one interleaving or one flood and
checks what a client sees (nothing twice, no well-behaved client closed, no free work).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tidings.channels import GatewayClosed
from tidings.testing import WriterGate, writer_gate

from ..real_time import fail_after_real


async def _next_delivery(client: Any) -> dict[str, Any]:
    with fail_after_real(10):
        while True:
            frame = await client.receive()
            if frame["type"] == "delivery":
                return frame


async def _nothing_more(client: Any) -> None:
    """A ``sync`` round trip: every frame before its ``synced`` answer must be no delivery."""
    await client.sync()
    with fail_after_real(10):
        while (frame := await client.receive())["type"] != "synced":
            assert frame["type"] != "delivery", f"delivered again: {frame}"


async def _read_until(client: Any, frame_type: str) -> None:
    while (await client.receive())["type"] != frame_type:
        pass


def _gate_replay_reads(rt: Any) -> tuple[trio.Event, trio.Event]:
    """Wrap ``rt.stored_deliveries`` (the replay's read): the first call sets ``reading`` and
    waits for ``proceed`` before it reads."""
    real = rt.stored_deliveries
    reading, proceed = trio.Event(), trio.Event()

    async def gated(*args: Any, **kwargs: Any) -> Any:
        if not reading.is_set():
            reading.set()
            await proceed.wait()
        return await real(*args, **kwargs)

    rt.stored_deliveries = gated
    return reading, proceed


async def test_a_row_another_device_acks_during_a_replay_is_not_written_twice(
        rt, serve_gateway, connect, wait_status) -> None:
    """A row delivered live to a catching-up connection (queued behind its replay) and acked
    by the other device before the replay reads it is ``sent`` then: the replay writes it,
    and the live copy in the queue must not be written again."""
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as phone:
        session_id = phone.session_id
        reading, proceed = _gate_replay_reads(rt)
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as laptop:
            with trio.fail_after(10):
                await reading.wait()  # the laptop's replay is about to read
            handle = await rt.notify(session_id, "both")  # live: queued on both devices
            frame = await _next_delivery(phone)
            assert frame["delivery_id"] == handle.delivery_id
            await phone.ack(handle.delivery_id)
            with trio.fail_after(10):
                await wait_status(rt, handle.delivery_id, "sent")
            proceed.set()  # the replay now reads the row as ``sent``
            frame = await _next_delivery(laptop)
            assert frame["delivery_id"] == handle.delivery_id
            await laptop.ack(handle.delivery_id)
            await _nothing_more(laptop)


async def _deliveries(client: Any, n: int, *, ack: bool) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while len(found) < n:
        found.append(frame := await _next_delivery(client))
        if ack:
            await client.ack(frame["delivery_id"])
    return found


async def test_a_device_catching_up_on_what_another_device_acked_may_ack_it_all(
        rt, serve_gateway, connect, wait_status, mock_clock) -> None:
    """Acks of the deliveries a connection was sent are free (README), also of rows another
    device acked first: a device that catches up on a backlog and acks every delivery, one
    frame each, is not closed as flooding. (The clock stands still: no token comes back.)"""
    async with serve_gateway(rt, rate=1, burst=5) as (_gateway, url):
        async with connect(url, "alpha") as phone:
            session_id = phone.session_id
            handles = [await rt.notify(session_id, f"n{i}") for i in range(12)]
            await _deliveries(phone, 12, ack=True)
            with fail_after_real(10):
                await wait_status(rt, handles[-1].delivery_id, "sent")
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as laptop:
            frames = await _deliveries(laptop, 12, ack=True)  # all ``sent``: by the phone
            assert [f["text"] for f in frames] == [f"n{i}" for i in range(12)]
            await _nothing_more(laptop)  # still connected: no 4029
            live = await rt.notify(session_id, "live")
            frame = await _next_delivery(laptop)
            assert frame["delivery_id"] == live.delivery_id
            await laptop.ack(frame["delivery_id"])
            with fail_after_real(10):
                await wait_status(rt, live.delivery_id, "sent")


async def test_acks_by_seq_that_ack_nothing_sent_here_are_charged(
        rt, serve_gateway, connect, mock_clock) -> None:
    """Every ``ack`` by ``up_to_seq`` costs a store read (and maybe a write): only one that
    acks deliveries this connection was sent is free, so a flood of empty ones is closed
    ``4029`` like any other flood."""
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, rate=1, burst=5) as (_gateway, url), \
                connect(url, "alpha") as client:
            session_id = client.session_id
            handle = await rt.notify(session_id, "one")
            frame = await _next_delivery(client)
            await client.ack_up_to(frame["seq"])  # acks what it was sent: free
            for _ in range(10):
                await client.ack_up_to(frame["seq"])  # nothing of its own left to ack
            await client.sync()  # answered only if the flood was let through
            with pytest.raises(GatewayClosed) as closed:
                await _read_until(client, "synced")
            assert closed.value.code == 4029
            assert (await rt.delivery_status(handle.delivery_id)).status == "sent"


async def test_a_seq_too_big_for_the_store_is_a_bad_field_not_an_internal_error(
        rt, serve_gateway, connect) -> None:
    """A seq the store cannot hold (SQLite integers are 64-bit) is refused by name: an ack
    gets ``bad_field`` naming ``up_to_seq`` and the connection goes on; a hello is closed
    ``4000`` naming ``after_seq``. Nothing is confirmed."""
    huge = 2 ** 63
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as client:
            handle = await rt.notify(client.session_id, "one")
            await _next_delivery(client)
            # Raw: GatewayClient.ack_up_to refuses such a seq before sending it.
            await client.send({"type": "ack", "up_to_seq": huge})
            with trio.fail_after(10):
                error = await client.receive()
            assert (error["type"], error["code"], error["field"]) == (
                "error", "bad_field", "up_to_seq")
            await _nothing_more(client)  # still connected
            assert (await rt.delivery_status(handle.delivery_id)).status == "sending"
        with pytest.raises(GatewayClosed) as closed:
            async with connect(url, "alpha", after_seq=huge):
                pass
        assert closed.value.code == 4000
        assert "after_seq" in (closed.value.reason or "")


async def test_rows_unrouted_while_no_gateway_ran_go_before_anything_newer(
        rt, serve_gateway, connect, wait_status) -> None:
    """A row left ``unrouted`` (no gateway had the session) must not come after a newer row:
    a client that gets them out of order and comes back with the higher seq as ``after_seq``
    has the lower one confirmed ``sent`` although it never got it."""
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as phone:
        session_id = phone.session_id
        one = await rt.notify(session_id, "one")
        await _deliveries(phone, 1, ack=True)
        with trio.fail_after(10):
            await wait_status(rt, one.delivery_id, "sent")
    two = await rt.notify(session_id, "two")  # no gateway has the session: unrouted
    with trio.fail_after(10):
        await wait_status(rt, two.delivery_id, "unrouted")
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as laptop:  # another device, no after_seq
            three = await rt.notify(session_id, "three")
            while (await _deliveries(laptop, 1, ack=True))[0]["text"] != "three":
                pass
            with trio.fail_after(10):
                await wait_status(rt, three.delivery_id, "sent")
        async with connect(url, "alpha", session_id=session_id, after_seq=1) as back:
            first = await _next_delivery(back)  # the connection breaks after this one
        got = [(first["seq"], first["text"])]
        async with connect(url, "alpha", session_id=session_id,
                           after_seq=first["seq"]) as again:
            await again.sync()
            with trio.fail_after(10):
                while (frame := await again.receive())["type"] != "synced":
                    if frame["type"] == "delivery":
                        got.append((frame["seq"], frame["text"]))
                        await again.ack(frame["delivery_id"])
        assert got == [(2, "two"), (3, "three")]
        assert (await rt.delivery_status(two.delivery_id)).status == "sent"


async def test_a_client_back_while_its_rows_are_abandoned_loses_no_ack_and_gets_nothing_twice(
        rt, serve_gateway, connect, wait_status) -> None:
    """When the last connection of a conversation leaves, the gateway turns that session's
    unacked rows ``unknown``. The set of rows is taken synchronously when the abandon starts,
    while no connection is in the hub, so rows handed to a client that returns while that
    commit is in flight are never in it; a row the returning client gets by replay and acks
    is ``sent`` whichever commit lands first (``unknown`` only leaves ``sending``; an ack takes
    ``unknown`` to ``sent``)."""
    opened = trio.Event()

    async def hold_the_writer(*, task_status: trio.TaskStatus[WriterGate]) -> None:
        async with writer_gate(rt.store) as gate:
            task_status.started(gate)
            await opened.wait()

    async def status(delivery_id: str) -> str:
        return (await rt.delivery_status(delivery_id)).status

    async with serve_gateway(rt) as (gateway, url), trio.open_nursery() as nursery:
        async with connect(url, "alpha") as first:
            session_id = first.session_id
            old = await rt.notify(session_id, "old")
            assert (await _next_delivery(first))["delivery_id"] == old.delivery_id  # no ack
            gate = await nursery.start(hold_the_writer)  # every write now queues behind it
        # the last connection left: its abandon is in flight, held at the writer's gate
        await trio.testing.wait_all_tasks_blocked()
        assert not gateway.hub(gateway.conversation_named("alpha")).connections
        assert await status(old.delivery_id) == "sending"

        async with connect(url, "alpha", after_seq=0) as second:
            replayed = await _next_delivery(second)  # still ``sending``: replayed to it
            assert replayed["delivery_id"] == old.delivery_id
            await second.ack(old.delivery_id)  # its commit queues behind the abandon's
            fresh: list[Any] = []

            async def notify_fresh() -> None:
                fresh.append(await rt.notify(session_id, "fresh"))

            nursery.start_soon(notify_fresh)  # written (and claimed) after the gate opens
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
            opened.set()

            frame = await _next_delivery(second)
            [handle] = fresh
            assert (frame["delivery_id"], frame["text"]) == (handle.delivery_id, "fresh")
            with trio.fail_after(10):
                await wait_status(rt, old.delivery_id, "sent")  # the ack was not lost
            # the fresh row was handed to a live client: the abandon did not touch it
            assert await status(handle.delivery_id) == "sending"
            await second.ack(handle.delivery_id)
            await _nothing_more(second)
            assert await status(handle.delivery_id) == "sent"
            seen = second.seen[session_id]

        async with connect(url, "alpha", after_seq=seen) as third:  # nothing to replay
            await _nothing_more(third)
        assert [await status(d) for d in (old.delivery_id, handle.delivery_id)] == [
            "sent", "sent"]


async def test_one_ack_of_more_deliveries_than_the_burst_from_an_earlier_connection_passes(
        rt, serve_gateway, connect, wait_status, mock_clock) -> None:
    """A device that got deliveries on a connection that dropped before it acked them acks
    them all in one frame on its next connection (hello without ``after_seq``). They are its
    own conversation's deliveries, looked up in one store read: the frame is charged like any
    frame that costs a read, never one token per id, which a frame of more ids than ``burst``
    could never afford (it was closed ``4029`` on every reconnect, for good)."""
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, rate=1, burst=5) as (_gateway, url):
            async with connect(url, "alpha") as phone:
                session_id = phone.session_id
                handles = [await rt.notify(session_id, f"n{i}") for i in range(12)]
                frames = await _deliveries(phone, 12, ack=False)
            with fail_after_real(10):
                await wait_status(rt, handles[-1].delivery_id, "unknown")  # nobody acked them
            async with connect(url, "beta") as beta:
                foreign = await rt.notify(beta.session_id, "not alpha's")
                await _next_delivery(beta)
                async with connect(url, "alpha") as again:
                    await again.ack(*[f["delivery_id"] for f in frames], foreign.delivery_id,
                                    "dlv_nowhere")
                    await again.sync()
                    with fail_after_real(10):
                        error = await again.receive()
                    assert error["type"] == "error"
                    assert error["code"] == "unknown_delivery"
                    assert error["field"] == "delivery_ids"
                    assert foreign.delivery_id in error["message"]
                    # no delivery any more (or ever): nothing to confirm, not refused
                    assert "dlv_nowhere" not in error["message"]
                    await _read_until(again, "synced")  # still connected (no 4029)
                assert (await rt.delivery_status(foreign.delivery_id)).status == "sending"
            for handle in handles:
                assert (await rt.delivery_status(handle.delivery_id)).status == "sent"
