"""Start in order with readiness, stop in reverse with the shutdown ladder, and what escapes."""

from __future__ import annotations

import functools
import logging

import pytest
import trio
import trio.testing

from tidings.errors import (
    ChildStartError,
    RestartIntensityExceeded,
    SupervisorError,
    ValidationError,
)
from tidings.supervisor import Backoff, ChildSpec, Intensity, open_supervisor


async def test_children_start_in_order_each_ready_before_the_next(journal, autojump_clock):
    specs = [ChildSpec(name, journal.worker(ready_after=delay))
             for name, delay in [("a", 3.0), ("b", 1.0), ("c", 2.0)]]
    async with open_supervisor(specs):
        assert trio.current_time() == 6.0  # readiness awaited one after the other
    kinds = [event[:2] for event in journal.of("start", "ready")]
    assert kinds == [("start", "a"), ("ready", "a"), ("start", "b"), ("ready", "b"),
                     ("start", "c"), ("ready", "c")]
    assert [event[1] for event in journal.of("stop")] == ["c", "b", "a"]


async def test_start_timeout_raises_child_start_error_after_exactly_the_timeout(
        journal, autojump_clock):
    specs = [ChildSpec("a", journal.worker()),
             ChildSpec("slow", journal.worker(ready_after=100.0), start_timeout=4.0),
             ChildSpec("c", journal.worker())]
    with pytest.raises(ChildStartError) as caught:
        async with open_supervisor(specs, name="root"):
            pytest.fail("body ran")
    assert trio.current_time() == 4.0
    assert caught.value.child == "slow"
    assert "'slow'" in str(caught.value)
    assert isinstance(caught.value.__cause__, trio.TooSlowError)
    assert [event[1] for event in journal.of("start")] == ["a", "slow"]
    assert [event[1] for event in journal.of("stop")] == ["a"]


async def test_child_returning_without_started_counts_as_started_then_exited(
        journal, autojump_clock):
    async def quick(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        journal.add("start", ctx)

    specs = [ChildSpec("quick", quick, restart="transient"), ChildSpec("b", journal.worker())]
    async with open_supervisor(specs) as sup:
        await trio.testing.wait_all_tasks_blocked()
        assert [child.name for child in sup.statistics().children] == ["b"]  # forgotten
        assert sup.restart_log == ()
    assert [event[1] for event in journal.of("start")] == ["quick", "b"]


async def test_permanent_child_returning_is_restarted_with_no_error(journal, autojump_clock):
    async with open_supervisor([ChildSpec("a", journal.worker())]) as sup:
        await sup.mailbox("a").send("return")
        await trio.testing.wait_all_tasks_blocked()
        [record] = sup.restart_log
        assert (record.action, record.error, record.error_type) == ("restart", "", "")
        assert sup.statistics().children[0].incarnation == 2


async def test_transient_child_returning_is_forgotten(journal, autojump_clock):
    async with open_supervisor([ChildSpec("a", journal.worker(), restart="transient")]) as sup:
        mailbox = sup.mailbox("a")
        await mailbox.send("return")
        await trio.testing.wait_all_tasks_blocked()
        assert sup.statistics().children == ()
        assert sup.restart_log == ()
        with pytest.raises(SupervisorError):
            sup.mailbox("a")


async def test_stuck_child_is_cancelled_after_exactly_its_shutdown_timeout(
        journal, autojump_clock, caplog):
    specs = [ChildSpec("a", journal.worker()),
             ChildSpec("stuck", journal.worker(stuck_at_shutdown=True), shutdown_timeout=7.0),
             ChildSpec("c", journal.worker())]
    async with open_supervisor(specs, name="root") as sup:
        started = trio.current_time()
    assert [event[1] for event in journal.of("stop")] == ["c", "stuck", "a"]
    [cancelled] = journal.of("cancelled")
    assert cancelled == ("cancelled", "stuck", 1, "shutdown timeout of stuck", started + 7.0)
    assert sup.restart_log == ()  # stopped by the ladder: not a crash
    assert "event=child_killed supervisor=root child=stuck" in caplog.text
    assert 'reason="shutdown timeout of stuck"' in caplog.text


async def test_zero_shutdown_timeout_cancels_at_once(journal, autojump_clock):
    specs = [ChildSpec("stuck", journal.worker(stuck_at_shutdown=True), shutdown_timeout=0)]
    async with open_supervisor(specs):
        started = trio.current_time()
    assert journal.of("cancelled") == [
        ("cancelled", "stuck", 1, "shutdown timeout of stuck", started)]


async def test_body_exception_propagates_unwrapped_after_a_graceful_stop(journal, autojump_clock):
    error = KeyError("from the body")
    with pytest.raises(KeyError) as caught:
        async with open_supervisor([ChildSpec("a", journal.worker()),
                                    ChildSpec("b", journal.worker())]):
            raise error
    assert caught.value is error
    assert [event[1] for event in journal.of("stop")] == ["b", "a"]
    assert journal.of("cancelled") == []


async def test_body_exception_group_is_the_bodys_own(journal, autojump_clock):
    group = ExceptionGroup("mine", [ValueError("x")])
    with pytest.raises(ExceptionGroup) as caught:
        async with open_supervisor([ChildSpec("a", journal.worker())]):
            raise group
    assert caught.value is group


async def test_outer_cancellation_propagates_and_is_not_a_crash(journal, autojump_clock):
    with trio.move_on_after(5.0) as scope:
        async with open_supervisor([ChildSpec("a", journal.worker()),
                                    ChildSpec("b", journal.worker())]) as sup:
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert sup.restart_log == ()
    assert {event[1] for event in journal.of("cancelled")} == {"a", "b"}


async def test_outer_cancellation_while_starting_propagates(journal, autojump_clock):
    with trio.move_on_after(1.0) as scope:
        async with open_supervisor([ChildSpec("slow", journal.worker(ready_after=5.0))]):
            pytest.fail("body ran")
    assert scope.cancelled_caught
    assert journal.of("ready") == []


async def test_cancelled_raised_out_of_supervisor_is_cancelled_not_a_group(journal,
                                                                            autojump_clock):
    seen: list[BaseException] = []
    with trio.CancelScope() as scope:
        try:
            async with open_supervisor([ChildSpec("a", journal.worker())]):
                scope.cancel()
                await trio.sleep_forever()
        except BaseException as exc:
            seen.append(exc)
            raise
    assert [type(exc) for exc in seen] == [trio.Cancelled]


async def _a_cancelled_of_another_scope() -> trio.Cancelled:
    """A Cancelled that a scope of someone else's raised: what a child re-raises when it
    unwraps the outcome of a task that was cancelled (``outcome.capture`` / a future)."""
    with trio.CancelScope() as elsewhere:
        elsewhere.cancel()
        try:
            await trio.sleep_forever()
        except trio.Cancelled as cancelled:
            return cancelled
    raise AssertionError("not cancelled")


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all"])
async def test_a_cancelled_nothing_cancelled_the_child_with_is_a_crash(autojump_clock, strategy):
    """A child that raised a Cancelled while nothing cancelled it let it through as if it
    were an outer cancellation: it reached the supervisor's nursery, which cancelled the body
    and then absorbed that Cancelled with its own, so the supervisor ended at once (no
    graceful stop, nothing recorded) and open_supervisor returned normally: the host's body
    was cut short in silence. It is a crash, like anything else a child raises."""
    stray = await _a_cancelled_of_another_scope()

    async def unwraps(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        if ctx.incarnation == 1:
            await trio.sleep(1)
            raise stray

        await trio.sleep_forever()

    body_ended = None
    async with open_supervisor([ChildSpec("a", unwraps)], strategy=strategy) as sup:
        await trio.sleep(10)
        body_ended = trio.current_time()
        [record] = sup.restart_log
        assert (record.child, record.error_type, record.action) == ("a", "Cancelled", "restart")
        assert sup.statistics().children[0].incarnation == 2
    assert body_ended == 10.0


async def test_keyboard_interrupt_in_a_child_propagates_as_itself(autojump_clock):
    async def interrupted(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        await trio.sleep(1)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        async with open_supervisor([ChildSpec("a", interrupted)]):
            await trio.sleep_forever()


async def test_no_task_outlives_the_supervisor(journal, autojump_clock, live_tasks):
    before = live_tasks()
    async with open_supervisor([ChildSpec(name, journal.worker()) for name in "abc"],
                               strategy="one_for_all") as sup:
        await sup.mailbox("b").send("crash")  # a group restart, too
        await trio.testing.wait_all_tasks_blocked()
        during = live_tasks() - before
        assert {sup.child_task(name) for name in "abc"} <= during
        assert len(during) >= 4  # three children and the group-restart server
    assert live_tasks() == before
    assert [sup.child_task(name) for name in "abc"] == [None, None, None]


async def test_child_task_is_the_running_incarnation(journal, autojump_clock):
    tasks = []

    async def who(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        tasks.append(trio.lowlevel.current_task())
        task_status.started()
        async for message in ctx.mailbox:
            if message == "crash":
                raise ValueError(message)

    async with open_supervisor([ChildSpec("a", who)]) as sup:
        assert sup.child_task("a") is tasks[0]
    assert sup.child_task("a") is None


async def test_duplicate_names_and_bad_arguments_are_rejected(journal):
    fn = journal.worker()
    with pytest.raises(ValidationError, match="duplicate child name 'a'"):
        async with open_supervisor([ChildSpec("a", fn), ChildSpec("a", fn)]):
            pass
    with pytest.raises(ValidationError) as caught:
        async with open_supervisor([], strategy="all_for_none"):  # type: ignore[arg-type]
            pass
    assert caught.value.field == "strategy"


async def test_a_restart_that_never_gets_ready_is_a_counted_start_timeout(journal,
                                                                          autojump_clock):
    fn = journal.worker()

    async def sometimes_slow(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        if ctx.incarnation == 2:
            await trio.sleep_forever()
        await fn(ctx, task_status=task_status)

    async with open_supervisor([ChildSpec("a", sometimes_slow, start_timeout=3.0)]) as sup:
        await sup.mailbox("a").send("crash")
        await journal.wait_for("ready", "a", 3)
        assert trio.current_time() == 3.0
    assert [(r.incarnation, r.error_type) for r in sup.restart_log] == [
        (1, "Boom"), (2, "TooSlowError")]


async def test_stopping_a_child_in_restart_backoff_is_immediate(journal, autojump_clock):
    spec = ChildSpec("a", journal.worker(), backoff=Backoff(min=50.0, max=50.0, jitter=0.0))
    async with open_supervisor([spec]) as sup:
        await sup.mailbox("a").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert sup.statistics().children[0].state == "backoff"
        assert sup.child_task("a") is None
        stopped_at = trio.current_time()
        await sup.stop_child("a")
        assert trio.current_time() == stopped_at
        assert sup.statistics().children == ()
    assert [event[:3] for event in journal.of("start")] == [("start", "a", 1)]


async def test_events_are_logged_one_line_each_with_key_value_fields(journal, autojump_clock,
                                                                     caplog):
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    async with open_supervisor([ChildSpec("writer", journal.worker())], name="root") as sup:
        await sup.mailbox("writer").send("crash")
        await trio.testing.wait_all_tasks_blocked()
    lines = [record.getMessage() for record in caplog.records]
    assert all("\n" not in line and line.startswith("event=") for line in lines)
    assert ("event=child_restarted supervisor=root child=writer incarnation=2 "
            'error_type=Boom error="writer crashed on a message"') in lines
    assert "event=supervisor_stopped supervisor=root state=stopped" in lines


async def test_the_traceback_line_quotes_names_with_a_space_as_every_line_does(journal,
                                                                             autojump_clock,
                                                                             caplog):
    """The debug line with a crash's traceback was formatted by hand with bare %s: a
    supervisor or child name holding a space came out unquoted, so a reader splitting the
    fields (parse_fields, the JSON log lines) read ``child=a`` and a stray word."""
    caplog.set_level(logging.DEBUG, logger="tidings.supervisor")
    async with open_supervisor([ChildSpec("a b", journal.worker())], name="my root") as sup:
        await sup.mailbox("a b").send("crash")
        await trio.testing.wait_all_tasks_blocked()
    [line] = [record.getMessage() for record in caplog.records
              if record.getMessage().startswith("event=child_traceback")]
    assert line == 'event=child_traceback supervisor="my root" child="a b" incarnation=1'


async def test_a_body_error_is_not_lost_when_the_graceful_stop_is_cancelled(journal,
                                                                            autojump_clock,
                                                                            live_tasks):
    before = live_tasks()
    error = ValueError("from the body")
    spec = ChildSpec("slow", journal.worker(stuck_at_shutdown=True), shutdown_timeout=10.0)

    async def run() -> None:
        with trio.move_on_after(3.0):
            async with open_supervisor([spec]):
                await trio.sleep(1.0)
                raise error

    with pytest.raises(ValueError, match="from the body") as caught:
        await run()  # the deadline hits during the ladder: the error still comes out
    assert caught.value is error
    assert trio.current_time() == 3.0
    assert [event[3] for event in journal.of("cancelled")] == [None]  # trio's deadline
    assert live_tasks() == before


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_exit_during_a_group_restart_backoff_is_immediate(journal, autojump_clock,
                                                                strategy):
    """The group restart waits out a backoff holding the supervisor's lock; the exit must
    not wait for it (a child in restart backoff is stopped at once)."""
    backoff = Backoff(min=1000.0, max=1000.0, jitter=0.0)
    specs = [ChildSpec("a", journal.worker(), backoff=backoff), ChildSpec("b", journal.worker())]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("a").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert [c.state for c in sup.statistics().children] == ["backoff", "restarting"]
        exited = trio.current_time()
    assert trio.current_time() == exited
    assert [c.state for c in sup.statistics().children] == ["stopped", "stopped"]
    assert len(journal.of("start")) == 2  # nobody was started again


async def test_exit_during_a_group_restart_start_uses_the_ladder(journal, autojump_clock):
    """A child a group restart is starting is stopped by the shutdown ladder (its
    shutdown_timeout), not waited for until it is ready (with no start_timeout: forever)."""

    async def never_ready_again(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        journal.add("start", ctx)
        if ctx.incarnation > 1:
            await trio.sleep_forever()
        task_status.started()
        async for _ in ctx.mailbox:
            pass

    specs = [ChildSpec("a", journal.worker()),
             ChildSpec("b", never_ready_again, start_timeout=None, shutdown_timeout=5.0)]
    async with open_supervisor(specs, strategy="one_for_all") as sup:
        await sup.mailbox("a").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert [c.incarnation for c in sup.statistics().children] == [2, 2]
        exited = trio.current_time()
    assert trio.current_time() - exited == 5.0
    assert [c.state for c in sup.statistics().children] == ["stopped", "stopped"]


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_on_exit_is_called_once_when_a_child_ends_for_good_not_at_a_group_restart(
        journal, autojump_clock, strategy):
    """ChildSpec's on_exit: 'called once the child's task has ended for good: ... not
    restarted'. A group restart ends the tasks of the children it restarts; they run again."""
    exits: list[str] = []
    specs = [ChildSpec(name, journal.worker(), on_exit=functools.partial(exits.append, name))
             for name in "abc"]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("b").send("crash")
        await journal.wait_for("ready", "b", 2)
        await trio.testing.wait_all_tasks_blocked()
        assert exits == []  # everyone is running again
        await sup.stop_child("a")
        assert exits == ["a"]
    assert exits == ["a", "c", "b"]  # then in reverse order, as they stopped


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_on_exit_of_a_child_whose_group_restart_never_came_is_still_called(
        journal, autojump_clock, strategy):
    # b fails to start again, past the intensity: the supervisor gives up in the middle of
    # the group restart, and c, stopped for it, is never started again: it ended for good.
    exits: list[str] = []
    specs = [ChildSpec("a", journal.worker(), on_exit=functools.partial(exits.append, "a")),
             ChildSpec("b", journal.worker(fail_at_start=lambda n: n > 1),
                       on_exit=functools.partial(exits.append, "b")),
             ChildSpec("c", journal.worker(), on_exit=functools.partial(exits.append, "c"))]

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy,
                                   intensity=Intensity(max_restarts=1, period=60.0)) as sup:
            await sup.mailbox("b").send("crash")
            await trio.sleep_forever()

    with pytest.raises(RestartIntensityExceeded):
        await run()
    assert sorted(exits) == ["a", "b", "c"]  # each once


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() of this error fails")


async def test_an_error_whose_str_fails_is_a_crash_like_any_other(journal, autojump_clock):
    """The child boundary: whatever an incarnation raises is its crash, restarted and recorded;
    it never takes the supervisor down, not even when describing it fails."""
    exits: list[str] = []

    async def crashes(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        if ctx.incarnation > 1:
            await trio.sleep_forever()  # it reads no more: what is sent now stays buffered
        async for _ in ctx.mailbox:
            raise Unprintable

    def on_exit() -> None:
        exits.append("a")
        raise Unprintable

    specs = [ChildSpec("a", crashes, on_exit=on_exit, dead_letter=lambda m, e: on_exit(),
                       shutdown_timeout=0)]
    async with open_supervisor(specs) as sup:
        await sup.mailbox("a").send("go")
        await trio.testing.wait_all_tasks_blocked()
        [record] = sup.restart_log
        assert (record.action, record.error_type) == ("restart", "Unprintable")
        assert "str() failed" in record.error
        assert sup.statistics().children[0].incarnation == 2
        sup.mailbox("a").send_nowait("left for the dead-letter hook")
        await sup.stop_child("a")
    assert exits == ["a", "a"]  # on_exit, then the dead-letter hook: both failures logged


async def test_an_on_exit_told_as_an_outer_cancellation_ends_the_supervisor_starts_nothing(
        journal, autojump_clock, caplog):
    """b is stopped for a group restart that waits out a's backoff, then an outer
    cancellation ends the supervisor: b's on_exit is told as the supervisor finishes, and a
    replacement it starts there is refused (logged), not half-registered, and the
    cancellation goes on."""
    supervisors = []

    def replace_b() -> None:
        journal.events.append(("on_exit", "b"))
        supervisors[0].start_child_soon(ChildSpec("b2", journal.worker()))

    specs = [ChildSpec("a", journal.worker(), backoff=Backoff(min=10.0, max=10.0, jitter=0)),
             ChildSpec("b", journal.worker(), on_exit=replace_b)]
    with trio.move_on_after(5.0) as cut:
        async with open_supervisor(specs, strategy="one_for_all") as sup:
            supervisors.append(sup)
            await sup.mailbox("a").send("crash")
            await trio.sleep_forever()
    assert cut.cancelled_caught
    assert journal.of("on_exit") == [("on_exit", "b")]
    assert [c.name for c in sup.statistics().children] == ["a", "b"]
    assert {c.state for c in sup.statistics().children} == {"stopped"}
    assert "event=on_exit_failed" in caplog.text
    assert "takes no new children" in caplog.text
