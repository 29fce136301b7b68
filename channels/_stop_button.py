"""``ChannelBase.cancel_turn``: what ``/cancel`` does, for a platform's stop button (a mixin of
:class:`~tidings.channels.ChannelBase`, kept apart as one job of its own).
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Literal

import trio

from tidings.channels._command_handler import release_cancelled
from tidings.channels._directory import Conversation
from tidings.channels._inbound import Inbound
from tidings.channels._presses import check_press_id, presses_key
from tidings.errors import TidingsError
from tidings.store import acking

if TYPE_CHECKING:
    from tidings.channels._config import ChannelConfig
    from tidings.channels._directory import SessionDirectory
    from tidings.channels._dispatch import Dispatch
    from tidings.channels._in_flight import InFlight

__all__ = ["MAX_UNSETTLED_PRESSES", "CancelOutcome", "StopButton"]

MAX_UNSETTLED_PRESSES = 256
"""Presses whose outcome's write failed that one channel remembers at most (the oldest is
forgotten first: its repeat then answers ``nothing``, as after a restart). Only a store
failing again and again fills it."""

CancelOutcome = Literal["cancelled", "nothing", "refused"]
"""What :meth:`ChannelBase.cancel_turn` did: a request was ``cancelled`` (``/cancel`` answers
"Cancelled the running request."), there was ``nothing`` to cancel ("Nothing to cancel."), or
the sender was ``refused`` by the access policy (nothing was cancelled)."""


class StopButton:
    """:meth:`cancel_turn` (see the module docstring); the rest is the channel's."""

    runtime: Any
    config: ChannelConfig
    directory: SessionDirectory
    dispatch: Dispatch
    _handling_ids: InFlight
    _presses_unsettled: collections.OrderedDict[tuple[str, str], None]

    if TYPE_CHECKING:
        def _check_accepting(self) -> None: ...  # RuntimeClosedError: closed or stopping

        def conversation_for(self, inbound: Inbound) -> Conversation: ...

        async def _hand_back_if_due(self, conversation: Conversation) -> None: ...

    async def cancel_turn(self, *, chat_id: str | int, sender_id: str | int,
                          thread_id: str | int | None = None,
                          press_id: str | int | None = None) -> CancelOutcome:
        """What ``/cancel`` does, for a platform's stop button (a Telegram inline button, a
        web "stop generating"): no text message to fake through :meth:`handle_inbound`.

        The conversation is the one a message with these ids would be in
        (:meth:`conversation_for` of an :class:`Inbound` with them: the session scope, and an
        adapter's override, apply). A *sender_id* the access policy does not allow cancels
        nothing (``"refused"``). Else, in each of the conversation's sessions, the oldest
        request not yet over is cancelled with reason ``cancel_command``: the running turn,
        or, when that one is already ending (steered away, timed out, writing its reply) or
        has not begun, the next waiting one (its message goes into history but never reaches
        the agent); other waiting turns still run. One request a call, as one ``/cancel``.
        The turn gets its ``cancelled`` lifecycle event as for ``/cancel``; no answer is
        sent to the chat: the adapter shows the outcome (see :data:`CancelOutcome`).
        A press is the conversation speaking, as a message is: an allowed sender's press first
        hands back the conversation's ``unrouted`` rows (after a restart, the "not answered"
        notice of a turn it cut short), as :meth:`handle_inbound` does before ``/cancel``.

        A platform that delivers the same press again (its first HTTP answer was lost) would
        cancel one more request, as a second ``/cancel`` does. To rule that out, pass the
        platform's id of the press as *press_id* (a Telegram ``callback_query.id``): a press
        id already seen in the conversation (also before a restart, until a prune drops it
        with the client message ids) cancels nothing and returns what its first press
        returned; a twin still being handled is waited for first. The id is written before
        the press cancels (see :meth:`_press`): a repeat of a press whose process died after
        it cancelled returns ``"nothing"``, and cancels no request of a message sent since
        (while the process runs, a repeat of one that raised
        :class:`~tidings.errors.StoreError` after it cancelled, as the write of its outcome
        failed, returns ``"cancelled"``: the newest :data:`MAX_UNSETTLED_PRESSES` such presses
        are remembered). Press ids are kept apart
        from message ids (an equal message id is no repeat), and are remembered whatever
        ``config.dedupe_message_ids`` says. A refused press is not remembered.

        Raises:
          ValidationError: an id is one :class:`Inbound` refuses (naming ``chat_id``,
            ``sender_id`` or ``thread_id``), or *press_id* is one it would refuse as a
            ``message_id`` (naming ``press_id``).
          RuntimeClosedError: the runtime is stopping, or the channel was closed (nothing
            was cancelled).
        """
        inbound = Inbound(chat_id=chat_id, sender_id=sender_id, text="", thread_id=thread_id)
        press = check_press_id(press_id)
        self._check_accepting()
        await trio.lowlevel.checkpoint()
        if not self.config.access.allows(inbound.sender_id):
            return "refused"
        conversation = self.conversation_for(inbound)
        if press is None:
            return await self._cancel_turn(conversation)
        return await self._press(conversation, press)

    async def _press(self, conversation: Conversation, press: str) -> CancelOutcome:
        """:meth:`cancel_turn` with a press id, for an allowed sender in *conversation*.

        The id is recorded before the cancel, as ``nothing``, and set to ``cancelled`` after
        it if it cancelled: recorded after, a crash in between left the id unknown, and the
        platform's resend (it got no answer) cancelled the turn of a message sent since. A
        crash between the two writes leaves ``nothing``, the resend's right answer: the turn
        the press cancelled died with the process anyway. The read, the first write and the
        cancel run under the conversation's lock, which a message takes to start its turn: a
        message handled meanwhile does not start a turn the press, sent before it, cancels."""
        rt, name, key = self.runtime, self.config.name, presses_key(conversation.key)
        async with self._handling_ids.handling((key, press)):
            # The conversation spoke, a repeat too: its rows left unrouted go out first (the
            # hand-back takes the lock), as before /cancel.
            await self._hand_back_if_due(conversation)
            async with self.directory.lock(conversation):
                recorded = ("cancelled" if (key, press) in self._presses_unsettled
                            else await rt.client_message_outcome(name, key, press))
                if recorded is not None:
                    return "cancelled" if recorded == "cancelled" else "nothing"
                # Bounded (one store request), and not cut off once the id is being written:
                # it may commit all the same, and a retry of the press would then find it
                # "nothing" while the turn it was to stop runs on.
                session_id = self.directory.cached(conversation)
                with trio.CancelScope(shield=True):
                    await rt.remember_client_message(name, key, press, session_id=session_id,
                                                     outcome="nothing")
                    cancelled = self.dispatch.cancel(conversation, "cancel_command")
                    await release_cancelled(self, conversation)  # as /cancel: see there
            if not cancelled:
                return "nothing"
            # Bounded too, and not to be cut off once a request is cancelled: a retry of the
            # press answers what the record says.
            try:
                with trio.CancelScope(shield=True):
                    await rt.store.commit([acking.settle_client_message(
                        rt.core_id, name, key, press, provisional="nothing",
                        outcome="cancelled")])
            except TidingsError:
                # It cancelled all the same: a repeat in this process says so (the record
                # says "nothing", all a repeat after a restart can go by). Kept only for
                # such a failed write.
                unsettled = self._presses_unsettled
                unsettled[(key, press)] = None
                while len(unsettled) > MAX_UNSETTLED_PRESSES:
                    unsettled.popitem(last=False)
                raise
            return "cancelled"

    async def _cancel_turn(self, conversation: Conversation) -> CancelOutcome:
        """:meth:`cancel_turn` for an allowed sender in *conversation*: hand back, then cancel
        one request."""
        # The conversation spoke: its rows left unrouted go out first, as before /cancel.
        await self._hand_back_if_due(conversation)
        cancelled = self.dispatch.cancel(conversation, "cancel_command")
        with trio.CancelScope(shield=True):  # bounded: one store request, if any
            await release_cancelled(self, conversation)  # as /cancel: see there
        return "cancelled" if cancelled else "nothing"
