"""``rt.router.bind`` after the runtime stopped raises :class:`RuntimeClosedError`, as
``create_session`` and ``open_turn`` do: it took the route and returned a token, so a host that
bound then got no error and its route was never called. ``unbind`` stays harmless."""

from __future__ import annotations

import pytest

import tidings
from tidings.errors import RuntimeClosedError
from tidings.testing import MemoryRoute


async def test_bind_after_stop_is_refused_as_closed_and_unbind_stays_harmless(
        db_path, workspace) -> None:
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        token = rt.router.bind(session_id, route)
    late = MemoryRoute()
    with pytest.raises(RuntimeClosedError) as caught:
        rt.router.bind(session_id, late)
    assert "runtime is stopping" in str(caught.value)
    with pytest.raises(RuntimeClosedError):  # the same words as every other call after stop
        await rt.create_session(channel="web")
    assert rt.router.binding(session_id).route is route  # the refused bind changed nothing
    assert rt.router.unbind(token) is True
    assert rt.router.unbind(token) is False  # idempotent after stop too
    assert rt.router.binding(session_id) is None
