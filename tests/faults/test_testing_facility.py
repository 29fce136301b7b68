"""tidings.testing itself: the instrument, the ledger, the censuses, the checks, the fixture."""

from __future__ import annotations

import contextlib
import gc
import math
import sqlite3
import subprocess
import sys

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import Outbound
from tidings.errors import InjectedFault, StoreClosedError, ValidationError
from tidings.store import delivery_report, read_database
from tidings.supervisor import ChildSpec, Intensity, open_supervisor
from tidings.testing import (
    ChannelCensus,
    CheckpointInjector,
    FaultLedger,
    FaultPlan,
    FaultRule,
    InvariantChecker,
    InvariantViolation,
    MemoryRoute,
    ReconcilingMemoryRoute,
    RuntimeThread,
    Seam,
    TaskCensus,
    Violation,
    database_violations,
    delivery_path_run,
    lane_violations,
    route_violations,
    runtime_fixture,
    sweep_delivery_path,
    writer_gate,
)
from tidings.testing import (
    parse_log_line as parse,
)

rt = runtime_fixture()
faulty_rt = runtime_fixture(name="faulty_rt",
                            fault_plan=lambda: FaultPlan([FaultRule("deliver", nth=1)]))


def test_importing_tidings_does_not_import_pytest() -> None:
    code = "import sys, tidings, tidings.testing; print('pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


async def test_the_runtime_fixture_yields_a_running_runtime(rt) -> None:
    route = MemoryRoute()
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    assert await handle.wait() == "delivered"
    assert rt.supervisor.statistics().state == "running"


async def test_two_runtime_fixtures_in_one_test_each_open_their_own_database(
        rt, faulty_rt) -> None:
    # The README's conftest defines both; a test taking both got "already open in another
    # runtime" when they shared <tmp_path>/state/tidings.db.
    assert rt.store.path != faulty_rt.store.path
    assert rt.workspace == faulty_rt.workspace
    results = []
    for runtime in (rt, faulty_rt):
        session_id = await runtime.create_session(channel="web")
        runtime.router.bind(session_id, MemoryRoute())
        async with runtime.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hello")
        results.append(await handle.wait())
    assert results == ["delivered", "unknown"]  # the fault hit the lane after the claim


# --- the checkpoint instrument -----------------------------------------------------------------


async def _ticker(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for _ in ctx.mailbox:
        await trio.lowlevel.checkpoint()


async def _feed(sup, n: int) -> None:
    for i in range(n):
        await sup.mailbox("a").send(i)
        await trio.testing.wait_all_tasks_blocked()


async def test_the_instrument_counts_the_steps_of_one_child_only() -> None:
    async with open_supervisor([ChildSpec("a", _ticker), ChildSpec("b", _ticker)]) as sup:
        counter = CheckpointInjector(sup, "a")
        with counter.installed():
            await _feed(sup, 3)
            for i in range(3):
                await sup.mailbox("b").send(i)
            await trio.testing.wait_all_tasks_blocked()
    assert counter.steps == 6  # per message: woken by the send, then its checkpoint
    assert counter.injected == []
    assert sup.restart_log == ()


@pytest.mark.parametrize("at", [1, 2, 5])
async def test_the_instrument_cancels_the_child_at_step_n(at: int) -> None:
    ledger = FaultLedger()
    with ledger.recording():
        async with open_supervisor([ChildSpec("a", _ticker)],
                                   intensity=Intensity(max_restarts=10, period=1)) as sup:
            injector = CheckpointInjector(sup, "a", at=at, ledger=ledger)
            with injector.installed():
                await _feed(sup, 3)
    [(step, child)] = injector.injected
    assert (step, child) == (at, "a")
    [record] = sup.restart_log
    assert (record.error_type, record.error) == ("InjectedFault", "injected cancel of a")
    assert ledger.unaccounted() == []
    assert injector.errors == []


async def test_every_n_injects_repeatedly_and_times_caps_it() -> None:
    async with open_supervisor([ChildSpec("a", _ticker)],
                               intensity=Intensity(max_restarts=10, period=1)) as sup:
        injector = CheckpointInjector(sup, "a", every=2, times=2)
        with injector.installed():
            await _feed(sup, 6)
    # step 4 is the crash's own (its tick's restart decision, no incarnation running): due,
    # not injected; the next due step is 6
    assert [step for step, _ in injector.injected] == [2, 6]
    assert len(sup.restart_log) == 2


async def test_the_instrument_never_raises_from_a_hook() -> None:
    def broken():
        raise RuntimeError("no supervisor today")

    async with open_supervisor([ChildSpec("a", _ticker)]) as sup:
        injector = CheckpointInjector(broken, "a", at=1)
        with injector.installed():
            await _feed(sup, 1)
    assert injector.steps == 0
    assert [type(e) for e in injector.errors][:1] == [RuntimeError]
    assert sup.restart_log == ()


# --- the fault ledger --------------------------------------------------------------------------


def test_log_lines_parse_into_fields() -> None:
    assert parse('event=child_failed child=a action=escalate error="injected fault at send of '
                 'writer" error_type=InjectedFault') == {
        "event": "child_failed", "child": "a", "action": "escalate",
        "error": "injected fault at send of writer", "error_type": "InjectedFault"}


async def test_a_fault_nobody_saw_is_a_masked_fault_and_a_surfaced_one_is_not() -> None:
    plan = FaultPlan([FaultRule(Seam.SEND, child="a", times=2)])
    for report in (False, True):
        checker = InvariantChecker()
        with checker.watch():
            async with open_supervisor([ChildSpec("a", _ticker)], fault_plan=plan) as sup:
                try:
                    await sup.mailbox("a").send("x")
                except InjectedFault as exc:
                    if report:
                        checker.surfaced(exc)
        masked = [v for v in checker.violations if v.invariant == "masked_fault"]
        assert len(masked) == (0 if report else 1)


# --- censuses ------------------------------------------------------------------------------------


async def test_the_task_census_finds_a_task_left_running() -> None:
    async with trio.open_nursery() as nursery:
        census = TaskCensus.take()
        assert census.leaked() == []
        nursery.start_soon(trio.sleep_forever, name="left-behind")
        await trio.testing.wait_all_tasks_blocked()
        assert [task.name for task in census.leaked()] == ["left-behind"]
        nursery.cancel_scope.cancel()


async def test_the_channel_census_finds_an_open_channel_still_referenced() -> None:
    census = ChannelCensus.take()
    send, receive = trio.open_memory_channel[int](1)
    assert len(census.leaked()) == 1
    send.close()
    assert census.leaked() == []  # a receive end alone gets EndOfChannel: harmless
    receive.close()
    assert census.leaked() == []


async def test_the_channel_census_skips_an_open_channel_only_garbage_refers_to() -> None:
    census = ChannelCensus.take()
    gc.disable()  # so that only the census's own collection can free the cycle
    try:
        send, receive = trio.open_memory_channel[int](1)
        cycle: list[object] = [send, receive]
        cycle.append(cycle)
        del send, receive, cycle
        assert census.leaked() == []
        kept = trio.open_memory_channel[int](1)  # and one still referenced is found after it
        assert len(census.leaked()) == 1
    finally:
        gc.enable()
    for end in kept:
        end.close()


# --- the database and route checks ---------------------------------------------------------------


async def test_the_database_check_passes_a_clean_run_and_flags_an_open_row(db_path,
                                                                          workspace) -> None:
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0.01) as runtime:
        session_id = await runtime.create_session(channel="web")
        runtime.router.bind(session_id, route)
        async with runtime.open_turn(session_id) as ctx:
            await ctx.output.send_text("stuck")
            await ctx.output.send_text("queued behind it")
        await route.wait_attempted(1)
    found = database_violations(db_path)
    assert sorted(v.detail.split()[-1] for v in found if v.invariant == "terminal") == [
        "queued", "sending"]
    assert database_violations(db_path, allow_open=True) == []


def test_the_database_check_flags_a_work_item_out_of_step(db_path, workspace) -> None:
    async def one_delivery() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace) as runtime:
            session_id = await runtime.create_session(channel="web")
            runtime.router.bind(session_id, MemoryRoute())
            async with runtime.open_turn(session_id) as ctx:
                await (await ctx.output.send_text("x")).wait()

    trio.run(one_delivery)
    assert database_violations(db_path) == []
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE work_items SET status = 'pending'")
    conn.commit()
    conn.close()
    assert [v.invariant for v in database_violations(db_path)] == ["work_item"]


def _outbound(session_id: str, delivery_id: str, seq: int) -> Outbound:
    return Outbound(session_id=session_id, delivery_id=delivery_id, kind="message", blocks=(),
                    text=delivery_id, seq=seq)


def test_the_route_check_flags_duplicates_order_and_misrouting() -> None:
    route = MemoryRoute()
    route.attempted = [_outbound("s1", "d1", 1), _outbound("s1", "d3", 3),
                       _outbound("s1", "d2", 2), _outbound("s1", "d3", 3),
                       _outbound("s2", "d9", 1)]
    found = route_violations({"s1": route})
    assert sorted(v.invariant for v in found) == ["duplicate", "order", "order", "order",
                                                  "routing"]
    assert route_violations({"s1": route}, requeued={"d3", "d9"}) == [
        Violation("routing", "delivery d9 of s2 reached the route of s1")]


async def test_one_route_bound_to_several_sessions_is_checked_per_session(rt) -> None:
    # One MemoryRoute for every session (a host's one platform adapter), given as
    # {session: route} as the README says: each session was checked over all the route was
    # handed, so every row of the other session was 'routing' (and 'order') for a run where
    # nothing went wrong.
    route = MemoryRoute()
    sessions = [await rt.create_session(channel="web") for _ in range(2)]
    handles = []
    for session_id in sessions:
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handles += [await ctx.output.send_text(f"{session_id} {n}") for n in range(2)]
    assert [await handle.wait() for handle in handles] == ["delivered"] * 4
    await rt.store.commit([])
    db_path = rt.store.path
    assert route_violations({session_id: route for session_id in sessions},
                            db_path=db_path) == []
    # a row of a session it was not given for is still misrouted
    found = route_violations({sessions[0]: route})
    assert [v.invariant for v in found].count("routing") == 2


async def test_a_reconciling_route_answers_missing_for_a_delivery_it_only_refused() -> None:
    # A deliver that raised the route's failure finished (the platform refused it: it provably
    # lacks it), but reconcile answered None (undecided) for any id deliver was called with,
    # so an unknown row whose attempt was refused (a crash before its failed write) stayed
    # unknown at every pass instead of going out again.
    route = ReconcilingMemoryRoute(fail=True)
    with pytest.raises(ConnectionError):
        await route.deliver(_outbound("s1", "d1", 1))
    route.fail = None
    route.stall()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(route.deliver, _outbound("s1", "d2", 2))
        await route.wait_attempted(2)
        assert await route.reconcile(["d1", "d2", "d3"]) == {
            "d1": "missing", "d2": None, "d3": "missing"}
        nursery.start_soon(route.deliver, _outbound("s1", "d1", 1))  # tried again, in flight
        await route.wait_attempted(3)
        assert await route.reconcile(["d1"]) == {"d1": None}
        route.release()
    assert await route.reconcile(["d1", "d2"]) == {"d1": "sent", "d2": "sent"}


async def test_the_lane_check_flags_an_unacked_row_until_its_client_acks(rt) -> None:
    route = MemoryRoute(ack_window=2)
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    await route.wait_delivered(1)
    await trio.testing.wait_all_tasks_blocked()
    found = lane_violations(rt)
    assert [v.invariant for v in found] == ["lane", "lane"], found
    assert "unacked=1 unacked_bytes=5 " in found[0].detail
    assert "unacked_bytes=5 queued_bytes=0" in found[1].detail  # the statistics' totals
    assert await rt.confirm([handle.delivery_id]) == [handle.delivery_id]
    assert await handle.wait() == "delivered"
    await trio.testing.wait_all_tasks_blocked()
    assert lane_violations(rt) == []


def test_the_checker_raises_one_error_listing_every_violation() -> None:
    checker = InvariantChecker()
    checker.violations += [Violation("order", "a"), Violation("duplicate", "b")]
    with pytest.raises(InvariantViolation, match="2 invariant violation") as raised:
        checker.assert_ok()
    assert [v.invariant for v in raised.value.violations] == ["order", "duplicate"]


# --- the writer gate -----------------------------------------------------------------------------


async def test_the_writer_gate_holds_writes_until_released(rt) -> None:
    created: list[str] = []
    async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
        async def create() -> None:
            created.append(await rt.create_session(channel="web"))

        nursery.start_soon(create)
        await trio.testing.wait_all_tasks_blocked()
        assert created == []
        gate.release()
    assert len(created) == 1


def test_the_ledger_tells_a_cancel_at_send_from_a_raise_at_send() -> None:
    """A raise at ``send`` lands in the sender; a cancel at ``send`` in the target: the target's
    crash accounts for the cancel, never for a raise some sender still owes a report of."""
    ledger = FaultLedger()
    ledger.note("event=fault_injected child=writer seam=send action=raise hit=1")
    ledger.note("event=fault_injected child=writer seam=send action=cancel hit=2")
    ledger.note('event=child_restarted supervisor=tidings child=writer incarnation=1 '
                'error_type=InjectedFault error="injected cancel at send of writer"')
    assert [str(e) for e in ledger.entries if e.accounted_by is None] == [
        "raise at send of writer"]


# --- the memory route ----------------------------------------------------------------------------


async def test_a_fail_predicate_may_answer_true_or_false(rt) -> None:
    # The README calls fail "an exception or a predicate": a predicate answering False failed
    # every delivery ("TypeError: exceptions must derive from BaseException"), True too.
    route = MemoryRoute(fail=lambda outbound: "boom" in outbound.text)
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        fine = await ctx.output.send_text("fine")
        boom = await ctx.output.send_text("boom")
    assert [await fine.wait(), await boom.wait()] == ["delivered", "failed"]
    assert route.texts() == ["fine"]
    status = await rt.delivery_status(boom.delivery_id)
    assert status.last_error == f"ConnectionError: delivery {boom.delivery_id} refused"


async def test_a_fail_predicate_answering_something_else_is_named(rt) -> None:
    route = MemoryRoute(fail=lambda outbound: "no")
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    assert await handle.wait() == "failed"
    status = await rt.delivery_status(handle.delivery_id)
    assert status.last_error == ("TypeError: MemoryRoute.fail: must answer an exception, a bool "
                                 "or None, got 'no'")


async def test_a_writer_gate_on_a_closed_store_raises_and_leaves_no_thread(tmp_path,
                                                                          workspace) -> None:
    # The gate's commit failed (the writer is gone) without reaching the gate, and the thread
    # waiting for the writer to enter it waited for good: one thread leaked per call. That
    # wait is abandoned when the gate fails, so it ends (or not) after the gate has returned;
    # it holds its token of trio's default thread limiter until it ends. With one token, taking
    # it back waits for exactly that thread (wait_all_tasks_blocked waits for no thread: the
    # worker may not even have started the wait when it returns).
    async with tidings.open_runtime(tmp_path / "state" / "tidings.db",
                                    workspace=workspace) as rt:
        pass
    limiter = trio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = 1  # this run's: only the gate's wait borrows from it here
    with pytest.raises(StoreClosedError):
        async with writer_gate(rt.store):
            pytest.fail("the gate was never held")
    with trio.fail_after(10):  # hang guard: a leaked thread keeps its token for good
        async with limiter:
            assert limiter.borrowed_tokens == 1  # ours alone: the gate's thread has ended


# --- the runtime thread --------------------------------------------------------------------------


def test_a_runtime_thread_can_be_entered_again_after_it_stopped(tmp_path, workspace) -> None:
    # The second with block found the first run's ready event still set: it went on at once
    # with the stopped loop's token and runtime, and its exit joined the new loop's thread,
    # which nothing stopped: the test hung.
    thread = RuntimeThread(tmp_path / "state" / "tidings.db", workspace)
    runtimes = []
    for _ in range(2):
        with thread:
            assert thread.run(thread.rt.create_session).startswith("session_")
            runtimes.append(thread.rt)
    assert runtimes[0] is not runtimes[1]


def test_a_runtime_thread_refuses_a_second_with_while_it_runs(tmp_path, workspace) -> None:
    thread = RuntimeThread(tmp_path / "state" / "tidings.db", workspace)
    with thread:
        with pytest.raises(RuntimeError, match="already running"), thread:
            pass
        assert thread.run(thread.rt.create_session).startswith("session_")


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_runtime_thread_used_outside_its_with_block_says_so(tmp_path, workspace,
                                                               when) -> None:
    # Before the block an assert said it (nothing under python -O, where the call ran with no
    # token and trio's error spoke of threads); after it, trio's bare RunFinishedError.
    thread = RuntimeThread(tmp_path / "state" / "tidings.db", workspace)
    if when == "after":
        with thread:
            pass
    with pytest.raises(RuntimeError, match="not running; call run"):
        thread.run(trio.lowlevel.checkpoint)
    with pytest.raises(RuntimeError, match="not running; call run"):
        thread.enter(contextlib.AsyncExitStack())


# --- the sweep -----------------------------------------------------------------------------------


async def test_a_sweep_takes_a_directory_given_as_a_string(tmp_path, workspace) -> None:
    # run_chaos takes str paths; the sweep's directory / "clean.db" was a TypeError naming
    # nothing ("unsupported operand type(s) for /: 'str' and 'str'").
    runs = await sweep_delivery_path(str(tmp_path / "sweep"), str(workspace), target="writer",
                                     every=10**6)
    assert len(runs) == 1
    assert runs[0].steps > 0
    assert runs[0].violations == ()


async def test_a_sweep_refuses_a_directory_an_earlier_sweep_wrote_by_name(tmp_path,
                                                                           workspace) -> None:
    # A second sweep into the directory of a first ran on its databases, and the checks, which
    # read all of one, held the first sweep's rows against it: 'delivery ... is sent, but no
    # route accepted it', three per run of a path where nothing went wrong.
    where = tmp_path / "sweep"
    [first] = await sweep_delivery_path(where, workspace, target="writer", every=10**6)
    assert first.violations == ()
    before = (where / "clean.db").read_bytes()
    with pytest.raises(ValidationError) as raised:
        await sweep_delivery_path(where, workspace, target="writer", every=10**6)
    assert raised.value.field == "directory"
    with pytest.raises(ValidationError) as raised:
        await delivery_path_run(where / "clean.db", workspace, target="writer")
    assert raised.value.field == "db_path"
    assert (where / "clean.db").read_bytes() == before


@pytest.mark.parametrize("every", [0, -1, True, "2", 1.5])
async def test_a_sweep_refuses_an_every_that_is_no_step_by_name(tmp_path, workspace,
                                                                every) -> None:
    # every=-1 swept nothing: the clean run alone, no violation, a test that passes.
    with pytest.raises(ValidationError, match="every") as raised:
        await sweep_delivery_path(tmp_path / "sweep", workspace, every=every)
    assert raised.value.field == "every"
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(("fail", "outcome"), [(False, "delivered"), (True, "failed")])
async def test_a_fail_of_true_or_false_fails_or_accepts_every_delivery(rt, fail,
                                                                       outcome) -> None:
    # The README lists fail as "an exception, or a predicate ..., True for a ConnectionError,
    # or None / False to accept it"; MemoryRoute(fail=False) (or route.fail = False, to stop
    # failing) failed every delivery with "TypeError: 'bool' object is not callable".
    route = MemoryRoute(fail=fail)
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    assert await handle.wait() == outcome
    status = await rt.delivery_status(handle.delivery_id)
    assert status.last_error == (None if outcome == "delivered" else
                                 f"ConnectionError: delivery {handle.delivery_id} refused")


@pytest.mark.parametrize("fail", ["boom", 3, (ConnectionError,)])
def test_a_memory_route_refuses_a_fail_that_is_no_failure_by_name(fail) -> None:
    # It was taken, and every delivery then failed on it ("TypeError: 'str' object is not
    # callable"), recorded as the platform's error.
    with pytest.raises(ValidationError) as raised:
        MemoryRoute(fail=fail)
    assert raised.value.field == "fail"


@pytest.mark.parametrize("capabilities", ["image", ["images"], {"file": False}, [3]],
                         ids=["a string", "a misspelt type", "a mapping", "no name"])
def test_a_memory_route_refuses_capabilities_a_bind_would_by_name(capabilities) -> None:
    # A string was split into letters by frozenset() and the route built; the bind then
    # refused it, listing the letters ['a', 'e', 'g', 'i', 'm'] as unknown block types,
    # far from the line that made the route.
    with pytest.raises(ValidationError) as raised:
        MemoryRoute(capabilities=capabilities)
    assert raised.value.field == "capabilities"
    assert "'a', 'e'" not in str(raised.value)


@pytest.mark.parametrize("ack_window", [-1, 1.5, True, "2"],
                         ids=["negative", "a float", "a bool", "a string"])
async def test_a_memory_route_refuses_an_ack_window_a_bind_would_by_name(
        rt, ack_window) -> None:
    # It was taken, and the bind refused it later, far from the line that made the route (or,
    # for a route never bound, never).
    with pytest.raises(ValidationError) as raised:
        MemoryRoute(ack_window=ack_window)
    assert raised.value.field == "ack_window"
    with pytest.raises(ValidationError) as bound:  # what the bind says of such a route
        rt.router.bind(await rt.create_session(channel="web"),
                       type("Acking", (), {"ack_window": ack_window,
                                           "deliver": MemoryRoute.deliver})())
    assert bound.value.field == "ack_window"


def test_a_memory_route_keeps_an_ack_window_a_bind_takes() -> None:
    assert MemoryRoute(ack_window=2).ack_window == 2
    assert MemoryRoute(ack_window=0).ack_window == 0  # 0: it does not ack, as for a bind
    assert not hasattr(MemoryRoute(), "ack_window")


def test_a_memory_route_keeps_the_block_types_it_is_given() -> None:
    assert MemoryRoute(capabilities=["text", "image"]).capabilities == {"text", "image"}
    assert not hasattr(MemoryRoute(), "capabilities")  # text only, as a route without any


@pytest.mark.parametrize("fail", ["boom", 3, (ConnectionError,)])
async def test_a_fail_set_later_that_is_no_failure_is_refused_by_name(rt, fail) -> None:
    # route.fail = ... is how a test starts or stops failing (the README: "anything else is
    # refused naming fail"), but only MemoryRoute(fail=...) was checked: a later route.fail =
    # "boom" was taken, and every delivery then failed with "TypeError: 'str' object is not
    # callable", recorded as the platform's error.
    route = MemoryRoute(fail=True)
    with pytest.raises(ValidationError) as raised:
        route.fail = fail
    assert raised.value.field == "fail"
    assert route.fail is True  # kept as it was
    route.fail = False
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    assert await handle.wait() == "delivered"


@pytest.mark.parametrize("latency", [-1, "0.1", float("nan"), True])
def test_a_memory_route_refuses_a_latency_that_is_no_duration_by_name(latency) -> None:
    # It was taken, and every delivery then failed on it ("ValueError: `seconds` must be
    # non-negative", or a TypeError about '<'), recorded as the platform's error.
    with pytest.raises(ValidationError) as raised:
        MemoryRoute(latency=latency)
    assert raised.value.field == "latency"


@pytest.mark.parametrize("latency", [-1, "0.1", float("nan"), True])
async def test_a_latency_set_later_that_is_no_duration_is_refused_by_name(rt, latency) -> None:
    # "controllable latency" (the class docstring), but only MemoryRoute(latency=...) was
    # checked: a later route.latency = "0.1" was taken, and every delivery then failed with a
    # TypeError, recorded as the platform's error, the field never named.
    route = MemoryRoute(latency=1)
    with pytest.raises(ValidationError) as raised:
        route.latency = latency
    assert raised.value.field == "latency"
    assert route.latency == 1  # kept as it was
    route.latency = 0
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    assert await handle.wait() == "delivered"


@pytest.mark.parametrize("latency", [math.inf, 10 ** 400], ids=["inf", "10**400"])
async def test_a_latency_past_a_float_s_range_holds_a_delivery_as_inf_does(
        tmp_path, workspace, latency) -> None:
    # The check takes an integer of seconds no float holds (seconds >= 0, as for open_runtime's
    # grace, where it is no bound); trio.sleep then failed every delivery with an
    # OverflowError, recorded as the platform's error, as a bad latency was before it.
    route = MemoryRoute(latency=latency)
    async with tidings.open_runtime(tmp_path / "tidings.db", workspace=workspace,
                                    grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hello")
        await route.wait_attempted(1)
    status = read_database(tmp_path / "tidings.db", delivery_report, handle.delivery_id).delivery
    assert (status.status, status.last_error) == ("sending", None)  # held until the stop
    assert route.delivered == []


@pytest.mark.parametrize("directory", ["a#b", "a?b", "100%41"])
async def test_the_checks_read_a_database_whose_path_holds_uri_characters(
        tmp_path, workspace, directory) -> None:
    # The checks opened f"file:{db_path}?mode=ro" as a URI: a '#' or '?' in the path cut it
    # short ("no such table: outbox", from another file) and '%41' was read as 'A' ("unable
    # to open database file"), for a path open_runtime itself takes.
    db_path = tmp_path / directory / "tidings.db"
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hello")
        assert await handle.wait() == "delivered"
    assert database_violations(db_path) == []
    assert route_violations({session_id: route}, db_path=db_path) == []
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([directory, "workspace"])


@pytest.mark.parametrize("where", ["missing.db", "a directory"])
def test_the_checks_name_a_path_where_no_database_is(tmp_path, where) -> None:
    # A path with no database (the runtime_fixture's is <tmp_path>/<fixture name>/tidings.db,
    # not <tmp_path>/tidings.db) was sqlite3.OperationalError('unable to open database file'),
    # naming no path.
    path = tmp_path / where
    if where == "a directory":
        path.mkdir()
    for check in (database_violations, lambda db: route_violations({}, db_path=db)):
        with pytest.raises(FileNotFoundError) as raised:
            check(path)
        assert raised.value.filename == str(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ([where] if path.exists() else [])


@pytest.mark.parametrize("target", ["Writer", "route:", "nobody"])
async def test_a_sweep_of_a_target_that_runs_no_step_is_refused_by_name(tmp_path, workspace,
                                                                        target) -> None:
    # A target that names no actor of the path (a typo) counted 0 steps in the clean run, and
    # the sweep returned that run alone, with no violation: a sweep test passed having
    # injected nothing.
    with pytest.raises(ValidationError, match="nothing to sweep") as raised:
        await sweep_delivery_path(tmp_path / "sweep", workspace, target=target)
    assert raised.value.field == "target"


class _Stop(BaseException):
    """Not an Exception: a request to stop (as KeyboardInterrupt), raised while entering."""


class _StopsWhenEntered:
    async def __aenter__(self) -> int:
        await trio.lowlevel.checkpoint()
        raise _Stop

    async def __aexit__(self, *exc_info: object) -> None:
        await trio.lowlevel.checkpoint()


def _enter_into(thread: RuntimeThread, outcome: list[object]) -> None:
    try:
        outcome.append(thread.enter(_StopsWhenEntered()))
    except BaseException as exc:  # noqa: BLE001 - what it raised is the point
        outcome.append(exc)


def test_a_context_that_stops_the_runtime_thread_while_entered_is_not_entered(
        tmp_path, workspace) -> None:
    # Its BaseException ended the loop, and enter() returned None, as if it had been entered
    # (a port of None from a gateway's serving(), say), while nothing ran any more.
    # Or, as the loop's end raced the answer, with trio.Cancelled in the caller's thread.
    for n in range(5):
        thread = RuntimeThread(tmp_path / f"{n}" / "tidings.db", workspace)
        outcome: list[object] = []
        with pytest.raises(_Stop), thread:
            _enter_into(thread, outcome)
        assert isinstance(outcome[0], RuntimeError), outcome
        assert "stopped before" in str(outcome[0])
