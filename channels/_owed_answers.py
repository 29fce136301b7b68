"""Answers owed to a platform's retry: a session command answered with no session whose
direct answer did not go out (or one in a session whose write failed).

With ``dedupe_message_ids``, the id of ``/cancel``, ``/clear`` and ``/resume`` is recorded
with (or before) the command's effect, before its answer: a retry after a crash must never
run the command twice (a ``/clear`` retried would clear the session the user started since).
When the conversation has no session, the answer goes straight to the adapter's ``deliver()``;
should that raise (the platform call failed) or the call be cancelled, the platform's retry
of the same id is a ``duplicate``, and the user would never get the answer. The channel keeps
it here, in memory, per (conversation key, message id), and sends it to that retry, or
before the conversation's next message if that comes first (the answer to the earlier command
goes out before anything the later one brings); once it went out it is forgotten. At most
:data:`MAX_OWED_ANSWERS` are kept (the oldest is dropped, logged, when one more is owed), so
answers a platform never retries cannot pile up. Lost at a restart, as a retry after one
finds only the id's record. An answer that goes into a session is held durably instead (see
``_command_handler``): the next start sends it; should its write fail while the process runs
on, it is owed here too, with its session and hold, so the retry (or the next message) gets it
without waiting for a restart, releasing the hold.
"""

from __future__ import annotations

import collections
import logging

import attrs

from tidings.supervisor._log import field

__all__ = ["MAX_OWED_ANSWERS", "Owed", "OwedAnswers"]

log = logging.getLogger("tidings.channels")

MAX_OWED_ANSWERS = 256
"""Owed answers one channel keeps at most: a platform retries within minutes, so only one
whose calls fail by the hundred, and are never retried, reaches it."""


@attrs.frozen
class Owed:
    """An owed answer: *text*, the answer to *command*; *held*, ``(session_id, inbound_id)``
    for one that goes into that session, releasing the hold it is kept under (None: a
    direct answer)."""

    text: str
    command: str
    held: tuple[str, str] | None = None


class OwedAnswers:
    """Owed answers (:class:`Owed`) per (conversation key, message id), oldest first."""

    def __init__(self, cap: int = MAX_OWED_ANSWERS) -> None:
        self._cap = cap
        self._owed: collections.OrderedDict[tuple[str, str], Owed] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._owed)

    def owe(self, key: str, message_id: str, text: str, command: str, *,
            held: tuple[str, str] | None = None) -> None:
        """Keep *text* (the answer to *command*; *held*: see :class:`Owed`) for the retry of
        *message_id* in the conversation *key*; past the cap, the oldest owed answer is
        dropped (one held is still sent at the next start). Sync."""
        self._owed[(key, message_id)] = Owed(text, command, held)
        self._owed.move_to_end((key, message_id))
        while len(self._owed) > self._cap:
            (old_key, old_id), old = self._owed.popitem(last=False)
            old_command = old.command
            log.warning("event=owed_answer_dropped conversation=%s message_id=%s command=%s "
                        "note=%s", field(old_key), field(old_id), field(old_command),
                        field(f"more than {self._cap} answers are owed; a retry of this "
                              f"message gets no answer"))

    def of(self, key: str) -> list[str]:
        """The message ids owed an answer in the conversation *key*, oldest first."""
        return [message_id for (owed_key, message_id) in self._owed if owed_key == key]

    def take(self, key: str, message_id: str) -> Owed | None:
        """The answer owed to *message_id*, forgotten at once (the caller sends it, and owes
        it again with :meth:`owe` if that fails): no one else sends it meanwhile. Sync."""
        return self._owed.pop((key, message_id), None)
