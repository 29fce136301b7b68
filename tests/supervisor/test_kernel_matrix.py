"""The kernel's failure matrix, as the statistics and the restart log report it.

Strategy x restart type x how a child ends, checked against what the README's "Supervising
your own tasks" section promises: who restarts, what ``restarts`` / ``incarnation`` say, and
that the counts agree with the restart intensity.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import MailboxClosedError
from tidings.supervisor import Backoff, ChildSpec, Intensity, open_supervisor


@pytest.mark.parametrize("max_restarts", [0, 3])
@pytest.mark.parametrize("shielded", [False, True], ids=["cleanup", "shielded_cleanup"])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_an_error_while_cancelled_from_outside_is_a_shutdown_error_not_a_crash(
        autojump_clock, strategy, shielded, max_restarts):
    """The host cancels the scope around the supervisor (a deadline, its own shutdown) and
    a child's cleanup raises as the cancellation unwinds it. That is an error while
    stopping, as it is under the shutdown ladder: recorded ``shutdown_error``, nothing
    restarted. It was taken for a crash of a live supervisor: one_for_one started a new
    incarnation inside the cancellation, max_restarts=0 'gave up' (an ERROR line, state
    ``failed``), and a group restart request sent once the restart helper had gone raised
    trio's BrokenResourceError out of open_supervisor in place of the cancellation."""

    async def child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        try:
            async for _ in ctx.mailbox:
                pass
        finally:
            if ctx.name == "b":
                if shielded:  # e.g. a last flush; the restart helper is gone meanwhile
                    with trio.CancelScope(shield=True):
                        await trio.sleep(1.0)
                raise ValueError("cleanup failed")

    with trio.CancelScope() as outer:
        async with open_supervisor([ChildSpec(name, child) for name in "abc"],
                                   strategy=strategy,
                                   intensity=Intensity(max_restarts=max_restarts)) as sup:
            await trio.sleep(1.0)
            outer.cancel()
            await trio.sleep_forever()
    assert outer.cancelled_caught
    stats = sup.statistics()
    assert stats.state == "stopped"
    assert [(c.name, c.state, c.incarnation) for c in stats.children] == [
        (name, "stopped", 1) for name in "abc"]
    assert [(r.child, r.action, r.error_type) for r in sup.restart_log] == [
        ("b", "shutdown_error", "ValueError")]
    assert stats.restarts == 0


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_a_child_that_fails_as_it_is_cancelled_from_outside_closes_its_mailbox(
        autojump_clock, strategy):
    """A child whose cleanup raises as an outer cancellation unwinds it will never run
    again: its mailbox closes as its task ends (as for a child that ends while its
    supervisor stops), so the body's shielded cleanup asking it something is told at once
    instead of waiting for ever (the supervisor's exit waits for that cleanup)."""

    async def child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        try:
            async for _ in ctx.mailbox:
                pass
        finally:
            raise ValueError("cleanup failed")

    told = []
    with trio.CancelScope() as outer:
        async with open_supervisor([ChildSpec("b", child, mailbox_size=0)],
                                   strategy=strategy) as sup:
            outer.cancel()
            with trio.CancelScope(shield=True), trio.move_on_after(100.0) as hung:
                try:
                    await sup.mailbox("b").send("last words")
                except MailboxClosedError as exc:
                    told.append(exc.child)
    assert not hung.cancelled_caught
    assert told == ["b"]
    assert [(r.child, r.action) for r in sup.restart_log] == [("b", "shutdown_error")]


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_a_backoff_paces_a_permanent_child_that_returns_as_one_that_crashes(
        autojump_clock, strategy):
    """A permanent child's return is a restart like a crash (README: "A child restarts at
    once unless its spec has a Backoff"): it waits out the same doubling delays, and an
    incarnation that ran ``reset_after`` starts the sequence at ``min`` again."""
    starts: list[float] = []

    async def returns(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        starts.append(trio.current_time())
        task_status.started()
        await trio.sleep(100.0 if ctx.incarnation == 3 else 0.0)  # the third runs long

    backoff = Backoff(min=1.0, max=8.0, jitter=0.0, reset_after=50.0)
    async with open_supervisor([ChildSpec("poll", returns, backoff=backoff)],
                               strategy=strategy,
                               intensity=Intensity(max_restarts=10, period=1.0)) as sup:
        await trio.sleep(108.0)  # the next start would be at 110: 4 s after 106
        log = sup.restart_log
    assert starts == [0.0, 1.0, 3.0, 104.0, 106.0]  # waits 1, 2; 100 s run; 1, 2 again
    assert {(r.action, r.error_type) for r in log} == {("restart", "")}


class Halt(BaseException):
    """A BaseException that is no Exception (KeyboardInterrupt-like): it is no crash."""


GROUPS = {"one_for_one": "b", "one_for_all": "abc", "rest_for_one": "bc"}
"""Who restarts with ``b`` (the middle of three children), per strategy."""


@pytest.mark.parametrize("ending", ["return", "raise", "halt"])
@pytest.mark.parametrize("restart", ["permanent", "transient", "temporary"])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_the_matrix_of_endings(autojump_clock, live_tasks, strategy, restart, ending):
    """b (of a, b, c) ends on its own, one way or another; the README's tables say who runs
    again, what the restart log and the statistics say, and what escapes. Whatever
    happened, every child's on_exit is called once, no task is left and every mailbox is
    closed once the supervisor has stopped."""
    exits: dict[str, int] = {}

    async def child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for message in ctx.mailbox:
            if message == "return":
                return
            if message == "raise":
                raise ValueError("b broke")
            if message == "halt":
                raise Halt

    def on_exit(name: str):
        return lambda: exits.update({name: exits.get(name, 0) + 1})

    specs = [ChildSpec(name, child, restart=restart if name == "b" else "permanent",
                       on_exit=on_exit(name)) for name in "abc"]
    before = live_tasks()
    escaped = None
    try:
        async with open_supervisor(specs, strategy=strategy) as sup:
            await sup.mailbox("b").send(ending)
            await trio.testing.wait_all_tasks_blocked()
            stats = sup.statistics()
    except Halt as exc:
        escaped = exc
    if ending == "halt":  # no crash: it passes through, nothing is recorded or restarted
        assert escaped is not None
        assert sup.restart_log == ()
        assert sup.statistics().state == "failed"
    else:
        assert escaped is None
        restarted = (ending == "raise" and restart != "temporary") or (
            ending == "return" and restart == "permanent")
        forgotten = not restarted
        expected_log = []
        if restarted:
            expected_log = [("b", "restart", "ValueError" if ending == "raise" else "")]
        elif ending == "raise":
            expected_log = [("b", "forget", "ValueError")]
        assert [(r.child, r.action, r.error_type) for r in sup.restart_log] == expected_log
        group = GROUPS[strategy] if restarted else ""
        assert [(c.name, c.state, c.incarnation, c.restarts) for c in stats.children] == [
            (name, "running", 2 if name in group else 1, 1 if name == "b" else 0)
            for name in "abc" if not (forgotten and name == "b")]
        assert stats.restarts == (1 if restarted else 0)
        assert sup.statistics().state == "stopped"
    assert exits == {"a": 1, "b": 1, "c": 1}
    assert live_tasks() == before
    assert all(child.state == "stopped" for child in sup.statistics().children)
    for name in "ac":
        assert sup.mailbox(name).statistics().closed


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_sibling_stopped_while_its_group_restart_waits_is_not_started_again(
        autojump_clock, strategy):
    """a crashes with a backoff: its group restart has stopped b and c and waits out a's
    delay. stop_child("b") meanwhile returns at once (b's task has ended), forgets b for
    good (on_exit once, what was buffered to its dead-letter hook) and the restart starts
    a and c only, in order."""
    exits: list[str] = []
    dead: list[tuple[str, object]] = []
    starts: list[tuple[str, int, float]] = []

    async def child(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        starts.append((ctx.name, ctx.incarnation, trio.current_time()))
        task_status.started()
        async for message in ctx.mailbox:
            if message == "crash":
                raise ValueError("a broke")

    specs = [ChildSpec(name, child, on_exit=lambda name=name: exits.append(name),
                       dead_letter=lambda message, _, name=name: dead.append((name, message)),
                       backoff=Backoff(min=10.0, jitter=0.0) if name == "a" else None)
             for name in "abc"]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("a").send("crash")
        await trio.sleep(5.0)
        assert [(c.name, c.state) for c in sup.statistics().children] == [
            ("a", "backoff"), ("b", "restarting"), ("c", "restarting")]
        await sup.mailbox("b").send("for b's next incarnation")
        stopped_at = trio.current_time()
        await sup.stop_child("b")
        assert trio.current_time() == stopped_at
        assert exits == ["b"]
        assert dead == [("b", "for b's next incarnation")]
        await trio.sleep(10.0)
        assert [(c.name, c.state, c.incarnation) for c in sup.statistics().children] == [
            ("a", "running", 2), ("c", "running", 2)]
    assert [start[:2] for start in starts] == [
        ("a", 1), ("b", 1), ("c", 1), ("a", 2), ("c", 2)]
    assert starts[3][2] == starts[4][2] == 10.0
    assert sorted(exits) == ["a", "b", "c"]
