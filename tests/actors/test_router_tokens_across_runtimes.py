"""A bind token unbinds only the binding its own router made.

``unbind`` with a stale token removes nothing (README, Routing; ``unbind``'s docstring), but a
token was its session id and a serial that every router counted from 1: a token kept from an
earlier runtime (a host's adapter that outlives a restart of the runtime in its process, and
unbinds with the token it holds) or from another runtime of the process matched the binding the
new router made with the same serial, and removed it: the session's deliveries went
``unrouted`` while its route was bound."""

from __future__ import annotations

import trio

import tidings
from tidings.testing import MemoryRoute


async def test_a_token_of_an_earlier_runtime_removes_nothing(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as first:
        session_id = await first.create_session(channel="web", session_id="main")
        earlier = first.router.bind(session_id, MemoryRoute())
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        assert rt.router.unbind(earlier) is False  # not this router's: stale
        assert rt.router.binding(session_id).route is route
        handle = await rt.notify(session_id, "still bound")
        with trio.fail_after(30):  # hang guard
            assert await handle.wait() == "delivered"
    assert route.texts() == ["still bound"]


async def test_a_token_of_another_runtime_removes_nothing(tmp_path, workspace) -> None:
    async with tidings.open_runtime(tmp_path / "a.db", workspace=workspace) as one, \
            tidings.open_runtime(tmp_path / "b.db", workspace=workspace) as two:
        theirs = one.router.bind("shared-name", MemoryRoute())
        route = MemoryRoute()
        ours = two.router.bind("shared-name", route)
        assert two.router.unbind(theirs) is False
        assert two.router.binding("shared-name").route is route
        assert two.router.unbind(ours) is True
