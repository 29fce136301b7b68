"""``router.bind`` refused a ``prompt_user`` or ``request_approval`` that is there but cannot be
awaited (a plain function, not callable) or raises when read, naming it; a route's
``reconcile`` it took as it was. A plain ``def reconcile(self, delivery_ids)`` then failed
every ask (awaiting a dict), logged at each scan, so the route's ``unknown`` rows stayed
``unknown`` for good; one that is no callable was silently taken for none; and one that raises
when read escaped the bind itself (the recovery scanner's bind listener reads it), after the
route was bound and before the other listeners ran. ``reconcile`` is now checked as the
question methods are."""

from __future__ import annotations

import types

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


async def async_deliver(outbound) -> None:
    return None


def sync_reconcile(delivery_ids):
    return dict.fromkeys(delivery_ids, "sent")


async def async_reconcile(delivery_ids):
    return dict.fromkeys(delivery_ids, "sent")


class NotConnected(MemoryRoute):
    """A route whose ``reconcile`` is a property that raises (a platform client made on
    first use, which cannot connect)."""

    @property
    def reconcile(self):  # type: ignore[no-untyped-def]
        raise ConnectionError("platform not connected")


@pytest.mark.parametrize(("reconcile", "error"), [
    (sync_reconcile, TypeError),
    (lambda delivery_ids: {}, TypeError),
    ("yes", ValidationError),
    (42, ValidationError),
], ids=["function", "lambda", "a string", "an int"])
async def test_bind_refuses_a_reconcile_that_cannot_be_awaited(rt, reconcile, error) -> None:
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    token = rt.router.bind(session_id, live)
    route = types.SimpleNamespace(deliver=async_deliver, reconcile=reconcile)
    with pytest.raises(error, match="reconcile"):
        rt.router.bind(session_id, route)
    assert rt.router.binding(session_id).route is live  # the live binding stays
    assert rt.router.unbind(token)


async def test_bind_refuses_a_reconcile_that_raises_when_read_naming_it(rt) -> None:
    await rt.recover()  # armed: the scanner's bind listener reads reconcile
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    token = rt.router.bind(session_id, live)
    with pytest.raises(ValidationError, match="reconcile") as caught:
        rt.router.bind(session_id, NotConnected())
    assert "platform not connected" in str(caught.value)
    assert rt.router.binding(session_id).route is live
    assert rt.router.unbind(token)


async def test_bind_takes_an_async_reconcile(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = types.SimpleNamespace(deliver=async_deliver, reconcile=async_reconcile)
    token = rt.router.bind(session_id, route)
    assert rt.router.binding(session_id).route is route
    assert rt.router.unbind(token)
