"""tidings serve's stop and a connected client that does not ack.

The stop gives connected clients what is on its way and a moment to ack it. A client that
was written everything and says nothing does not ack: the stop waited for it the whole
grace (``serve.grace``, after the turns were done), though nothing is lost by ending sooner
(its unacked rows become ``unknown``, replayed at its next hello with ``after_seq``). It now
ends once such a client has been silent ``_ACK_SILENCE`` seconds; a client that acks within
that still has its rows ``sent``."""

from __future__ import annotations

import functools

import trio

import tidings
from tidings.channels import GatewayClient, _gateway
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl

from ..real_time import fail_after_real

TOKEN = "serve-test-token"
GRACE = 60.0


def _config(tmp_path):
    return load_config(db=str(tmp_path / "serve.db"), port=0, token=TOKEN,
                       workspace=str(tmp_path), grace=GRACE)


async def _status(tmp_path, delivery_id: str) -> str:
    async with tidings.open_runtime(tmp_path / "serve.db", workspace=tmp_path) as rt:
        return (await rt.delivery_status(delivery_id)).status


async def _stop_after_reply(tmp_path, *, ack_after: float | None) -> tuple[float, str]:
    """Serve, have a client get the echo of one message, stop: the seconds the stop took
    and the reply's status after it. With *ack_after*, the client acks the reply that many
    seconds after the stop was requested, else never."""
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, _config(tmp_path), control))
        async with GatewayClient.connect(info.url, token=TOKEN, conversation="a") as client:
            await client.message("hi")
            reply = (await client.receive_until(
                lambda f: f["type"] == "delivery", ack=False))[-1]
            start = trio.current_time()
            control.request("test")
            if ack_after is not None:
                await trio.sleep(ack_after)
                await client.ack(reply["delivery_id"])
            with trio.move_on_after(GRACE + 60):  # the server closes it (1001)
                while True:
                    try:
                        await client.receive()
                    except tidings.channels.GatewayClosed:
                        break
    return trio.current_time() - start, await _status(tmp_path, reply["delivery_id"])


async def test_a_client_that_does_not_ack_does_not_hold_the_stop_for_the_grace(
        tmp_path, autojump_clock) -> None:
    with fail_after_real(60):
        took, status = await _stop_after_reply(tmp_path, ack_after=None)
    assert took < 3 * _gateway._ACK_SILENCE, f"the stop took {took:g} s of a {GRACE:g} s grace"
    assert status == "unknown"  # durable: replayed at its next hello with after_seq


async def test_a_client_that_acks_within_the_silence_bound_has_its_row_sent(
        tmp_path, autojump_clock) -> None:
    with fail_after_real(60):
        _took, status = await _stop_after_reply(tmp_path, ack_after=_gateway._ACK_SILENCE / 2)
    assert status == "sent"
