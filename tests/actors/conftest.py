"""Helpers for the delivery runtime tests (the shared fixtures are in tests/conftest.py)."""

from __future__ import annotations

import pathlib
import sqlite3
from collections.abc import AsyncIterator

import pytest
import trio

import tidings
from tidings.actors import Runtime
from tidings.errors import ArtifactError, ValidationError
from tidings.testing import MemoryRoute

from ..database_template import fresh_database


@pytest.fixture
async def rt(db_path: pathlib.Path, workspace: pathlib.Path) -> AsyncIterator[Runtime]:
    """tests/conftest.py's ``rt``, on a copy of a migrated database (not a new file: see
    tests/database_template.py)."""
    async with tidings.open_runtime(fresh_database(db_path), workspace=workspace) as runtime:
        yield runtime


def rows(db_path: pathlib.Path, sql: str, *params: object) -> list[tuple]:
    """Read the database directly (what an operator would see), outside the runtime."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def leave_a_queued_row(db_path: pathlib.Path, workspace: pathlib.Path
                             ) -> tuple[str, str]:
    """A runtime that stops with one row ``sending`` (its route stalled) and one ``queued``
    behind it: text ``b``, metadata ``{"m": 1}``, idempotency key ``k``. Returns the session
    and the queued row's id."""
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as first:
        session_id = await first.create_session(channel="web")
        route = MemoryRoute()
        route.stall()
        first.router.bind(session_id, route)
        async with first.open_turn(session_id) as ctx:
            await ctx.output.send_text("a")
            await route.wait_attempted(1)
            queued = await ctx.output.send_text("b", delivery_metadata={"m": 1},
                                                idempotency_key="k")
        queued_id = queued.delivery_id
    [(status,)] = rows(db_path, "SELECT status FROM outbox WHERE delivery_id = ?", queued_id)
    assert status == "queued"
    return session_id, queued_id


@pytest.fixture
async def bound(rt, workspace):
    """A web session bound to a route that renders text, image, file and control blocks, and
    a ``chart.png`` in the workspace: ``(session_id, route)``."""
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file", "control"})
    rt.router.bind(session_id, route)
    return session_id, route


async def stalled_session(rt) -> tuple[str, MemoryRoute]:
    """A web session bound to a :class:`MemoryRoute` that stalls: every ``deliver()`` waits
    until ``route.release()``, so a test can hold the lane inside its first delivery
    (``await route.wait_attempted(1)``) while it queues or gates what comes next."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    return session_id, route


async def refused_by_field(rt, session_id, route, send, field) -> ValidationError:
    """*send(ctx)*, in a turn of *session_id*, raises ValidationError naming *field*; no
    delivery or history row is written, and the next send of the same turn is delivered as
    if nothing had happened."""
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ValidationError) as caught:
                await send(ctx)
            assert caught.value.field == field
            assert await rt.deliveries(session_id) == []
            assert await rt.history(session_id) == []
            handle = await ctx.output.send_text("next")
        assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["next"]
    return caught.value


async def refuse_as_runtimes_own(ctx, sources) -> None:
    """Each of *sources*, sent as a file in the turn *ctx*, is refused as the runtime's own
    (an ArtifactError naming ``source``, or ``source.path`` for an ArtifactRef)."""
    for source in sources:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(source, history_policy="transient")
        assert caught.value.field.startswith("source"), source
        assert "runtime's own" in str(caught.value), source
