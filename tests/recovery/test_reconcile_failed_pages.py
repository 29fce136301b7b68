"""A reconcile that fails on a session's first page is not asked the later pages in that pass.

README ("What happens when it crashes"): "After an exception, a timeout or an answer that is
not a mapping, the session's later pages of ``unknown`` rows wait for that scan too". The
timeout is pinned in ``test_reconcile.py``; these pin the other failures, each leaving every
row ``unknown`` for the next pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import tidings

from .test_reconcile import five_unknown_in_pages_of_two


class _RaisingMapping(Mapping[str, Any]):
    """A mapping whose every read raises: a route bug, not a scanner crash."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("cannot read")

    def __iter__(self) -> Any:
        raise RuntimeError("cannot read")

    def __len__(self) -> int:
        return 1


@pytest.mark.parametrize("failure", ["raises", "not a mapping", "a mapping that raises"])
async def test_a_reconcile_that_fails_is_not_asked_the_sessions_next_pages(
        db_path, workspace, reconciling_route, failure) -> None:
    route = reconciling_route(ack_window=5)
    answer: Any = {"raises": None, "not a mapping": ["sent"],
                   "a mapping that raises": _RaisingMapping()}[failure]
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=3600) as rt:
        session_id, unknown = await five_unknown_in_pages_of_two(rt, route)
        if failure == "raises":
            route.error = ConnectionError("platform down")
        else:
            async def reconcile(delivery_ids: list[str]) -> Any:
                route.asked.append(list(delivery_ids))
                return answer

            route.reconcile = reconcile  # type: ignore[method-assign]
        report = await rt.scanner.reconcile([session_id])
        statuses = [(await rt.delivery_status(i)).status for i in unknown]
    assert route.asked == [unknown[:2]]  # the first page only
    assert (report.undecided, report.reconciled_sent, report.requeued) == (2, 0, 0)
    assert statuses == ["unknown"] * 5
