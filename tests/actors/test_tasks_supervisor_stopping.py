"""``rt.start_task`` while the ``tasks`` supervisor is stopping but the runtime is not (its
parent stops it: an escalation of the root stops every child, ``tasks`` first; a restart of
it does the same) let the supervisor's ``SupervisorError`` out, where the docstring promises
:class:`RuntimeClosedError` ("the runtime is stopping, or the supervisor is restarting"),
the error callers (``handle_inbound``, the gateway) turn into "stopping, send it again"."""

from __future__ import annotations

import trio
import trio.testing

from tidings.errors import RuntimeClosedError


async def test_a_task_started_while_the_tasks_supervisor_stops_is_refused_closed(rt) -> None:
    release = trio.Event()

    async def slow_to_stop() -> None:
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):  # its cleanup holds the supervisor stopping
                await release.wait()

    rt.start_task("slow", slow_to_stop)
    await trio.testing.wait_all_tasks_blocked()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(rt.supervisor.stop_child, "tasks")
        await trio.testing.wait_all_tasks_blocked()
        try:
            rt.start_task("late", trio.sleep_forever)
            raised: BaseException | None = None
        except Exception as exc:  # noqa: BLE001 (what it raises is what is tested)
            raised = exc
        release.set()
    assert isinstance(raised, RuntimeClosedError), repr(raised)
    assert rt.tasks.statistics().running == 0
