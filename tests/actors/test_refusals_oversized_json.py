"""A ``delivery_metadata``, a control block's ``data`` or an artifact's metadata whose JSON is
over ``MAX_JSON_BYTES`` was stored whole (and the first two sent in every frame, replays
included): each is refused at the call by field name, before anything is written (README
"Embedding tidings", Metadata size)."""

from __future__ import annotations

import pytest

from tidings.actors import MAX_JSON_BYTES, ArtifactRef, ControlBlock

from .conftest import refused_by_field

_BIG = {"blob": "x" * MAX_JSON_BYTES}  # its JSON encoding is over the cap


@pytest.mark.parametrize(("send", "field"), [
    (lambda ctx: ctx.output.send_text("x", delivery_metadata=_BIG), "delivery_metadata"),
    (lambda ctx: ctx.output.notice("x", delivery_metadata=_BIG), "delivery_metadata"),
    (lambda ctx: ctx.output.send(["x", {"type": "control", "action": "a", "data": _BIG}]),
     "blocks[1].data"),
    (lambda ctx: ctx.output.send([ControlBlock("a", _BIG)], history_text="h"), "blocks[0].data"),
    (lambda ctx: ctx.output.send_image("chart.png", history_text="h", artifact_metadata=_BIG),
     "artifact_metadata"),
    (lambda ctx: ctx.output.send_image(ArtifactRef(path="chart.png", metadata=_BIG),
                                       history_text="h"), "source.metadata"),
])
async def test_json_over_the_cap_is_refused_by_field(rt, bound, send, field) -> None:
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route, send, field)
    assert "MAX_JSON_BYTES" in str(error)


async def test_json_at_the_cap_is_accepted(rt, bound) -> None:
    session_id, route = bound
    # '{"blob": "' + ... + '"}' is 12 bytes around the string
    exact = {"blob": "x" * (MAX_JSON_BYTES - 12)}
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x", delivery_metadata=exact)
    assert await handle.wait() == "delivered"
    assert route.delivered[0].metadata == exact
