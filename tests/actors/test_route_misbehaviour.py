"""Routes that misbehave: odd errors from ``deliver()``, odd attributes, rebinding mid-delivery."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute


class _Unprintable(Exception):
    """An error whose ``str()`` itself raises (a broken ``__str__`` in a platform library)."""

    def __str__(self) -> str:
        raise RuntimeError("no text for this error")


async def _bound(rt, route):
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    return session_id


async def test_an_error_whose_str_raises_still_makes_the_delivery_failed(rt) -> None:
    session_id = await _bound(rt, MemoryRoute(fail=_Unprintable()))
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x")
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "failed"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.status, status.attempts) == ("failed", 1)
    assert status.last_error.startswith("_Unprintable: ")
