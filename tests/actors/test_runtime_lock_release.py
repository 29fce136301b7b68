"""The runtime lock is let go of however the runtime's last cleanup ends: it was released only
after the store and the event bus had closed without raising, so a close that raised (a
thread writer's close, a failing bus subscriber) left the database "already open" to every
later open_runtime in the process, until it exited."""

from __future__ import annotations

import pytest

import tidings
from tidings.actors._events import EventBus
from tidings.errors import StoreClosedError
from tidings.store._store import Store


class CloseFailed(Exception):
    pass


@pytest.mark.parametrize("closing", [Store, EventBus], ids=["store", "event bus"])
async def test_the_lock_is_released_when_a_close_raises(db_path, workspace, monkeypatch,
                                                       closing) -> None:
    close = closing.close
    closed: list[object] = []

    def failing_close(self: object) -> None:
        close(self)
        closed.append(self)
        raise CloseFailed("the close failed")

    monkeypatch.setattr(closing, "close", failing_close)
    with pytest.raises(CloseFailed):
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            store = rt.store
    monkeypatch.setattr(closing, "close", close)
    assert len(closed) == 1
    with pytest.raises(StoreClosedError):  # closed too, also when the bus's close raised
        await store.read(lambda conn: conn.execute("SELECT 1").fetchone())
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert await rt.deliveries() == []
