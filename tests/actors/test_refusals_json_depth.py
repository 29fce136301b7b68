"""JSON a send or a question carries (``delivery_metadata``, a control block's ``data``,
``artifact_metadata``, an approval's ``details``) is nested at most ``MAX_JSON_DEPTH`` deep.

Only its size was capped: ``{"a": {"a": ... 500 deep}}`` is a few kB, so a send took it and
wrote it, and the session's lane then crashed freezing it for the route (``RecursionError``,
two frames a level): the row became ``unknown``, "the session route crashed while
delivering", without its route ever being called, and again at each retry. Deeper still
(about 1000), the send and ``ctx.request_approval`` raised a bare ``RecursionError`` naming
nothing, as did an ``ApprovalRequest`` made with such (or with cyclic) ``details``. Each is
now a ``ValidationError`` naming the field, before anything is written or asked."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_JSON_DEPTH, ApprovalRequest
from tidings.errors import ValidationError

from .conftest import refused_by_field


def _nested(depth: int) -> dict:
    """*depth* objects, each inside the one before: ``{"a": {"a": ... 1}}``."""
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value  # type: ignore[return-value]


def _cyclic() -> dict:
    value: dict = {}
    value["a"] = value
    return value


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 500, 5000])
@pytest.mark.parametrize(("send", "field"), [
    (lambda ctx, value: ctx.output.send_text("t", delivery_metadata=value),
     "delivery_metadata"),
    (lambda ctx, value: ctx.output.send([{"type": "control", "action": "a", "data": value}],
                                        history_text="h"), "blocks[0].data"),
    (lambda ctx, value: ctx.output.send_image("chart.png", artifact_metadata=value,
                                              history_text="h"),
     "artifact_metadata"),
], ids=["delivery_metadata", "control_data", "artifact_metadata"])
async def test_a_send_of_json_nested_too_deep_is_refused(rt, bound, depth, send, field) -> None:
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route,
                                   lambda ctx: send(ctx, _nested(depth)), field)
    assert "MAX_JSON_DEPTH" in str(error)


async def test_json_at_the_depth_cap_is_delivered(rt, bound) -> None:
    session_id, route = bound
    value = _nested(MAX_JSON_DEPTH)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("t", delivery_metadata=value)
            control = await ctx.output.send([{"type": "control", "action": "a", "data": value}],
                                            history_text="h")
        assert [await handle.wait(), await control.wait()] == ["delivered"] * 2
    assert route.delivered[0].metadata == value
    assert route.delivered[1].blocks[0].data == value


@pytest.mark.parametrize("details", [_nested(MAX_JSON_DEPTH + 1), _nested(500),
                                     _nested(5000), _cyclic()],
                         ids=["over", "500", "5000", "cyclic"])
async def test_approval_details_nested_too_deep_are_refused(rt, bound, details) -> None:
    session_id, route = bound
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ValidationError) as caught:
                await ctx.request_approval("deploy", details=details)
            assert caught.value.field == "details"
        with pytest.raises(ValidationError) as caught:
            await rt.router.request_approval(
                ApprovalRequest(session_id, "deploy", "request_1", details=details))
        assert caught.value.field == "details"
    assert route.approvals == []  # nothing was asked
