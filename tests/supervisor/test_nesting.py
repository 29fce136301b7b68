"""Supervisors nest: a nested supervisor is one child of its parent."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import ValidationError
from tidings.supervisor import (
    ChildSpec,
    FaultPlan,
    FaultRule,
    Intensity,
    Seam,
    Supervisor,
    open_supervisor,
    supervisor_child,
)


async def _idle(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()


def _inner(journal, seen: list[Supervisor] | None = None, **options) -> ChildSpec:
    """Child ``inner``: a nested supervisor over x and y; ``seen`` collects each incarnation."""
    nested = supervisor_child([ChildSpec("x", journal.worker()),
                               ChildSpec("y", journal.worker())], **options)

    async def tapped(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        class Tap:
            def started(self, value=None):
                if seen is not None:
                    seen.append(value)
                task_status.started(value)

        await nested(ctx, task_status=Tap())

    return ChildSpec("inner", tapped, shutdown_timeout=None)


async def test_nested_supervisor_starts_in_order_and_stops_in_reverse(journal, autojump_clock):
    specs = [ChildSpec("before", journal.worker()), _inner(journal),
             ChildSpec("after", journal.worker(ready_after=1.0))]
    async with open_supervisor(specs, name="root") as sup:
        assert [event[1] for event in journal.of("ready")] == ["before", "x", "y", "after"]
        assert [child.name for child in sup.statistics().children] == ["before", "inner",
                                                                       "after"]
    assert [event[1] for event in journal.of("stop")] == ["after", "y", "x", "before"]
    assert journal.of("cancelled") == []


async def test_start_child_returns_the_nested_supervisor(journal, autojump_clock):
    async with open_supervisor([], name="root") as sup:
        inner = await sup.start_child(_inner(journal, name="sessions"))
        assert isinstance(inner, Supervisor)
        assert inner.name == "sessions"
        await inner.mailbox("x").send("hello")
        await trio.testing.wait_all_tasks_blocked()
    assert ("msg", "x", 1, "hello") in journal.events


async def test_nested_escalation_is_a_crash_of_that_child_in_the_parent(journal, autojump_clock):
    seen: list[Supervisor] = []
    specs = [ChildSpec("before", journal.worker()),
             _inner(journal, seen, intensity=Intensity(max_restarts=0, period=5.0))]
    async with open_supervisor(specs, name="root") as sup:
        journal.events.clear()
        await seen[0].mailbox("x").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        [record] = sup.restart_log
        assert (record.child, record.error_type, record.action) == (
            "inner", "RestartIntensityExceeded", "restart")
        assert "'x'" in record.error
        # the nested supervisor stopped y, then the parent restarted it with fresh children
        assert [event[:3] for event in journal.of("stop", "start")] == [
            ("stop", "y", 1), ("start", "x", 1), ("start", "y", 1)]
        incarnations = {child.name: child.incarnation for child in sup.statistics().children}
        assert incarnations == {"before": 1, "inner": 2}
        assert len(seen) == 2
        assert seen[0].statistics().state == "failed"
        assert seen[1].statistics().state == "running"


async def test_nested_supervisor_shares_the_parent_fault_plan_by_default(journal,
                                                                         autojump_clock):
    plan = FaultPlan([FaultRule(Seam.RECEIVE, child="y", nth=1)])
    seen: list[Supervisor] = []
    async with open_supervisor([_inner(journal, seen)], fault_plan=plan):
        assert seen[0].fault_plan is plan
        await seen[0].mailbox("y").send("m")
        await trio.testing.wait_all_tasks_blocked()
        assert [(r.child, r.error_type) for r in seen[0].restart_log] == [("y", "InjectedFault")]


async def test_messages_to_a_supervisor_child_are_dropped(journal, autojump_clock, caplog):
    async with open_supervisor([_inner(journal)]) as sup:
        await sup.mailbox("inner").send("what?")
        await trio.testing.wait_all_tasks_blocked()
    assert "event=message_dropped supervisor=inner" in caplog.text



@pytest.mark.parametrize(("children", "options", "field"), [
    (["not a spec"], {}, "children"),
    (None, {}, "children"),
    (ChildSpec("x", _idle), {}, "children"),
    ([ChildSpec("x", _idle), ChildSpec("x", _idle)], {}, "children"),
    ([], {"strategy": "one_for_none"}, "strategy"),
    ([], {"intensity": (3, 5)}, "intensity"),
    ([], {"name": ""}, "name"),
    ([], {"fault_plan": "chaos"}, "fault_plan"),
])
def test_supervisor_child_refuses_bad_arguments_when_called_not_at_each_start(
        children, options, field):
    # Refused only when the nested supervisor started, they were a ChildStartError of the
    # parent, or for a permanent child started with start_child_soon, a crash at every
    # restart until the parent gave up.
    with pytest.raises(ValidationError) as caught:
        supervisor_child(children, **options)
    assert caught.value.field == field
