"""``bind`` refuses a route class given for a route object (``MemoryRoute`` for
``MemoryRoute()``), naming ``route``.

The class has ``deliver`` (the function its instances bind), an ``async def``, so bind took it:
then every delivery to the session called ``deliver(outbound)`` with the outbound as ``self``
and no ``outbound``, and was recorded ``failed`` with "TypeError: MemoryRoute.deliver() missing
1 required positional argument: 'outbound'", the messages lost to a missing pair of
parentheses that nothing named. A class whose ``deliver`` is a static or class method (called
on the class as it is) is still a route."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


async def test_bind_refuses_a_route_class_by_name_and_keeps_the_live_route(rt) -> None:
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    rt.router.bind(session_id, live)
    with pytest.raises(ValidationError) as caught:
        rt.router.bind(session_id, MemoryRoute)
    assert caught.value.field == "route"
    assert "MemoryRoute()" in str(caught.value)
    assert rt.router.binding(session_id).route is live
    handle = await rt.notify(session_id, "still delivered")
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "delivered"


class _StaticRoute:
    """A route that is a class: its methods are called on the class itself."""

    delivered: list[str] = []  # the class is the route

    @staticmethod
    async def deliver(outbound) -> None:
        await trio.lowlevel.checkpoint()
        _StaticRoute.delivered.append(outbound.text)


class _ClassMethodRoute:
    delivered: list[str] = []  # the class is the route

    @classmethod
    async def deliver(cls, outbound) -> None:
        await trio.lowlevel.checkpoint()
        cls.delivered.append(outbound.text)


@pytest.mark.parametrize("route", [_StaticRoute, _ClassMethodRoute])
async def test_a_class_whose_deliver_is_static_or_a_class_method_is_still_a_route(
        rt, route) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    handle = await rt.notify(session_id, "to the class")
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "delivered"
    assert route.delivered[-1] == "to the class"
