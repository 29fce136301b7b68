"""A connection the server closes (flooding ``4029``, too slow ``4009``, heartbeat ``4008``, a
stop's ``1001``) gets that code and reason even when its leave is slow (the store busy): the
leave and the close handshake shared one 2 s bound, so a leave that used it up left the close
none, and the client saw a plain ``1000`` with no reason, a normal closure it was not."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.channels import GatewayClosed
from tidings.testing import writer_gate

from ..real_time import fail_after_real


async def _until_closed(client) -> None:
    while True:
        await client.receive()


async def test_a_flooding_client_is_told_4029_while_its_leave_waits_for_the_store(
        rt, serve_gateway, connect, mock_clock) -> None:
    async with serve_gateway(rt, rate=1, burst=2) as (gateway, url), \
            connect(url, "alpha") as client:
        await rt.notify(client.session_id, "unacked")  # the leave has a row to abandon
        with fail_after_real(10):
            assert (await client.receive())["type"] == "delivery"
        leaving = trio.Event()
        original = gateway._leave

        async def leave(conn) -> None:
            leaving.set()
            await original(conn)

        gateway._leave = leave
        async with writer_gate(rt.store) as gate:  # every store write waits from now on
            for _ in range(4):
                await client.send({"type": "ping"})
            with fail_after_real(10):
                await leaving.wait()  # killed 4029; its leave waits for the writer
            mock_clock.jump(3)  # past the leave's bound: the close has its own
            with fail_after_real(10), pytest.raises(GatewayClosed) as closed:
                await _until_closed(client)
            gate.release()
        assert closed.value.code == 4029
        assert closed.value.reason.startswith("flooding")
