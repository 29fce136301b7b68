"""``synced`` says which seq a client has caught up at (README: "once you have that seq, you
have caught up"). A row no client will ever be handed, a ``visible=False`` one (history only)
or one that ended ``failed``, must not be that seq: ``tidings chat`` waits for it, and held
each piped line 30 seconds when a turn's last row was one of those."""

from __future__ import annotations

import pytest
import trio


async def _synced(client) -> dict:
    await client.sync()
    with trio.fail_after(10):
        while True:
            frame = await client.receive()
            if frame["type"] == "delivery":
                await client.ack(frame["delivery_id"])
            elif frame["type"] == "synced":
                return frame


async def test_synced_last_seq_leaves_out_a_visible_false_row(rt, serve_gateway,
                                                              connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        session_id = client.welcome["session_id"]
        async with rt.open_turn(session_id) as ctx:
            shown = await ctx.output.send_text("for the person")
            hidden = await ctx.output.send_text("for the history only", visible=False)
        assert hidden.seq > shown.seq
        frame = await _synced(client)  # acks the delivery on the way
        assert frame["last_seq"] == shown.seq


async def test_synced_last_seq_leaves_out_a_stale_progress_row(rt, serve_gateway,
                                                               connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as client:
            session_id = client.welcome["session_id"]
        async with rt.open_turn(session_id) as ctx:  # nobody is connected
            note = await ctx.output.progress("working...")
        assert await note.wait() == "failed"
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as client:
            frame = await _synced(client)
            assert frame["last_seq"] == 0


@pytest.mark.parametrize("acked", [True, False], ids=["sent", "unknown"])
async def test_synced_last_seq_leaves_out_a_progress_row_a_client_catching_up_never_gets(
        rt, serve_gateway, connect, is_frame, acked) -> None:
    """Progress rows are never replayed: a progress note a device got (acked, ``sent``) or
    lost (``unknown``) is not handed to a client catching up with ``after_seq``, so its seq
    is not one that client can reach. It was ``last_seq``, and the client waited for it."""
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.welcome["session_id"]
            told = await rt.notify(session_id, "told")
            note = await rt.notify(session_id, "working...", kind="progress")
            with trio.fail_after(10):
                await first.receive_until(is_frame("delivery", kind="progress"), ack=acked)
                if acked:
                    assert await note.wait() == "delivered"
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as second:
            with trio.fail_after(10):
                [replayed] = await second.receive_until(is_frame("delivery"))
                assert replayed["seq"] == told.seq < note.seq
                frame = await _synced(second)
            assert frame["last_seq"] == told.seq  # the client has it: caught up
