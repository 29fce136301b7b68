"""Mailboxes: bounded trio memory channels the supervisor owns per child name.

The supervisor keeps one channel per child *name*, not per incarnation, so messages buffered when a
child crashes survive into its next incarnation; the message a crashed incarnation had already
received is gone with it (it is never retried). Senders hold a :class:`Mailbox`; each incarnation
receives through its own :class:`MailboxReceiver` (``ctx.mailbox``), a clone of the channel's
receive end that the kernel closes when the incarnation ends.
"""

from __future__ import annotations

import logging
from typing import final

import attrs
import trio

from tidings.errors import MailboxClosedError
from tidings.supervisor._faults import CancelFault, FaultPlan, Seam, act_at, injected_fault
from tidings.supervisor._log import describe, log_event
from tidings.supervisor._spec import DeadLetter

__all__ = ["Mailbox", "MailboxReceiver", "MailboxStatistics", "tell_dead_letter"]


def tell_dead_letter(hook: DeadLetter, name: str, message: object,
                     error: BaseException) -> None:
    """Call a child's dead-letter hook; never raises (a failure is logged)."""
    try:
        hook(message, error)
    except Exception as exc:  # noqa: BLE001 - a hook's failure must not hide the fault
        error_type, text = describe(exc)
        log_event(logging.ERROR, "dead_letter_failed", child=name, error_type=error_type,
                  error=text)

@final
@attrs.frozen
class MailboxStatistics:
    """A snapshot of one mailbox: buffered messages, capacity, whether it is closed, waiters."""

    name: str
    depth: int
    capacity: int | float
    closed: bool
    senders_waiting: int
    receivers_waiting: int


@final
class Mailbox:
    """The send side of a child's mailbox; valid across the child's restarts.

    Get one with :meth:`Supervisor.mailbox`. Sending to a child that is restarting buffers (or
    blocks) until its next incarnation receives. Once the child is stopped, forgotten, or the
    supervisor has stopped, every send raises :class:`~tidings.errors.MailboxClosedError`.
    """

    __slots__ = ("_cancel_fault", "_dead_letter", "_name", "_plan", "_receive", "_send")

    def __init__(self, name: str, size: int, plan: FaultPlan | None,
                 cancel_fault: CancelFault, dead_letter: DeadLetter | None = None) -> None:
        self._name = name
        self._plan = plan
        self._cancel_fault = cancel_fault
        self._dead_letter = dead_letter
        self._send, self._receive = trio.open_memory_channel[object](size)

    def __repr__(self) -> str:
        return f"<Mailbox of {self._name!r} depth={self.depth}>"

    @property
    def name(self) -> str:
        """The name of the child this mailbox belongs to."""
        return self._name

    @property
    def depth(self) -> int:
        """How many messages are buffered right now."""
        return self._send.statistics().current_buffer_used

    def statistics(self) -> MailboxStatistics:
        """A frozen :class:`MailboxStatistics` snapshot. Never blocks."""
        stats = self._send.statistics()
        return MailboxStatistics(
            name=self._name, depth=stats.current_buffer_used, capacity=stats.max_buffer_size,
            closed=stats.open_send_channels == 0, senders_waiting=stats.tasks_waiting_send,
            receivers_waiting=stats.tasks_waiting_receive)

    async def send(self, message: object) -> None:
        """Put ``message`` in the mailbox, blocking while it is full. Always a checkpoint.

        Raises:
          MailboxClosedError: the mailbox is closed, or gets closed while this call waits.
          InjectedFault: a fault plan injects ``"raise"`` at the ``send`` seam (nothing is sent).
        """
        if self._plan is not None:
            await trio.lowlevel.checkpoint_if_cancelled()
            act_at(self._plan, self._name, Seam.SEND, self._cancel_fault)
        try:
            await self._send.send(message)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self._closed_error() from None

    def send_nowait(self, message: object) -> None:
        """Like :meth:`send`, but raises :exc:`trio.WouldBlock` instead of waiting when full."""
        if self._plan is not None:
            act_at(self._plan, self._name, Seam.SEND, self._cancel_fault)
        try:
            self._send.send_nowait(message)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self._closed_error() from None

    def _closed_error(self) -> MailboxClosedError:
        return MailboxClosedError(f"the mailbox of {self._name!r} is closed", child=self._name)

    # --- kernel side ---------------------------------------------------------------------------

    def _open_receiver(self, cancel_fault: CancelFault) -> MailboxReceiver:
        return MailboxReceiver(self._name, self._receive.clone(), self._plan, cancel_fault,
                               self._dead_letter)

    def _close_send(self) -> None:
        self._send.close()

    def _close(self) -> None:
        """Close for good: what is still buffered goes to the dead-letter hook."""
        self._send.close()
        if self._dead_letter is not None:
            error = self._closed_error()
            while True:
                try:
                    message = self._receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                tell_dead_letter(self._dead_letter, self._name, message, error)
        self._receive.close()


@final
class MailboxReceiver:
    """What a child incarnation receives through: ``ctx.mailbox``.

    ``async for message in ctx.mailbox:`` ends once the shutdown ladder has closed the mailbox and
    everything buffered has been received, in each of the child's tasks that receive from it. A
    fault plan is consulted at ``receive`` (a message was taken), ``before_message`` (it is
    about to be handed over) and ``after_message`` (the child asks for the next one, or leaves
    its function, after handling one).
    """

    __slots__ = ("_cancel_fault", "_closing", "_dead_letter", "_handling", "_name", "_plan",
                 "_receive", "_shutdown_fault", "_waiting")

    def __init__(self, name: str, receive: trio.MemoryReceiveChannel[object],
                 plan: FaultPlan | None, cancel_fault: CancelFault,
                 dead_letter: DeadLetter | None = None) -> None:
        self._name = name
        self._dead_letter = dead_letter
        self._receive = receive
        self._plan = plan
        self._cancel_fault = cancel_fault
        self._closing = False
        self._waiting = 0  # tasks of the child blocked in receive (a pool of workers: several)
        self._handling = False
        self._shutdown_fault = False

    def __repr__(self) -> str:
        return f"<MailboxReceiver of {self._name!r}>"

    def __aiter__(self) -> MailboxReceiver:
        return self

    async def __anext__(self) -> object:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def receive(self) -> object:
        """Take the next message, blocking while the mailbox is empty. Always a checkpoint.

        Raises:
          trio.EndOfChannel: the mailbox was closed and everything buffered was received.
          InjectedFault: a fault plan injects ``"raise"`` at one of the receive-side seams.
        """
        plan = self._plan
        if plan is not None and self._handling:
            self._handling = False
            await trio.lowlevel.checkpoint_if_cancelled()
            if act_at(plan, self._name, Seam.AFTER_MESSAGE, self._cancel_fault):
                await trio.lowlevel.checkpoint()
        if self._closing:
            await trio.lowlevel.checkpoint()
            message = self._take_nowait(ending=True)
        else:
            self._waiting += 1
            try:
                message = await self._receive.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                raise self._end() from None
            finally:
                self._waiting -= 1
        if plan is not None:
            try:
                cancel = act_at(plan, self._name, Seam.RECEIVE, self._cancel_fault)
                cancel = act_at(plan, self._name, Seam.BEFORE_MESSAGE,
                                self._cancel_fault) or cancel
                self._handling = True
                if cancel:
                    await trio.lowlevel.checkpoint()
            except BaseException as exc:  # the fault took it: its sender is told, then re-raise
                self._lost(message, exc)
                raise
        return message

    def receive_nowait(self) -> object:
        """Like :meth:`receive`, but raises :exc:`trio.WouldBlock` instead of waiting.

        An injected ``"cancel"`` lands at the child's next checkpoint.
        """
        plan = self._plan
        if plan is not None and self._handling:
            self._handling = False
            act_at(plan, self._name, Seam.AFTER_MESSAGE, self._cancel_fault)
        message = self._take_nowait(ending=self._closing)
        if plan is not None:
            try:
                act_at(plan, self._name, Seam.RECEIVE, self._cancel_fault)
                act_at(plan, self._name, Seam.BEFORE_MESSAGE, self._cancel_fault)
            except BaseException as exc:  # the fault took it: its sender is told, then re-raise
                self._lost(message, exc)
                raise
            self._handling = True
        return message

    def _lost(self, message: object, error: BaseException) -> None:
        if self._dead_letter is not None:
            tell_dead_letter(self._dead_letter, self._name, message, error)

    def _take_nowait(self, *, ending: bool) -> object:
        try:
            return self._receive.receive_nowait()
        except trio.WouldBlock:
            if ending:
                raise self._end() from None
            raise
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._end() from None

    def _end(self) -> BaseException:
        if self._shutdown_fault:
            self._shutdown_fault = False
            return injected_fault(self._name, Seam.SHUTDOWN, "raise")
        return trio.EndOfChannel()

    # --- kernel side ---------------------------------------------------------------------------

    @property
    def _pending_after(self) -> bool:
        return self._handling

    def _begin_shutdown(self, *, fault: bool) -> None:
        """The ladder began: end after draining (or raise the injected shutdown fault).

        Receivers blocked right now are woken by closing this incarnation's clone: every one
        of them (a count, not a flag, so a worker that was handling a message when another
        began to wait does not leave that other blocked until the child is killed)."""
        self._closing = True
        self._shutdown_fault = fault
        if self._waiting:
            self._receive.close()

    def _detach(self) -> None:
        self._handling = False
        self._receive.close()
