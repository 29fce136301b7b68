"""A JSON object the caller gives (``delivery_metadata``, a control block's ``data``, session
metadata, a progress note's ``details``) may have non-string keys that JSON writes as strings
(``1`` as ``"1"``, ``True`` as ``"true"``, ``None`` as ``"null"``). Two keys that become the same
string (``{1: "a", "1": "b"}``) were collapsed to one, silently, the other value lost: such a
mapping is refused by field name at the call, at any depth, before anything is written. Keys
that do not collide are still written as JSON writes them."""

from __future__ import annotations

import pytest

from tidings.actors import ControlBlock
from tidings.errors import ValidationError

from .conftest import refused_by_field

_COLLIDING = [
    {1: "a", "1": "b"},
    {True: "a", "true": "b"},
    {None: "a", "null": "b"},
    {1.5: "a", "1.5": "b"},
    {"deep": [{"x": {2: "a", "2": "b"}}]},
]


@pytest.mark.parametrize("value", _COLLIDING)
@pytest.mark.parametrize(("send", "field"), [
    (lambda ctx, v: ctx.output.send_text("x", delivery_metadata=v), "delivery_metadata"),
    (lambda ctx, v: ctx.output.send([ControlBlock("a", v)], history_text="h"),
     "blocks[0].data"),
    (lambda ctx, v: ctx.output.send(["x", {"type": "control", "action": "a", "data": v}]),
     "blocks[1].data"),
])
async def test_keys_that_collide_as_json_are_refused_by_field(rt, bound, send, field,
                                                               value) -> None:
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route, lambda ctx: send(ctx, value), field)
    assert "collide" in str(error)


async def test_session_metadata_with_colliding_keys_is_refused(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="web", metadata={"a": {1: "x", "1": "y"}})
    assert caught.value.field == "metadata"
    assert "'1'" in str(caught.value)


async def test_keys_that_do_not_collide_are_written_as_json_writes_them(rt, bound) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x", delivery_metadata={
            1: "a", False: "b", None: "c", "n": [{2.5: "d"}]})
    assert await handle.wait() == "delivered"
    assert route.delivered[0].metadata == {"1": "a", "false": "b", "null": "c",
                                           "n": ({"2.5": "d"},)}


async def test_a_ready_made_control_blocks_data_reaches_the_route_as_json_writes_it(
        rt, bound) -> None:
    """``ControlBlock(action, data)`` and ``{"type": "control", ...}`` are one send: the route
    gets the data as written (``1`` as ``"1"``), as it reads back after a restart, not the
    caller's own objects (a later change to them reaches no route)."""
    session_id, route = bound
    nested = {"k": [1]}
    async with rt.open_turn(session_id) as ctx:
        made = await ctx.output.send([ControlBlock("a", {1: "x", "n": nested})],
                                     history_text="h")
        given = await ctx.output.send([{"type": "control", "action": "a",
                                        "data": {1: "x", "n": nested}}], history_text="h")
    nested["k"].append(2)
    assert [await made.wait(), await given.wait()] == ["delivered", "delivered"]
    [made_block], [given_block] = (outbound.blocks for outbound in route.delivered)
    assert dict(made_block.data) == dict(given_block.data) == {"1": "x", "n": {"k": [1]}}
