"""A reconcile answer whose value cannot be compared (``pandas.NA`` from a platform table:
``NA == "sent"`` is NA, and its truth raises ``TypeError``) escaped the check of the answers,
which ran outside the guard that reads the route's mapping: ``rt.recover()`` raised the route's
error, and a route bound once the scanner ran crashed the scanner at once, again at each
restart (a bind is asked again at once), until the root gave up and the runtime died. Such an
answer is undecided, as any answer that is not ``"sent"`` or ``"missing"`` (logged)."""

from __future__ import annotations

from collections.abc import Mapping

import trio

import tidings


class _Ambiguous:
    """Like ``pandas.NA``: compares as itself, and refuses to be taken as a bool."""

    def __eq__(self, other: object) -> _Ambiguous:  # type: ignore[override]
        return self

    def __bool__(self) -> bool:
        raise TypeError("boolean value of NA is ambiguous")

    __hash__ = object.__hash__


async def test_an_answer_that_cannot_be_compared_is_undecided_without_a_crash(
        db_path, workspace, leftovers, reconciling_route, caplog, autojump_clock) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route()
    ask = route.reconcile  # records the ask

    async def reconcile(delivery_ids: list[str]) -> Mapping[str, object]:
        await ask(delivery_ids)
        return {delivery_id: _Ambiguous() for delivery_id in delivery_ids}

    route.reconcile = reconcile
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    scan_interval=3600) as rt:
        rt.router.bind(left.session_id, route)
        report = await rt.recover()  # raised the route's TypeError
        rt.router.bind(left.session_id, route)  # again: asked by the scanner actor
        with trio.fail_after(600):  # hang guard (mock clock)
            await route.wait_asked(2)
        await trio.testing.wait_all_tasks_blocked()
        status = (await rt.delivery_status(left.in_flight)).status
        restarts = [r for r in rt.supervisor.restart_log if r.child == "recovery"]
    assert report.undecided == 1
    assert status == "unknown"
    assert restarts == []
    assert "event=reconcile_bad_answer" in caplog.text
