"""``dedupe_message_ids``: a twin that arrives while the first delivery of its message id is
still being handled waits for that first one's end. Answered ``duplicate`` at once, it was
acknowledged for a message that may never be handled: the first delivery can still fail or be
cut (the platform gave up on that request, which is why it delivered the message again)."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)
HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def test_a_twin_of_a_delivery_cut_before_it_was_accepted_is_handled(
        db_path, workspace) -> None:
    agent = GatedAgent(block=False)
    twin: list[str] = []
    first = trio.CancelScope()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        writer = rt.supervisor.mailbox("writer")

        async def deliver_first() -> None:
            with first:
                await channel.say("hello", message_id="m1")

        async def retry() -> None:
            twin.append(await channel.say("hello", message_id="m1"))

        with trio.fail_after(HANG):
            async with trio.open_nursery() as nursery, writer_gate(rt.store) as gate:
                before = writer.depth
                nursery.start_soon(deliver_first)
                # Its first write (the conversation's session) waits behind the gate,
                # before anything accepts the message. "All tasks blocked" is no such
                # point: it also holds while the first is in a worker thread (its id's
                # look-up, a session read) or while its later writes are in flight.
                await until(lambda: writer.depth > before)
                nursery.start_soon(retry)
                # The twin waits for the first's end: no I/O comes before that wait.
                await trio.testing.wait_all_tasks_blocked()
                assert twin == []
                first.cancel()  # the platform dropped the first request
                gate.release()
            await channel.wait_idle()
    assert first.cancelled_caught  # cut, not handled
    assert twin == ["started"]
    assert [turn.text for turn in agent.turns] == ["hello"]


async def test_a_twin_of_a_delivery_that_raised_is_handled(db_path, workspace) -> None:
    twin: list[str] = []
    first: list[BaseException] = []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        channel.platform.stall()
        # The platform refuses the first answer only.
        channel.platform.fail = lambda outbound: outbound is channel.platform.attempted[0]

        async def deliver_first() -> None:
            try:
                await channel.say("/help", message_id="m1")
            except ConnectionError as exc:  # the first delivery's request fails
                first.append(exc)

        async def retry() -> None:
            twin.append(await channel.say("/help", message_id="m1"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(deliver_first)
            await channel.platform.wait_attempted(1)
            nursery.start_soon(retry)
            await trio.testing.wait_all_tasks_blocked()
            channel.platform.release()
        assert len(first) == 1
        assert twin == ["command"]  # answered by the retry, not dropped as a duplicate
        assert channel.platform.texts()[0].startswith("Commands:")
        assert await channel.say("/help", message_id="m1") == "duplicate"
