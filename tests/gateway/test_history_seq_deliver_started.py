"""A welcome's ``history_seq`` counts a row as history only if it went out before the
connection joined (README, the ``welcome`` frame). A row whose gateway ``deliver()`` had begun
but not yet queued its frame on the connections (its first schedule point comes before the
broadcast) had gone to no device, yet a welcome built at that point counted it at or below
``history_seq``; the new connection was then sent it live. A client that reconnects with
``after_seq`` from there (``tidings chat``), dropped before it read the row, has it confirmed
``sent`` unseen.

Any other task may run any number of steps at a schedule point; which ones run there is the
scheduler's (random) choice, so the test makes the one it needs certain: the lane's task is
parked at its first schedule point inside ``deliver()`` (``trio.lowlevel.checkpoint`` wrapped,
for that task only) while a second device says hello. A real gateway (real time, as the other
gateway tests)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from .conftest import DeliverParking

CONVERSATION = "started"


async def test_a_row_in_deliver_not_yet_broadcast_at_the_welcome_is_above_history_seq(
        rt, serve_gateway, connect, is_frame, monkeypatch: pytest.MonkeyPatch) -> None:
    parking = DeliverParking(rt)

    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as other:
                await other.message("hello", message_id="o1")
                [*_, reply] = await other.receive_until(is_frame("delivery", kind="message"))
                session_id = parking.session_id = reply["session_id"]
                while not rt.dispatcher.settled(session_id):  # its ack recorded: idle
                    await trio.testing.wait_all_tasks_blocked()
                monkeypatch.setattr(trio.lowlevel, "checkpoint", parking.checkpoint)
                handle = await rt.notify(session_id, "news")
                await parking.parked.wait()  # in deliver(), not broadcast yet
                async with connect(url, CONVERSATION) as late:
                    welcome = late.welcome
                    parking.go.set()
                    [*_, frame] = await late.receive_until(is_frame("delivery", text="news"))
                assert await handle.wait() == "delivered"
    # It came to the late connection as rows come: not history.
    assert frame["seq"] > welcome["history_seq"], (frame["seq"], welcome)
