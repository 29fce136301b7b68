"""README (Errors): an ack that names deliveries of another conversation is answered
``unknown_delivery`` naming those, and still confirms the ones of its own conversation it
names (a client need not send them again); and an ack by ``up_to_seq`` without
``session_id`` applies to the conversation's current session."""

from __future__ import annotations

import trio


async def test_an_ack_with_foreign_ids_still_confirms_its_own(rt, serve_gateway, connect,
                                                               wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as alpha, \
            connect(url, "beta") as beta:
        ours = await rt.notify(alpha.session_id, "for alpha")
        theirs = await rt.notify(beta.session_id, "for beta")
        with trio.fail_after(10):
            await alpha.receive_until(lambda f: f["type"] == "delivery", ack=False)
            await alpha.ack(ours.delivery_id, theirs.delivery_id)
            error = await alpha.receive()
            await wait_status(rt, ours.delivery_id, "sent")
        assert (error["type"], error["code"], error["field"]) == ("error", "unknown_delivery",
                                                                  "delivery_ids")
        assert theirs.delivery_id in error["message"]
        assert ours.delivery_id not in error["message"]
        assert (await rt.delivery_status(theirs.delivery_id)).status == "sending"


async def test_an_ack_up_to_seq_without_session_id_is_of_the_current_session(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        old = client.session_id
        first = await rt.notify(old, "in the old session")
        with trio.fail_after(10):
            await client.receive_until(lambda f: f["type"] == "delivery", ack=False)
            await client.message("/new")
            notice = (await client.receive_until(
                lambda f: f["type"] == "delivery" and f["session_id"] != old, ack=False))[-1]
            await client.ack_up_to(1)  # seq 1 of the new session: the /new notice
            await wait_status(rt, notice["delivery_id"], "sent")
        assert (await rt.delivery_status(first.delivery_id)).status == "sending"
