"""The status views (``status_counts``, ``recent_deliveries``, ``status_report``) refuse a
``session_id`` filter that is not an id by name, as ``deliveries`` does: ``3`` or ``""``
matched nothing, silently, a list failed as a bare ``StoreError`` about binding a parameter,
and a lone surrogate escaped as a ``UnicodeEncodeError``."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

VIEWS = {
    "status_counts": lambda rt, sid: rt.status_counts(session_id=sid),
    "recent_deliveries": lambda rt, sid: rt.recent_deliveries(session_id=sid),
    "status_report": lambda rt, sid: rt.status_report(session_id=sid),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("bad", [3, "", ["session_1"], "s\ud800", True],
                         ids=["int", "empty", "list", "surrogate", "bool"])
async def test_a_session_filter_that_is_not_an_id_is_refused(rt, view, bad) -> None:
    with pytest.raises(ValidationError) as caught:
        await VIEWS[view](rt, bad)
    assert caught.value.field == "session_id"


async def test_a_session_filter_still_filters(rt) -> None:
    session_id = await rt.create_session(channel="web")
    other = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hi")
    assert await handle.wait() == "delivered"
    assert (await rt.status_counts(session_id=session_id))["sent"] == 1
    assert (await rt.status_counts(session_id=other))["sent"] == 0
    assert [d.delivery_id for d in await rt.recent_deliveries(session_id=session_id)] == [
        handle.delivery_id]
    assert list((await rt.status_report(session_id=other)).recent) == []
