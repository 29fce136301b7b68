"""The output SDK's input rules for text and sources (README "Embedding tidings"): an empty
text, an empty ``history_text``, a text over ``MAX_TEXT_BYTES`` and a source string that is
not really a URL are each decided at the call, by field, before anything is written."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import TextBlock
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


@pytest.fixture
async def bound(rt, workspace):
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file", "control"})
    rt.router.bind(session_id, route)
    return session_id, route


async def _refused_by_field(rt, session_id, route, send, field) -> ValidationError:
    """*send* raises ValidationError naming *field*; no delivery or history row is written,
    and the next send of the same turn is delivered as if nothing had happened."""
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ValidationError) as caught:
                await send(ctx.output)
            assert caught.value.field == field
            assert await rt.deliveries(session_id) == []
            assert await rt.history(session_id) == []
            handle = await ctx.output.send_text("next")
        assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["next"]
    return caught.value


@pytest.mark.parametrize(("send", "field"), [
    (lambda output: output.send_text(""), "text"),
    (lambda output: output.progress(""), "text"),
    (lambda output: output.notice(""), "text"),
    (lambda output: output.send(""), "blocks[0].text"),
    (lambda output: output.send(["a", TextBlock("")]), "blocks[1].text"),
    (lambda output: output.send([{"type": "text", "text": ""}]), "blocks[0].text"),
    (lambda output: output.send("", kind="notice"), "blocks[0].text"),
])
async def test_an_empty_text_is_refused_by_field(rt, bound, send, field) -> None:
    session_id, route = bound
    error = await _refused_by_field(rt, session_id, route, send, field)
    assert "must not be empty" in str(error)
