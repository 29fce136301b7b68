"""README (Deliveries and acks; Retention): a device that acks by id a delivery another device
of the conversation acked first, after retention pruned it (``rt.prune``, ``[retention]
keep``), acks nothing that is still owed: the row was ``sent`` and is gone. It was answered
``unknown_delivery``, "not deliveries of this conversation", which they were: a client took
its own conversation's row for a foreign one. Such an ack is ignored with no error, as an ack
of a row already acked is; an ack naming another conversation's delivery is still refused."""

from __future__ import annotations

import trio


async def test_an_ack_of_a_delivery_acked_then_pruned_is_no_error(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as phone, \
            connect(url, "beta") as beta:
        with trio.fail_after(20):
            async with connect(url, "alpha") as laptop:
                handle = await rt.notify(phone.session_id, "hello both")
                await phone.receive_until(lambda f: f["type"] == "delivery", ack=False)
                await laptop.receive_until(lambda f: f["type"] == "delivery")  # acks it
                await wait_status(rt, handle.delivery_id, "sent")
            report = await rt.prune(older_than=0)
            assert report.deliveries >= 1
            foreign = await rt.notify(beta.session_id, "for beta")
            await beta.receive_until(lambda f: f["type"] == "delivery", ack=False)
            # The phone acks what it got (sent on its own connection), and then again on a
            # connection that was not sent it (a client that acks after a reconnect).
            await phone.ack(handle.delivery_id)
            async with connect(url, "alpha") as again:
                await again.ack(handle.delivery_id)
                await again.ack(foreign.delivery_id)
                await again.sync()
                frames = await again.receive_until(lambda f: f["type"] == "synced")
            await phone.sync()
            frames += await phone.receive_until(lambda f: f["type"] == "synced")
    errors = [frame for frame in frames if frame["type"] == "error"]
    assert [(e["code"], e["field"]) for e in errors] == [("unknown_delivery", "delivery_ids")]
    assert foreign.delivery_id in errors[0]["message"]
    assert handle.delivery_id not in errors[0]["message"]
