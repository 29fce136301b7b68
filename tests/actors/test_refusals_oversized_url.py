"""A URL source over ``MAX_TEXT_BYTES`` (a plain string, an ``ArtifactRef``'s ``url``, a
ready-made block's ``location``) was stored and sent whole, though every other text of a send
is capped: it is refused the same way, by field, before anything is written."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_TEXT_BYTES, ArtifactRef, MediaBlock
from tidings.errors import ValidationError

_URL = "https://example.com/" + "a" * MAX_TEXT_BYTES


@pytest.mark.parametrize(("send", "field"), [
    (lambda out: out.send_image(_URL, history_text="h"), "source"),
    (lambda out: out.send_file(ArtifactRef(url=_URL), history_text="h"), "source.url"),
    (lambda out: out.send([{"type": "image", "source": _URL}], history_text="h"),
     "blocks[0].source"),
    (lambda out: out.send([MediaBlock("image", _URL, "url", "a", "a")], history_text="h"),
     "blocks[0].location"),
])
async def test_a_url_over_the_text_cap_is_refused(rt, bound, send, field) -> None:
    session_id, route = bound
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ValidationError) as caught:
                await send(ctx.output)
            assert caught.value.field == field
            assert "MAX_TEXT_BYTES" in str(caught.value)
            assert await rt.deliveries(session_id) == []
            assert await rt.history(session_id) == []
            handle = await ctx.output.send_image("https://example.com/a.png", history_text="h")
    assert await handle.wait() == "delivered"
    assert len(route.delivered) == 1
