"""MemoryRoute.wait_attempted / wait_delivered: the count they wait for is checked."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("wait", ["wait_attempted", "wait_delivered"])
@pytest.mark.parametrize("n", [-1, 1.5, "2", None, True],
                         ids=["negative", "a float", "a string", "None", "a bool"])
async def test_a_route_wait_refuses_a_count_that_is_no_count_by_name(rt, wait, n) -> None:
    # Taken as given: wait_delivered(-1) with three delivered returned the first two (a slice
    # [:-1]), wait_delivered(True) the first one, 1.5 waited for two and then raised
    # "slice indices must be integers", "2" and None a TypeError about '<', naming nothing.
    route = MemoryRoute()
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        for text in ("a", "b", "c"):
            await ctx.output.send_text(text)
    await route.wait_delivered(3)
    with trio.fail_after(5), pytest.raises(ValidationError) as raised:
        await getattr(route, wait)(n)
    assert raised.value.field == "n"


@pytest.mark.parametrize("wait", ["wait_attempted", "wait_delivered"])
async def test_a_route_wait_for_none_returns_at_once(wait) -> None:
    with trio.fail_after(5):
        assert await getattr(MemoryRoute(), wait)(0) == []
