"""A catch-up's frames say so: ``"catch_up": true`` (an optional field of protocol 1, which a
client that does not know it ignores). A connection that said hello with ``after_seq`` is sent
a session it has none of from its start, before the first of its rows that reaches it live
(another device's ``/resume``, a late reply in a session ``/new`` left: see
channels/_gateway_admit.py). Those earlier rows went out before the connection joined: to a
client that began after them, history. Unmarked, they read as news: ``tidings chat`` printed
a session it never saw, and followed the old ``/new`` answer among them.

The live row after them, the hello's own replay, and every row of a connection without
``after_seq`` carry no such field."""

from __future__ import annotations

import trio

from .conftest import frame_is


def _deliveries(frames: list[dict], session_id: str) -> list[tuple[str, bool]]:
    return [(f["text"], f.get("catch_up", False)) for f in frames
            if f["type"] == "delivery" and f["session_id"] == session_id]


async def test_the_rows_a_catch_up_writes_are_marked_and_the_live_one_is_not(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as one:
            await one.message("hello", message_id="m1")
            [*_, reply] = await one.receive_until(frame_is("delivery", kind="message"))
            old = reply["session_id"]
            await one.message("/new", message_id="m2")
            [*_, new] = await one.receive_until(frame_is("delivery", command="new"))
            async with connect(url, "alpha", after_seq=0) as two, \
                    connect(url, "alpha") as three:
                replayed = await two.receive_until(frame_is("delivery", command="new"))
                await one.message(f"/resume {old}", message_id="m3")
                caught = await two.receive_until(frame_is("delivery", command="resume"))
                live = await three.receive_until(frame_is("delivery", command="resume"))
    assert _deliveries(replayed, new["session_id"]) == [("Started a new session.", False)]
    assert _deliveries(caught, old) == [("hello", True), (f"Resumed session {old}.", False)]
    assert _deliveries(live, old) == [(f"Resumed session {old}.", False)]
