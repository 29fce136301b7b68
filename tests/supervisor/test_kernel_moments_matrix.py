"""The failure matrix's moments: failure kind x strategy x when it comes.

``test_failure_matrix`` and ``test_kernel_matrix`` cover a child failing at its start, while
everyone runs, and as the supervisor stops. These are the moments between: while a restart
waits out its backoff, while another child's restart is starting it, while a sibling the
ladder is stopping ignores its cancellation past its ``shutdown_timeout``, as a sibling is
stopped for a group restart, and two failures in one tick. Each checks what the README
promises: who restarts, in what order and when, what the restart log and the statistics say,
and what escapes (a ``BaseException`` that is no ``Exception`` is no crash: it passes through).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import Backoff, ChildSpec, Intensity, open_supervisor

from .moment_children import Halt, child, crash_run, later_starts

STRATEGIES = ("one_for_one", "one_for_all", "rest_for_one")


def _specs(journal, **by_name) -> list[ChildSpec]:
    """a, b, c: ``by_name[name]`` holds ``fn`` (for :func:`child`) and ``spec`` arguments."""
    return [ChildSpec(name, child(journal, **by_name.get(name, {}).get("fn", {})),
                      **by_name.get(name, {}).get("spec", {}))
            for name in "abc"]


async def _halts_at(run, supervisors, at: float) -> None:
    """A halt is no crash: it passes through at ``at``, the supervisor failed, all stopped."""
    with pytest.raises(Halt):
        await run()
    assert trio.current_time() == at
    [sup] = supervisors
    assert sup.statistics().state == "failed"
    assert {c.state for c in sup.statistics().children} == {"stopped"}


# --- while a restart waits out its backoff -------------------------------------------------------


@pytest.mark.parametrize("kind", ["raise", "return", "halt"])
@pytest.mark.parametrize("strategy", ["one_for_one", "rest_for_one"])
async def test_a_sibling_fails_while_a_restart_waits_out_its_backoff(
        journal, autojump_clock, strategy, kind):
    """b crashes and waits out a 10 s backoff; a (before it) fails at 5 s. one_for_one: a
    restarts at once, b at 10 s. rest_for_one: b's group restart holds the supervisor, so a's
    waits for it and then restarts a, b and c (b without a backoff: its own crash's was
    waited out). A halt is no crash: it ends the supervisor at once, the backoff not waited."""
    specs = _specs(journal, b={"spec": {"backoff": Backoff(min=10.0, max=10.0, jitter=0.0)}})
    supervisors = []
    run = crash_run(specs, strategy, supervisors, [(0.0, "b", "raise"), (5.0, "a", kind)],
                    settle=20.0)

    if kind == "halt":
        await _halts_at(run, supervisors, 5.0)
        assert [event[1:3] for event in journal.of("start")] == [("a", 1), ("b", 1), ("c", 1)]
        return
    await run()
    [sup] = supervisors
    later = later_starts(journal)
    if strategy == "one_for_one":
        assert later == [("a", 2, 5.0), ("b", 2, 10.0)]
    else:
        assert later == [("b", 2, 10.0), ("c", 2, 10.0),
                         ("a", 2, 10.0), ("b", 3, 10.0), ("c", 3, 10.0)]
    assert [(r.child, r.action, r.error_type) for r in sup.restart_log] == [
        ("b", "restart", "Boom"), ("a", "restart", "Boom" if kind == "raise" else "")]
    assert sup.statistics().restarts == 2


# --- while another child's restart is starting it ------------------------------------------------


@pytest.mark.parametrize("kind", ["raise", "return", "halt"])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_sibling_fails_while_another_childs_restart_is_starting(
        journal, autojump_clock, strategy, kind):
    """b crashes; its new incarnation takes 5 s to be ready. a fails at 1 s. one_for_one: a
    restarts at once, beside b. A group restart finishes first (c starts once b is ready),
    then serves a's: its group starts again, in order, b again taking 5 s."""
    specs = _specs(journal, b={"fn": {"ready_after": {2: 5.0, 3: 5.0}}})
    supervisors = []
    run = crash_run(specs, strategy, supervisors, [(0.0, "b", "raise"), (1.0, "a", kind)],
                    settle=20.0)

    if kind == "halt":
        await _halts_at(run, supervisors, 1.0)
        assert not journal.of("ready")[3:] or all(
            journal.times[("ready", *event[1:3])] < 1.0 for event in journal.of("ready"))
        return
    await run()
    [sup] = supervisors
    later = later_starts(journal)
    expected = {
        "one_for_one": [("b", 2, 0.0), ("a", 2, 1.0)],
        "one_for_all": [("a", 2, 0.0), ("b", 2, 0.0), ("c", 2, 5.0),
                        ("a", 3, 5.0), ("b", 3, 5.0), ("c", 3, 10.0)],
        "rest_for_one": [("b", 2, 0.0), ("c", 2, 5.0),
                         ("a", 2, 5.0), ("b", 3, 5.0), ("c", 3, 10.0)],
    }[strategy]
    assert later == expected
    assert [(r.child, r.action) for r in sup.restart_log] == [
        ("b", "restart"), ("a", "restart")]
    assert sup.statistics().restarts == 2


# --- a sibling that ignores its cancellation past its shutdown_timeout ---------------------------


@pytest.mark.parametrize("moment", ["exit", "group restart", "stop_child", "escalation"])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_child_that_ignores_cancel_past_its_shutdown_timeout(
        journal, autojump_clock, strategy, moment):
    """s (between a and c) does not stop when its mailbox closes, and once cancelled at its
    2 s shutdown_timeout goes on 7 s more, shielded. Whatever stops it waits for its task to
    end (9 s): the next child of the reverse order is stopped only then, a group restart
    starts no new incarnation of it beside the old one, stop_child returns only then."""
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("s", child(journal, stubborn=7.0), shutdown_timeout=2.0),
             ChildSpec("c", child(journal))]
    max_restarts = 0 if moment == "escalation" else 3
    supervisors = []

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy,
                                   intensity=Intensity(max_restarts=max_restarts)) as sup:
            supervisors.append(sup)
            if moment in ("group restart", "escalation"):
                await sup.mailbox("a").send("raise")
                await trio.sleep(20.0)
            elif moment == "stop_child":
                await sup.stop_child("s")
                assert trio.current_time() == 9.0
                assert [c.name for c in sup.statistics().children] == ["a", "c"]

    if moment == "escalation":
        with pytest.raises(RestartIntensityExceeded):
            await run()
        assert trio.current_time() == 9.0
    else:
        await run()
    [sup] = supervisors
    untouched = moment == "group restart" and strategy == "one_for_one"  # until the exit
    assert journal.times[("ended", "s", 1)] == (29.0 if untouched else 9.0)
    if moment == "exit":
        assert journal.times[("stop", "a", 1)] == 9.0  # a is stopped after s has ended
    if moment == "group restart":
        later = later_starts(journal)
        assert later == {"one_for_one": [("a", 2, 0.0)],
                         "one_for_all": [("a", 2, 9.0), ("s", 2, 9.0), ("c", 2, 9.0)],
                         "rest_for_one": [("a", 2, 9.0), ("s", 2, 9.0), ("c", 2, 9.0)],
                         }[strategy]
    runs = 2 if moment == "group restart" and not untouched else 1  # s2 stopped at the exit
    assert journal.of("cancelled") == [
        ("cancelled", "s", n, "shutdown timeout of s") for n in range(1, runs + 1)]
    assert sup.statistics().state == ("failed" if moment == "escalation" else "stopped")
    assert {c.state for c in sup.statistics().children} == {"stopped"}


# --- two failures in one tick --------------------------------------------------------------------

TOGETHER = {"one_for_one": 2, "one_for_all": 1, "rest_for_one": 1}
"""Restarts two crashes in one tick make: each its own, or one group restart for both."""


@pytest.mark.parametrize("pair", ["ac", "bc", "ab"])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_two_failures_in_one_tick(journal, autojump_clock, strategy, pair):
    """Two children crash in the same tick (a shared resource went away under both), which
    trio runs in a random order. Under a group strategy the earlier child's group covers
    the other: one restart, whatever the order (the README: siblings failing together are
    one restart), so with max_restarts=1 the supervisor never gives up on them; the later
    child's crash is recorded, but starts no second restart of its own. one_for_one restarts
    each. Run 20 times, as the order is trio's shuffle."""
    for round_ in range(20):
        journal.events.clear()
        journal.times.clear()
        specs = _specs(journal)
        async with open_supervisor(specs, strategy=strategy, intensity=Intensity(
                max_restarts=TOGETHER[strategy], period=60.0)) as sup:
            for name in pair:
                sup.mailbox(name).send_nowait("raise")  # no checkpoint between: one tick
            await trio.testing.wait_all_tasks_blocked()
            stats = sup.statistics()
        group = {"one_for_one": pair, "one_for_all": "abc",
                 "rest_for_one": "abc"[min("abc".index(n) for n in pair):]}[strategy]
        assert [(c.name, c.state, c.incarnation) for c in stats.children] == [
            (name, "running", 2 if name in group else 1) for name in "abc"], round_
        assert stats.restarts == TOGETHER[strategy], round_
        restarted = pair if strategy == "one_for_one" else pair[0]  # the group's: the first
        assert [c.restarts for c in stats.children] == [
            1 if name in restarted else 0 for name in "abc"], round_
        assert sorted((r.child, r.action) for r in sup.restart_log) == [
            (name, "restart") for name in pair], round_
