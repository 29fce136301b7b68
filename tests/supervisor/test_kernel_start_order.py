"""Children added while the supervisor starts or runs a group restart keep the start order.

README ("Children", "Strategies"): the children start in order, each ready before the next
starts, and a group restart starts its group again in start order. A child added meanwhile
comes after all the others, so it starts after them, not in the middle of the restart. A child
that adds a sibling during its own start is the exception: the restart waits for it, so
its sibling starts at once (else neither would ever be ready).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import SupervisorError
from tidings.supervisor import ChildSpec, open_supervisor

from .moment_children import child


def _slow_restart(journal, name_ready_after: float):
    """A journal worker whose incarnations after the first take ``name_ready_after`` to be
    ready (the first is ready at once)."""
    first = journal.worker()
    later = journal.worker(ready_after=name_ready_after)

    async def child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        await (first if ctx.incarnation == 1 else later)(ctx, task_status=task_status)

    return child


def _order(journal) -> list[tuple[object, ...]]:
    return [event[:3] for event in journal.of("start", "ready")]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_start_child_during_a_group_restart_waits_for_the_group(
        journal, autojump_clock, strategy):
    """b crashes; its group restart is starting b again (5 s to be ready). start_child("d")
    from the body meanwhile starts d once b and c are back, not beside b."""
    specs = [ChildSpec("a", journal.worker()), ChildSpec("b", _slow_restart(journal, 5.0)),
             ChildSpec("c", journal.worker())]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("b").send("crash")
        await journal.wait_for("start", "b", 2)
        asked = trio.current_time()
        await sup.start_child(ChildSpec("d", journal.worker()))
        assert trio.current_time() - asked == 5.0
        assert [(c.name, c.state) for c in sup.statistics().children] == [
            (name, "running") for name in "abcd"]
    group = "abc" if strategy == "one_for_all" else "bc"
    assert _order(journal)[6:] == [
        *((kind, name, 2) for name in group for kind in ("start", "ready")),
        ("start", "d", 1), ("ready", "d", 1)]


async def test_start_child_by_a_running_child_during_the_initial_start_comes_after_all(
        journal, autojump_clock):
    """a is ready and adds d while b still starts: d starts after c, the last of the
    initial children, not between b and c."""

    async def adds_a_sibling(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        await ctx.supervisor.start_child(ChildSpec("d", journal.worker()))
        journal.add("added", ctx)
        async for _ in ctx.mailbox:
            pass

    specs = [ChildSpec("a", adds_a_sibling), ChildSpec("b", journal.worker(ready_after=3.0)),
             ChildSpec("c", journal.worker())]
    async with open_supervisor(specs) as sup:
        await journal.wait_for("added", "a", 1)
        assert [c.name for c in sup.statistics().children] == ["a", "b", "c", "d"]
    assert _order(journal) == [
        ("start", "b", 1), ("ready", "b", 1), ("start", "c", 1), ("ready", "c", 1),
        ("start", "d", 1), ("ready", "d", 1)]


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


async def test_a_start_child_waiting_for_a_restart_is_refused_once_the_supervisor_stops(
        journal, autojump_clock):
    """The body leaves while its start_child (from a running child) waits for a group
    restart: once the restart is over the supervisor is stopping, and the child is refused
    as a late one is, never started."""
    told: list[str] = []

    async def adder(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for message in ctx.mailbox:
            if message == "add":
                try:
                    await ctx.supervisor.start_child(ChildSpec("late", journal.worker()))
                except SupervisorError as exc:
                    told.append(str(exc))

    specs = [ChildSpec("adder", adder, shutdown_timeout=None),
             ChildSpec("b", _slow_restart(journal, 5.0)), ChildSpec("c", journal.worker())]
    async with open_supervisor(specs, strategy="rest_for_one") as sup:
        await sup.mailbox("b").send("crash")
        await journal.wait_for("start", "b", 2)
        await sup.mailbox("adder").send("add")
        await trio.testing.wait_all_tasks_blocked()
    assert len(told) == 1
    assert "takes no new children" in told[0]
    assert ("start", "late", 1) not in [event[:3] for event in journal.events]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_child_waiting_to_add_a_sibling_is_not_deadlocked_by_its_own_stop(
        journal, autojump_clock, strategy):
    """x asks to add d while a group restart is under way: it waits for the restart. Then
    the restart stops x itself (shutdown_timeout None: it waits for x to end). Its wait for
    the restart ends there, refused (x is being stopped), so x ends and the restart goes on;
    it waited for x, and x for it, for ever."""
    told: list[str] = []

    async def x_child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for message in ctx.mailbox:
            if message == "add":
                try:
                    await ctx.supervisor.start_child(ChildSpec("d", journal.worker()))
                except SupervisorError as exc:
                    told.append(str(exc))

    specs = [ChildSpec("a", child(journal)),
             ChildSpec("x", x_child, shutdown_timeout=None),
             ChildSpec("b", child(journal, stops_in=5.0))]
    with trio.fail_after(100.0):
        async with open_supervisor(specs, strategy=strategy) as sup:
            await sup.mailbox("a").send("raise")
            await trio.sleep(1.0)  # the restart is stopping b (5 s)
            await sup.mailbox("x").send("add")
            await trio.sleep(10.0)
            assert [(c.name, c.state, c.incarnation) for c in sup.statistics().children] == [
                ("a", "running", 2), ("x", "running", 2), ("b", "running", 2)]
    assert len(told) == 1
    assert "is stopping child 'x': it does not add 'd'" in told[0]
    assert ("start", "d", 1) not in [event[:3] for event in journal.events]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_start_child_soon_during_a_group_restart_starts_after_the_group(
        journal, autojump_clock, strategy):
    """As start_child, but without waiting: added at once (its mailbox takes messages), it
    starts once b and c are back, and gets what was sent to it meanwhile."""
    specs = [ChildSpec("a", journal.worker()), ChildSpec("b", _slow_restart(journal, 5.0)),
             ChildSpec("c", journal.worker())]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("b").send("crash")
        await journal.wait_for("start", "b", 2)
        sup.start_child_soon(ChildSpec("d", journal.worker()))
        sup.mailbox("d").send_nowait("hello d")
        assert [c.name for c in sup.statistics().children] == ["a", "b", "c", "d"]
        assert await journal.wait_for("msg", "d", 1) == 5.0
    group = "abc" if strategy == "one_for_all" else "bc"
    assert _order(journal)[6:] == [
        *((kind, name, 2) for name in group for kind in ("start", "ready")),
        ("start", "d", 1), ("ready", "d", 1)]


@pytest.mark.parametrize("moment", ["stopped by the restart", "supervisor exits"])
async def test_start_child_soon_waiting_for_a_group_restart_can_be_stopped(
        journal, autojump_clock, moment):
    """d, added with start_child_soon while a's group restart runs, waits for it. Then b
    fails to start again (5 s on), so the restart goes round once more, d now in its group;
    or the supervisor exits. Either way d is stopped at once, not after its 100 s
    shutdown_timeout, and it never starts beside the restart (after it, it starts last).
    Its on_exit is called once."""
    exits: list[str] = []
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("b", child(journal, ready_after={2: 5.0}, fails_at_start={2: "raise"})),
             ChildSpec("c", child(journal))]
    async with open_supervisor(specs, strategy="one_for_all") as sup:
        await sup.mailbox("a").send("raise")
        await journal.wait_for("start", "b", 2)
        sup.start_child_soon(ChildSpec("d", child(journal), shutdown_timeout=100.0,
                                       on_exit=lambda: exits.append("d")))
        if moment == "stopped by the restart":
            await trio.sleep(20.0)
            assert [(c.name, c.state) for c in sup.statistics().children] == [
                (name, "running") for name in "abcd"]
        exited = trio.current_time()
    assert trio.current_time() - exited < 100.0
    starts = [event[1:3] for event in journal.of("start")]
    if moment == "supervisor exits":
        assert ("d", 1) not in starts
    else:
        assert starts[3:] == [("a", 2), ("b", 2), ("a", 3), ("b", 3), ("c", 2), ("d", 1)]
        assert journal.times[("start", "d", 1)] == 5.0
    assert exits == ["d"]
