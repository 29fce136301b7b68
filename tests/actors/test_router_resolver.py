"""``router.add_resolver``: a route owner that keeps a session unbound (a channel's evicted
conversation) is asked for its route before the session is taken for one with no route: its
lane's row goes to the route the resolver binds instead of ending ``unrouted``, and so do
``router.deliver`` and a host's questions. A resolver that raises counts as no route."""

from __future__ import annotations

import logging

import pytest
import trio

from tidings.actors import Outbound, Prompt, TextBlock
from tidings.actors._router import SessionInteractionRouter
from tidings.testing import MemoryRoute


async def test_a_resolver_binds_the_route_a_row_goes_to(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    asked: list[str] = []

    async def resolver(sid: str) -> None:
        asked.append(sid)
        if sid == session_id:
            rt.router.bind(sid, route)

    rt.router.add_resolver(resolver)
    handle = await rt.notify(session_id, "reminder")
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["reminder"]
    assert asked == [session_id]
    again = await rt.notify(session_id, "bound now")  # bound: nobody is asked
    with trio.fail_after(30):
        assert await again.wait() == "delivered"
    assert asked == [session_id]
    other = await rt.create_session(channel="web")
    assert await (await rt.notify(other, "nobody's")).wait() == "unrouted"
    assert asked == [session_id, other]


async def test_a_removed_resolver_is_not_asked(rt) -> None:
    session_id = await rt.create_session(channel="web")
    asked: list[str] = []

    async def resolver(sid: str) -> None:
        asked.append(sid)

    rt.router.add_resolver(resolver)
    rt.router.remove_resolver(resolver)
    rt.router.remove_resolver(resolver)  # twice: nothing
    handle = await rt.notify(session_id, "x")
    with trio.fail_after(30):
        assert await handle.wait() == "unrouted"
    assert asked == []


async def test_a_resolver_that_raises_is_logged_and_means_no_route(rt, caplog) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()

    async def broken(sid: str) -> None:
        raise RuntimeError("store gone")

    async def working(sid: str) -> None:
        rt.router.bind(sid, route)

    rt.router.add_resolver(broken)
    with caplog.at_level(logging.WARNING, logger="tidings.router"):
        handle = await rt.notify(session_id, "x")
        with trio.fail_after(30):
            assert await handle.wait() == "unrouted"
    assert "event=resolver_failed" in caplog.text
    rt.router.add_resolver(working)  # asked after the broken one
    handle = await rt.notify(session_id, "y")
    with trio.fail_after(30):
        assert await handle.wait() == "delivered"


async def test_deliver_and_questions_ask_the_resolvers(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")

    async def resolver(sid: str) -> None:
        rt.router.bind(sid, route)

    rt.router.add_resolver(resolver)
    with trio.fail_after(30):
        answer = await rt.router.prompt_user(Prompt(session_id, "go on?", prompt_id="prompt_1"))
    assert answer.text == "yes"
    token = rt.router.bind(session_id, route)
    rt.router.unbind(token)
    outbound = Outbound(session_id=session_id, delivery_id="direct_1", kind="notice",
                        blocks=(TextBlock("hi"),), text="hi", channel="web")
    with trio.fail_after(30):
        assert await rt.router.deliver(outbound) is True


def test_add_resolver_refuses_what_is_not_callable() -> None:
    router = SessionInteractionRouter()
    with pytest.raises(TypeError, match="resolver"):
        router.add_resolver("not a function")  # type: ignore[arg-type]


def test_add_resolver_refuses_a_plain_function() -> None:
    """Awaited at every unbound row, a plain (sync) function failed each time with a
    ``TypeError`` naming nothing, logged as ``resolver_failed`` (after it ran: a bind it
    made still counted), and one that binds nothing flooded the log: refused when added,
    as a route's sync ``deliver`` is at ``bind``."""
    router = SessionInteractionRouter()

    def plain(sid: str) -> None:
        return None

    with pytest.raises(TypeError, match=r"resolver.*async def"):
        router.add_resolver(plain)
    with pytest.raises(TypeError, match="resolver"):
        router.add_resolver(lambda sid: None)

    async def fine(sid: str) -> None:
        return None

    router.add_resolver(fine)  # an async function, or method, is taken
    router.add_resolver(MemoryRoute().deliver)
