"""Retention as a runtime method: ``await rt.prune(older_than=...)``.

A mixin of :class:`~tidings.actors.Runtime`. The prune itself is the store's
(:mod:`tidings.store._prune`): one bounded chunk per commit through the writer, repeated until
nothing older than the cutoff is left, so live sends are group-committed between chunks and
wait for one chunk at most. Only final rows (``sent``, ``failed``) go, and nothing in memory
refers to one once it is final: a lane holds ``queued`` and ``sending`` rows only, a handle
its own outcome (which it keeps), and an idempotency key in flight is a write not yet
committed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tidings.actors._status import finite
from tidings.errors import StoreClosedError, ValidationError
from tidings.store import PruneReport, prune_call
from tidings.store._prune import PruneStep
from tidings.store._status import shown
from tidings.supervisor._callables import certainly_async, wrong_signature

if TYPE_CHECKING:
    from tidings.actors._recovery import RecoveryScanner
    from tidings.store import Store

__all__ = ["RetentionSupport", "check_older_than"]


def check_older_than(field: str, value: object) -> float:
    """*value* as a finite number of seconds >= 0, or :class:`ValidationError` naming *field*:
    a bool, a string, NaN, a negative number, ``inf`` or an integer past a float's range (a
    retention of for ever is no prune at all: a mistake, not a request)."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not finite(value)
            or not value >= 0):
        raise ValidationError(field, f"must be a finite number of seconds >= 0, "
                                     f"got {shown(value)}")
    return float(value)


def _check_on_chunk(on_chunk: object) -> None:
    """Refuse, naming ``on_chunk``, what cannot be called (sync) with a chunk's
    :class:`PruneReport` as its one argument: it is first called once a chunk has committed,
    in the writer's task, so a bare ``TypeError`` came then, naming nothing, that chunk
    deleted (an ``async def`` one made a coroutine nobody awaited)."""
    if not callable(on_chunk) or certainly_async(on_chunk):
        raise ValidationError("on_chunk", f"must be a plain (sync) callable or None, got "
                                          f"{on_chunk!r:.80}")
    if (wrong := wrong_signature(on_chunk)) is not None:
        raise ValidationError("on_chunk", f"is called with each chunk's PruneReport as its one "
                                          f"argument, got {on_chunk!r:.60}{wrong!s:.60}")


class RetentionSupport:
    """``prune``: delete what is older than a retention period (see the module docstring)."""

    store: Store
    scanner: RecoveryScanner

    if TYPE_CHECKING:
        def check_open(self) -> None: ...  # Runtime's: RuntimeClosedError once stopping

    async def prune(self, *, older_than: float,
                    on_chunk: Callable[[PruneReport], object] | None = None) -> PruneReport:
        """Delete what is older than *older_than* seconds (by ``store.clock``) and return how
        many rows went, per kind.

        Deleted: deliveries whose status is final (``sent``, ``failed``) and last updated
        before the cutoff, with their work items and events (``rt.delivery_status`` of one
        raises :class:`~tidings.errors.DeliveryNotFoundError`, and its idempotency key is
        free again); runtime events older than the cutoff but those of deliveries still kept
        (a feed whose cursor is below what is left raises
        :class:`~tidings.errors.EventsPrunedError`; an event stamped after the newest one, by
        a clock that ran ahead, holds none after it back, and is itself kept until its own
        stamp is older than the cutoff); client message ids received before it
        (the dedupe window), but those of messages still held (their resend stays a
        duplicate). Never history, sessions, turns, artifacts, conversation
        bindings, held messages, or a ``queued``, ``sending``, ``unknown`` or ``unrouted``
        delivery. A chunk (1,000 deliveries) per commit, each all-or-nothing: a cancel or a
        crash keeps the chunks committed before it. *on_chunk*, if given, is called (sync)
        with each committed chunk's counts as it commits, in the writer's task (keep it
        short), also when this call was cancelled while the chunk waited for the writer (a
        cancel does not withdraw a write), so a caller whose prune may be cut short (serve's
        retention, at a stop) still knows what went; one that raises ends the prune with its
        error, if it still waits. Raises :class:`ValidationError` naming ``older_than``
        unless it is a finite number of seconds >= 0, or ``on_chunk`` unless it is None or
        a plain (sync) callable that takes the report as its one argument, before anything
        is deleted, and
        :class:`~tidings.errors.RuntimeClosedError` once the runtime is stopping (also a
        prune it stops under: at the next chunk, the chunks before it kept).
        """
        cutoff = self.store.clock() - check_older_than("older_than", older_than)
        if on_chunk is not None:
            _check_on_chunk(on_chunk)
        total = PruneReport()
        failed: list[Exception] = []

        def committed(results: list[Any]) -> None:
            """In the writer's task, as the chunk commits, before a later row is written:
            whether or not the caller still waits."""
            step: PruneStep = results[0]
            self.scanner.outbox_pruned(step.last_rowid)
            if on_chunk is not None:
                try:
                    on_chunk(step.report)
                except Exception as exc:  # noqa: BLE001 - raised by the caller, below
                    failed.append(exc)

        sweep_from = 0  # where the next chunk looks at the events below the horizon from
        while True:
            self.check_open()  # also between chunks: a stop ends the prune, chunks kept
            try:
                [step] = await self.store.commit([prune_call(cutoff, sweep_from)],
                                                 on_commit=committed)
            except StoreClosedError:  # the writer closed under this chunk, as the runtime
                self.check_open()     # stopped: that is RuntimeClosedError, as documented
                raise
            if failed:
                raise failed[0]
            total += step.report
            sweep_from = step.swept_to
            if not step.more:
                return total
