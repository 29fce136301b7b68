"""``router.bind`` refuses a route whose ``deliver`` is certainly not async (a plain function
or method): every delivery through it would fail at send time with a ``TypeError`` naming
nothing. What it cannot tell (callable objects, mocks) is still taken."""

from __future__ import annotations

import functools
import types
import unittest.mock

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


class SyncRoute:
    def deliver(self, outbound):
        return None


class StaticSyncRoute:
    @staticmethod
    def deliver(outbound):
        return None


class AsyncRoute:
    async def deliver(self, outbound):
        return None


class AwaitableCall:
    async def __call__(self, outbound):
        return None


def sync_deliver(outbound, extra=None):
    return None


async def async_deliver(outbound, extra=None):
    return None


SYNC = {
    "method": SyncRoute(),
    "staticmethod": StaticSyncRoute(),
    "function": types.SimpleNamespace(deliver=sync_deliver),
    "lambda": types.SimpleNamespace(deliver=lambda outbound: None),
    "partial": types.SimpleNamespace(deliver=functools.partial(sync_deliver, extra=1)),
    "nested partial": types.SimpleNamespace(
        deliver=functools.partial(functools.partial(SyncRoute().deliver))),
}


@pytest.mark.parametrize("name", sorted(SYNC))
async def test_bind_refuses_a_deliver_that_is_certainly_sync(rt, name) -> None:
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    token = rt.router.bind(session_id, live)
    with pytest.raises(TypeError, match="deliver"):
        rt.router.bind(session_id, SYNC[name])
    assert rt.router.binding(session_id).route is live  # the live binding stays
    assert rt.router.unbind(token)


@pytest.mark.parametrize("route", [
    AsyncRoute(),
    types.SimpleNamespace(deliver=async_deliver),
    types.SimpleNamespace(deliver=functools.partial(async_deliver, extra=1)),
    types.SimpleNamespace(deliver=AwaitableCall()),  # a callable object: we cannot tell
    types.SimpleNamespace(deliver=unittest.mock.AsyncMock()),
    types.SimpleNamespace(deliver=unittest.mock.MagicMock()),
], ids=["async method", "async function", "async partial", "callable object", "AsyncMock",
        "MagicMock"])
async def test_bind_takes_what_may_be_async(rt, route) -> None:
    session_id = await rt.create_session(channel="web")
    token = rt.router.bind(session_id, route)
    assert rt.router.binding(session_id).route is route
    assert rt.router.unbind(token)


def sync_ask(request):
    return None


async def async_ask(request):
    return None


@pytest.mark.parametrize("attribute", ["prompt_user", "request_approval"])
@pytest.mark.parametrize(("ask", "error"), [
    (sync_ask, TypeError),
    (lambda request: None, TypeError),
    (functools.partial(sync_ask), TypeError),
    ("yes", ValidationError),
    (42, ValidationError),
], ids=["function", "lambda", "partial", "a string", "an int"])
async def test_bind_refuses_a_question_method_that_cannot_be_awaited(rt, attribute, ask,
                                                                     error) -> None:
    """A route's ``prompt_user``/``request_approval`` is optional, but one that is there and
    certainly not async (or not callable) would fail every question the agent asks, closed as
    ``route_failed`` with the reason only in the log: refused at bind, naming it."""
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    token = rt.router.bind(session_id, live)
    route = types.SimpleNamespace(deliver=async_deliver, **{attribute: ask})
    with pytest.raises(error, match=attribute):
        rt.router.bind(session_id, route)
    assert rt.router.binding(session_id).route is live  # the live binding stays
    assert rt.router.unbind(token)


@pytest.mark.parametrize("attribute", ["prompt_user", "request_approval"])
@pytest.mark.parametrize("ask", [None, async_ask, AwaitableCall(), unittest.mock.MagicMock()],
                         ids=["None (no questions)", "async", "callable object", "MagicMock"])
async def test_bind_takes_a_question_method_that_may_be_async(rt, attribute, ask) -> None:
    session_id = await rt.create_session(channel="web")
    route = types.SimpleNamespace(deliver=async_deliver, **{attribute: ask})
    token = rt.router.bind(session_id, route)
    assert rt.router.binding(session_id).route is route
    assert rt.router.unbind(token)


class NotConnected(MemoryRoute):
    """A route whose question methods are properties that raise (a platform client made on
    first use, which cannot connect)."""

    @property
    def prompt_user(self):  # type: ignore[no-untyped-def]
        raise ConnectionError("platform not connected")

    @property
    def request_approval(self):  # type: ignore[no-untyped-def]
        raise ConnectionError("platform not connected")


async def test_bind_refuses_a_question_method_that_raises_when_read_naming_it(rt) -> None:
    """Since 471869d bind reads ``prompt_user``/``request_approval``; one that raises when
    read is refused naming it (as ``capabilities`` and ``ack_window`` are), not let out of
    ``bind`` as the platform's own error."""
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    token = rt.router.bind(session_id, live)
    with pytest.raises(ValidationError, match="prompt_user") as caught:
        rt.router.bind(session_id, NotConnected())
    assert "platform not connected" in str(caught.value)
    assert rt.router.binding(session_id).route is live  # the live binding stays
    assert rt.router.unbind(token)


class DeliverNotConnected:
    """A route whose ``deliver`` is a property that raises (a platform client made on first
    use, which cannot connect)."""

    @property
    def deliver(self):  # type: ignore[no-untyped-def]
        raise ConnectionError("platform not connected")


async def test_bind_refuses_a_deliver_that_raises_when_read_naming_it(rt) -> None:
    """``deliver`` is read as the question methods are: a property that raises refuses the
    route by the attribute's name, not as the platform's own error out of ``bind``."""
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    token = rt.router.bind(session_id, live)
    with pytest.raises(ValidationError, match="deliver") as caught:
        rt.router.bind(session_id, DeliverNotConnected())
    assert "platform not connected" in str(caught.value)
    assert rt.router.binding(session_id).route is live  # the live binding stays
    assert rt.router.unbind(token)


def test_a_sync_prompt_user_is_told_its_own_argument() -> None:
    """The refusal shows the signature it wants: ``prompt_user(prompt)``,
    ``request_approval(request)`` (as the bind docstring and the README write them)."""
    from tidings.actors._router import SessionInteractionRouter

    router = SessionInteractionRouter()
    for name, argument in (("prompt_user", "prompt"), ("request_approval", "request")):
        route = types.SimpleNamespace(deliver=async_deliver, **{name: sync_ask})
        with pytest.raises(TypeError, match=rf"async def {name}\({argument}\)"):
            router.bind("session_a", route)
