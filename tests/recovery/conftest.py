"""Fixtures for recovery: databases left behind by a stopped process, a reconciling route."""

from __future__ import annotations

import json
import pathlib
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import pytest
import trio

import tidings
from tidings.actors import Runtime
from tidings.store import InsertRows, OutboxInsert, read_database
from tidings.store import held_count as store_held_count
from tidings.testing import MemoryRoute


class ReconcilingRoute(MemoryRoute):
    """A :class:`MemoryRoute` whose platform can be asked what it has (``reconcile``).

    ``answers`` maps delivery ids to ``"sent"`` / ``"missing"`` / anything else; ids it does not
    name are left out of the answer. ``error`` makes ``reconcile`` raise, ``hang`` block
    forever; after :meth:`hold` an ask waits (already recorded) until :meth:`let_answer`, so a
    test can act while the platform is being asked. ``asked`` lists the id lists it was asked
    about.
    """

    def __init__(self, answers: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answers: dict[str, Any] = dict(answers or {})
        self.asked: list[list[str]] = []
        self.error: BaseException | None = None
        self.hang = False
        self._held: trio.Event | None = None
        self._asked_changed = trio.Event()

    def hold(self) -> None:
        """Make the next asks wait, once recorded, until :meth:`let_answer`."""
        self._held = trio.Event()

    def let_answer(self) -> None:
        """Let the held asks (and later ones) answer."""
        if self._held is not None:
            self._held.set()
            self._held = None

    async def reconcile(self, delivery_ids: list[str]) -> Mapping[str, Any]:
        self.asked.append(list(delivery_ids))
        self._asked_changed.set()
        self._asked_changed = trio.Event()
        if self.hang:
            await trio.sleep_forever()
        if self._held is not None:
            await self._held.wait()
        await trio.lowlevel.checkpoint()
        if self.error is not None:
            raise self.error
        return {i: self.answers[i] for i in delivery_ids if i in self.answers}

    async def wait_asked(self, n: int) -> list[list[str]]:
        while len(self.asked) < n:
            await self._asked_changed.wait()
        return self.asked[:n]


@pytest.fixture
def reconciling_route() -> type[ReconcilingRoute]:
    return ReconcilingRoute


@attrs.frozen
class Leftovers:
    """What a stopped process left: one ``sending`` row, ``queued`` messages and progress."""

    session_id: str
    in_flight: str
    queued: tuple[str, ...]
    progress: tuple[str, ...]
    epoch: int


async def leave_leftovers(db_path: pathlib.Path, workspace: pathlib.Path, *, queued: int = 2,
                          progress: int = 1, session_id: str | None = None) -> Leftovers:
    """Run a runtime whose route stalls on its first delivery, and stop it (grace 0).

    The first message stays ``sending`` (claimed by that process), the rest stay ``queued``,
    exactly what a crash mid-delivery leaves. *session_id*: the session's chosen id.
    """
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web", session_id=session_id)
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("in flight")
            await route.wait_attempted(1)
            rest = [await ctx.output.send_text(f"m{i}") for i in range(queued)]
            notes = [await ctx.output.progress(f"p{i}") for i in range(progress)]
        epoch = rt.store.epoch
    return Leftovers(session_id, first.delivery_id, tuple(h.delivery_id for h in rest),
                     tuple(h.delivery_id for h in notes), epoch)


@pytest.fixture
def leftovers(db_path: pathlib.Path, workspace: pathlib.Path
              ) -> Callable[..., Awaitable[Leftovers]]:
    """``await leftovers(queued=2, progress=1)``: see :func:`leave_leftovers`."""
    async def make(**kwargs: Any) -> Leftovers:
        return await leave_leftovers(db_path, workspace, **kwargs)
    return make


async def insert_stranded(rt: Runtime, session_id: str, text: str) -> str:
    """Commit a delivery intent the way the pipeline does, but never schedule it: what a writer
    whose dispatch hook was lost would leave. Returns its delivery id."""
    now = rt.store.clock()
    delivery_id = f"dlv_stranded_{text}"
    work_id = f"work_stranded_{text}"
    values = {"delivery_id": delivery_id, "session_id": session_id, "owner_turn_id": None,
              "work_id": work_id, "kind": "message", "channel": "web", "text": text,
              "blocks": json.dumps([{"type": "text", "text": text}]), "metadata": "{}",
              "visible": 1, "status": "queued", "created_at": now, "updated_at": now}
    await rt.store.commit([
        OutboxInsert(values),
        InsertRows("work_items", ("work_id", "kind", "subject_id", "status", "created_at",
                                  "updated_at"),
                   ((work_id, "delivery.send", delivery_id, "pending", now, now),))])
    return delivery_id


@pytest.fixture
def stranded() -> Callable[[Runtime, str, str], Awaitable[str]]:
    return insert_stranded


def held_count(db_path: pathlib.Path) -> int:
    """How many accepted messages are held (``rt.hold_inbound``) in the database now, as
    ``tidings status`` counts them."""
    return read_database(db_path, store_held_count)


def event_counts(db_path: pathlib.Path) -> dict[tuple[str, str], int]:
    """``(delivery_id, event type) -> how many``, read straight from the database."""
    conn = sqlite3.connect(db_path)
    try:
        return {(d, t): n for d, t, n in conn.execute(
            "SELECT delivery_id, type, count(*) FROM events WHERE delivery_id IS NOT NULL "
            "GROUP BY delivery_id, type")}
    finally:
        conn.close()


@pytest.fixture
def events_in() -> Callable[[pathlib.Path], dict[tuple[str, str], int]]:
    return event_counts


async def wait_event(rt: Runtime, delivery_id: str, event_type: str) -> None:
    """Block until *delivery_id* has recorded *event_type* (from the start of the log)."""
    async for event in rt.events(after_seq=0):
        if event.delivery_id == delivery_id and event.type == event_type:
            return


@pytest.fixture
def wait_for_event() -> Callable[[Runtime, str, str], Awaitable[None]]:
    return wait_event
