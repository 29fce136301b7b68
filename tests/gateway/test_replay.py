"""Acks, drops and reconnects: a delivery written but not acked becomes unknown when the
connection drops; a reconnect with after_seq confirms what the client has and replays the
rest exactly once, in seq order, after welcome."""

from __future__ import annotations

import trio

from tidings.channels import GatewayChannel, GatewayConfig


async def _deliveries(client, n: int, *, ack: bool = True) -> list[dict]:
    """The next *n* delivery frames (other frames skipped)."""
    found: list[dict] = []
    with trio.fail_after(10):
        while len(found) < n:
            frame = await client.receive()
            if frame["type"] == "delivery":
                found.append(frame)
                if ack:
                    await client.ack(frame["delivery_id"])
    return found


async def _status(rt, handle) -> str:
    return (await rt.delivery_status(handle.delivery_id)).status


async def test_a_drop_between_write_and_ack_is_replayed_once_after_welcome(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.welcome["session_id"]
            one = await rt.notify(session_id, "one")
            [frame] = await _deliveries(first, 1)
            assert (frame["seq"], frame["text"]) == (1, "one")
            with trio.fail_after(10):
                await wait_status(rt, one.delivery_id, "sent")
            two = await rt.notify(session_id, "two")
            [frame] = await _deliveries(first, 1, ack=False)  # written, never acked
            assert frame["seq"] == 2
        with trio.fail_after(10):
            await wait_status(rt, two.delivery_id, "unknown")
        three = await rt.notify(session_id, "three")  # nobody is connected: it waits
        with trio.fail_after(10):
            await wait_status(rt, three.delivery_id, "sending")
        async with connect(url, "alpha", session_id=session_id, after_seq=1) as second:
            assert second.welcome["replay"] is True
            frames = await _deliveries(second, 2)
            assert [(f["seq"], f["text"]) for f in frames] == [(2, "two"), (3, "three")]
            with trio.fail_after(10):
                await wait_status(rt, two.delivery_id, "sent")
                await wait_status(rt, three.delivery_id, "sent")
            four = await rt.notify(session_id, "four")
            [frame] = await _deliveries(second, 1)
            assert (frame["seq"], frame["text"]) == (4, "four")  # nothing twice
            with trio.fail_after(10):
                await wait_status(rt, four.delivery_id, "sent")


async def test_after_seq_confirms_what_the_client_has(rt, serve_gateway, connect,
                                                      wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.welcome["session_id"]
            one = await rt.notify(session_id, "one")
            await _deliveries(first, 1, ack=False)  # it got it, but the ack was lost
        with trio.fail_after(10):
            await wait_status(rt, one.delivery_id, "unknown")
        async with connect(url, "alpha", after_seq=1) as second:
            assert await _status(rt, one) == "sent"
            two = await rt.notify(session_id, "two")
            [frame] = await _deliveries(second, 1)
            assert frame["delivery_id"] == two.delivery_id


async def test_a_hello_without_after_seq_replays_nothing(rt, serve_gateway, connect,
                                                         wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.welcome["session_id"]
            lost = await rt.notify(session_id, "lost")
            await _deliveries(first, 1, ack=False)
        with trio.fail_after(10):
            await wait_status(rt, lost.delivery_id, "unknown")
        async with connect(url, "alpha") as second:
            assert second.welcome["replay"] is False
            assert second.welcome["last_seq"] == 1
            later = await rt.notify(session_id, "later")
            [frame] = await _deliveries(second, 1)
            assert frame["delivery_id"] == later.delivery_id
        assert await _status(rt, lost) == "unknown"


async def test_two_devices_of_one_conversation_both_get_every_delivery(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as phone, connect(url, "alpha") as laptop:
            session_id = phone.welcome["session_id"]
            handle = await rt.notify(session_id, "both")
            [on_phone] = await _deliveries(phone, 1)
            [on_laptop] = await _deliveries(laptop, 1)
            assert on_phone == on_laptop
            with trio.fail_after(10):
                await wait_status(rt, handle.delivery_id, "sent")
        async with connect(url, "beta") as other:
            assert other.welcome["session_id"] != session_id


async def test_one_device_leaving_abandons_nothing_the_other_can_still_ack(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as stays:
        session_id = stays.welcome["session_id"]
        async with connect(url, "alpha") as leaves:
            handle = await rt.notify(session_id, "x")
            await _deliveries(leaves, 1, ack=False)
        assert await _status(rt, handle) == "sending"
        await _deliveries(stays, 1)
        with trio.fail_after(10):
            await wait_status(rt, handle.delivery_id, "sent")


async def test_acks_by_seq_and_foreign_acks(rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as alpha, \
            connect(url, "beta") as beta:
        session_id = alpha.welcome["session_id"]
        handles = [await rt.notify(session_id, text) for text in ("a", "b", "c")]
        await _deliveries(alpha, 3, ack=False)
        await alpha.ack_up_to(2)
        with trio.fail_after(10):
            await wait_status(rt, handles[1].delivery_id, "sent")
        assert await _status(rt, handles[2]) == "sending"
        await beta.ack(handles[2].delivery_id)  # not beta's to ack
        with trio.fail_after(10):
            error = await beta.receive()
        assert (error["type"], error["code"]) == ("error", "unknown_delivery")
        assert await _status(rt, handles[2]) == "sending"
        await alpha.ack(handles[2].delivery_id)
        with trio.fail_after(10):
            await wait_status(rt, handles[2].delivery_id, "sent")


async def test_a_client_that_missed_a_session_switch_gets_both_sessions(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as away:
            old = away.welcome["session_id"]
            await rt.notify(old, "before")
            await _deliveries(away, 1)
        async with connect(url, "alpha") as other:
            await other.message("/clear")
            await other.message("hi again")  # a new session: its first message
            frames = [f for f in await _deliveries(other, 2)]
            new = frames[-1]["session_id"]
            assert new != old
        async with connect(url, "alpha", session_id=old, after_seq=1) as back:
            assert back.welcome["session_id"] == new
            frames = await _deliveries(back, 2)
            assert [(f["session_id"], f["seq"]) for f in frames] == [(old, 2), (new, 1)]
            assert frames[0]["command"] == "clear"


async def test_rows_unrouted_while_no_gateway_ran_are_requeued_in_order(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        session_id = client.welcome["session_id"]
    handles = [await rt.notify(session_id, text) for text in ("p", "q")]
    with trio.fail_after(10):
        for handle in handles:
            await wait_status(rt, handle.delivery_id, "unrouted")
    async with serve_gateway(rt) as (_gateway, url), \
            connect(url, "alpha", after_seq=0) as back:
        frames = await _deliveries(back, 2)
        assert [(f["seq"], f["text"]) for f in frames] == [(1, "p"), (2, "q")]
        with trio.fail_after(10):
            for handle in handles:
                await wait_status(rt, handle.delivery_id, "sent")


async def test_a_client_that_stops_reading_delays_no_one_else(rt, serve_gateway, connect,
                                                              wait_status) -> None:
    async with serve_gateway(rt, ack_window=2) as (_gateway, url), \
            connect(url, "slow") as slow, connect(url, "fast") as fast:
        slow_session = slow.welcome["session_id"]
        stuck = [await rt.notify(slow_session, f"s{i}") for i in range(5)]
        for i in range(5):
            handle = await rt.notify(fast.welcome["session_id"], f"f{i}")
            [frame] = await _deliveries(fast, 1)
            assert frame["delivery_id"] == handle.delivery_id
        with trio.fail_after(10):
            await wait_status(rt, stuck[1].delivery_id, "sending")  # the window (2) is full
        statuses = [(await rt.delivery_status(h.delivery_id)).outbox_status for h in stuck]
        assert statuses == ["sending", "sending", "queued", "queued", "queued"]
        frames = await _deliveries(slow, 5)  # it reads again: the backlog follows in order
        assert [f["text"] for f in frames] == [f"s{i}" for i in range(5)]


async def test_the_gateway_route_declares_its_ack_window(rt) -> None:
    gateway = GatewayChannel(rt, GatewayConfig(token="t" * 16, ack_window=7))
    assert gateway.ack_window == 7


async def test_progress_for_nobody_is_not_kept_and_never_replayed(rt, serve_gateway, connect,
                                                                  wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as client:
            session_id = client.welcome["session_id"]
        progress = await rt.notify(session_id, "50% done", kind="progress")
        with trio.fail_after(10):
            await wait_status(rt, progress.delivery_id, "failed")
        assert "stale_progress" in (await rt.delivery_status(progress.delivery_id)).last_error
        await rt.notify(session_id, "done")
        async with connect(url, "alpha", after_seq=0) as back:
            [frame] = await _deliveries(back, 1)
            assert (frame["text"], frame["seq"]) == ("done", 2)
