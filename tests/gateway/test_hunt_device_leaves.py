"""One device of a conversation leaves while another, which joined after some rows were sent,
stays: the rows only the leaving device was sent (and never acked) can be acked by nobody
connected, so they become ``unknown`` as when the last device leaves, and the stayer's
deliveries go on (they held the session's ack window, and the stayer got nothing new)."""

from __future__ import annotations

import trio

from .test_replay import _deliveries


async def test_rows_only_a_leaving_device_was_sent_free_the_window_for_the_one_that_stays(
        rt, serve_gateway, connect, wait_status, autojump_clock) -> None:
    async with serve_gateway(rt, ack_window=2) as (_gateway, url):
        async with connect(url, "alpha") as leaves:
            session_id = leaves.session_id
            early = [await rt.notify(session_id, text) for text in ("x", "y")]
            await _deliveries(leaves, 2, ack=False)  # the window is full: both unacked
            async with connect(url, "alpha") as stays:  # no after_seq: nothing replayed
                await leaves.aclose()
                later = await rt.notify(session_id, "z")
                [frame] = await _deliveries(stays, 1, ack=True)
                assert (frame["delivery_id"], frame["text"]) == (later.delivery_id, "z")
                for handle in early:  # nobody connected was sent them
                    with trio.fail_after(10):
                        await wait_status(rt, handle.delivery_id, "unknown")
        # Not lost: the device that had them comes back and catches up as after any drop.
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as back:
            frames = await _deliveries(back, 2, ack=True)
            assert [f["text"] for f in frames] == ["x", "y"]


def _leave_noted(gateway) -> trio.Event:
    """Wrap the gateway's leave: the event is set once a leave was handled."""
    done = trio.Event()
    original = gateway._leave

    async def leave(conn) -> None:
        try:
            await original(conn)
        finally:
            done.set()

    gateway._leave = leave
    return done


async def test_rows_the_device_that_stays_was_sent_too_stay_its_to_ack(
        rt, serve_gateway, connect, wait_status, autojump_clock) -> None:
    async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as stays:
        left = _leave_noted(gateway)
        session_id = stays.session_id
        async with connect(url, "alpha") as leaves:
            handle = await rt.notify(session_id, "both")
            await _deliveries(leaves, 1, ack=False)
            [frame] = await _deliveries(stays, 1, ack=False)
        with trio.fail_after(10):
            await left.wait()
        assert (await rt.delivery_status(handle.delivery_id)).status == "sending"
        await stays.ack(frame["delivery_id"])
        with trio.fail_after(10):
            await wait_status(rt, handle.delivery_id, "sent")
        statuses = [event.type async for event in _events_of(rt, handle.delivery_id)]
        assert "delivery.unknown" not in statuses, statuses


async def _events_of(rt, delivery_id: str):
    """The delivery's events up to its ``sent``."""
    async for event in rt.events(after_seq=0):
        if event.delivery_id == delivery_id:
            yield event
            if event.type == "delivery.sent":
                return
