"""``rt.create_session(metadata=...)`` is capped at ``MAX_JSON_BYTES`` of JSON like every
other metadata a host writes (a send's, ``rt.notify``'s): 2 MB of metadata was stored with the
session and read back whole by every ``rt.session``."""

from __future__ import annotations

import json
import threading

import pytest
import trio

import tidings
from tidings.actors import MAX_JSON_BYTES
from tidings.errors import RuntimeClosedError, ValidationError
from tidings.store import queries

from .conftest import rows


def _of_size(size: int) -> dict[str, str]:
    """An object whose JSON is exactly *size* bytes."""
    value = {"blob": ""}
    value["blob"] = "x" * (size - len(json.dumps(value)))
    assert len(json.dumps(value)) == size
    return value


async def test_create_session_refuses_metadata_over_the_json_cap(rt, db_path) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="web", metadata=_of_size(MAX_JSON_BYTES + 1))
    assert caught.value.field == "metadata"
    assert "MAX_JSON_BYTES" in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]


async def test_create_session_takes_metadata_at_the_json_cap(rt) -> None:
    metadata = _of_size(MAX_JSON_BYTES)
    session_id = await rt.create_session(channel="web", metadata=metadata)
    assert dict((await rt.session(session_id)).metadata) == metadata


async def test_create_session_refuses_an_id_another_session_has_by_name(rt, db_path) -> None:
    """A chosen ``session_id`` that is taken is a bad argument, named (as a taken ``turn_id``
    is by ``open_turn``), not a bare store ``ConflictError`` naming nothing; the session that
    has it is left as it was."""
    first = await rt.create_session(channel="web", session_id="mine", metadata={"a": 1})
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="cli", session_id="mine", metadata={"b": 2})
    assert caught.value.field == "session_id"
    assert "already exists" in str(caught.value)
    record = await rt.session(first)
    assert (record.channel, dict(record.metadata)) == ("web", {"a": 1})
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]
    assert rows(db_path, "SELECT count(*) FROM events WHERE type = 'session.created'") == [(1,)]


async def test_a_child_session_made_as_the_runtime_stops_is_refused_as_closed(
        db_path, workspace, monkeypatch) -> None:
    """``create_session(parent_session_id=...)`` reads the parent first (a worker thread);
    a runtime that stopped meanwhile had its writer closed, and the create raised the store's
    ``StoreClosedError`` where every other write a host makes raises ``RuntimeClosedError``
    once the runtime stops (a host's loop that ends on it crashed instead). It checks the
    runtime again after the read, as ``rt.notify`` does; nothing is written."""
    started, go = threading.Event(), threading.Event()
    read = queries.session

    def gated(conn, session_id):  # the parent's read waits until the runtime has stopped
        if not go.is_set():
            started.set()
            go.wait(10)
        return read(conn, session_id)

    outcome: dict[str, BaseException] = {}

    async def make_child(rt, parent) -> None:
        try:
            await rt.create_session(parent_session_id=parent)
        except Exception as exc:  # noqa: BLE001 - what it raised is the point
            outcome["error"] = exc

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            async with tidings.open_runtime(db_path, workspace=workspace) as rt:
                parent = await rt.create_session(channel="web")
                monkeypatch.setattr(queries, "session", gated)
                nursery.start_soon(make_child, rt, parent)
                await trio.to_thread.run_sync(started.wait)
            go.set()
    assert isinstance(outcome["error"], RuntimeClosedError), outcome
    assert rows(db_path, "SELECT session_id FROM sessions") == [(parent,)]
