"""A send's ``history_text`` is the text fallback of one media block, not of each: in a send of
several media blocks without a caption or summary, the first shows it and the others their
file names, so a text-only route (and ``outbound.text``) does not get the same words twice."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute


async def test_two_uncaptioned_images_show_history_text_once(rt, workspace,
                                                             autojump_clock) -> None:
    (workspace / "a.png").write_bytes(b"\x89PNG")
    (workspace / "b.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()  # text only: every image is degraded to its fallback
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send(
                [{"type": "image", "source": "a.png"}, {"type": "image", "source": "b.png"},
                 {"type": "image", "source": "a.png", "caption": "again"}],
                history_text="two charts")
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert outbound.text == "two charts\nb.png\nagain"
    assert [block.text for block in outbound.blocks] == ["two charts", "b.png", "again"]
    [row] = await rt.history(session_id)
    assert row.text == "two charts"


async def test_a_capable_route_gets_each_block_its_own_fallback(rt, workspace,
                                                               autojump_clock) -> None:
    (workspace / "a.png").write_bytes(b"\x89PNG")
    (workspace / "b.pdf").write_bytes(b"%PDF")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file"})
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send(
                ["here", {"type": "image", "source": "a.png"},
                 {"type": "file", "source": "b.pdf"}],
                history_policy="transient", history_text="a chart and its data")
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert [block.fallback for block in outbound.blocks[1:]] == ["a chart and its data", "b.pdf"]
    assert outbound.text == "here\na chart and its data\nb.pdf"
