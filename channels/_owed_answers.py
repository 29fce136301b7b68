"""Answers owed to a platform's retry: a session command answered with no session whose
direct answer did not go out (or one in a session whose write failed).

With ``dedupe_message_ids`` (and on the gateway, which remembers every client's message id
and looks a resend up), the id of ``/cancel``, ``/clear`` and ``/resume`` is recorded
with (or before) the command's effect, before its answer: a retry after a crash must never
run the command twice (a ``/clear`` retried would clear the session the user started since).
When the conversation has no session, the answer goes straight to the adapter's ``deliver()``;
should that raise (the platform call failed) or the call be cancelled, the platform's retry
of the same id is a ``duplicate``, and the user would never get the answer. The channel keeps
it here, in memory, per (conversation key, message id), and sends it to that retry, or
before the conversation's next message if that comes first (the answer to the earlier command
goes out before anything the later one brings); once it went out it is forgotten. At most
:data:`MAX_OWED_ANSWERS` are kept (when one more is owed, the oldest *given* one, below, is
dropped, else the oldest; logged either way), so answers a platform never retries cannot
pile up. Lost at a restart, as a retry after one finds only the id's record, but for a
direct answer: that one is owed on the id's record too,
written with it (schema v8), and cleared once it went out (:func:`paid_stored`); the retry of
the id after a restart takes it from there (:func:`take_stored`) and is sent it. (A crash
after it went out and before the clear committed sends it to that retry again: the window is
one store write.) On a route whose client acks (the gateway), a direct answer that went out
is kept *given* until the client acks it (its notice names the message id it answers): a
connection that drops with it unread must not lose it, so the retry of the id is sent it
again (and only that retry: the conversation's next message does not re-send a given one,
so a client that never acks gets it once per resend of the id; an ack that lands while a
resend is being sent it counts too); owed on the id's record too, it is cleared there at the
ack, so a restart before the ack sends it to the retry after it.
An answer that goes into a session is held durably instead (see ``_command_handler``): the
next start sends it; should its write fail while the process runs on, it is owed here too,
with its session and hold, so the retry (or the next message) gets it without waiting for a
restart, releasing the hold.
"""

from __future__ import annotations

import collections
import logging
from typing import TYPE_CHECKING

import attrs
import trio

from tidings.errors import TidingsError
from tidings.store._inbound import owed_direct_answer, paid_direct_answer, take_direct_answer
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.channels._base import ChannelBase

__all__ = ["MAX_OWED_ANSWERS", "Owed", "OwedAnswers", "paid_stored", "take_stored"]

log = logging.getLogger("tidings.channels")

MAX_OWED_ANSWERS = 256
"""Owed answers one channel keeps at most: a platform retries within minutes, so only one
whose calls fail by the hundred, and are never retried, reaches it."""


@attrs.frozen
class Owed:
    """An owed answer: *text*, the answer to *command*; *held*, ``(session_id, inbound_id)``
    for one that goes into that session, releasing the hold it is kept under (None: a
    direct answer); *stored*, a direct answer owed on its message id's record too (cleared
    once it went out: :func:`paid_stored`, or, *given*, once its client acked it); *given*,
    a direct answer that went out on a route whose client acks (the gateway), kept until
    the client acks it (see :meth:`OwedAnswers.acked`) for the retry of its id only."""

    text: str
    command: str
    held: tuple[str, str] | None = None
    stored: bool = False
    given: bool = False


class OwedAnswers:
    """Owed answers (:class:`Owed`) per (conversation key, message id), oldest first."""

    def __init__(self, cap: int = MAX_OWED_ANSWERS) -> None:
        self._cap = cap
        self._owed: collections.OrderedDict[tuple[str, str], Owed] = collections.OrderedDict()
        # Given answers taken out to be sent again (see take): None once acked meanwhile.
        self._out: dict[tuple[str, str], Owed | None] = {}

    def __len__(self) -> int:
        return len(self._owed)

    def owe(self, key: str, message_id: str, text: str, command: str, *,
            held: tuple[str, str] | None = None, stored: bool = False,
            given: bool = False) -> None:
        """Keep *text* (the answer to *command*; *held*, *stored*, *given*: see
        :class:`Owed`) for the retry of *message_id* in the conversation *key*. Past the cap
        one is dropped, logged (``event=owed_answer_dropped``): the oldest *given* one if
        any (it went out, and its client most likely has it; ``sent=yes``, at INFO, as a
        client that never acks leaves one per command), else the oldest (never sent: a
        WARNING). One held is still sent at the next start, one stored to the retry after
        it. Sync."""
        self._owed[(key, message_id)] = Owed(text, command, held, stored, given)
        self._owed.move_to_end((key, message_id))
        while len(self._owed) > self._cap:
            dropped = next((entry for entry, owed in self._owed.items() if owed.given),
                           next(iter(self._owed)))
            self._dropped(dropped, self._owed.pop(dropped))

    def _dropped(self, entry: tuple[str, str], owed: Owed) -> None:
        """Log *owed*, the answer to *entry* (conversation key, message id), dropped past
        the cap: the resend of its id gets no answer (before a restart, if it is *stored*)."""
        until = " before a restart" if owed.stored else ""
        if owed.given:
            level, note = logging.INFO, (f"more than {self._cap} answers are owed; it went "
                                         f"out unacked, and a resend of this message gets "
                                         f"no answer{until}")
        else:
            level, note = logging.WARNING, (f"more than {self._cap} answers are owed; a "
                                            f"retry of this message gets no answer{until}")
        log.log(level, "event=owed_answer_dropped conversation=%s message_id=%s command=%s "
                "sent=%s note=%s", field(entry[0]), field(entry[1]), field(owed.command),
                "yes" if owed.given else "no", field(note))

    def of(self, key: str) -> list[str]:
        """The message ids owed an answer in the conversation *key* that has not gone out
        (not *given*: that one waits for its client's ack or its id's retry), oldest
        first."""
        return [message_id for (owed_key, message_id), owed in self._owed.items()
                if owed_key == key and not owed.given]

    def acked(self, key: str, message_id: str) -> Owed | None:
        """The client acked the direct answer to *message_id* (conversation *key*): it is
        forgotten if it was *given* (one still owed, never sent, is kept) and returned, so
        the caller clears it on the id's record if it was *stored*. Also one taken out
        meanwhile to be sent again to a retry (:meth:`take`): that send does not keep it
        (see :meth:`back`). Sync."""
        entry = (key, message_id)
        if self._out.get(entry) is not None:
            owed, self._out[entry] = self._out[entry], None
            return owed
        owed = self._owed.get(entry)
        if owed is None or not owed.given:
            return None
        del self._owed[entry]
        return owed

    def take(self, key: str, message_id: str) -> Owed | None:
        """The answer owed to *message_id*, forgotten at once (the caller sends it, and owes
        it again with :meth:`owe` if that fails): no one else sends it meanwhile. A *given*
        one is noted as out until the caller's :meth:`back`, so an ack of it meanwhile
        counts. Sync."""
        owed = self._owed.pop((key, message_id), None)
        if owed is not None and owed.given:
            self._out[(key, message_id)] = owed
        return owed

    def back(self, key: str, message_id: str) -> bool:
        """The send of the answer to *message_id* that :meth:`take` took ended (sent or
        not): True if its client acked it meanwhile (:meth:`acked`), and then it is not to
        be owed again: the client has it. Sync."""
        entry = (key, message_id)
        acked = entry in self._out and self._out[entry] is None
        self._out.pop(entry, None)
        return acked


async def take_stored(channel: ChannelBase, key: str, message_id: str) -> None:
    """Owe here the direct answer the record of *message_id* (in the conversation *key*) owes
    from a process that stopped before it went out, if it does: the platform's retry of the
    id after a restart, a ``duplicate``, is then sent it. One read when none is owed; taken in
    the writer, so a twin of the retry does not take it too (this process's own owed answers
    are here already, or being sent). Shielded: bounded (two store requests), and a take cut
    off after it committed would leave the answer owed to this process, and to no one here."""
    rt = channel.runtime
    name, claimant = channel.config.name, rt.store.claimant
    with trio.CancelScope(shield=True):
        if not await rt.store.read(owed_direct_answer, rt.core_id, name, key, message_id,
                                   claimant):
            return
        [taken] = await rt.store.commit([take_direct_answer(rt.core_id, name, key, message_id,
                                                            claimant=claimant)])
    if taken is not None:
        text, command = taken
        channel.owed_answers.owe(key, message_id, text, command, stored=True)


async def paid_stored(channel: ChannelBase, key: str, *message_ids: str) -> None:
    """Clear the direct answers the records of *message_ids* owed: they went out. One
    shielded store request whatever their number (bounded): the answers are given, and a
    clear cut off would have a retry after a restart sent one again. A failed write is
    logged (``event=owed_answer_clear_failed``), not raised: the answers went out all the
    same."""
    rt = channel.runtime
    try:
        with trio.CancelScope(shield=True):
            await rt.store.commit([paid_direct_answer(rt.core_id, channel.config.name, key,
                                                      message_id)
                                   for message_id in message_ids])
    except TidingsError as exc:
        log.warning("event=owed_answer_clear_failed conversation=%s message_id=%s error=%s",
                    field(key), field(",".join(message_ids)), field(repr(exc)))
