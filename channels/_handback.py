"""Handing a session's ``unrouted`` rows back to its lane once a channel is its route again.

A row finds no route while no channel has its session bound: after a restart (recovery's
"not answered" notices, replies queued before the crash), or after ``/new`` moved the
conversation on while a turn of the old session still ran. Such rows are final for the runtime,
but a channel that becomes the session's route again hands them back (``rt.requeue``), inside
``rt.hold_binds(channel)``: they go out in seq order before anything newer of the session.
A progress note among them is not handed back but ended, ``failed`` with ``stale_progress`` (as
a client's ``after_seq`` ends one): late, it is noise.

The gateway does it in each client's hello; every other channel (``ChannelBase``) before the
conversation's first inbound message or command in this process is handled, and again before its
next one whenever a row went ``unrouted`` since (in a session the directory forgot, say), and in
``/resume``. A ``/resume`` whose hand-back was cut off or failed partway leaves the rest
``unrouted``: the gateway, whose hellos skip a session bound there already, notes it
(:class:`LeftBehind`) and hands it back at the conversation's next message or hello.

A cancel (a stop, a connection or request given up) takes effect between pages, also for a
caller that handles a message shielded as one step, as the gateway does (its effects and the
record of its id: see ``_gateway_inbound``): it opens its shield to a cancel between a hand-back's
pages only (:func:`cut_between_pages`), so a stop does not wait for every page of a session with
many rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import trio

from tidings.store import end_stale_progress

__all__ = ["HANDBACK_PAGE", "LeftBehind", "cut_between_pages", "requeue_unrouted"]

# The shielded scope a hand-back may open between pages, and the task it is for (a task
# started meanwhile copies the context: it must not open a scope of another task's).
_CUT_THROUGH: ContextVar[tuple[trio.CancelScope, trio.lowlevel.Task] | None] = ContextVar(
    "tidings_handback_cut_through", default=None)

HANDBACK_PAGE = 256
"""Rows read per page when handing back."""


async def requeue_unrouted(rt: Any, session_id: str, page: int = HANDBACK_PAGE) -> None:
    """Hand the session's ``unrouted`` message and notice rows back to its lane, now that the
    caller is its route: they are delivered in seq order, before any row written from now on.
    Its ``unrouted`` progress notes are ended instead (``failed``, ``stale_progress``: see
    :func:`_end_progress`), never sent late.
    Call inside ``rt.hold_binds(route)``; first waits for a row whose ``unrouted`` write was in
    flight at the bind (else this read would miss it). A cancel takes effect between pages (a
    page's write is not cut off: it may commit all the same, and a claimed row must go back
    with it, see ``rt.requeue``); the rows not handed back stay ``unrouted``."""
    await rt.unrouted_written(session_id)
    for kinds in (("message", "notice"), ("progress",)):
        cursor = 0
        while True:
            rows = await rt.stored_deliveries(session_id, after_seq=cursor, limit=page,
                                              kinds=kinds, statuses=("unrouted",),
                                              max_bytes=rt.dispatcher.lane_bytes)
            if not rows:
                break
            cursor = rows[-1].outbound.seq
            with trio.CancelScope(shield=True):  # one page: bounded
                ids = [row.outbound.delivery_id for row in rows]
                if kinds == ("progress",):
                    await _end_progress(rt, ids)
                else:
                    await rt.requeue(session_id, ids)
            await _between_pages()


async def _end_progress(rt: Any, delivery_ids: list[str]) -> None:
    """End *delivery_ids*, a session's ``unrouted`` progress notes: ``failed`` with
    ``stale_progress`` by way of ``queued`` in one write (no lane sees them queued), as a
    client's ``after_seq`` or a reconcile's ``"missing"`` ends one. Late, a "working on it"
    is noise; left ``unrouted`` it read as owed for ever and no prune ever deleted it."""
    now = rt.store.clock()
    await rt.store.commit(end_stale_progress(delivery_ids, "unrouted", now=now))


@contextmanager
def cut_between_pages(shield: trio.CancelScope) -> Iterator[None]:
    """Within the block, a hand-back (:func:`requeue_unrouted`, in this task) that runs
    inside *shield*, the caller's shielded scope, is opened to a cancel from outside it after
    each page: a stop, or the caller's connection killed, cuts it off there, as it would a
    hand-back not shielded (the rest stays ``unrouted``; ``/resume`` writes its answer then
    raises the cancel: see ``_command_handler``). Nothing else in the block is: whatever
    runs before or after the hand-back, or inside a shield of its own, stays whole."""
    token = _CUT_THROUGH.set((shield, trio.lowlevel.current_task()))
    try:
        yield
    finally:
        _CUT_THROUGH.reset(token)


async def _between_pages() -> None:
    """A cancel from outside the shield :func:`cut_between_pages` named, if one is pending,
    is raised here (that shield is lowered for this check only, which runs no other code
    of this task); otherwise no checkpoint (the next page's read is one)."""
    cut_through = _CUT_THROUGH.get()
    if cut_through is None:
        return
    shield, task = cut_through
    if task is not trio.lowlevel.current_task() or not shield.shield:
        return
    shield.shield = False
    try:
        await trio.lowlevel.checkpoint_if_cancelled()
    finally:
        shield.shield = True


class LeftBehind:
    """Sessions whose ``unrouted`` rows a ``/resume``'s hand-back left (cut off between pages,
    or a page's write failed), by conversation key, for a channel that hands back nowhere else
    for a session it has bound (the gateway: a hello skips those). Looked up sync first, so a
    conversation where nothing was left costs no store read. The gateway also keeps one of
    the sessions whose rows went ``unrouted`` while it was their route, nobody connected to
    take them (``RecipientAway``), for the conversation's next hello."""

    def __init__(self) -> None:
        self._left: dict[str, dict[str, None]] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._left

    def mark(self, key: str, session_id: str) -> None:
        """*session_id*'s hand-back in conversation *key* did not finish."""
        self._left.setdefault(key, {})[session_id] = None

    def sessions(self, key: str) -> tuple[str, ...]:
        """The sessions marked in conversation *key* (sync)."""
        return tuple(self._left.get(key, ()))

    def marked(self, key: str, session_id: str) -> bool:
        """Whether *session_id* is marked in conversation *key* (sync, no copy)."""
        sessions = self._left.get(key)
        return sessions is not None and session_id in sessions

    def forget(self, key: str, session_ids: Iterable[str]) -> None:
        """Unmark *session_ids* in conversation *key*: no longer bound to the channel (left,
        or the conversation evicted), their rows are found by the hello that binds them
        again, as after a restart (sync)."""
        sessions = self._left.get(key)
        if sessions is None:
            return
        for session_id in session_ids:
            sessions.pop(session_id, None)
        if not sessions:
            del self._left[key]

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
