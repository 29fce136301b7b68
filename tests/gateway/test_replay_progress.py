"""A progress note a client never got, left ``unknown`` by a connection that dropped, is dropped
when the client comes back with an ``after_seq`` below it: progress rows are never replayed, so
nothing would ever resolve it (``unknown`` rows are owed something and never pruned), and a late
progress note is noise, as one for nobody is (``failed``, ``stale_progress``)."""

from __future__ import annotations

import trio
import trio.testing

from .conftest import frame_is


async def _status(rt, handle) -> tuple[str, str | None]:
    found = await rt.delivery_status(handle.delivery_id)
    return found.status, found.last_error


async def test_a_progress_note_a_client_coming_back_never_got_is_dropped_not_left_unknown(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.session_id
            told = await rt.notify(session_id, "told")
            note = await rt.notify(session_id, "working...", kind="progress")
            with trio.fail_after(10):
                await first.receive_until(frame_is("delivery", kind="progress"), ack=False)
        with trio.fail_after(10):
            assert await note.wait() == "unknown"  # the connection dropped unacked
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as second:
            with trio.fail_after(10):
                [replayed] = await second.receive_until(frame_is("delivery"))
            assert replayed["seq"] == told.seq  # the note is not replayed
            await trio.testing.wait_all_tasks_blocked()
            assert await _status(rt, note) == ("failed", "stale_progress")


async def test_a_progress_note_within_after_seq_is_the_clients_and_sent(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.session_id
            note = await rt.notify(session_id, "working...", kind="progress")
            with trio.fail_after(10):
                [frame] = await first.receive_until(frame_is("delivery"), ack=False)
        with trio.fail_after(10):
            assert await note.wait() == "unknown"
        async with connect(url, "alpha", session_id=session_id, after_seq=frame["seq"]):
            assert (await _status(rt, note))[0] == "sent"
