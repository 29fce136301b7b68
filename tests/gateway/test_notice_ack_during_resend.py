"""An ack of a command's direct answer (a ``notice``) that lands while a resend of its id is
being sent that answer again counts: the answer is not sent to a later resend.

A resend takes the answer out (no one else sends it meanwhile), sends it, then keeps it
*given* again (``ChannelBase._pay_owed``). An ack by ``message_ids`` from another device
meanwhile found nothing kept and was ignored: the answer stayed given (and owed on the id's
record), sent again to every later resend of the id, though a device had acked it.
"""

from __future__ import annotations

from typing import Any

import trio

from tidings.store._inbound import owed_direct_answer


def _accepted(message_id: str) -> Any:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


def _synced(frame: dict[str, Any]) -> bool:
    return frame["type"] == "synced"


async def test_an_ack_during_a_resend_of_the_answer_counts(rt, serve_gateway, connect
                                                           ) -> None:
    async with serve_gateway(rt) as (gateway, url):
        with trio.fail_after(10):  # a guard against hanging, not a wait
            async with connect(url, "alpha") as phone, connect(url, "alpha") as laptop:
                await phone.message("/clear", message_id="m1")  # in the session
                await phone.receive_until(_accepted("m1"), ack=False)
                await phone.message("/clear", message_id="m2")  # no session: direct
                await phone.receive_until(_accepted("m2"), ack=False)  # read, never acked
                deliver = gateway.deliver
                sending, gate = trio.Event(), trio.Event()

                async def gated(outbound) -> None:
                    if outbound.metadata.get("message_id") == "m2":  # the resend's answer
                        sending.set()
                        await gate.wait()
                    await deliver(outbound)

                gateway.deliver = gated
                await phone.message("/clear", message_id="m2")  # a resend: answered again
                await sending.wait()  # ...and being sent now
                await laptop.ack_notices("m2")  # another device acks it meanwhile
                await laptop.sync()  # handled after the ack
                await laptop.receive_until(_synced, ack=False)
                gate.set()
                await phone.receive_until(_accepted("m2"), ack=False)
                await phone.message("/clear", message_id="m2")  # resent once more
                frames = await phone.receive_until(_accepted("m2"), ack=False)
    assert frames[-1]["duplicate"] is True, frames
    assert [f for f in frames if f["type"] == "notice"] == []  # acked: not sent again
    key = gateway.conversation_named("alpha").key  # nor owed on the id's record any more
    assert not await rt.store.read(owed_direct_answer, rt.core_id, gateway.config.name, key,
                                   "m2", "another process")
