"""A route whose ``deliver()`` raises ``RecipientAway`` (nobody there to take the row: the
gateway with no client connected) leaves the row ``unrouted``, not ``failed``, and the lane
goes on: its later rows go the same way, in order, and a binder's hand-back (``rt.requeue``
inside ``rt.hold_binds``) delivers them all once the recipient is back, in seq order. With
``requeue=True`` (older rows were being handed back while it ran) the row goes back in line
instead, and is delivered after them, once."""

from __future__ import annotations

from typing import Any

import trio

from tidings.actors._router import RecipientAway


class _AwayRoute:
    """Raises ``RecipientAway`` while :attr:`away`; else takes the row (its text kept). A row
    whose text is :attr:`hold_text` waits in ``deliver()`` for :attr:`go` once, then raises
    ``RecipientAway(requeue=True)``."""

    capabilities = frozenset({"text"})

    def __init__(self) -> None:
        self.away = True
        self.hold_text: str | None = None
        self.entered, self.go = trio.Event(), trio.Event()
        self.got: list[str] = []

    async def deliver(self, outbound: Any) -> None:
        await trio.lowlevel.checkpoint()
        if outbound.text == self.hold_text:
            self.hold_text = None
            self.entered.set()
            await self.go.wait()
            raise RecipientAway("older rows were handed back meanwhile", requeue=True)
        if self.away:
            raise RecipientAway("nobody is there")
        self.got.append(outbound.text)


async def _hand_back(rt: Any, route: _AwayRoute, session_id: str) -> None:
    async with rt.hold_binds(route):
        await rt.unrouted_written(session_id)
        rows = await rt.stored_deliveries(session_id, statuses=("unrouted",))
        await rt.requeue(session_id, [row.outbound.delivery_id for row in rows])


async def test_rows_nobody_took_are_unrouted_then_handed_back_in_order(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = _AwayRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        handles = [await rt.notify(session_id, f"row {n}") for n in range(3)]
        assert [await handle.wait() for handle in handles] == ["unrouted"] * 3
        assert route.got == []
        route.away = False
        await _hand_back(rt, route, session_id)
        last = await rt.notify(session_id, "row 3")
        assert await last.wait() == "delivered"
    assert route.got == ["row 0", "row 1", "row 2", "row 3"]
    for handle in handles:
        assert (await rt.delivery_status(handle.delivery_id)).status == "sent"


async def test_a_row_sent_back_with_requeue_is_delivered_after_the_older_rows(rt) -> None:
    """Older rows handed back while ``deliver()`` ran: the route says ``requeue``, and the row
    goes out after them (left ``unrouted``, it waited for the next hand-back)."""
    session_id = await rt.create_session(channel="web")
    route = _AwayRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        older = await rt.notify(session_id, "older")
        assert await older.wait() == "unrouted"
        route.away, route.hold_text = False, "newer"
        newer = await rt.notify(session_id, "newer")
        await route.entered.wait()  # in deliver()
        await _hand_back(rt, route, session_id)
        route.go.set()
        assert await newer.wait() == "delivered"
    assert route.got == ["older", "newer"]
    assert (await rt.delivery_status(older.delivery_id)).status == "sent"
