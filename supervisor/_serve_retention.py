"""``tidings serve``'s periodic retention (``[retention] keep``, ``interval``).

A permanent child of the ``serve`` supervisor, there only when ``retention.keep`` is set: it
prunes at start and then every ``interval`` seconds (trio's clock), through the live runtime's
``rt.prune`` (a chunk per commit through the writer: sends go on meanwhile). One
``event=pruned`` line per prune that deleted something, also one a stop or a store error cut
short (``cut_short=yes``: the chunks it committed stay deleted; a chunk the writer commits
after the stop cut the prune gets a ``cut_short=yes`` line of its own). A prune the store
refuses (a full disk) is logged (``event=prune_failed``) and tried again at the next
interval: retention is never a reason to restart the gateway's supervisor, let alone to stop
serving.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import trio

from tidings.errors import RuntimeClosedError, StoreError
from tidings.store import PruneReport
from tidings.supervisor import ChildContext, ChildSpec
from tidings.supervisor._log import field

__all__ = ["retention_spec"]

log = logging.getLogger("tidings.serve")


def retention_spec(rt: Any, keep: float, interval: float) -> ChildSpec:
    """The ``retention`` child for the runtime *rt*."""

    async def retention(ctx: ChildContext, *,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_prune_every, rt, keep, interval)
            task_status.started()
            async for message in ctx.mailbox:
                log.warning("event=message_dropped child=retention type=%s",
                            type(message).__name__)
            nursery.cancel_scope.cancel(reason="retention stopping")

    return ChildSpec("retention", retention, restart="permanent", shutdown_timeout=5.0,
                     mailbox_size=1)


async def _prune_every(rt: Any, keep: float, interval: float) -> None:
    while True:
        tally = _Tally(keep)
        finished = False
        try:
            await rt.prune(older_than=keep, on_chunk=tally.chunk)
            finished = True
        except RuntimeClosedError:
            return
        except StoreError as exc:
            log.warning("event=prune_failed keep=%g error=%s next_in=%g", keep,
                        field(str(exc)[:300]), interval)
        finally:  # also a prune the stop cut (cancelled, or the runtime closing): its chunks
            # committed before stay deleted, and are said
            tally.say(finished=finished)
        await trio.sleep(interval)


class _Tally:
    """One prune's committed chunks, said in one line when it ends. A chunk that commits
    after that (the writer had it when a stop cut the prune: a cancel does not withdraw a
    write, and the writer commits what it holds as the runtime closes) is said in a line of
    its own, so the lines add up to what went."""

    def __init__(self, keep: float) -> None:
        self.keep = keep
        self.started = time.perf_counter()
        self.reports: list[PruneReport] = []
        self.said = False

    def chunk(self, report: PruneReport) -> None:
        if self.said:
            _log_pruned(report, self.keep, time.perf_counter() - self.started, finished=False)
        else:
            self.reports.append(report)

    def say(self, *, finished: bool) -> None:
        self.said = True
        _log_pruned(sum(self.reports, PruneReport()), self.keep,
                    time.perf_counter() - self.started, finished=finished)


def _log_pruned(report: PruneReport, keep: float, seconds: float, *, finished: bool) -> None:
    if report.total:
        log.info("event=pruned deliveries=%d work_items=%d events=%d client_messages=%d "
                 "owed_answers=%d keep=%g seconds=%.3f%s", report.deliveries,
                 report.work_items, report.events, report.client_messages,
                 report.owed_answers, keep, seconds,
                 "" if finished else " cut_short=yes")
