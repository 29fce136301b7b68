"""``rt.scanner.reconcile(session_ids)`` took a lone session id as its characters
(``sorted(set("session_..."))``): nothing was asked, a report of zeros came back, and the host
took its ``unknown`` rows for undecided. A list mixing ids with something else died in
``sorted`` with a ``TypeError`` naming nothing. Both are refused now, naming ``session_ids``,
before anything is asked, as ``rt.confirm`` refuses a lone string."""

from __future__ import annotations

import pytest

import tidings
from tidings.errors import ValidationError


@pytest.mark.parametrize("bad", ["lone", ["ok", 3], [""], [None]],
                         ids=["lone-string", "not-a-string", "empty", "none"])
async def test_bad_session_ids_are_refused_by_name(db_path, workspace, leftovers,
                                                   reconciling_route, bad) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        given = left.session_id if bad == "lone" else [left.session_id if b == "ok" else b
                                                        for b in bad]
        with pytest.raises(ValidationError) as caught:
            await rt.scanner.reconcile(given)
        assert caught.value.field == "session_ids"
        assert route.asked == []
        report = await rt.scanner.reconcile([left.session_id])  # as a list: asked
        status = await rt.delivery_status(left.in_flight)
    assert report.reconciled_sent == 1
    assert status.status == "sent"
