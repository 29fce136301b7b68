"""Group restarts for ``one_for_all`` and ``rest_for_one``, run one at a time.

A child of such a supervisor whose restart is due does not restart itself (``one_for_one``
children do, in their own task): it queues a request, and one helper task per supervisor
serves the queue under the supervisor's lock, so a group restart never interleaves with the
initial start, another group restart or the final shutdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs
import trio

from tidings.supervisor._child import ChildSlot
from tidings.supervisor._ladder import run_ladder

if TYPE_CHECKING:
    from tidings.supervisor._supervisor import Supervisor

__all__ = ["LIVE", "RestartRequest", "serve_group_restarts"]

LIVE = ("starting", "running")
"""Supervisor states in which children are restarted."""


@final
@attrs.frozen
class RestartRequest:
    """A child's group restart is due: its incarnation that ended, and how.

    ``counted``: its crash was counted toward the intensity when it was decided (at the end
    of the tick it came in). It is not when another group restart was due already as it came
    (queued or running), or one was queued for an earlier child (in start order) of its tick:
    that one may relaunch this child anyway, which makes this request stale, and a crash it
    covers is no restart of its own (so siblings failing together are one restart, not one
    each). Served, it is counted, unless it is served first of requests queued together one
    of which was counted.
    """

    slot: ChildSlot
    incarnation: int
    error: BaseException | None
    counted: bool


async def serve_group_restarts(sup: Supervisor) -> None:
    """Serve group-restart requests until the supervisor closes the queue at shutdown.

    A request that is stale by the time it is served (the child was restarted meanwhile by
    another group restart, stopped, or the supervisor is stopping) is dropped. The requests
    queued when the lock is taken are served together, in start order (see
    :func:`_in_start_order`).
    """
    with sup._request_queue:
        async for request in sup._request_queue:
            batch = [request]
            try:
                async with sup._lock:
                    batch += _queued(sup)
                    counted = next((queued.slot for queued in batch if queued.counted), None)
                    for queued in _in_start_order(sup, batch):
                        slot = queued.slot
                        if (sup._state in LIVE and not slot.removed
                                and slot.state == "restarting"
                                and slot.incarnation == queued.incarnation
                                and (counted is not None
                                     or sup._count_restart(slot, queued.error))):
                            if counted is not None:  # its restart is this one: so are its
                                counted.restarts -= 1  # statistics
                                slot.restarts += 1
                                counted = None
                            await _restart_group(sup, slot)
            finally:
                sup._restarts_due -= len(batch)


def _queued(sup: Supervisor) -> list[RestartRequest]:
    """Every request queued now, without waiting."""
    queued: list[RestartRequest] = []
    while True:
        try:
            queued.append(sup._request_queue.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            return queued


def _in_start_order(sup: Supervisor, batch: list[RestartRequest]) -> list[RestartRequest]:
    """The requests by their child's start order (the forgotten last: they are stale).

    The first child's group takes in all the others (``rest_for_one``: those after it;
    ``one_for_all``: all), so its restart relaunches them and their requests go stale. Served
    in queue order, two children failing in one tick (trio runs them in a random order) were
    one restart or two, under ``rest_for_one``, as trio's shuffle fell: the later child's own
    restart first, then the earlier one's, restarting it again. The batch's count (only the
    first crash while no restart was due is counted when it comes) goes with the first request
    served, whichever crash took it.
    """
    order = {name: index for index, name in enumerate(sup._children)}
    return sorted(batch, key=lambda request: order.get(request.slot.spec.name, len(order)))


def _group_of(sup: Supervisor, slot: ChildSlot) -> list[ChildSlot]:
    slots = list(sup._children.values())
    if sup.strategy == "one_for_all":
        return slots
    return slots[slots.index(slot):] if not slot.removed else []


async def _restart_group(sup: Supervisor, failed: ChildSlot) -> None:
    """Stop ``failed``'s group in reverse start order, start it again in start order.

    A child of the group that fails to start again counts as a crash (toward the intensity
    too), which restarts its own group in turn.
    """
    pending: ChildSlot | None = failed
    while pending is not None:
        group = _group_of(sup, pending)
        for slot in reversed(group):
            if slot is not pending:
                await _stop_for_restart(sup, slot)
        pending = None
        for slot in group:
            if sup._state not in LIVE:
                return
            if slot.removed:
                continue
            result = await sup._launch_locked(slot)
            if result.error is not None:
                decision = sup._decide(slot, result.error, 0.0)
                if decision == "escalate":
                    return
                if decision == "restart":
                    slot.state = "restarting"
                    pending = slot
                    break


async def _stop_for_restart(sup: Supervisor, slot: ChildSlot) -> None:
    await run_ladder(slot, sup.fault_plan, supervisor=sup.name, final=False)
    if slot.removed:
        return
    if slot.spec.restart == "temporary":
        sup._forget(slot)  # temporary children are never restarted, even as siblings
    else:
        slot.stopping = False
        slot.state = "restarting"
