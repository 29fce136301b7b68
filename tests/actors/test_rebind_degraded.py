"""The ``delivery.degraded`` event after a re-bind between a row's claim and its ``deliver()``.

The last bind wins (the lane hands a claimed row to the route bound when its platform I/O
starts), so the event that says which block types the route could not render must describe that
route, not the one the claim read. The claim's event is kept (events are append-only); a second
one names the route the row was handed to (``missing: []`` when it rendered every block).
"""

from __future__ import annotations

import json
import pathlib

import trio
import trio.testing

from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""

CHART = "https://example.com/chart.png"


class TextOnlyRoute(MemoryRoute):
    """Renders text only (images arrive as their text fallback)."""


class ImageRoute(MemoryRoute):
    """Renders text and images."""

    def __init__(self) -> None:
        super().__init__(capabilities={"text", "image"})


async def _written_claimed(rt, session_id: str) -> None:
    """Return once a send of *session_id* is being written already claimed (its lane is
    reserved for it): a media send checks its sources in a worker thread first, which
    ``wait_all_tasks_blocked`` does not wait for."""
    while True:
        lane = rt.dispatcher.lane(session_id)
        if lane is not None and lane.reserved:
            return
        await trio.testing.wait_all_tasks_blocked()


def _degraded(db_path: pathlib.Path, delivery_id: str) -> list[dict]:
    return [json.loads(data) for (data,) in rows(
        db_path, "SELECT data FROM events WHERE type = 'delivery.degraded' AND delivery_id = ? "
                 "ORDER BY event_seq", delivery_id)]


async def test_a_row_claimed_as_written_for_a_text_route_and_rebound_to_an_image_route(
        rt, db_path) -> None:
    """Claimed as it was written (idle session) for a text-only route, re-bound before the
    write committed to a route that renders images: the image goes out whole, and the last
    degraded event says so (nothing missing, the image route), not that it was degraded."""
    session_id = await rt.create_session(channel="web")
    old, new = TextOnlyRoute(), ImageRoute()
    rt.router.bind(session_id, old)
    handles = {}
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                async def send() -> None:
                    handles["x"] = await ctx.output.send_image(
                        CHART, caption="chart", history_policy="transient")

                nursery.start_soon(send)
                await _written_claimed(rt, session_id)  # for the old route, behind the gate
                rt.router.bind(session_id, new)
                gate.release()
            assert await handles["x"].wait() == "delivered"
    [outbound] = new.delivered
    assert [block.type for block in outbound.blocks] == ["image"]
    assert old.attempted == []
    events = _degraded(db_path, handles["x"].delivery_id)
    assert events[-1] == {"missing": [], "route": "ImageRoute"}


async def test_a_row_its_lane_claims_for_an_image_route_and_rebound_to_a_text_route(
        rt, db_path) -> None:
    """Claimed by its lane (the session was busy) for a route that renders images, re-bound
    while the claim was being written to a text-only route: that route gets the text fallback,
    and a degraded event names it and the image it lacked (there was none at all before)."""
    session_id = await rt.create_session(channel="web")
    old, new = ImageRoute(), TextOnlyRoute()
    old.stall()
    rt.router.bind(session_id, old)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
            await old.wait_attempted(1)  # the lane is inside deliver(first)
            image = await ctx.output.send_image(CHART, caption="chart",
                                                history_policy="transient")
            async with writer_gate(rt.store) as gate:
                old.release()  # first's sent and the image's claim queue behind the gate
                await trio.testing.wait_all_tasks_blocked()
                rt.router.bind(session_id, new)
                gate.release()
            assert await first.wait() == "delivered"
            assert await image.wait() == "delivered"
    [outbound] = new.delivered
    assert [(block.type, block.text) for block in outbound.blocks] == [("text", "chart")]
    assert _degraded(db_path, image.delivery_id) == [
        {"missing": ["image"], "route": "TextOnlyRoute"}]


async def test_a_rebind_to_a_route_that_renders_the_same_writes_no_second_event(
        rt, db_path) -> None:
    """A re-bind to another route of the same kind and capabilities changes nothing the event
    says: the claim's one event stands alone."""
    session_id = await rt.create_session(channel="web")
    old, new = TextOnlyRoute(), TextOnlyRoute()
    rt.router.bind(session_id, old)
    handles = {}
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                async def send() -> None:
                    handles["x"] = await ctx.output.send_image(
                        CHART, caption="chart", history_policy="transient")

                nursery.start_soon(send)
                await _written_claimed(rt, session_id)
                rt.router.bind(session_id, new)
                gate.release()
            assert await handles["x"].wait() == "delivered"
    assert [outbound.text for outbound in new.delivered] == ["chart"]
    assert _degraded(db_path, handles["x"].delivery_id) == [
        {"missing": ["image"], "route": "TextOnlyRoute"}]
