"""``grace=0`` (``tidings serve --grace 0``): a runtime with nothing running stopped with a
warning that it had killed its ``routes`` child (``event=child_killed child=routes
timeout=0.0``) at every stop. The routes child, a nested supervisor, had the grace as its own
shutdown timeout, and a timeout of 0 cancels at once, before it could end; but its lanes have
had their grace already (``rt.dispatcher.stop()``, before the children stop) and each lane has
a ladder of its own. Nothing was killed: no warning may say so."""

from __future__ import annotations

import logging

import pytest

import tidings
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("grace", [0, 0.5])
async def test_an_idle_runtime_stops_without_killing_a_child(db_path, workspace, caplog,
                                                             grace) -> None:
    caplog.set_level(logging.DEBUG, logger="tidings")
    async with tidings.open_runtime(db_path, workspace=workspace, grace=grace) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        await rt.notify(session_id, "hello")
        await route.wait_delivered(1)
    assert "event=child_stopped supervisor=tidings child=routes" in caplog.text
    assert "child_killed" not in caplog.text, caplog.text
    assert [m.text for m in route.delivered] == ["hello"]  # the stop cut nothing
