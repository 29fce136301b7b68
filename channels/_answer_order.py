"""Answers after what the conversation queued before them (:class:`AnswerOrder`).

A command answer in a session is a row of its outbox, delivered when its lane gets to it; one
with no session (``/status`` right after ``/clear``, a refusal) goes straight to the
channel's ``deliver()``. Sent at once, it overtook the answers still queued for the same
conversation (on a slow platform ``/clear`` then ``/status`` showed "Session: none" before
"Cleared."). So a direct answer first waits, per conversation, for the last answer or turn
reply the channel queued in each of its sessions to end: a lane delivers a session's rows in
order, so that row ending means the session's earlier rows have ended too.

The answer to a session switch (``/new``, ``/resume``) is a row of the session switched to,
whose lane runs beside the old session's: it overtook the old session's last reply. Its
session is held (its lane claims nothing) until the rows of the conversation's other sessions
queued before it have ended, or :data:`SWITCH_ANSWER_WAIT` seconds have passed (a stuck route
must not hold the new session for ever); the command, and the conversation's next message,
do not wait for that.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

from tidings.actors import DeliveryHandle
from tidings.errors import RuntimeClosedError

__all__ = ["SWITCH_ANSWER_WAIT", "AnswerOrder", "wait_ended"]

SWITCH_ANSWER_WAIT = 30.0
"""Seconds a session switch's answer waits at most for the old session's queued rows to end
(each is delivered, failed or unrouted in time unless its route is stuck)."""

_UNDONE = ("pending", "scheduled")
"""A handle's statuses before its terminal one (delivered, failed, unrouted, unknown)."""

_PRUNE_FROM = 64
"""How many conversations are kept before the first sweep of those whose answers ended."""


def _done(handle: DeliveryHandle) -> bool:
    return handle.status not in _UNDONE


class AnswerOrder:
    """Per conversation key, the last answer (or turn reply) queued in each session, until it
    ends; and the sessions held for a switch's answer.

    Nothing is kept for a conversation once its answers ended: its entry goes at its next
    direct answer or answer, or at a sweep of every conversation when their count has doubled
    since the last one (so what is kept stays within twice what is still on its way)."""

    def __init__(self) -> None:
        self._last: dict[str, dict[str, DeliveryHandle]] = {}
        self._sweep_at = _PRUNE_FROM
        self._holding = collections.Counter[str]()  # sessions held for a switch's answer
        self._waits: dict[str, set[str]] = {}  # held session -> the sessions its holds wait for

    def queued(self, key: str, handle: DeliveryHandle) -> None:
        """The channel queued *handle* (an answer through the outbox) for conversation *key*.
        Sync."""
        self._drop_done(key)
        self._last.setdefault(key, {})[handle.session_id] = handle
        if len(self._last) >= self._sweep_at:
            for other in list(self._last):
                self._drop_done(other)
            self._sweep_at = max(_PRUNE_FROM, 2 * len(self._last))

    def earlier(self, key: str, excluding: str) -> list[DeliveryHandle]:
        """The last answers queued for conversation *key* that have not ended, in its
        sessions other than *excluding* (what a switch to *excluding* waits for) and than
        those held for a switch now (:meth:`holding`) that wait, directly or through other
        held sessions, for *excluding*: waiting for one of those would close a circle
        (``/new``, then ``/resume`` of the session left, while its reply is still queued).
        A held session that does not wait for *excluding* is waited for: skipping it let a
        second ``/new`` answer overtake the rows queued in the first one's session. Sync."""
        self._drop_done(key)
        return [handle for session_id, handle in self._last.get(key, {}).items()
                if session_id != excluding and excluding not in self._waited_by(session_id)]

    def holding(self, session_id: str, held: bool, waits_for: Iterable[str] = ()) -> None:
        """*session_id* is held for a switch's answer from now on (*held*), waiting for the
        sessions *waits_for*, or one such hold of it ended. Sync."""
        if held:
            self._holding[session_id] += 1
            self._waits.setdefault(session_id, set()).update(waits_for)
            return
        self._holding[session_id] -= 1
        if not self._holding[session_id]:
            del self._holding[session_id]
            self._waits.pop(session_id, None)

    def _waited_by(self, session_id: str) -> set[str]:
        """The sessions the holds of *session_id* wait for, and those theirs wait for, and so
        on (empty for a session not held)."""
        seen: set[str] = set()
        todo = [session_id]
        while todo:
            for other in self._waits.get(todo.pop(), ()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return seen

    async def wait(self, key: str) -> None:
        """Block until every answer queued for conversation *key* so far has ended (those
        queued meanwhile are newer: not waited for). A failed or unrouted one ends it too; a
        stalled route holds it as it holds the outbox. Returns if the runtime stops first (its
        rows stay queued for the next start: waiting would only lose this answer). No
        checkpoint when nothing is on its way."""
        await wait_ended(list(self._last.get(key, {}).values()))
        self._drop_done(key)

    def _drop_done(self, key: str) -> None:
        sessions = self._last.get(key)
        if sessions is None:
            return
        for session_id in [s for s, handle in sessions.items() if _done(handle)]:
            del sessions[session_id]
        if not sessions:
            del self._last[key]


async def wait_ended(handles: list[DeliveryHandle]) -> None:
    """Block until each of *handles* has ended (delivered, failed, unrouted, unknown), or
    the runtime stops (its rows stay queued for the next start). No checkpoint when none is
    on its way."""
    for handle in handles:
        try:
            await handle.wait()
        except RuntimeClosedError:
            break
