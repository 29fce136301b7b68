"""Hunt: sessions the directory forgot (see channels/_directory.py)."""

from __future__ import annotations

import threading

import trio
from trio.testing import wait_all_tasks_blocked

from tidings.channels import ChannelConfig
from tidings.channels._command_handler import CLEARED
from tidings.store import Call
from tidings.supervisor.testing import writer_gate

from ..until import until
from .conftest import RecordingChannel
from .test_directory_memory import _cycle


async def test_a_notice_written_after_the_next_message_still_reaches_the_chat(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    assert rt.router.binding(old) is None  # forgotten
    await channel.say("again")  # hands back: nothing of the old session yet
    await channel.wait_for(lambda: "again" in channel.messages())
    handle = await rt.notify(old, "late news")  # a host writes in the old session now
    assert await handle.wait() == "unrouted"
    await channel.say("more")  # the conversation speaks again
    await channel.wait_for(lambda: "more" in channel.messages())
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: "late news" in channel.notices())



async def test_a_host_turn_still_running_in_a_left_session_keeps_it_bound(rt) -> None:
    """A serial turn the host opened in the session the conversation left (not one of the
    channel's turns) still runs at the next switch: its session stays bound, so what it
    sends reaches the chat at once (not ``unrouted`` until the chat speaks again)."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("hi")
    await channel.wait_idle()
    await channel.wait_for(lambda: channel.messages() == ["hi"])
    old = channel.events[0].session_id
    opened, go = trio.Event(), trio.Event()

    async def host_turn() -> None:
        async with rt.open_turn(old) as ctx:
            opened.set()
            await go.wait()
            handle = await ctx.output.send_text("host says")
            await handle.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(host_turn)
        # Open, not just blocked: opening writes the turn in a worker thread, and "all tasks
        # blocked" holds while it waits for that thread (a loaded machine ran both switches
        # before the turn existed, so nothing kept the session bound).
        await opened.wait()
        for n in range(2):  # the second switch forgets what the first one left
            await channel.say("/new")
            await channel.wait_for(lambda n=n: len(channel.notices()) == n + 1)
        go.set()
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: "host says" in channel.messages())


async def test_clear_as_the_first_command_after_a_restart_is_answered(rt) -> None:
    """``/clear`` answers in the session it clears: one this process never resolved (a
    fresh channel, as after a restart) must be bound for that answer to reach the chat."""
    first = RecordingChannel(rt, ChannelConfig(name="ops"))
    await first.say("hi")
    await first.wait_idle()
    await first.wait_for(lambda: first.messages() == ["hi"])
    first.close()
    second = RecordingChannel(rt, ChannelConfig(name="ops"))  # as after a restart
    await second.say("/clear")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await second.wait_for(lambda: CLEARED in second.notices())


async def test_resume_racing_an_unrouted_write_hands_that_row_back_first(rt) -> None:
    """``/resume`` of a forgotten session while its lane's ``unrouted`` write of a row is in
    flight (so no hand-back saw it yet): the row goes out before the answer, not never (or
    after newer rows, at the conversation's next message)."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    await channel.say("again")  # the hand-back after the forget is done
    await channel.wait_for(lambda: "again" in channel.messages())
    await channel.wait_idle()
    assert rt.router.binding(old) is None
    await rt.notify(old, "late news")  # committed queued; its lane finds no route ...
    async with writer_gate(rt.store) as gate:  # ... and its unrouted write waits here
        await wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(channel.say, f"/resume {old}")
            await wait_all_tasks_blocked()
            gate.release()
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: f"Resumed session {old}." in channel.notices())
        await channel.wait_for(lambda: "late news" in channel.notices())
    notices = channel.notices()
    assert notices.index("late news") < notices.index(f"Resumed session {old}.")

class _Gate:
    """A hand-made writer gate: a ``Call`` that holds the writer thread until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def hold(self, conn: object) -> None:
        self.entered.set()
        self.opened.wait()

    async def wait_entered(self) -> None:
        await trio.to_thread.run_sync(self.entered.wait, abandon_on_cancel=True)


async def test_a_send_being_written_at_the_switch_keeps_its_session_bound(rt) -> None:
    """A host's notice in the old session whose write is in flight when ``/new`` commits is
    delivered (the session stays bound: the send reserved its idle lane), not left
    ``unrouted`` until the chat speaks."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("hi")
    await channel.wait_idle()
    await channel.wait_for(lambda: channel.messages() == ["hi"])
    old = channel.events[0].session_id
    g1, g2, g3 = _Gate(), _Gate(), _Gate()
    # Each step waits for the write it starts to be in the writer's mailbox, not for "all
    # tasks blocked": that also holds while /new and the notice read in a worker thread
    # before they write, so on a loaded machine g2 or g3 went into the mailbox first and the
    # batches were not the ones this test is about (the notice then never reached the chat).
    queued = rt.supervisor.mailbox("writer")
    async with trio.open_nursery() as nursery:
        try:
            with trio.fail_after(10):  # a guard against hanging, not a wait
                nursery.start_soon(rt.store.commit, [Call(g1.hold)])
                await g1.wait_entered()
                nursery.start_soon(channel.say, "/new")  # its write waits behind g1
                await until(lambda: queued.depth == 1)
                nursery.start_soon(rt.store.commit, [Call(g2.hold)])  # same batch as /new's write
                await until(lambda: queued.depth == 2)
                g1.opened.set()
                await g2.wait_entered()  # /new's write is in the writer now, not committed
                nursery.start_soon(rt.notify, old, "late news")  # written in the next batch
                await until(lambda: queued.depth == 1)
                nursery.start_soon(rt.store.commit, [Call(g3.hold)])  # ... which g3 holds
                await until(lambda: queued.depth == 2)
                g2.opened.set()
                await g3.wait_entered()  # /new committed; the notice's write is in flight
                await until(lambda: queued.depth == 1)  # the switch ran: its answer waits too
        finally:
            for gate in (g1, g2, g3):
                gate.opened.set()
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: "late news" in channel.notices())
