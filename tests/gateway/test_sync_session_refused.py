"""A ``sync`` naming a session the client may not name (another conversation's, one that does
not exist) is refused as a bad ``session_id`` (README, Errors: ``bad_field``, a field with the
wrong value, names it). It was answered ``unknown_delivery``, the code the README and
``ERROR_CODES`` keep for an ack of another conversation's deliveries: a sync names none."""

from __future__ import annotations

import pytest
import trio

from tidings.channels._gateway_frames import ERROR_CODES


@pytest.mark.parametrize("whose", ["another conversation", "none"])
async def test_a_sync_naming_a_session_it_may_not_is_a_bad_session_id(
        rt, serve_gateway, connect, is_frame, whose) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "beta") as other:
            foreign = other.session_id
        named = foreign if whose == "another conversation" else "session_nobody_has"
        async with connect(url, "alpha") as client:
            await client.sync(named)
            with trio.fail_after(10):
                [*_, refused] = await client.receive_until(is_frame("error"))
            assert refused == {"type": "error", "code": "bad_field", "field": "session_id",
                               "message": "sync.session_id: not a session of this "
                                          "conversation"}
            assert refused["code"] in ERROR_CODES
            await client.sync()  # the connection goes on
            with trio.fail_after(10):
                [*_, synced] = await client.receive_until(is_frame("synced"))
            assert synced["session_id"] == client.session_id
