"""Reconcile: behaviour a mutation audit of ``actors/_reconcile.py`` found no test pinning.
Each test names the mutant it kills (a change no other test noticed); it passes on the real
code and failed with that change applied."""

from __future__ import annotations

import tidings

from .test_reconcile import five_unknown_in_pages_of_two


async def test_each_unknown_row_is_asked_about_once_a_pass(
        db_path, workspace, reconciling_route) -> None:
    """A session's ``unknown`` rows are asked about a page at a time, each page after the
    last row of the one before: every row once, however the route answers (here: undecided,
    so every row is still ``unknown`` when the next page is read). Mutant: the next page read
    after the page's first row (each row asked again on the next page: a pass asked the
    platform about 2n rows, not n)."""
    route = reconciling_route(ack_window=5)
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=3600) as rt:
        session_id, unknown = await five_unknown_in_pages_of_two(rt, route)
        report = await rt.scanner.reconcile([session_id])
        statuses = [(await rt.delivery_status(i)).status for i in unknown]
    assert route.asked == [unknown[:2], unknown[2:4], unknown[4:]]
    assert (report.undecided, report.reconciled_sent, report.requeued) == (5, 0, 0)
    assert statuses == ["unknown"] * 5
