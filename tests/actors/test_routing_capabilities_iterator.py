"""A route's ``capabilities`` are read at each bind: a one-shot iterator is refused by name.

``bind`` read ``capabilities`` with ``frozenset(...)``, which takes any iterable: a generator
or iterator passed the first bind and was used up by it, so the same route bound again (a
client reconnecting, a channel binding its next session) read it empty, and every image or
file then went as its text fallback with a ``delivery.degraded`` event, what the refusal of a
misspelt block type is there to prevent."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


class _Route:
    def __init__(self, capabilities: object) -> None:
        self.capabilities = capabilities
        self.blocks: list[list[str]] = []

    async def deliver(self, outbound) -> None:
        self.blocks.append([block.type for block in outbound.blocks])


@pytest.mark.parametrize("make", [lambda: (t for t in ("text", "image")),
                                  lambda: iter(["text", "image"]),
                                  lambda: map(str, ["text", "image"])],
                         ids=["generator", "iterator", "map"])
async def test_capabilities_that_one_bind_uses_up_are_refused_naming_them(rt, make) -> None:
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    rt.router.bind(session_id, live)
    with pytest.raises(ValidationError) as caught:
        rt.router.bind(session_id, _Route(make()))
    assert caught.value.field == "capabilities"
    assert "iterator" in str(caught.value)
    assert rt.router.binding(session_id).route is live  # the live route stays


@pytest.mark.parametrize("capabilities", [("text", "image"), ["image"], {"image", "file"},
                                          frozenset({"image"})])
async def test_a_collection_of_capabilities_holds_for_every_bind(
        rt, workspace, capabilities) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    route = _Route(capabilities)
    for _ in range(2):  # the same route bound again, as a reconnecting client's is
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_image("chart.png", history_text="a chart")
        assert await handle.wait() == "delivered"
    assert route.blocks == [["image"], ["image"]]


async def test_capabilities_given_as_a_mapping_of_flags_are_refused_naming_them(rt) -> None:
    """``{"image": True, "file": False}`` read as its keys: the route said it cannot render
    files and was handed them all the same (no fallback text, no degraded event)."""
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    rt.router.bind(session_id, live)
    with pytest.raises(ValidationError) as caught:
        rt.router.bind(session_id, _Route({"text": True, "image": True, "file": False}))
    assert caught.value.field == "capabilities"
    assert "mapping" in str(caught.value)
    assert rt.router.binding(session_id).route is live
