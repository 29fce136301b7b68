"""Mailboxes belong to the child's name: they survive crashes, bound senders, close for good."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import MailboxClosedError, SupervisorError
from tidings.supervisor import ChildSpec, open_supervisor


async def test_buffered_messages_survive_a_crash_and_the_crashing_one_is_not_retried(
        journal, autojump_clock):
    async with open_supervisor([ChildSpec("a", journal.worker())]) as sup:
        mailbox = sup.mailbox("a")
        for message in ("crash", 1, 2, 3):
            mailbox.send_nowait(message)  # no checkpoint: all four are buffered at once
        assert mailbox.depth == 3  # "crash" went straight to the waiting child
        await trio.testing.wait_all_tasks_blocked()
        assert mailbox.depth == 0
    assert [event[2:] for event in journal.of("msg")] == [
        (1, "crash"), (2, 1), (2, 2), (2, 3)]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_sibling_stopped_for_a_group_restart_keeps_its_mailbox(
        journal, autojump_clock, strategy):
    async def slow(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for message in ctx.mailbox:
            journal.add("msg", ctx, message)
            await trio.sleep(1.0)
        journal.add("stop", ctx)

    # a takes 5 s to be ready, so b stays down that long in the group restart
    specs = [ChildSpec("a", journal.worker(ready_after=5.0)),
             ChildSpec("b", slow, mailbox_size=10)]
    async with open_supervisor(specs, strategy=strategy) as sup:
        for n in range(3):
            sup.mailbox("b").send_nowait(n)
        await trio.testing.wait_all_tasks_blocked()  # b is handling 0
        await sup.mailbox("a").send("crash")
        await journal.wait_for("stop", "b", 1)
        for n in range(3, 5):
            await sup.mailbox("b").send(n)  # b is down: kept for incarnation 2
        assert sup.statistics().children[1].state == "restarting"
        assert sup.statistics().children[1].mailbox_depth == 2
        await journal.wait_for("msg", "b", 2, 4)
    handled = [event[2:] for event in journal.of("msg") if event[1] == "b"]
    assert [message for _, message in handled] == [0, 1, 2, 3, 4]  # nothing lost, in order
    assert handled[:3] == [(1, 0), (1, 1), (1, 2)]  # drained by the ladder before restart


async def test_send_nowait_raises_would_block_when_full_and_send_waits(journal, autojump_clock):
    gate = trio.Event()

    async def gated(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        await gate.wait()
        async for message in ctx.mailbox:
            journal.add("msg", ctx, message)

    async with open_supervisor([ChildSpec("a", gated, mailbox_size=2)]) as sup:
        mailbox = sup.mailbox("a")
        mailbox.send_nowait(1)
        mailbox.send_nowait(2)
        with pytest.raises(trio.WouldBlock):
            mailbox.send_nowait(3)
        stats = mailbox.statistics()
        assert (stats.name, stats.depth, stats.capacity, stats.closed) == ("a", 2, 2, False)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mailbox.send, 3)
            await trio.testing.wait_all_tasks_blocked()
            assert mailbox.statistics().senders_waiting == 1
            gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert sup.statistics().children[0].mailbox_depth == 0
    assert [event[3] for event in journal.of("msg")] == [1, 2, 3]


async def test_a_stopped_child_s_mailbox_is_closed_for_senders(journal, autojump_clock):
    async with open_supervisor([ChildSpec("a", journal.worker())]) as sup:
        mailbox = sup.mailbox("a")
        mailbox.send_nowait("last")
        await sup.stop_child("a")
        with pytest.raises(MailboxClosedError) as caught:
            await mailbox.send("late")
        assert caught.value.child == "a"
        with pytest.raises(MailboxClosedError):
            mailbox.send_nowait("late")
        assert mailbox.statistics().closed
        with pytest.raises(SupervisorError) as unknown:
            sup.mailbox("a")
        assert unknown.value.child == "a"
    assert [event[3] for event in journal.of("msg")] == ["last"]  # drained before it ended


async def test_a_sender_blocked_on_a_full_mailbox_is_released_when_it_closes(journal,
                                                                             autojump_clock):
    async def deaf(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        await trio.sleep_forever()

    errors: list[BaseException] = []

    async def blocked_send(mailbox) -> None:
        try:
            await mailbox.send("never")
        except MailboxClosedError as exc:
            errors.append(exc)

    spec = ChildSpec("deaf", deaf, mailbox_size=0, shutdown_timeout=1.0)
    async with open_supervisor([spec]) as sup, trio.open_nursery() as nursery:
        nursery.start_soon(blocked_send, sup.mailbox("deaf"))
        await trio.testing.wait_all_tasks_blocked()
        await sup.stop_child("deaf")
    assert [type(exc) for exc in errors] == [MailboxClosedError]


async def test_every_mailbox_is_closed_after_the_supervisor_exits(journal, autojump_clock):
    async with open_supervisor([ChildSpec(name, journal.worker()) for name in "ab"]) as sup:
        mailboxes = [sup.mailbox(name) for name in "ab"]
    for mailbox in mailboxes:
        with pytest.raises(MailboxClosedError):
            await mailbox.send("x")


async def test_receive_and_receive_nowait(autojump_clock):
    got: list[object] = []

    async def explicit(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        got.append(await ctx.mailbox.receive())
        got.append(ctx.mailbox.receive_nowait())
        with pytest.raises(trio.WouldBlock):
            ctx.mailbox.receive_nowait()
        with pytest.raises(trio.EndOfChannel):
            await ctx.mailbox.receive()  # the ladder closes it
        got.append("ended")

    async with open_supervisor([ChildSpec("a", explicit)]) as sup:
        sup.mailbox("a").send_nowait(1)
        sup.mailbox("a").send_nowait(2)
        await trio.testing.wait_all_tasks_blocked()
    assert got == [1, 2, "ended"]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_group_restart_ends_every_receiver_of_a_sibling_not_just_the_last_to_wait(
        journal, autojump_clock, strategy):
    # A child may serve its mailbox from several tasks (a pool of workers). One worker is
    # handling a message when the group restart begins, the other waits in receive: both
    # must leave their loop, so the sibling ends on its own, not killed by its timeout
    # (or, with shutdown_timeout=None, the group restart never ending).
    async def pool(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        journal.add("start", ctx)

        async def worker(n: int) -> None:
            async for message in ctx.mailbox:
                journal.add("msg", ctx, n, message)
                await trio.sleep(1.0)
            journal.add("stop", ctx, n)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(worker, 0)  # it waits first: the first message is its
            nursery.start_soon(worker, 1)
            task_status.started()

    specs = [ChildSpec("b", journal.worker()), ChildSpec("pool", pool, shutdown_timeout=None)]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("pool").send("work")  # worker 0 takes it, worker 1 is waiting
        await journal.wait_for("msg", "pool", 1)
        started = trio.current_time()
        await sup.mailbox("b").send("crash")
        with trio.fail_after(60):
            await journal.wait_for("start", "pool", 2)
        assert trio.current_time() - started == 1.0  # worker 0 finished its message, no more
        assert sorted(event[3] for event in journal.of("stop") if event[1] == "pool") == [0, 1]
        await trio.testing.wait_all_tasks_blocked()
        assert [(c.name, c.incarnation, c.state) for c in sup.statistics().children] == [
            ("b", 2, "running"), ("pool", 2, "running")]
