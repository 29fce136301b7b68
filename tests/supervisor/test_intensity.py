"""Restart intensity (a sliding window on trio's clock), escalation, and restart backoff."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import Backoff, ChildSpec, Intensity, open_supervisor


async def _crash(sup, name: str) -> None:
    await sup.mailbox(name).send("crash")
    await trio.testing.wait_all_tasks_blocked()


async def _supervise(specs, sup_out: list, *crashes: str, pause: float | None = None,
                     **options) -> None:
    """Run a supervisor, crash the named children in turn (pausing between), then wait."""
    async with open_supervisor(specs, **options) as sup:
        sup_out.append(sup)
        for name in crashes:
            await _crash(sup, name)
            if pause is not None:
                await trio.sleep(pause)
        await trio.sleep_forever()


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_intensity_exceeded_stops_all_in_reverse_and_raises_one_chained_error(
        journal, autojump_clock, strategy):
    body: list[str] = []
    specs = [ChildSpec(name, journal.worker()) for name in "abc"]
    supervisors = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy, name="root",
                                   intensity=Intensity(max_restarts=2, period=10.0)) as sup:
            supervisors.append(sup)
            try:
                for _ in range(3):
                    await _crash(sup, "b")
                    await trio.sleep(1.0)
                body.append("not cancelled")
            except trio.Cancelled:
                body.append("cancelled")
                raise

    with pytest.raises(RestartIntensityExceeded) as caught:
        await run()
    [sup] = supervisors
    error = caught.value
    assert type(error) is RestartIntensityExceeded  # one error, not a group
    assert error.child == "b"
    assert "'root'" in str(error)
    assert "'b'" in str(error)
    assert "max_restarts=2" in str(error)
    assert "3 restarts within 10.0 seconds" in str(error)
    assert type(error.__cause__).__name__ == "Boom"
    assert str(error.__cause__) == "b crashed on a message"
    assert body == ["cancelled"]
    assert [r.action for r in sup.restart_log] == ["restart", "restart", "escalate"]
    assert [r.incarnation for r in sup.restart_log] == [1, 2, 3]
    final_stops = [event[1] for event in journal.of("stop") if event[2] == 3 or event[1] != "b"]
    assert final_stops[-2:] == ["c", "a"]  # b is down already; the rest in reverse order
    assert sup.statistics().state == "failed"
    assert all(child.state == "stopped" for child in sup.statistics().children)


async def test_zero_max_restarts_escalates_on_the_first_failure(journal, autojump_clock):
    with pytest.raises(RestartIntensityExceeded):
        await _supervise([ChildSpec("a", journal.worker())], [], "a",
                         intensity=Intensity(max_restarts=0, period=1.0))


async def test_restarts_spread_beyond_the_period_do_not_escalate(journal, autojump_clock):
    async with open_supervisor([ChildSpec("a", journal.worker())],
                               intensity=Intensity(max_restarts=1, period=5.0)) as sup:
        for _ in range(6):
            await _crash(sup, "a")
            await trio.sleep(5.5)
        assert [r.action for r in sup.restart_log] == ["restart"] * 6
        assert sup.statistics().children[0].incarnation == 7


async def test_restarts_inside_the_period_do_escalate(journal, autojump_clock):
    with pytest.raises(RestartIntensityExceeded):
        await _supervise([ChildSpec("a", journal.worker())], [], *"aaaaaa", pause=4.5,
                         intensity=Intensity(max_restarts=1, period=5.0))


async def test_temporary_failures_do_not_count(journal, autojump_clock):
    async with open_supervisor([], intensity=Intensity(max_restarts=0, period=60.0)) as sup:
        for n in range(5):
            await sup.start_child(ChildSpec(f"t{n}", journal.worker(), restart="temporary"))
            await _crash(sup, f"t{n}")
        assert [r.action for r in sup.restart_log] == ["forget"] * 5
        assert sup.statistics().children == ()


async def test_a_failed_start_on_restart_counts_toward_intensity(journal, autojump_clock):
    fn = journal.worker(fail_at_start=lambda incarnation: incarnation >= 2)
    out: list = []
    with pytest.raises(RestartIntensityExceeded) as caught:
        await _supervise([ChildSpec("a", fn)], out, "a",
                         intensity=Intensity(max_restarts=3, period=60.0))
    [sup] = out
    assert str(caught.value.__cause__) == "a failed to start"
    assert [(r.incarnation, r.action) for r in sup.restart_log] == [
        (1, "restart"), (2, "restart"), (3, "restart"), (4, "escalate")]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_failed_start_in_a_group_restart_counts_toward_intensity(
        journal, autojump_clock, strategy):
    specs = [ChildSpec("a", journal.worker()),
             ChildSpec("b", journal.worker(fail_at_start=lambda incarnation: incarnation >= 2))]
    out: list = []
    with pytest.raises(RestartIntensityExceeded) as caught:
        await _supervise(specs, out, "a", strategy=strategy,
                         intensity=Intensity(max_restarts=2, period=60.0))
    [sup] = out
    assert caught.value.child == "b"
    assert [(r.child, r.action) for r in sup.restart_log] == [
        ("a", "restart"), ("b", "restart"), ("b", "escalate")]


async def test_backoff_delays_grow_and_do_not_block_other_children(journal, autojump_clock):
    backoff = Backoff(min=1.0, max=4.0, jitter=0.0, reset_after=100.0)
    specs = [ChildSpec("flaky", journal.worker(), backoff=backoff),
             ChildSpec("steady", journal.worker())]
    async with open_supervisor(specs, intensity=Intensity(max_restarts=10, period=1000)) as sup:
        delays = []
        for n in range(4):
            crashed = trio.current_time()
            await _crash(sup, "flaky")
            await sup.mailbox("steady").send(n)  # not held up by flaky's backoff
            await trio.testing.wait_all_tasks_blocked()
            assert journal.events[-1][:4] == ("msg", "steady", 1, n)
            assert sup.statistics().children[0].state == "backoff"
            await sup.mailbox("flaky").send("ping")  # buffered until the restart
            await journal.wait_for("msg", "flaky", n + 2, "ping")
            delays.append(journal.times["start", "flaky", n + 2] - crashed)
        assert delays == [1.0, 2.0, 4.0, 4.0]


async def test_backoff_resets_after_a_long_run(journal, autojump_clock):
    backoff = Backoff(min=1.0, max=8.0, jitter=0.0, reset_after=30.0)
    async with open_supervisor([ChildSpec("a", journal.worker(), backoff=backoff)],
                               intensity=Intensity(max_restarts=10, period=1.0)) as sup:
        delays = []
        for incarnation, wait in enumerate((0.0, 0.0, 40.0), start=1):
            await trio.sleep(wait)
            crashed = trio.current_time()
            await _crash(sup, "a")
            restarted = await journal.wait_for("ready", "a", incarnation + 1)
            delays.append(restarted - crashed)
        assert delays == [1.0, 2.0, 1.0]


async def _jittered_delays(seed: int) -> list[float]:
    backoff = Backoff(min=1.0, max=100.0, jitter=0.5, reset_after=1000.0, seed=seed)
    timer_delays = []
    from tidings.supervisor._backoff import BackoffTimer

    timer = BackoffTimer(backoff)
    for _ in range(5):
        timer_delays.append(timer.next_delay(0.0))
    await trio.lowlevel.checkpoint()
    return timer_delays


async def test_backoff_jitter_is_reproducible_with_a_seed():
    first, again, other = (await _jittered_delays(7), await _jittered_delays(7),
                           await _jittered_delays(8))
    assert first == again
    assert first != other
    for attempt, delay in enumerate(first):
        assert 0.5 * 2**attempt <= delay <= 1.5 * 2**attempt


@pytest.mark.parametrize("start_timeout", [None, 100.0])
async def test_an_escalation_while_a_later_child_starts_stops_it_and_is_the_error(
        journal, autojump_clock, start_timeout):
    """The initial start waits for a slow child, holding the lock, when an earlier one
    escalates: that child is stopped by its ladder (not waited for, with no start_timeout
    forever), and the error is the escalation, not a start timeout of the waiting child."""

    async def ready_then_crash(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        await trio.sleep(1.0)
        raise ValueError("a broke")

    specs = [ChildSpec("a", ready_then_crash),
             ChildSpec("b", journal.worker(ready_after=1000.0), start_timeout=start_timeout,
                       shutdown_timeout=5.0)]
    with pytest.raises(RestartIntensityExceeded) as caught:
        async with open_supervisor(specs, intensity=Intensity(max_restarts=0)):
            raise AssertionError("the body must not run")
    assert caught.value.child == "a"
    assert str(caught.value.__cause__) == "a broke"
    assert trio.current_time() == 1.0 + 5.0
    assert journal.of("cancelled") == [("cancelled", "b", 1, "shutdown timeout of b", 6.0)]


async def test_a_child_that_escalated_reads_exited_not_running_while_the_others_stop(
        journal, autojump_clock):
    """Statistics as a user reads them (rt.statistics() carries them): the child whose crash
    made the supervisor give up has ended; it must not read 'running' (a state its task no
    longer has) while b takes its shutdown_timeout to stop."""
    specs = [ChildSpec("a", journal.worker()),
             ChildSpec("b", journal.worker(stuck_at_shutdown=True), shutdown_timeout=5.0)]
    supervisors = []

    async def supervise() -> None:
        async with open_supervisor(specs, intensity=Intensity(max_restarts=0)) as sup:
            supervisors.append(sup)
            await sup.mailbox("a").send("crash")
            await trio.sleep_forever()

    async def expect_escalation() -> None:
        with pytest.raises(RestartIntensityExceeded):
            await supervise()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(expect_escalation)
        await journal.wait_for("stop", "b", 1)  # b's ladder began: a had ended before it
        [sup] = supervisors
        stats = sup.statistics()
        assert stats.state == "stopping"
        assert [(c.name, c.state) for c in stats.children] == [
            ("a", "exited"), ("b", "stopping")]
        assert sup.child_task("a") is None
    assert [(c.name, c.state) for c in sup.statistics().children] == [
        ("a", "stopped"), ("b", "stopped")]


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_children_failing_together_are_one_group_restart_not_one_each(
        autojump_clock, strategy):
    """Siblings that fail together (a shared resource went away) each counted toward the
    intensity when they crashed, though the first one's group restart stops and restarts them
    all and drops their own requests as done: with max_restarts=1 the supervisor gave up on
    the second crash, before it had restarted anything. A crash that a group restart already
    due covers is now counted only if that restart did not relaunch it (as an Erlang
    supervisor flushes the exits of the children it is restarting anyway). The statistics
    say the same: one restart, the failed child's (they counted the covered crashes too, one
    each: four ``restarts`` for one restart, and 1 for siblings a group restart leaves at 0)."""
    down = trio.Event()

    async def user(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        if ctx.incarnation == 1:
            if ctx.name == "a":  # the first to notice; the others a moment after
                await trio.sleep(1.0)
                down.set()
            else:
                await down.wait()
            raise ConnectionError("the shared database went away")
        await trio.sleep_forever()

    async with open_supervisor([ChildSpec(name, user) for name in "abcd"], strategy=strategy,
                               intensity=Intensity(max_restarts=1, period=60.0)) as sup:
        await trio.sleep(2.0)
        assert [(c.name, c.state, c.incarnation) for c in sup.statistics().children] == [
            (name, "running", 2) for name in "abcd"]
        assert "escalate" not in {record.action for record in sup.restart_log}
        stats = sup.statistics()
        assert stats.state == "running"
        assert [(c.name, c.restarts) for c in stats.children] == [
            ("a", 1), ("b", 0), ("c", 0), ("d", 0)]
        assert stats.restarts == 1


async def test_a_crash_while_another_group_restart_is_due_counts_when_its_own_is_served(
        journal, autojump_clock):
    """Not covered by the group restart under way (an earlier child, rest_for_one), the
    crash is counted once that restart is done and its own is served: here it is one too
    many, and the supervisor gives up then (its restart record is followed by escalate), the
    child that escalated reading 'exited' while the others stop, as one escalating at once
    does."""
    fn = journal.worker()
    slow_again = journal.worker(ready_after=5.0)

    async def c(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        await (fn if ctx.incarnation == 1 else slow_again)(ctx, task_status=task_status)

    specs = [ChildSpec("a", fn),
             ChildSpec("b", journal.worker(stuck_at_shutdown=True), shutdown_timeout=3.0),
             ChildSpec("c", c)]
    out: list = []

    async def run() -> None:
        async with open_supervisor(specs, strategy="rest_for_one",
                                   intensity=Intensity(max_restarts=1, period=60.0)) as sup:
            out.append(sup)
            await _crash(sup, "c")  # counted: its group restart waits 5 s for c's readiness
            await trio.sleep(1.0)
            await _crash(sup, "a")  # while that one is due: counted once it is served
            await trio.sleep_forever()

    async def expect_escalation() -> None:
        with pytest.raises(RestartIntensityExceeded) as caught:
            await run()
        assert caught.value.child == "a"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(expect_escalation)
        assert await journal.wait_for("stop", "b", 1) == 5.0  # when c's restart was done
        [sup] = out
        assert [(c.name, c.state) for c in sup.statistics().children] == [
            ("a", "exited"), ("b", "stopping"), ("c", "stopped")]
    assert [(r.child, r.action) for r in sup.restart_log] == [
        ("c", "restart"), ("a", "restart"), ("a", "escalate")]
