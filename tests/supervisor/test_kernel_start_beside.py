"""A child added while the supervisor starts or runs a group restart starts at once, beside it.

README ("Changing children while it runs"): ``start_child`` does not wait for a running start
or group restart. Waiting would hang a running child that adds a worker while a starting
sibling waits for its answer: the start waits for the sibling, the sibling for the running
child, and that child for the start. A child that adds a sibling during its own start is the
same: the start waits for it.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.supervisor import ChildSpec, open_supervisor


def _slow_restart(journal, ready_after: float):
    """A journal worker whose incarnations after the first take *ready_after* seconds to be
    ready (the first is ready at once)."""
    first = journal.worker()
    later = journal.worker(ready_after=ready_after)

    async def child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        await (first if ctx.incarnation == 1 else later)(ctx, task_status=task_status)

    return child


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
@pytest.mark.parametrize("moment", ["initial start", "group restart"])
async def test_a_running_child_adds_a_worker_a_starting_sibling_waits_for(
        autojump_clock, strategy, moment):
    """a (running) serves requests by adding a worker; b's start asks a for one and waits for
    the answer before it is ready. The start (or restart) waits for b, b for a: a's
    start_child must not wait for the start, or nothing is ever ready."""

    async def worker(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            pass

    async def pool(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for answered in ctx.mailbox:
            await ctx.supervisor.start_child(ChildSpec(f"w{ctx.incarnation}", worker))
            answered.set()

    async def asks_at_start(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        if moment == "initial start" or ctx.incarnation > 1:
            answered = trio.Event()
            await ctx.supervisor.mailbox("a").send(answered)
            await answered.wait()
        task_status.started()
        async for message in ctx.mailbox:
            if message == "crash":
                raise ValueError("b crashed")

    specs = [ChildSpec("a", pool), ChildSpec("b", asks_at_start)]
    began = trio.current_time()
    async with open_supervisor(specs, strategy=strategy) as sup:
        if moment == "group restart":
            await sup.mailbox("b").send("crash")
            await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() - began == 0.0  # no start waited out its start_timeout
        children = sup.statistics().children
    assert [c.name for c in children][:2] == ["a", "b"]
    assert len(children) == 3  # the worker b's start asked for
    assert {c.state for c in children} == {"running"}


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_start_child_during_a_group_restart_starts_at_once(
        journal, autojump_clock, strategy):
    """b crashes; its group restart is starting b again (5 s to be ready). start_child("d")
    from the body meanwhile starts d at once, beside b, and returns when d is ready."""
    specs = [ChildSpec("a", journal.worker()), ChildSpec("b", _slow_restart(journal, 5.0)),
             ChildSpec("c", journal.worker())]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("b").send("crash")
        await journal.wait_for("start", "b", 2)
        asked = trio.current_time()
        await sup.start_child(ChildSpec("d", journal.worker()))
        assert trio.current_time() - asked == 0.0
        await journal.wait_for("ready", "c", 2)
        assert [(c.name, c.state) for c in sup.statistics().children] == [
            (name, "running") for name in "abcd"]


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
@pytest.mark.parametrize("moment", ["initial start", "group restart"])
async def test_a_child_that_adds_a_sibling_during_its_own_start_is_not_deadlocked(
        journal, autojump_clock, strategy, moment):
    """b starts d (and d starts e) before b reports readiness. The start (or the restart)
    waits for b, so d and e start at once, and nobody waits out a start_timeout."""

    async def needs_a_sibling(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        journal.add("start", ctx)
        if moment == "initial start" or ctx.incarnation > 1:
            await ctx.supervisor.start_child(ChildSpec(f"d{ctx.incarnation}", d_child))
        task_status.started()
        async for message in ctx.mailbox:
            if message == "crash":
                raise ValueError("b crashed")

    async def d_child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        await ctx.supervisor.start_child(ChildSpec(f"e{ctx.name}", journal.worker()))
        task_status.started()
        async for _ in ctx.mailbox:
            pass

    specs = [ChildSpec("a", journal.worker()), ChildSpec("b", needs_a_sibling),
             ChildSpec("c", journal.worker())]
    with trio.fail_after(1.0):  # a start_timeout is 10 s: no start may wait it out
        async with open_supervisor(specs, strategy=strategy) as sup:
            if moment == "group restart":
                await sup.mailbox("b").send("crash")
                await trio.testing.wait_all_tasks_blocked()
            names = [c.name for c in sup.statistics().children]
            states = {c.state for c in sup.statistics().children}
    n = 1 if moment == "initial start" else 2
    assert names == ["a", "b", "c", f"d{n}", f"ed{n}"]
    assert states == {"running"}
    assert len(sup.restart_log) == n - 1
