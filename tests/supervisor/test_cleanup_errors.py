"""An error a child's cleanup raises while it is cancelled from outside is recorded, not lost.

A child cut short by the shutdown ladder (its ``shutdown_timeout``, a group restart) whose
cleanup raises inside its own nursery ends with ``Cancelled`` and that error in one group. It
must be recorded like any error while stopping (``shutdown_error``, logged ``child_failed``),
and must neither fail the supervisor nor a restart.
"""

from __future__ import annotations

import logging

import trio
import trio.testing

from tidings.supervisor import ChildContext, ChildSpec, open_supervisor


class CleanupBoom(Exception):
    pass


async def _raises_in_cleanup(ctx: ChildContext, task_status: trio.TaskStatus[None]) -> None:
    """Ignores its mailbox (so only a cancel stops it); its cleanup fails inside a nursery."""
    task_status.started()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep_forever)
        try:
            await trio.sleep_forever()
        finally:
            raise CleanupBoom(f"cleanup of incarnation {ctx.incarnation}")


async def _crashes_on_message(ctx: ChildContext, task_status: trio.TaskStatus[None]) -> None:
    task_status.started()
    async for _ in ctx.mailbox:
        raise ValueError("crash")


def _shutdown_errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if "event=child_failed" in r.getMessage() and "action=shutdown_error" in r.getMessage()]


async def test_cleanup_error_of_a_killed_child_is_recorded_not_raised(autojump_clock, caplog):
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    spec = ChildSpec("a", _raises_in_cleanup, shutdown_timeout=1.0)
    async with open_supervisor([spec]) as sup:
        await trio.testing.wait_all_tasks_blocked()
    assert [(r.child, r.action, r.error_type, r.error) for r in sup.restart_log] == [
        ("a", "shutdown_error", "CleanupBoom", "cleanup of incarnation 1")]
    assert len(_shutdown_errors(caplog)) == 1
    assert "error_type=CleanupBoom" in _shutdown_errors(caplog)[0]
    assert sup.statistics().state == "stopped"


async def test_cleanup_error_during_a_group_restart_does_not_fail_the_restart(
        autojump_clock, caplog):
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    specs = [ChildSpec("a", _raises_in_cleanup, shutdown_timeout=1.0),
             ChildSpec("b", _crashes_on_message)]
    async with open_supervisor(specs, strategy="one_for_all") as sup:
        await sup.mailbox("b").send("crash")
        await trio.sleep(5)  # past a's shutdown timeout: the restart has killed it
        children = {c.name: (c.incarnation, c.state) for c in sup.statistics().children}
        assert children == {"a": (2, "running"), "b": (2, "running")}
        assert [(r.child, r.action, r.error_type) for r in sup.restart_log] == [
            ("b", "restart", "ValueError"), ("a", "shutdown_error", "CleanupBoom")]
    assert [(r.child, r.action, r.error) for r in sup.restart_log][-1] == (
        "a", "shutdown_error", "cleanup of incarnation 2")
    assert len(_shutdown_errors(caplog)) == 2
    assert sup.statistics().state == "stopped"
