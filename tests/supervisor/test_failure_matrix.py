"""The failure matrix: strategy x restart type x which child fails x when, as the parent sees it."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import ChildStartError
from tidings.supervisor import ChildSpec, Intensity, open_supervisor

NAMES = ("a", "b", "c")
STRATEGIES = ("one_for_one", "one_for_all", "rest_for_one")
RESTARTS = ("permanent", "transient", "temporary")


def _specs(journal, failing: str, restart: str, when: str) -> list[ChildSpec]:
    specs = []
    for name in NAMES:
        mine = name == failing
        fn = journal.worker(fail_at_start=lambda n, mine=mine: mine and when == "start",
                            fail_at_shutdown=mine and when == "shutdown")
        specs.append(ChildSpec(name, fn, restart=restart if mine else "permanent"))
    return specs


def _restarted_group(strategy: str, failing: str) -> list[str]:
    index = NAMES.index(failing)
    return {"one_for_one": [failing], "one_for_all": list(NAMES),
            "rest_for_one": list(NAMES[index:])}[strategy]


@pytest.mark.parametrize("when", ["start", "message", "shutdown"])
@pytest.mark.parametrize("failing", NAMES)
@pytest.mark.parametrize("restart", RESTARTS)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_failure_matrix(journal, autojump_clock, strategy, restart, failing, when) -> None:
    specs = _specs(journal, failing, restart, when)
    index = NAMES.index(failing)
    intensity = Intensity(max_restarts=5, period=10.0)

    if when == "start":
        with pytest.raises(ChildStartError) as caught:
            async with open_supervisor(specs, strategy=strategy, intensity=intensity):
                pytest.fail("the body must not run when a child failed to start")
        assert type(caught.value) is ChildStartError
        assert caught.value.child == failing
        assert repr(failing) in str(caught.value)
        assert "Boom" in str(caught.value)
        assert type(caught.value.__cause__).__name__ == "Boom"
        started = [event[1] for event in journal.of("start")]
        assert started == list(NAMES[:index + 1])  # the ones after it never started
        stopped = [event[1] for event in journal.of("stop")]
        assert stopped == list(reversed(NAMES[:index]))  # reverse start order
        return

    async with open_supervisor(specs, strategy=strategy, intensity=intensity) as sup:
        assert [event[1:3] for event in journal.of("start")] == [(n, 1) for n in NAMES]
        if when == "message":
            journal.events.clear()
            await sup.mailbox(failing).send("crash")
            await trio.testing.wait_all_tasks_blocked()
            log = sup.restart_log
            assert len(log) == 1
            assert (log[0].child, log[0].incarnation, log[0].error_type) == (failing, 1, "Boom")
            stats = {child.name: child for child in sup.statistics().children}
            if restart == "temporary":
                assert log[0].action == "forget"
                assert journal.of("start", "stop") == []  # nobody else was touched
                assert failing not in stats
                assert sup.statistics().restarts == 0
            else:
                assert log[0].action == "restart"
                group = _restarted_group(strategy, failing)
                expected = [("stop", n, 1) for n in reversed(group) if n != failing]
                expected += [("start", n, 2) for n in group]
                assert [event[:3] for event in journal.of("start", "stop")] == expected
                assert {n: s.incarnation for n, s in stats.items()} == {
                    n: 2 if n in group else 1 for n in NAMES}
                assert stats[failing].restarts == 1  # the siblings' are the group's, counted
                assert all(s.restarts == 0 for n, s in stats.items() if n != failing)  # there
                assert sup.statistics().restarts == 1
                assert all(s.state == "running" for s in stats.values())
            journal.events.clear()

    stops = [event[1] for event in journal.of("stop")]
    if when == "message" and restart == "temporary":
        assert stops == [n for n in reversed(NAMES) if n != failing]
    else:
        assert stops == list(reversed(NAMES))  # reverse start order, always
    if when == "shutdown":
        log = sup.restart_log
        assert [(r.child, r.action, r.error_type) for r in log] == [
            (failing, "shutdown_error", "Boom")]
    assert journal.of("cancelled") == []  # everyone left through its mailbox
    assert sup.statistics().state == "stopped"
    assert all(child.state == "stopped" for child in sup.statistics().children)


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_temporary_siblings_are_stopped_not_restarted_by_a_group_restart(
        journal, autojump_clock, strategy):
    specs = [ChildSpec("a", journal.worker()),
             ChildSpec("tmp", journal.worker(), restart="temporary"),
             ChildSpec("c", journal.worker())]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("a").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert [(c.name, c.incarnation) for c in sup.statistics().children] == [
            ("a", 2), ("c", 2)]
        assert [r.child for r in sup.restart_log] == ["a"]
    assert [event[:3] for event in journal.of("stop")] == [
        ("stop", "c", 1), ("stop", "tmp", 1), ("stop", "c", 2), ("stop", "a", 2)]
