"""An ack of several direct answers owed on their ids' records clears them in one write.

A command's direct answer (no session) is owed on its message id's record until its client
acks it by ``message_ids``; the ack clears the record. Each id was one store write (a
shielded commit each), so one ack frame of many ids queued as many writes, in turn, on the
one writer every send waits on. Now the frame's ids are cleared in one commit.
"""

from __future__ import annotations

from typing import Any

import trio

IDS = ("m2", "m3", "m4")


def _accepted(message_id: str) -> Any:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


async def test_an_ack_of_many_owed_notices_is_one_write(rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        with trio.fail_after(10):  # a guard against hanging, not a wait
            await client.message("/clear", message_id="m1")  # in the session
            await client.receive_until(_accepted("m1"), ack=False)
            for message_id in IDS:  # no session now: each answer is direct, owed on its id
                await client.message("/clear", message_id=message_id)
                await client.receive_until(_accepted(message_id), ack=False)
            await client.sync()
            await client.receive_until(lambda f: f["type"] == "synced", ack=False)
            before = rt.store.statistics().requests
            await client.ack_notices(*IDS)
            await client.sync()  # handled after the ack: the ack's writes are done
            await client.receive_until(lambda f: f["type"] == "synced", ack=False)
            after = rt.store.statistics().requests
            await client.message("/clear", message_id="m2")  # a resend: nothing owed now
            frames = await client.receive_until(_accepted("m2"), ack=False)
    assert [f for f in frames if f["type"] == "notice"] == []
    assert after - before == 1
