"""Handing a session's ``unrouted`` rows back to its lane once a channel is its route again.

A row finds no route while no channel has its session bound: after a restart (recovery's
"not answered" notices, replies queued before the crash), or after ``/new`` moved the
conversation on while a turn of the old session still ran. Such rows are final for the runtime,
but a channel that becomes the session's route again hands them back (``rt.requeue``), inside
``rt.hold_binds(channel)``: they go out in seq order before anything newer of the session.

The gateway does it in each client's hello; every other channel (``ChannelBase``) before the
conversation's first inbound message or command in this process is handled, and again before its
next one whenever a row went ``unrouted`` since (in a session the directory forgot, say), and in
``/resume``. A ``/resume`` whose hand-back was cut off or failed partway leaves the rest
``unrouted``: the gateway, whose hellos skip a session bound there already, notes it
(:class:`LeftBehind`) and hands it back at the conversation's next message or hello.
"""

from __future__ import annotations

from typing import Any

import trio

__all__ = ["HANDBACK_PAGE", "LeftBehind", "requeue_unrouted"]

HANDBACK_PAGE = 256
"""Rows read per page when handing back."""


async def requeue_unrouted(rt: Any, session_id: str, page: int = HANDBACK_PAGE) -> None:
    """Hand the session's ``unrouted`` message and notice rows back to its lane, now that the
    caller is its route: they are delivered in seq order, before any row written from now on.
    Call inside ``rt.hold_binds(route)``; first waits for a row whose ``unrouted`` write was in
    flight at the bind (else this read would miss it). A cancel takes effect between pages (a
    page's write is not cut off: it may commit all the same, and a claimed row must go back
    with it, see ``rt.requeue``); the rows not handed back stay ``unrouted``."""
    await rt.unrouted_written(session_id)
    cursor = 0
    while True:
        rows = await rt.stored_deliveries(session_id, after_seq=cursor, limit=page,
                                          kinds=("message", "notice"), statuses=("unrouted",),
                                          max_bytes=rt.dispatcher.lane_bytes)
        if not rows:
            return
        cursor = rows[-1].outbound.seq
        with trio.CancelScope(shield=True):  # one page: bounded
            await rt.requeue(session_id, [row.outbound.delivery_id for row in rows])


class LeftBehind:
    """Sessions whose ``unrouted`` rows a ``/resume``'s hand-back left (cut off between pages,
    or a page's write failed), by conversation key, for a channel that hands back nowhere else
    for a session it has bound (the gateway: a hello skips those). Looked up sync first, so a
    conversation where nothing was left costs no store read."""

    def __init__(self) -> None:
        self._left: dict[str, dict[str, None]] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._left

    def mark(self, key: str, session_id: str) -> None:
        """*session_id*'s hand-back in conversation *key* did not finish."""
        self._left.setdefault(key, {})[session_id] = None

    async def hand_back(self, rt: Any, route: object, key: str,
                        page: int = HANDBACK_PAGE) -> None:
        """Hand back the rows left in conversation *key*'s sessions still bound to *route*
        (one bound elsewhere, or nowhere, is dropped: a hello finds it among the sessions with
        ``unrouted`` rows that it binds). Call under the conversation's lock, inside
        ``rt.hold_binds(route)``. A session stays marked until its rows are all handed back:
        cut off or failed again, the next message or hello tries again."""
        sessions = self._left.get(key, {})
        for session_id in list(sessions):
            binding = rt.router.binding(session_id)
            if binding is not None and binding.route is route:
                await requeue_unrouted(rt, session_id, page)
            sessions.pop(session_id, None)
        if not sessions and self._left.get(key) is sessions:
            del self._left[key]
