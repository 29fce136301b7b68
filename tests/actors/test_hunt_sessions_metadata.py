"""``create_session(metadata=...)`` checks and stores the host's metadata, and the session
record is how a host reads a session back: it carries that metadata (read-only), as stored.
It had no such field, so the metadata was written and never readable."""

from __future__ import annotations

import pytest


async def test_session_record_carries_the_metadata_given_at_creation(rt) -> None:
    session_id = await rt.create_session(channel="web", metadata={"user": "u1", "tags": ["a"],
                                                                  "deep": {"k": 1}})
    record = await rt.session(session_id)
    assert record.metadata == {"user": "u1", "tags": ("a",), "deep": {"k": 1}}
    with pytest.raises(TypeError):
        record.metadata["user"] = "u2"  # type: ignore[index]
    plain = await rt.session(await rt.create_session(channel="web"))
    assert plain.metadata == {}
