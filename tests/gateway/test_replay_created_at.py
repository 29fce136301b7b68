"""A replayed or caught-up delivery says when its row was written (``created_at``, the store's
clock), as ``welcome`` says the server's time (``server_time``, the same clock): optional
fields of protocol 1. A session another device ``/resume``s while a client is away comes in the
reconnect's replay from its start, its history and the ``/resume`` answer written meanwhile
alike (no ``catch_up`` on either): a client that shows no history (``tidings chat``) tells them
apart only so, against its first welcome's ``server_time``. A live row says no such field."""

from __future__ import annotations

import trio

from .conftest import frame_is


async def test_a_replay_says_when_each_row_was_written(rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as other:
            await other.message("hello", message_id="m1")
            [*_, reply] = await other.receive_until(frame_is("delivery", kind="message"))
            old = reply["session_id"]
            await other.message("/new", message_id="m2")
            [*_, new] = await other.receive_until(frame_is("delivery", command="new"))
            async with connect(url, "alpha") as chat:
                began = chat.welcome["server_time"]
            await other.message(f"/resume {old}", message_id="m3")  # while the chat is away
            [*_, live] = await other.receive_until(frame_is("delivery", command="resume"))
            async with connect(url, "alpha", session_id=new["session_id"],
                               after_seq=new["seq"]) as chat:
                frames = await chat.receive_until(frame_is("delivery", command="resume"))
    replayed = [f for f in frames if f["type"] == "delivery"]
    assert [(f["text"], f.get("catch_up", False)) for f in replayed] == [
        ("hello", False), (f"Resumed session {old}.", False)]
    [hello, resumed] = replayed
    assert isinstance(hello["created_at"], float)
    assert hello["created_at"] < began
    assert resumed["created_at"] >= began
    assert "created_at" not in reply
    assert "created_at" not in live
