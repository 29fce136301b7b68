"""A ``history_text`` on a send that writes no history (a transient send of text or control
blocks: asked for, the turn's or slot's default, progress and notice) would be dropped without
a word, as ``failure_history_text`` there always was refused: it is refused by name, before
anything is written. A transient media send still takes it: it is the media's text fallback
(README "Embedding tidings", DESIGN.md "History")."""

from __future__ import annotations

import pytest

from tidings import ArtifactRef
from tidings.actors import MediaBlock

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


@pytest.mark.parametrize("send", [
    lambda ctx: ctx.output.send_image("chart.png", caption="c", history_text="h",
                                      history_policy="transient"),
    lambda ctx: ctx.output.send_image("chart.png", summary="s", history_text="h",
                                      history_policy="transient"),
    lambda ctx: ctx.output.send_image(ArtifactRef(path="chart.png", summary="s"),
                                      history_text="h", history_policy="transient"),
    lambda ctx: ctx.input.send_file("chart.png", caption="c", history_text="h"),
    lambda ctx: ctx.output.send(["look", {"type": "image", "source": "chart.png",
                                          "caption": "c"},
                                 MediaBlock(type="file", location="chart.png", source_kind="path",
                                            name="", fallback="", summary="s")],
                                history_text="h", history_policy="transient"),
])
async def test_history_text_no_media_block_shows_is_refused(rt, bound, send) -> None:
    """A transient media send takes ``history_text`` as its media's text fallback, but a
    media block with a caption or a summary (its ``ArtifactRef``'s too) shows that instead:
    with every media block so, the text was dropped without a word, as on a transient text
    send. Refused by name, nothing written."""
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route, send, "history_text")
    assert "caption or summary" in str(error)


async def test_history_text_shown_by_one_media_block_of_several_is_taken(rt, bound) -> None:
    """Taken when one media block shows it (no caption or summary, or empty ones)."""
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send(
            [{"type": "image", "source": "chart.png", "caption": "c"},
             {"type": "image", "source": "chart.png", "caption": "", "summary": ""}],
            history_text="h", history_policy="transient")
    assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["c\nh"]
