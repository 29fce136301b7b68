"""Answers with no session after those in the outbox (:class:`AnswerOrder`).

A command answer in a session is a row of its outbox, delivered when its lane gets to it; one
with no session (``/status`` right after ``/clear``, a refusal) goes straight to the
channel's ``deliver()``. Sent at once, it overtook the answers still queued for the same
conversation (on a slow platform ``/clear`` then ``/status`` showed "Session: none" before
"Cleared."). So a direct answer first waits, per conversation, for the last answer the channel
queued in each of its sessions to end: a lane delivers a session's rows in order, so that row
ending means the session's earlier rows (replies written before it included) have ended too.
"""

from __future__ import annotations

from tidings.actors import DeliveryHandle
from tidings.errors import RuntimeClosedError

__all__ = ["AnswerOrder"]

_UNDONE = ("pending", "scheduled")
"""A handle's statuses before its terminal one (delivered, failed, unrouted, unknown)."""

_PRUNE_FROM = 64
"""How many conversations are kept before the first sweep of those whose answers ended."""


def _done(handle: DeliveryHandle) -> bool:
    return handle.status not in _UNDONE


class AnswerOrder:
    """Per conversation key, the last answer queued in each session, until it ends.

    Nothing is kept for a conversation once its answers ended: its entry goes at its next
    direct answer or answer, or at a sweep of every conversation when their count has doubled
    since the last one (so what is kept stays within twice what is still on its way)."""

    def __init__(self) -> None:
        self._last: dict[str, dict[str, DeliveryHandle]] = {}
        self._sweep_at = _PRUNE_FROM

    def queued(self, key: str, handle: DeliveryHandle) -> None:
        """The channel queued *handle* (an answer through the outbox) for conversation *key*.
        Sync."""
        self._drop_done(key)
        self._last.setdefault(key, {})[handle.session_id] = handle
        if len(self._last) >= self._sweep_at:
            for other in list(self._last):
                self._drop_done(other)
            self._sweep_at = max(_PRUNE_FROM, 2 * len(self._last))

    async def wait(self, key: str) -> None:
        """Block until every answer queued for conversation *key* so far has ended (those
        queued meanwhile are newer: not waited for). A failed or unrouted one ends it too; a
        stalled route holds it as it holds the outbox. Returns if the runtime stops first (its
        rows stay queued for the next start: waiting would only lose this answer). No
        checkpoint when nothing is on its way."""
        for handle in list(self._last.get(key, {}).values()):
            try:
                await handle.wait()
            except RuntimeClosedError:
                break
        self._drop_done(key)

    def _drop_done(self, key: str) -> None:
        sessions = self._last.get(key)
        if sessions is None:
            return
        for session_id in [s for s, handle in sessions.items() if _done(handle)]:
            del sessions[session_id]
        if not sessions:
            del self._last[key]
