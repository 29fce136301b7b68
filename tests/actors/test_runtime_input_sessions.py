"""``rt.create_session(metadata=...)`` is capped at ``MAX_JSON_BYTES`` of JSON like every
other metadata a host writes (a send's, ``rt.notify``'s): 2 MB of metadata was stored with the
session and read back whole by every ``rt.session``."""

from __future__ import annotations

import json

import pytest

from tidings.actors import MAX_JSON_BYTES
from tidings.errors import ValidationError

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
