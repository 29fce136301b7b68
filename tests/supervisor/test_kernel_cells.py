"""The failure matrix's cells the moments did not have yet.

A fault plan's fault at a restart's start, at a child's stop, and at the start that ends a
restart's backoff; a nested supervisor giving up while its parent runs a group restart; a
``KeyboardInterrupt`` in one child while another is in its shutdown ladder; a sibling crash
while a child ignores its cancellation past its ``shutdown_timeout``. Each checks the README's
promise: the restart records, the failure named, every child stopped in reverse start order
(or by the ladder, past its timeout), and no task left running.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from tidings.errors import InjectedFault
from tidings.supervisor import (
    Backoff,
    ChildSpec,
    FaultPlan,
    FaultRule,
    InjectionRecord,
    Intensity,
    Seam,
    open_supervisor,
    supervisor_child,
)

from .moment_children import child, later_starts

STRATEGIES = ("one_for_one", "one_for_all", "rest_for_one")
GROUPS = ("one_for_all", "rest_for_one")
ACTIONS = ("raise", "cancel")
ROOMY = Intensity(max_restarts=5, period=60.0)


def _log(sup) -> list[tuple[object, ...]]:
    return [(r.child, r.action, r.error_type, r.incarnation) for r in sup.restart_log]


def _ended_in_reverse(journal, names: str) -> None:
    """The last incarnations of ``names`` ended in reverse start order at the exit."""
    last = {}
    for index, event in enumerate(journal.events):
        if event[0] == "ended":
            last[event[1]] = index
    assert sorted(names, key=lambda name: last[name]) == list(reversed(names))


def _all_stopped(sup, state: str) -> None:
    stats = sup.statistics()
    assert stats.state == state
    assert {c.state for c in stats.children} <= {"stopped"}
    for c in stats.children:
        assert sup.mailbox(c.name).statistics().closed


# --- fault plan: at a restart's start, at a stop, at the start after a backoff ------------------


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_fault_at_a_restarts_start_is_a_counted_crash_of_it(
        journal, autojump_clock, live_tasks, strategy, action):
    """b crashes; the fault plan fails its next incarnation's start (child_start, hit 2,
    before it is ready). That is a crash of b like any other: recorded ``restart`` and
    counted, its group restarted again; a child the failed group restart had not reached yet
    (c) starts once, in the second."""
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="b", action=action, nth=2)])
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("b", child(journal, ready_after={2: 1.0})),
             ChildSpec("c", child(journal))]
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy, intensity=ROOMY,
                               fault_plan=plan) as sup:
        await sup.mailbox("b").send("raise")
        await trio.testing.wait_all_tasks_blocked()
        stats = sup.statistics()
    assert plan.injected == [InjectionRecord("b", "child_start", action, 2)]
    assert _log(sup) == [("b", "restart", "Boom", 1), ("b", "restart", "InjectedFault", 2)]
    assert stats.restarts == 2
    expected = {"one_for_one": (1, 3, 1), "one_for_all": (3, 3, 2),
                "rest_for_one": (1, 3, 2)}[strategy]
    assert [(c.name, c.state, c.incarnation) for c in stats.children] == [
        (name, "running", n) for name, n in zip("abc", expected, strict=True)]
    _ended_in_reverse(journal, "abc")
    _all_stopped(sup, "stopped")
    assert live_tasks() == before


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(("strategy", "moment"), [
    *((strategy, "exit") for strategy in STRATEGIES),
    *((strategy, "group restart") for strategy in GROUPS)])  # one_for_one stops no sibling
async def test_a_fault_at_a_childs_stop_is_an_error_while_stopping(
        journal, autojump_clock, live_tasks, strategy, moment, action):
    """The fault plan fails b as its ladder begins (shutdown, hit 1): at the exit, or as a
    group restart stops it (one_for_all: c crashed; rest_for_one: a crashed). It is recorded
    ``shutdown_error``, never restarted on its own account nor counted: the group restart
    starts it again with the others, and the exit still stops every child in reverse order."""
    plan = FaultPlan([FaultRule(Seam.SHUTDOWN, child="b", action=action, nth=1)])
    specs = [ChildSpec(name, child(journal)) for name in "abc"]
    crasher = "c" if strategy == "one_for_all" else "a"
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy, intensity=ROOMY,
                               fault_plan=plan) as sup:
        if moment == "group restart":
            await sup.mailbox(crasher).send("raise")
            await trio.testing.wait_all_tasks_blocked()
            stats = sup.statistics()
            assert [(c.name, c.state, c.incarnation) for c in stats.children] == [
                (name, "running", 2) for name in "abc"]
            assert stats.restarts == 1
    assert plan.injected == [InjectionRecord("b", "shutdown", action, 1)]
    expected = [("b", "shutdown_error", "InjectedFault", 1)]
    if moment == "group restart":
        expected.insert(0, (crasher, "restart", "Boom", 1))
    assert _log(sup) == expected
    _ended_in_reverse(journal, "abc")
    _all_stopped(sup, "stopped")
    assert live_tasks() == before


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_fault_at_the_start_that_ends_a_backoff_doubles_the_next(
        journal, autojump_clock, live_tasks, strategy, action):
    """b (Backoff 1 s, doubling, no jitter) crashes at 0; the start that ends its backoff,
    at 1 s, is failed by the fault plan. That crash of b waits out 2 s more before b starts
    again (at 3 s); its group waits with it (c starts at 3 s; one_for_all's a, started at
    once, is stopped and started again at 1 s), and nothing else is delayed."""
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="b", action=action, nth=2)])
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("b", child(journal, ready_after={2: 0.5}),
                       backoff=Backoff(min=1.0, max=8.0, jitter=0.0)),
             ChildSpec("c", child(journal))]
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy, intensity=ROOMY,
                               fault_plan=plan) as sup:
        await sup.mailbox("b").send("raise")
        await trio.sleep(10.0)
        stats = sup.statistics()
    assert _log(sup) == [("b", "restart", "Boom", 1), ("b", "restart", "InjectedFault", 2)]
    starts = {
        "one_for_one": [("b", 2, 1.0), ("b", 3, 3.0)],
        "one_for_all": [("a", 2, 0.0), ("b", 2, 1.0), ("a", 3, 1.0), ("b", 3, 3.0),
                        ("c", 2, 3.0)],
        "rest_for_one": [("b", 2, 1.0), ("b", 3, 3.0), ("c", 2, 3.0)],
    }[strategy]
    if action == "raise":  # raised before b's function ran: b2 never journaled its start
        starts.remove(("b", 2, 1.0))
    assert later_starts(journal) == starts
    assert {c.state for c in stats.children} == {"running"}
    _ended_in_reverse(journal, "abc")
    _all_stopped(sup, "stopped")
    assert live_tasks() == before


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_fault_at_a_send_to_a_child_in_its_backoff(
        journal, autojump_clock, live_tasks, strategy, action, caplog):
    """b crashes and waits out a 10 s backoff; at 1 s a send to it hits the fault plan (send,
    hit 2). ``cancel`` has no incarnation to land in: logged ``fault_missed``, the message
    kept for b's next incarnation, which takes it at 10 s; ``raise`` fails that send
    (nothing is sent). Either way the backoff is not cut short nor a crash made of the
    fault: b is back at 10 s, and ``inject_cancel`` meanwhile finds nothing to cancel."""
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    plan = FaultPlan([FaultRule(Seam.SEND, child="b", action=action, nth=2)])
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("b", child(journal), backoff=Backoff(min=10.0, jitter=0.0)),
             ChildSpec("c", child(journal))]
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy, intensity=ROOMY,
                               fault_plan=plan) as sup:
        await sup.mailbox("b").send("raise")
        await trio.sleep(1.0)
        assert sup.statistics().children[1].state == "backoff"
        harmless = "never ready"  # (a message moment_children's child reads and goes on)
        if action == "raise":
            with pytest.raises(InjectedFault):
                await sup.mailbox("b").send(harmless)
        else:
            await sup.mailbox("b").send(harmless)
        assert sup.statistics().children[1].mailbox_depth == (action == "cancel")
        assert not sup.inject_cancel("b")
        await trio.sleep(20.0)
        stats = sup.statistics()
    assert plan.injected == [InjectionRecord("b", "send", action, 2)]
    assert ("fault_missed" in caplog.text) == (action == "cancel")
    assert later_starts(journal) == {
        "one_for_one": [("b", 2, 10.0)],
        "one_for_all": [("a", 2, 0.0), ("b", 2, 10.0), ("c", 2, 10.0)],
        "rest_for_one": [("b", 2, 10.0), ("c", 2, 10.0)]}[strategy]
    assert _log(sup) == [("b", "restart", "Boom", 1)]
    assert [(c.state, c.mailbox_depth) for c in stats.children] == [("running", 0)] * 3
    _ended_in_reverse(journal, "abc")
    _all_stopped(sup, "stopped")
    assert live_tasks() == before


# --- a nested supervisor gives up while its parent runs a group restart ------------------------


@pytest.mark.parametrize("moment", ["stopping", "starting"])
@pytest.mark.parametrize("strategy", GROUPS)
async def test_a_nested_supervisor_gives_up_during_its_parents_group_restart(
        journal, autojump_clock, live_tasks, strategy, moment):
    """a crashes: the parent's group restart stops c (5 s of cleanup), then inner, then
    starts them again. ``stopping``: x (in inner, ``max_restarts=0``) crashes at 2 s, while
    c stops: inner gives up and ends with RestartIntensityExceeded, a crash of inner that
    the running group restart covers (recorded ``restart``, counted by nobody); inner starts
    again once, with fresh children. ``starting``: inner's new incarnation gives up while
    its own start waits for y: its start failed, a counted crash, so the group restart runs
    again and inner starts a third time. Everything stops in reverse order at the exit."""
    inners: list[object] = []

    async def x(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        inners.append(ctx.supervisor)
        journal.add("start", ctx)
        task_status.started()
        try:
            if moment == "starting" and len(inners) == 2:
                await trio.sleep(1.0)
                raise ValueError("x broke while y started")
            async for _ in ctx.mailbox:
                raise ValueError("x broke")
        finally:
            journal.add("ended", ctx)

    inner = supervisor_child(
        [ChildSpec("x", x),
         ChildSpec("y", child(journal, ready_after={1: 0.0, 2: 3.0} if moment == "starting"
                                  else None))],
        intensity=Intensity(max_restarts=0))
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("inner", inner, shutdown_timeout=None, start_timeout=None),
             ChildSpec("c", child(journal, stops_in=5.0))]
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy, intensity=ROOMY) as sup:
        await sup.mailbox("a").send("raise")
        if moment == "stopping":
            await trio.sleep(2.0)
            await inners[0].mailbox("x").send("crash")
        await trio.sleep(30.0)
        stats = sup.statistics()
    log = [(r.child, r.action, r.error_type) for r in sup.restart_log]
    assert log == [("a", "restart", "Boom"),
                   ("inner", "restart", "RestartIntensityExceeded")]
    assert [r.incarnation for r in sup.restart_log] == [1, 1 if moment == "stopping" else 2]
    assert "'x'" in sup.restart_log[1].error
    assert stats.restarts == (1 if moment == "stopping" else 2)
    runs = 2 if moment == "stopping" else 3
    assert [(c.name, c.state) for c in stats.children] == [
        (name, "running") for name in ("a", "inner", "c")]
    assert stats.children[1].incarnation == runs
    assert len(inners) == runs
    assert [s.statistics().state for s in inners] == (  # the one that gave up failed
        ["failed", "stopped"] if moment == "stopping" else ["stopped", "failed", "stopped"])
    for nested in inners:
        assert {c.state for c in nested.statistics().children} <= {"stopped"}
    _ended_in_reverse(journal, "ac")
    _all_stopped(sup, "stopped")
    assert live_tasks() == before


# --- a KeyboardInterrupt while a sibling is in its shutdown ladder -----------------------------


@pytest.mark.parametrize("at", [1.0, 3.0], ids=["waiting out its timeout", "cancelled"])
@pytest.mark.parametrize(("strategy", "moment"), [
    *((strategy, "exit") for strategy in STRATEGIES),
    *((strategy, "group restart") for strategy in GROUPS)])  # one_for_one stops no sibling
async def test_a_keyboard_interrupt_while_a_sibling_is_in_its_ladder(
        journal, autojump_clock, live_tasks, strategy, moment, at):
    """s (2 s shutdown_timeout; once cancelled it goes on 7 s, shielded) is in its ladder
    from 0 s: the body has ended (c is stopped, b and a wait their turn), or b crashed and its
    group restart stopped c and now s. a raises KeyboardInterrupt at ``at``: while the
    ladder waits out s's timeout, or after it cancelled s. The interrupt comes out of
    open_supervisor as itself; s still ends (its shielded cleanup is waited for), nothing is
    restarted after it, every child is stopped, on_exit is called once each, no task is
    left."""
    exits: list[str] = []

    async def interrupts(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        journal.add("start", ctx)
        task_status.started()
        try:
            with trio.CancelScope(shield=True):  # its mailbox closing does not stop it
                await trio.sleep(at)
            raise KeyboardInterrupt
        finally:
            journal.add("ended", ctx)

    specs = [ChildSpec("a", interrupts, on_exit=lambda: exits.append("a")),
             ChildSpec("b", child(journal), on_exit=lambda: exits.append("b")),
             ChildSpec("s", child(journal, stubborn=7.0), shutdown_timeout=2.0,
                       on_exit=lambda: exits.append("s")),
             ChildSpec("c", child(journal), on_exit=lambda: exits.append("c"))]
    before = live_tasks()
    out = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy) as sup:
            out.append(sup)
            if moment == "group restart":
                await sup.mailbox("b").send("raise")
                await trio.sleep_forever()

    with pytest.raises(KeyboardInterrupt):
        await run()
    [sup] = out
    assert journal.times[("ended", "a", 1)] == at
    assert journal.times[("ended", "c", 1)] == 0.0
    assert journal.times[("ended", "b", 1)] == (0.0 if moment == "group restart" else at)
    cancelled = [event for event in journal.of("cancelled") if event[1] == "s"]
    if at < 2.0:  # the interrupt cancels s before its timeout would
        assert trio.current_time() == at + 7.0
        assert len(cancelled) == 1
        assert cancelled[0][3] != "shutdown timeout of s"
    else:
        assert trio.current_time() == 9.0
        assert [event[3] for event in cancelled] == ["shutdown timeout of s"]
    assert journal.of("ended")[-1][1:3] == ("s", 1)
    assert len(journal.of("start")) == 4  # nothing started again
    assert [(r.child, r.action) for r in sup.restart_log] == (
        [("b", "restart")] if moment == "group restart" else [])
    _all_stopped(sup, "failed")
    assert sorted(exits) == ["a", "b", "c", "s"]
    assert live_tasks() == before


# --- a sibling crashes while a child ignores its cancellation past its shutdown_timeout ---------


@pytest.mark.parametrize(("strategy", "moment"), [
    *((strategy, "stop_child") for strategy in STRATEGIES),
    *((strategy, "group restart") for strategy in GROUPS)])  # one_for_one stops no sibling
async def test_a_sibling_crashes_while_a_child_ignores_cancel_past_its_timeout(
        journal, autojump_clock, live_tasks, strategy, moment):
    """s (2 s shutdown_timeout, then 7 s shielded once cancelled) is being stopped from 0 s:
    for b's group restart (b crashed), or by stop_child. a crashes at 3 s, while s ignores
    its cancellation. stop_child: a restarts at once (its group without s, forgotten
    already). group restart: one_for_all's covers a (its crash is recorded, not counted: a
    starts again once, with the group, at 9 s); rest_for_one's group (b, s, c) does not, so
    a's own group restart follows it and waits for s's new incarnation to stop (9 s more).
    At the exit everything stops in reverse order."""
    specs = [ChildSpec("a", child(journal, fails={1: (3.0, "raise")})),
             ChildSpec("b", child(journal)),
             ChildSpec("s", child(journal, stubborn=7.0), shutdown_timeout=2.0),
             ChildSpec("c", child(journal))]
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy, intensity=ROOMY) as sup:
        if moment == "stop_child":
            await sup.stop_child("s")
            assert trio.current_time() == 9.0
        else:
            await sup.mailbox("b").send("raise")
        await trio.sleep(30.0)
        stats = sup.statistics()
    assert journal.times[("ended", "s", 1)] == 9.0
    assert journal.times[("ended", "a", 1)] == 3.0
    if moment == "stop_child":
        assert [(r.child, r.action) for r in sup.restart_log] == [("a", "restart")]
        group = {"one_for_one": "a", "one_for_all": "abc", "rest_for_one": "abc"}[strategy]
        assert later_starts(journal, 4) == [(name, 2, 3.0) for name in group]
        assert stats.restarts == 1
        names = "abc"
    elif strategy == "one_for_all":
        assert [(r.child, r.action) for r in sup.restart_log] == [
            ("b", "restart"), ("a", "restart")]
        assert later_starts(journal, 4) == [(name, 2, 9.0) for name in "absc"]
        assert stats.restarts == 1
        names = "absc"
    else:
        assert [(r.child, r.action) for r in sup.restart_log] == [
            ("b", "restart"), ("a", "restart")]
        assert later_starts(journal, 4) == [
            ("b", 2, 9.0), ("s", 2, 9.0), ("c", 2, 9.0),
            ("a", 2, 18.0), ("b", 3, 18.0), ("s", 3, 18.0), ("c", 3, 18.0)]
        assert stats.restarts == 2
        names = "absc"
    assert [c.name for c in stats.children] == list(names)
    assert {c.state for c in stats.children} == {"running"}
    assert [event[3] for event in journal.of("cancelled") if event[1] == "s"][:1] == [
        "shutdown timeout of s"]
    _ended_in_reverse(journal, names)
    _all_stopped(sup, "stopped")
    assert live_tasks() == before
