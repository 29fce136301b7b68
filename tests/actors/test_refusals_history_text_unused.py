"""A ``history_text`` on a send that writes no history (a transient send of text or control
blocks: asked for, the turn's or slot's default, progress and notice) would be dropped without
a word, as ``failure_history_text`` there always was refused: it is refused by name, before
anything is written. A transient media send still takes it: it is the media's text fallback
(README "Embedding tidings", DESIGN.md "History")."""

from __future__ import annotations

import pytest

from .conftest import refused_by_field


@pytest.mark.parametrize("send", [
    lambda ctx: ctx.output.send_text("x", history_text="h", history_policy="transient"),
    lambda ctx: ctx.output.send_text("x", history_text="h", write_history=False),
    lambda ctx: ctx.input.send_text("x", history_text="h"),  # ctx.input: transient default
    lambda ctx: ctx.output.send("x", kind="progress", history_text="h"),
    lambda ctx: ctx.output.send("x", kind="notice", history_text="h"),
    lambda ctx: ctx.output.send({"type": "control", "action": "typing"}, history_text="h",
                                history_policy="transient"),
])
async def test_history_text_on_a_send_that_writes_no_history_is_refused(rt, bound, send) -> None:
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route, send, "history_text")
    assert "transient" in str(error)


async def test_history_text_on_a_transient_media_send_is_its_fallback(rt, bound) -> None:
    """Not refused: a media block without caption or summary shows the history text."""
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_image("chart.png", history_text="The chart.",
                                             history_policy="transient")
    assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["The chart."]
    assert await rt.history(session_id) == []
