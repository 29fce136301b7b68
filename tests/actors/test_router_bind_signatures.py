"""``bind`` refuses a route method that cannot be called as the runtime calls it, with its one
argument, naming the method.

``bind`` checked that ``deliver`` (and each optional ``prompt_user``, ``request_approval``,
``reconcile``) is there and awaitable, not that it takes the argument it is given: a route
written for another framework (``async def deliver(self, session_id, text)``, or one with no
argument) was bound, and every delivery to the session was then recorded ``failed`` with a
``TypeError`` about its arguments (every question ``route_failed``, every reconcile an
error), the messages lost to a mistake nothing named when it was made. A channel's agent is
checked so (``run(turn)``); a method with defaults or ``*args`` is taken, and one whose
signature cannot be read is given the benefit of the doubt."""

from __future__ import annotations

import pytest
import trio

from tidings.testing import MemoryRoute


class _TwoArguments:
    async def deliver(self, session_id, text) -> None:
        pass


class _NoArgument:
    async def deliver(self) -> None:
        pass


class _QuestionWithoutPrompt(MemoryRoute):
    async def prompt_user(self) -> str:  # type: ignore[override]
        return "never asked"


class _ReconcileWithTwo(MemoryRoute):
    async def reconcile(self, delivery_ids, session_id):
        return {}


@pytest.mark.parametrize(("route", "method"), [
    (_TwoArguments(), "deliver"), (_NoArgument(), "deliver"),
    (_QuestionWithoutPrompt(), "prompt_user"), (_ReconcileWithTwo(), "reconcile")],
    ids=["deliver-two", "deliver-none", "prompt_user-none", "reconcile-two"])
async def test_bind_refuses_a_method_that_cannot_take_its_argument(rt, route, method) -> None:
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    rt.router.bind(session_id, live)
    with pytest.raises(TypeError, match=method):
        rt.router.bind(session_id, route)
    assert rt.router.binding(session_id).route is live


class _Lenient:
    """Methods that take their argument, among others they need not be given."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def deliver(self, outbound, *extra, retry: int = 0) -> None:
        await trio.lowlevel.checkpoint()
        self.texts.append(outbound.text)

    async def prompt_user(self, *args) -> str:
        await trio.lowlevel.checkpoint()
        return "blue"


async def test_methods_with_defaults_or_star_args_are_still_bound(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = _Lenient()
    rt.router.bind(session_id, route)
    handle = await rt.notify(session_id, "taken")
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "delivered"
    assert route.texts == ["taken"]


# A route class's methods are checked once (a bind of its next instance costs a lookup): the
# check must follow the function, so a method replaced on the class is checked again.
async def test_a_method_replaced_on_its_class_is_checked_again(rt) -> None:
    class Replaced:
        async def deliver(self, outbound) -> None:
            pass

    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, Replaced())

    async def deliver(self, session_id, text) -> None:
        pass

    Replaced.deliver = deliver  # type: ignore[method-assign]
    with pytest.raises(TypeError, match="deliver"):
        rt.router.bind(session_id, Replaced())

    def sync_deliver(self, outbound) -> None:
        pass

    Replaced.deliver = sync_deliver  # type: ignore[method-assign]
    with pytest.raises(TypeError, match="coroutine function"):
        rt.router.bind(session_id, Replaced())
