"""The failure matrix's moments around a start and a stop: failure kind x strategy x when.

``test_kernel_moments_matrix`` has the moments between restarts. These are: a child that
fails while a later sibling is still in the initial start; a start that fails by timing out
or with a ``BaseException``, initially or in a restart; a sibling that fails as a group
restart stops it; a child that fails on its own while the supervisor stops its siblings (at
the exit, or after it gave up). README: a stop is no crash, an error while stopping is
recorded ``shutdown_error``; a ``BaseException`` that is no ``Exception`` passes through.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import ChildStartError, RestartIntensityExceeded
from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .moment_children import Halt, child, crash_run, later_starts

STRATEGIES = ("one_for_one", "one_for_all", "rest_for_one")
ENDINGS = ("raise", "return", "halt")


def _all_stopped(sup, state: str) -> None:
    stats = sup.statistics()
    assert stats.state == state
    assert {c.state for c in stats.children} <= {"stopped"}
    for c in stats.children:
        assert sup.mailbox(c.name).statistics().closed


async def _halts(run, out) -> None:
    """A halt passes through the run; the supervisor it ended failed, every child stopped."""
    with pytest.raises(Halt):
        await run()
    _all_stopped(out[0], "failed")


# --- a child fails while a later sibling is still in the initial start ---------------------------


@pytest.mark.parametrize("kind", ENDINGS)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_child_fails_while_a_later_sibling_is_in_the_initial_start(
        journal, autojump_clock, live_tasks, strategy, kind):
    """b is ready and ends at 1 s while c takes until 3 s to be ready. one_for_one restarts b
    at once; a group restart waits for the initial start (c is not started beside it) and
    then runs, in order. A halt ends the supervisor at 1 s, c's start cut off."""
    exits: list[str] = []
    specs = [ChildSpec(name, child(journal, ready_after={1: 3.0} if name == "c" else None,
                                   fails={1: (1.0, kind)} if name == "b" else None),
                       on_exit=lambda name=name: exits.append(name))
             for name in "abc"]
    before = live_tasks()
    out = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy) as sup:
            out.append(sup)
            assert trio.current_time() == 3.0
            await trio.testing.wait_all_tasks_blocked()
            assert [(c.name, c.state) for c in sup.statistics().children] == [
                (name, "running") for name in "abc"]

    if kind == "halt":
        with pytest.raises(Halt):
            await run()
        assert trio.current_time() == 1.0
        assert out == []
        assert ("ready", "c", 1) not in [event[:3] for event in journal.events]
    else:
        await run()
        [sup] = out
        assert later_starts(journal) == {
            "one_for_one": [("b", 2, 1.0)],
            "one_for_all": [("a", 2, 3.0), ("b", 2, 3.0), ("c", 2, 3.0)],
            "rest_for_one": [("b", 2, 3.0), ("c", 2, 3.0)]}[strategy]
        assert [(r.child, r.action, r.incarnation) for r in sup.restart_log] == [
            ("b", "restart", 1)]
        _all_stopped(sup, "stopped")
    assert sorted(exits) == ["a", "b", "c"]
    assert live_tasks() == before


# --- a start that times out or halts ---------------------------------------------------------


@pytest.mark.parametrize("how", ["never ready", "halt"])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_an_initial_start_that_times_out_or_halts(journal, autojump_clock, live_tasks,
                                                       strategy, how):
    """b never reports readiness (start_timeout 3 s) or halts before it: ChildStartError
    (its cause trio.TooSlowError) once a is stopped, or the halt itself; c never starts,
    every on_exit is called once, no task is left."""
    exits: list[str] = []
    specs = [ChildSpec(name, child(journal, fails_at_start={1: how} if name == "b" else None),
                       start_timeout=3.0, on_exit=lambda name=name: exits.append(name))
             for name in "abc"]
    before = live_tasks()
    expected = ChildStartError if how == "never ready" else Halt
    with pytest.raises(expected) as caught:
        async with open_supervisor(specs, strategy=strategy):
            raise AssertionError("the body must not run")
    if how == "never ready":
        assert caught.value.child == "b"
        assert isinstance(caught.value.__cause__, trio.TooSlowError)
        assert trio.current_time() == 3.0
        assert [event[:3] for event in journal.of("stop")] == [("stop", "a", 1)]
    else:
        assert trio.current_time() == 0.0
    assert [event[1] for event in journal.of("start")] == ["a", "b"]
    assert sorted(exits) == ["a", "b", "c"]
    assert live_tasks() == before


@pytest.mark.parametrize("how", ["never ready", "raise", "halt"])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_restart_whose_start_times_out_fails_or_halts(
        journal, autojump_clock, live_tasks, strategy, how):
    """b crashes; its second incarnation never gets ready (start_timeout 3 s), fails, or halts
    before it is ready. A failed start is a counted crash: its group restarts again, and the
    third incarnation runs. A halt ends the supervisor as it comes."""
    specs = [ChildSpec(name, child(journal, fails_at_start={2: how} if name == "b" else None),
                       start_timeout=3.0)
             for name in "abc"]
    before = live_tasks()
    out = []
    run = crash_run(specs, strategy, out, [(0.0, "b", "raise")], settle=10.0)

    if how == "halt":
        await _halts(run, out)
        assert trio.current_time() == 0.0
        assert live_tasks() == before
        return
    await run()
    [sup] = out
    at = 3.0 if how == "never ready" else 0.0
    assert later_starts(journal) == {
        "one_for_one": [("b", 2, 0.0), ("b", 3, at)],
        "one_for_all": [("a", 2, 0.0), ("b", 2, 0.0), ("a", 3, at), ("b", 3, at),
                        ("c", 2, at)],
        "rest_for_one": [("b", 2, 0.0), ("b", 3, at), ("c", 2, at)]}[strategy]
    assert [(r.child, r.action, r.incarnation, r.error_type) for r in sup.restart_log] == [
        ("b", "restart", 1, "Boom"),
        ("b", "restart", 2, "TooSlowError" if how == "never ready" else "Boom")]
    assert sup.statistics().restarts == 2
    assert live_tasks() == before


# --- a sibling fails as a group restart stops it -------------------------------------------------


@pytest.mark.parametrize("kind", ENDINGS)
@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_sibling_that_fails_as_a_group_restart_stops_it(
        journal, autojump_clock, live_tasks, strategy, kind):
    """a crashes; its group restart stops c, which ends its way as its mailbox closes. An
    error is a shutdown_error (no restart of its own, not counted) and the restart goes on; a
    return is a plain stop; a halt passes through, ending the supervisor."""
    specs = _specs_stopping_badly(journal, kind)
    before = live_tasks()
    out = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy,
                                   intensity=Intensity(max_restarts=1, period=60.0)) as sup:
            out.append(sup)
            await sup.mailbox("a").send("raise")
            await trio.testing.wait_all_tasks_blocked()
            assert [(c.name, c.state, c.incarnation) for c in sup.statistics().children] == [
                (name, "running", 2) for name in "abc"]
            assert sup.statistics().restarts == 1

    if kind == "halt":
        await _halts(run, out)
        assert ("start", "a", 2) not in [event[:3] for event in journal.events]
    else:
        await run()
        [sup] = out
        failed = [("c", "shutdown_error", n) for n in (1, 2)] if kind == "raise" else []
        assert [(r.child, r.action, r.incarnation) for r in sup.restart_log] == [
            ("a", "restart", 1), *failed[:1], *failed[1:]]
        _all_stopped(sup, "stopped")
    assert live_tasks() == before


def _specs_stopping_badly(journal, kind: str) -> list[ChildSpec]:
    return [ChildSpec(name, child(journal, fails_when_stopped=kind if name == "c" else None))
            for name in "abc"]


# --- a child fails on its own while the supervisor stops the others ------------------------------


@pytest.mark.parametrize("kind", ENDINGS)
@pytest.mark.parametrize("moment", ["exit", "escalation"])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_child_fails_on_its_own_while_its_siblings_are_stopped(
        journal, autojump_clock, live_tasks, strategy, moment, kind):
    """c takes 5 s to stop; a ends on its own at 2 s, meanwhile. The supervisor is stopping:
    that is no crash to restart nor to count (max_restarts=0 does not give up on it): an
    error is recorded shutdown_error, a return is nothing, a halt passes through. At an
    escalation the error stays the escalation's (b's), not a's."""
    exits: list[str] = []
    at = 0.0 if moment == "exit" else 1.0  # when the stop begins: the exit, or b's crash
    specs = [ChildSpec("a", child(journal, fails={1: (at + 2.0, kind)}),
                       on_exit=lambda: exits.append("a")),
             ChildSpec("b", child(journal, fails={1: (1.0, "raise")} if moment == "escalation"
                                  else None), on_exit=lambda: exits.append("b")),
             ChildSpec("c", child(journal, stops_in=5.0), on_exit=lambda: exits.append("c"))]
    before = live_tasks()
    out = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy,
                                   intensity=Intensity(max_restarts=0)) as sup:
            out.append(sup)
            if moment == "escalation":
                await trio.sleep_forever()

    if kind == "halt":
        with pytest.raises(Halt):
            await run()
        assert trio.current_time() == at + 2.0
    elif moment == "escalation":
        with pytest.raises(RestartIntensityExceeded) as caught:
            await run()
        assert caught.value.child == "b"
        assert trio.current_time() == at + 5.0
    else:
        await run()
        assert trio.current_time() == at + 5.0
    [sup] = out
    expected = [("b", "escalate")] if moment == "escalation" else []
    if kind == "raise":
        expected.append(("a", "shutdown_error"))
    if kind != "halt":
        assert [(r.child, r.action) for r in sup.restart_log] == expected
        assert [event[1:3] for event in journal.of("start")] == [("a", 1), ("b", 1), ("c", 1)]
    _all_stopped(sup, "stopped" if moment == "exit" and kind != "halt" else "failed")
    assert sorted(exits) == ["a", "b", "c"]
    assert live_tasks() == before


# --- stop_child: of a child that fails as it stops, of one a group restart is starting -----------


@pytest.mark.parametrize("kind", ENDINGS)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_stop_child_of_a_child_that_fails_as_it_stops(
        journal, autojump_clock, live_tasks, strategy, kind):
    """stop_child("b"), and b ends its way as its mailbox closes: an error is recorded
    shutdown_error and stop_child returns (b is forgotten, nobody restarted); a halt passes
    through and ends the supervisor."""
    specs = [ChildSpec(name, child(journal, fails_when_stopped=kind if name == "b" else None))
             for name in "abc"]
    before = live_tasks()
    out = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy) as sup:
            out.append(sup)
            await sup.stop_child("b")
            assert [(c.name, c.state, c.incarnation) for c in sup.statistics().children] == [
                ("a", "running", 1), ("c", "running", 1)]

    if kind == "halt":
        await _halts(run, out)
    else:
        await run()
        [sup] = out
        assert [(r.child, r.action) for r in sup.restart_log] == (
            [("b", "shutdown_error")] if kind == "raise" else [])
        _all_stopped(sup, "stopped")
    assert [event[1:3] for event in journal.of("start")] == [("a", 1), ("b", 1), ("c", 1)]
    assert live_tasks() == before


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_stop_child_of_a_child_its_group_restart_is_starting(
        journal, autojump_clock, live_tasks, strategy):
    """b crashes; its restart starts b again (5 s to be ready) when stop_child("b") comes at
    1 s: b has its shutdown_timeout (2 s) to be ready, is cancelled at 3 s, forgotten; the
    restart goes on with c, at once, and nothing is counted for the stop."""
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("b", child(journal, ready_after={2: 5.0}), shutdown_timeout=2.0),
             ChildSpec("c", child(journal))]
    before = live_tasks()
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("b").send("raise")
        await trio.sleep(1.0)
        await sup.stop_child("b")
        assert trio.current_time() == 3.0
        await trio.testing.wait_all_tasks_blocked()
        assert [(c.name, c.state) for c in sup.statistics().children] == [
            ("a", "running"), ("c", "running")]
        assert trio.current_time() == 3.0
    group = [("a", 2, 0.0)] if strategy == "one_for_all" else []
    assert later_starts(journal) == [*group, ("b", 2, 0.0), ("c", 2, 3.0)]
    assert journal.of("cancelled") == [("cancelled", "b", 2, "shutdown timeout of b")]
    assert [(r.child, r.action) for r in sup.restart_log] == [("b", "restart")]
    assert sup.statistics().restarts == 1
    assert live_tasks() == before
