"""README (Deliveries and acks): an ack has exactly one of ``delivery_ids``, ``up_to_seq`` and
``message_ids``; two are ``missing_field`` naming ``delivery_ids``, whatever the values. That
check comes first for every form: an ``up_to_seq`` that is no seq beside ``delivery_ids`` was
answered ``bad_field`` naming ``up_to_seq`` (it alone was read before the count), and the
client fixed the seq only to be told then that the frame has two forms. Nothing is confirmed."""

from __future__ import annotations

import pytest
import trio


@pytest.mark.parametrize("extra", [{"up_to_seq": -1}, {"up_to_seq": "3"},
                                   {"message_ids": 5}])
async def test_an_ack_with_two_forms_is_missing_field_whatever_their_values(
        rt, serve_gateway, connect, extra) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        handle = await rt.notify(client.session_id, "one")
        with trio.fail_after(10):
            await client.receive_until(lambda f: f["type"] == "delivery", ack=False)
            # Raw: GatewayClient's ack methods send one form each.
            await client.send({"type": "ack", "delivery_ids": [handle.delivery_id], **extra,
                               "id": "a1"})
            error = await client.receive()
        assert (error["type"], error["code"], error["field"], error["ref"]) == (
            "error", "missing_field", "delivery_ids", "a1")
        assert (await rt.delivery_status(handle.delivery_id)).status == "sending"


async def test_an_ack_of_up_to_seq_alone_that_is_no_seq_is_bad_field(
        rt, serve_gateway, connect) -> None:
    """One form, a bad value: ``bad_field`` naming it (as a message's bad ``id``)."""
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        with trio.fail_after(10):
            await client.send({"type": "ack", "up_to_seq": "3"})
            error = await client.receive()
        assert (error["type"], error["code"], error["field"]) == ("error", "bad_field",
                                                                  "up_to_seq")
