"""``open_runtime`` takes ``inf`` for ``grace``, ``scan_interval`` and ``stranded_after`` (no
bound), and its check took any integer of seconds too; but an integer past a float's range
(``10**400``) then failed in an ``OverflowError`` naming nothing: for ``scan_interval`` and
``stranded_after`` as the runtime was built, after the database had been created and this
process registered in it; for ``grace`` only at the exit, as the stop computed its deadline.
Such an integer is no bound, as ``inf`` is (as ``GatewayClient.connect``'s
``welcome_timeout``, 4a6b192)."""

from __future__ import annotations

import math

import pytest

import tidings
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("field", ["grace", "scan_interval", "stranded_after"])
async def test_an_integer_past_a_float_s_range_is_no_bound(db_path, workspace, field) -> None:
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, **{field: 10**400}) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hello")
        assert await handle.wait() == "delivered"
        scanner = rt.scanner
    assert route.texts() == ["hello"]
    if field != "grace":
        assert getattr(scanner, field) == math.inf
