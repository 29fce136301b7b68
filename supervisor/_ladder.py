"""The shutdown ladder: close the mailbox, wait up to the shutdown timeout, then cancel."""

from __future__ import annotations

import logging
import math

import trio

from tidings.supervisor._child import ChildSlot
from tidings.supervisor._faults import FaultPlan, Seam
from tidings.supervisor._log import log_event

__all__ = ["run_ladder"]


async def run_ladder(slot: ChildSlot, plan: FaultPlan | None, *, supervisor: str,
                     final: bool) -> None:
    """Stop the task running ``slot`` and return once it has ended. Always a checkpoint.

    The child's mailbox is closed for its incarnation: ``async for`` in the child ends after it
    has received what is buffered. With ``final`` the mailbox is closed for senders too (the
    child is going away); otherwise (a restart) senders keep filling it for the next
    incarnation. If the task has not ended after the child's ``shutdown_timeout``, its scope is
    cancelled with the reason ``"shutdown timeout of <name>"``. A child waiting out a restart
    backoff is cancelled at once. A child stopped this way has not crashed.
    """
    name = slot.spec.name
    slot.stopping = True
    done, scope = slot.done, slot.scope
    if done is None or scope is None or done.is_set():
        if final:
            slot.mailbox._close_send()
        await trio.lowlevel.checkpoint()
        return
    in_backoff = slot.state == "backoff"
    slot.state = "stopping"
    log_event(logging.DEBUG, "child_stopping", supervisor=supervisor, child=name,
              incarnation=slot.incarnation, final=final)
    fault = None if plan is None or in_backoff else plan.consult(name, Seam.SHUTDOWN)
    if fault == "cancel":
        slot.cancel_fault(Seam.SHUTDOWN)
    if final:
        slot.mailbox._close_send()
    if in_backoff:
        scope.cancel(reason=f"stop of {name} during its restart backoff")
    else:
        if slot.receiver is not None:
            slot.receiver._begin_shutdown(fault=fault == "raise")
        elif fault == "raise":  # no incarnation is running: nothing to land in
            log_event(logging.INFO, "fault_missed", child=name, seam=Seam.SHUTDOWN,
                      reason="no incarnation is running")
        timeout = slot.spec.shutdown_timeout
        with trio.move_on_after(math.inf if timeout is None else timeout):
            await done.wait()
        if not done.is_set():
            reason = f"shutdown timeout of {name}"
            log_event(logging.WARNING, "child_killed", supervisor=supervisor, child=name,
                      incarnation=slot.incarnation, timeout=timeout, reason=reason)
            scope.cancel(reason=reason)
    await done.wait()
    log_event(logging.DEBUG, "child_stopped", supervisor=supervisor, child=name,
              incarnation=slot.incarnation)
