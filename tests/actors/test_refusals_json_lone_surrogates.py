"""JSON a caller gives (``delivery_metadata``, a control block's ``data``,
``artifact_metadata``, session and notice ``metadata``, an approval's ``details``) holds only
valid Unicode, as texts and ids do: a string with a lone surrogate (what ``os.fsdecode`` makes
of bytes that are not UTF-8), as a key or a value at any depth, was taken, stored as a JSON
escape and handed to the route as it was, so a route that sends UTF-8 (an HTTP API, a
websocket peer with a strict JSON parser) failed the delivery later, naming nothing. It is now a
``ValidationError`` naming the field, before anything is written."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError

from .conftest import refused_by_field, rows

_LONE = [
    {"k": "\udc80"},
    {"\ud800": 1},
    {"n": [1, {"x": "ok \udfff"}]},
    {"n": {"deep": ["a", ["b\ud83d"]]}},
]


@pytest.mark.parametrize("value", _LONE)
@pytest.mark.parametrize(("send", "field"), [
    (lambda ctx, v: ctx.output.send_text("t", delivery_metadata=v), "delivery_metadata"),
    (lambda ctx, v: ctx.output.send([{"type": "control", "action": "a", "data": v}],
                                    history_text="h"), "blocks[0].data"),
    (lambda ctx, v: ctx.output.send_image("chart.png", artifact_metadata=v,
                                          history_text="h"), "artifact_metadata"),
], ids=["delivery_metadata", "control_data", "artifact_metadata"])
async def test_a_send_of_json_with_a_lone_surrogate_is_refused(rt, bound, send, field,
                                                              value) -> None:
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route, lambda ctx: send(ctx, value), field)
    assert "lone surrogate" in str(error)


@pytest.mark.parametrize("value", _LONE)
async def test_session_and_notice_metadata_with_a_lone_surrogate_are_refused(
        rt, db_path, value) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="web", metadata=value)
    assert caught.value.field == "metadata"
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, "hi", metadata=value)
    assert caught.value.field == "metadata"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_valid_non_ascii_json_is_still_delivered(rt, bound) -> None:
    """Characters beyond the BMP are written as surrogate pairs in JSON: not refused."""
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("t", delivery_metadata={"😀": ["é", "\U0001F600"]})
    assert await handle.wait() == "delivered"
    assert dict(route.delivered[0].metadata) == {"😀": ("é", "\U0001F600")}
