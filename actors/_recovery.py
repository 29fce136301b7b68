"""Recovery of what earlier processes left in the outbox.

A ``sending`` row claimed by another process epoch was being handed to a platform when that
process died: whether the platform got it is unknown, so it becomes ``unknown`` (never replayed
automatically). ``queued`` rows are intents that never reached dispatch: they are dispatched
again, in per-session order, by kicking each session's lane; stale ``progress`` rows are not
replayed (``failed`` with ``stale_progress``). Everything works in batches, with no row cap.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

import attrs

from tidings.store import Store, transition

if TYPE_CHECKING:
    from tidings.actors._lanes import Dispatcher

__all__ = ["RecoveryReport", "recover_claims", "recover_queued"]

log = logging.getLogger("tidings.recovery")

BATCH = 1000


@attrs.frozen
class RecoveryReport:
    """What one recovery pass did."""

    unknown: int = 0
    stale_progress: int = 0
    queued_sessions: int = 0


def _dead_claims(conn: sqlite3.Connection, claimant: str, limit: int) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT delivery_id FROM outbox WHERE status = 'sending' AND claimant IS NOT ? "
        "ORDER BY session_id, seq LIMIT ?", (claimant, limit))]


def _stale_progress(conn: sqlite3.Connection, before: float, limit: int) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT delivery_id FROM outbox WHERE status = 'queued' AND kind = 'progress' "
        "AND created_at < ? ORDER BY session_id, seq LIMIT ?", (before, limit))]


def _queued_sessions(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT session_id FROM outbox WHERE status = 'queued' ORDER BY session_id")]


async def recover_claims(store: Store) -> RecoveryReport:
    """Turn ``sending`` rows claimed by other process epochs into ``unknown``."""
    unknown = 0
    while True:
        ids = await store.read(_dead_claims, store.claimant, BATCH)
        if not ids:
            break
        now = store.clock()
        results = await store.commit([transition(
            delivery_id, "unknown", now=now,
            error="claimed by a process that stopped before recording the platform result")
            for delivery_id in ids])
        unknown += sum(result.applied for result in results)
        log.info("event=recovery_unknown batch=%d total=%d", len(ids), unknown)
    stale = 0
    while True:
        ids = await store.read(_stale_progress, store.started_at, BATCH)
        if not ids:
            break
        now = store.clock()
        results = await store.commit([transition(delivery_id, "failed", now=now,
                                                 error="stale_progress") for delivery_id in ids])
        stale += sum(result.applied for result in results)
    return RecoveryReport(unknown=unknown, stale_progress=stale)


async def recover_queued(store: Store, dispatcher: Dispatcher) -> int:
    """Dispatch every session's ``queued`` rows again; returns the number of sessions."""
    sessions = await store.read(_queued_sessions)
    for session_id in sessions:
        dispatcher.kick(session_id)
    if sessions:
        log.info("event=recovery_queued sessions=%d", len(sessions))
    return len(sessions)
