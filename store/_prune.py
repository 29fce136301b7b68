"""Retention: deleting what a long-running runtime no longer needs, a bounded chunk at a time.

Every delivery leaves an outbox row, a work item and a few events; the gateway leaves a
``client_messages`` row per client message id. A prune deletes, for a cutoff (unix seconds):

- deliveries whose outbox status is final (``sent``, ``failed``: they never change again, see
  :data:`~tidings.store._outbox.TRANSITIONS`) and whose ``updated_at`` is older than the
  cutoff, with their work items (``completed``, ``failed``), and their events below the
  event horizon. The work item of a delivery kept stays with it: an ``unrouted`` one's
  (``unrouted``: a requeue may still give it back) as much as a ``queued`` one's;
- events older than the cutoff, from the oldest on: the horizon (schema v5, the lowest
  ``event_seq`` a feed reader may still ask for) rises past them in the same transaction.
  The events of a delivery still in the outbox are kept (its report stays whole); they go with
  it. The newest event is always kept (it keeps ``event_seq`` from being given out twice).
  One stamped after the newest event (a clock that ran ahead, then was set right) holds no
  older event after it back: the horizon passes it, and it stays below it until its own stamp
  is older than the cutoff (see :func:`_events`). No event is deleted before that;
- ``client_messages`` rows older than the cutoff (the dedupe window of client message ids),
  but those of messages still held (``inbound_messages``): their resend must stay a duplicate;
  and those that still owe their command's direct answer (schema v8) until they are older
  than the cutoff by :data:`OWED_ANSWER_GRACE` too (the platform's retry window): then they
  go, counted apart (:attr:`PruneReport.owed_answers`: answers given up).

Never history (``messages``), sessions, turns, artifacts, conversation bindings or held
inbound messages. Each call of :func:`prune_step` does at most :data:`DELIVERIES_PER_STEP`
deliveries, :data:`EVENTS_PER_STEP` events and :data:`CLIENT_MESSAGES_PER_STEP` client ids in
the caller's transaction (the runtime's: one :class:`~tidings.store.Call` through the single
writer, so a live send waits for one chunk at most), all-or-nothing; the caller repeats it
while :attr:`PruneStep.more`, passing each step's :attr:`PruneStep.swept_to` to the next: the
events kept below the horizon (those of deliveries still in the outbox) are then looked at
once a prune, :data:`EVENTS_PER_STEP` a chunk, not all of them again by each chunk.
"""

from __future__ import annotations

import math
import os
import pathlib
import sqlite3
import stat
from collections.abc import Callable

import attrs

from tidings.store._connect import (
    check_path,
    check_writable,
    close_writer,
    connect_writer,
    refuse_orphan_log,
    stat_database,
)
from tidings.store._errors import NotABoolError, StoreError, ValidationError
from tidings.store._ops import Call
from tidings.store._recovery import last_outbox_rowid
from tidings.store._schema import MIGRATIONS, _statements, check_database, migrate

__all__ = ["CLIENT_MESSAGES_PER_STEP", "DELIVERIES_PER_STEP", "EVENTS_PER_STEP",
           "FINAL_STATUSES", "OWED_ANSWER_GRACE", "PruneReport", "PruneStep", "first_kept_event",
           "prune_call", "prune_file", "prune_step"]

FINAL_STATUSES = ("sent", "failed")
"""The outbox statuses a prune deletes: the only ones no move leaves (DESIGN, Durable state
machines). ``queued``, ``sending``, ``unknown`` and ``unrouted`` rows are still owed something."""

DELIVERIES_PER_STEP = 1_000
EVENTS_PER_STEP = 5_000
CLIENT_MESSAGES_PER_STEP = 1_000

OWED_ANSWER_GRACE = 86_400.0
"""Seconds a message id record that owes its command's direct answer is kept past the
cutoff of the other ids: a platform retries within minutes (a gateway client resends as it
reconnects), so however short the retention (``older_than=0``) the retry still finds it and
gets the answer rather than run the command again; one a platform never retried is not kept
for ever."""


@attrs.frozen
class PruneReport:
    """How many rows a prune deleted (or, for a dry run, would delete), per kind."""

    deliveries: int = 0
    work_items: int = 0
    events: int = 0
    client_messages: int = 0
    owed_answers: int = 0
    """Of the ``client_messages``, those that still owed their command's direct answer (see
    :data:`OWED_ANSWER_GRACE`): answers given up. Not in :attr:`total` (counted there once,
    as client message ids); last in :meth:`as_json`, so ``tidings prune`` says it too."""

    def __add__(self, other: PruneReport) -> PruneReport:
        return PruneReport(self.deliveries + other.deliveries,
                           self.work_items + other.work_items, self.events + other.events,
                           self.client_messages + other.client_messages,
                           self.owed_answers + other.owed_answers)

    @property
    def total(self) -> int:
        """Rows deleted in all (a dry run: that would be): deliveries, work items, events and
        client message ids."""
        return self.deliveries + self.work_items + self.events + self.client_messages

    def as_json(self) -> dict[str, int]:
        """The counts by name as a plain dict, as ``tidings prune --json`` prints them."""
        return attrs.asdict(self)


@attrs.frozen
class PruneStep:
    """What one :func:`prune_step` deleted, and whether there may be more to delete."""

    report: PruneReport
    more: bool
    last_rowid: int = 0
    """The outbox's highest ``rowid`` after the step (0 when empty): SQLite gives the next
    row the one above it, lower than before the step if it deleted the newest rows (see
    :func:`~tidings.store.recovery.last_outbox_rowid`)."""
    swept_to: int = 0
    """The ``event_seq`` the next step of the same prune (same cutoff) sweeps the events
    below the horizon from (see :func:`prune_step`): those under it that this prune's steps
    kept stay kept until it ends (their delivery is still in the outbox, or their stamp is
    not older than the cutoff; a delivery a later step deletes takes its own events), so
    looking at them again in each chunk only cost time, growing with how many a database
    keeps."""


def first_kept_event(conn: sqlite3.Connection) -> int:
    """The event horizon: the lowest ``event_seq`` no prune has passed (1 before any, and in a
    database of a schema before v5, read as it is by :func:`~tidings.store.read_database`:
    no prune has run on it)."""
    try:
        return int(conn.execute(
            "SELECT lowest_kept FROM event_horizon WHERE singleton = 1").fetchone()[0])
    except sqlite3.OperationalError:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                        "AND name = 'event_horizon'").fetchone() is not None:
            raise
        return 1


def prune_step(conn: sqlite3.Connection, cutoff: float,
               sweep_from: int | None = None) -> PruneStep:
    """Delete one chunk of what is older than *cutoff* (see the module docstring), in the
    caller's transaction. *sweep_from*: 0 for a prune's first step, then the previous
    step's :attr:`PruneStep.swept_to` (same *cutoff*): the events below the horizon are
    looked at :data:`EVENTS_PER_STEP` a step, each once a prune. None (a caller that keeps
    no cursor) looks at all of them in every step."""
    deliveries, work_items, their_events, more_deliveries = _deliveries(conn, cutoff)
    events, more_events, swept_to = _events(conn, cutoff, sweep_from)
    client_messages, owed_answers = _client_messages(conn, cutoff)
    return PruneStep(PruneReport(deliveries, work_items, their_events + events, client_messages,
                                 owed_answers),
                     more_deliveries or more_events
                     or client_messages == CLIENT_MESSAGES_PER_STEP,
                     last_outbox_rowid(conn), swept_to)


def prune_call(cutoff: float, sweep_from: int | None = None) -> Call:
    """A :class:`Call` op running :func:`prune_step`; its result is a :class:`PruneStep`.

    Raises :class:`ValidationError` naming ``cutoff`` unless it is a finite number of unix
    seconds, or ``sweep_from`` unless it is None or an int >= 0, here, before the op reaches
    the writer: in it, a string cutoff was an unnamed ``TypeError`` (the other ops of its
    commit rolled back with it), and a NaN one (bound as NULL) a prune that deleted nothing."""
    _check_cutoff(cutoff)
    if sweep_from is not None and (isinstance(sweep_from, bool) or not isinstance(sweep_from, int)
                                   or sweep_from < 0):
        raise ValidationError("sweep_from", f"must be None or an int >= 0 (a PruneStep's "
                                            f"swept_to), got {sweep_from!r:.80}")

    def run(conn: sqlite3.Connection) -> PruneStep:
        return prune_step(conn, cutoff, sweep_from)
    return Call(run)


def _deliveries(conn: sqlite3.Connection, cutoff: float) -> tuple[int, int, int, bool]:
    marks = ",".join("?" * len(FINAL_STATUSES))
    rows = conn.execute(
        "SELECT delivery_id, work_id FROM outbox INDEXED BY outbox_status_updated "
        f"WHERE status IN ({marks}) AND updated_at < ? LIMIT ?",
        (*FINAL_STATUSES, cutoff, DELIVERIES_PER_STEP)).fetchall()
    if not rows:
        return 0, 0, 0, False
    ids = [row[0] for row in rows]
    values = ",".join(["(?)"] * len(rows))
    events = conn.execute(
        f"DELETE FROM events WHERE delivery_id IN (VALUES {values}) AND created_at < ? "
        "AND event_seq < (SELECT lowest_kept FROM event_horizon WHERE singleton = 1)",
        (*ids, cutoff)).rowcount
    work_items = conn.execute(f"DELETE FROM work_items WHERE work_id IN (VALUES {values})",
                              [row[1] for row in rows]).rowcount
    deliveries = conn.execute(
        f"DELETE FROM outbox WHERE delivery_id IN (VALUES {values}) AND status IN ({marks})",
        (*ids, *FINAL_STATUSES)).rowcount
    return deliveries, work_items, events, len(rows) == DELIVERIES_PER_STEP


_DELETE_IDS = (
    "DELETE FROM client_messages WHERE (core_id, channel, conversation_key, client_id) IN "
    "(SELECT core_id, channel, conversation_key, client_id FROM client_messages "
    "INDEXED BY client_messages_received WHERE received_at < ? AND answer {} "
    "AND (channel, client_id) NOT IN (SELECT channel, message_id FROM inbound_messages "
    "WHERE channel IS NOT NULL AND message_id IS NOT NULL) LIMIT ?)")


def _client_messages(conn: sqlite3.Connection, cutoff: float) -> tuple[int, int]:
    """Delete the client message ids received before *cutoff*, but those of messages still
    held (``inbound_messages``: accepted, not yet answered, told or cleared): a resend of one
    of those would be a new message, answered twice, so its id is kept until it is released
    (the table stays small: the held ids are read once per step); and those that still owe
    their command's direct answer (schema v8) until :data:`OWED_ANSWER_GRACE` before it: the
    retry of the id is to get it, and would run the command again instead. At most
    :data:`CLIENT_MESSAGES_PER_STEP` in all; returns how many, and how many of them owed."""
    owed = conn.execute(_DELETE_IDS.format("IS NOT NULL"), (cutoff - OWED_ANSWER_GRACE,
                                                   CLIENT_MESSAGES_PER_STEP)).rowcount
    plain = conn.execute(_DELETE_IDS.format("IS NULL"), (cutoff, CLIENT_MESSAGES_PER_STEP - owed)
                         ).rowcount
    return owed + plain, owed


def _events(conn: sqlite3.Connection, cutoff: float,
            sweep_from: int | None) -> tuple[int, bool, int]:
    """Raise the horizon past the oldest events older than *cutoff* (never past the newest
    event) and delete the events under it that are older than *cutoff* by their own stamp
    and that no outbox row still owns.

    The walk goes in ``event_seq`` order, the order events were written, and stops at the
    first event the cutoff keeps: the ones after it were written later, so are newer. But
    not at one stamped after the newest event: a wall clock that ran ahead (then was set
    right) stamped it, and it said nothing of the events after it; stopping there held every
    later event back for as long as that stamp stayed ahead of the cutoff (for ever, for
    one in 2999). The walk goes past it (SQLite skips it in the scan) and the horizon with
    it, but it stays, below the horizon, until its own stamp is older than the cutoff: then
    the sweep of the rows below the horizon (those of deliveries kept, those the walk passed)
    deletes it. The horizon never rises past an event the walk did not find old, so a feed
    reader is never told of a gap before an event it could still read.

    The sweep starts at *sweep_from* (see :attr:`PruneStep.swept_to`) and looks at
    :data:`EVENTS_PER_STEP` rows; the third value returned is where the next step of this
    prune starts it. With None it looks at every row below the horizon (and deletes the
    first :data:`EVENTS_PER_STEP` it may)."""
    horizon = first_kept_event(conn)
    newest = conn.execute("SELECT event_seq, created_at FROM events "
                          "ORDER BY event_seq DESC LIMIT 1").fetchone()
    if newest is None:
        return 0, False, sweep_from or 0
    newest_seq, newest_at = newest
    rows = conn.execute(
        "SELECT event_seq, created_at FROM events WHERE event_seq >= ? AND event_seq < ? "
        "AND created_at <= ? ORDER BY event_seq LIMIT ?",
        (horizon, newest_seq, newest_at, EVENTS_PER_STEP)).fetchall()
    raised = horizon
    more = len(rows) == EVENTS_PER_STEP
    for seq, created_at in rows:
        if not created_at < cutoff:  # the first one the cutoff keeps: the rest are newer
            more = False
            break
        raised = seq + 1
    if raised > horizon:
        conn.execute("UPDATE event_horizon SET lowest_kept = ? WHERE singleton = 1", (raised,))
    if sweep_from is None:  # the whole range below the horizon, its first rows to delete
        deleted = conn.execute(
            f"DELETE FROM events WHERE event_seq IN (SELECT event_seq FROM events "
            f"WHERE event_seq < ? AND {_SWEPT} ORDER BY event_seq LIMIT ?)",
            (raised, cutoff, EVENTS_PER_STEP)).rowcount
        return deleted, more or deleted == EVENTS_PER_STEP, raised
    # The sweep looks at EVENTS_PER_STEP rows at most (those left below the horizon are
    # mostly kept ones: a step that looked at all of them held the writer that much longer).
    bound = conn.execute(
        "SELECT event_seq FROM events WHERE event_seq >= ? AND event_seq < ? "
        "ORDER BY event_seq LIMIT 1 OFFSET ?", (sweep_from, raised, EVENTS_PER_STEP)).fetchone()
    swept_to = raised if bound is None else int(bound[0])
    deleted = conn.execute(
        f"DELETE FROM events WHERE event_seq >= ? AND event_seq < ? AND {_SWEPT}",
        (sweep_from, swept_to, cutoff)).rowcount
    return deleted, more or swept_to < raised, swept_to


_SWEPT = ("created_at < ? AND (delivery_id IS NULL OR NOT EXISTS "
          "(SELECT 1 FROM outbox WHERE outbox.delivery_id = events.delivery_id))")
"""Which events below the horizon the sweep deletes: older than the cutoff (the parameter),
of no delivery still in the outbox."""


def prune_file(db: os.PathLike[str], cutoff: float, *, dry_run: bool = False,
               on_chunk: Callable[[PruneReport], object] | None = None) -> PruneReport:
    """Prune the database file *db* (blocking: the command line's, with no runtime running:
    the caller holds the runtime lock), a chunk per transaction as the runtime does. The
    database is brought to the current schema first, as a runtime's start does. With
    *dry_run*, everything runs in one transaction that is rolled back (migration included):
    the counts are exact and nothing changes. *on_chunk*, if given, is called with each
    chunk's counts once it has committed (never in a dry run), also when an exception such
    as ``KeyboardInterrupt`` lands right after the commit: a caller cut short knows what
    went. Registers no process epoch. A file with no
    tidings schema (an empty one) is no database to prune: :class:`StoreError`, the file
    untouched (and a missing one :class:`DatabaseNotFoundError`); so is one SQLite cannot
    read (a text file), and SQLite's other errors (a full disk), each naming the file.
    A *db* that is no path, a *cutoff* that is not a finite number of unix seconds (a
    string compared as one, NaN bound as NULL) or a *dry_run* that is not a bool is a
    :class:`ValidationError` naming it, before the file is opened."""
    check_path("db", db)
    _check_cutoff(cutoff)
    if not isinstance(dry_run, bool):
        raise NotABoolError("dry_run", f"must be True or False, got {dry_run!r:.80}")
    if on_chunk is not None and not callable(on_chunk):
        raise ValidationError("on_chunk", f"must be a callable or None, got {on_chunk!r:.80}")
    try:
        return _prune_file(pathlib.Path(db), cutoff, dry_run=dry_run, on_chunk=on_chunk)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot prune {os.fspath(db)}: {exc}") from exc


def _check_cutoff(cutoff: object) -> None:
    """Refuse a *cutoff* that is not a finite number of unix seconds (a bool, a string SQLite
    compares as greater than every number, NaN bound as NULL, an infinity): a
    :class:`ValidationError` naming ``cutoff``."""
    if isinstance(cutoff, bool) or not isinstance(cutoff, int | float) or not _finite(cutoff):
        raise ValidationError("cutoff", f"must be a finite number of unix seconds, got "
                                        f"{cutoff!r:.80}")


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past a float's range
        return False


def _prune_file(db: pathlib.Path, cutoff: float, *, dry_run: bool,
                on_chunk: Callable[[PruneReport], object] | None) -> PruneReport:
    _check_schema(db)
    conn = connect_writer(db)
    try:
        if dry_run:
            conn.execute("BEGIN IMMEDIATE")
            try:
                found = check_database(conn, os.fspath(db))
                for version, script in MIGRATIONS:
                    if version > found:
                        for statement in _statements(script):
                            conn.execute(statement)
                return _repeat(conn, cutoff, commit=False)
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        migrate(conn, os.fspath(db))
        return _repeat(conn, cutoff, commit=True, on_chunk=on_chunk)
    finally:
        close_writer(conn)


def _check_schema(db: pathlib.Path) -> None:
    """Refuse, read-only, a file that holds no tidings database: an empty one (a placeholder
    made with ``touch``, a mistyped path) reads as a database of no schema, which the writer's
    connection would switch to WAL and a migration fill with tidings tables, so a prune of a
    file that ``tidings status`` calls no tidings database made it one ('deleted: 0'), and a
    dry run wrote its header. The other refusals are :func:`check_database`'s, as before;
    no file at all is :class:`DatabaseNotFoundError`, as for ``read_database``, and an empty
    file beside a ``-wal`` that holds something is :func:`refuse_orphan_log`'s refusal, as
    at a start (the read-only look at its schema let SQLite delete that log)."""
    # A directory, a named pipe (a read-only open of one blocks for ever): no file to prune.
    if not stat.S_ISREG(stat_database(db).st_mode):
        raise StoreError(f"{db} is not a regular file, so no database to prune")
    try:
        check_writable(db)  # before SQLite makes a -wal and -shm it could not write either
    except OSError as exc:
        raise StoreError(f"cannot prune {db}: {exc.strerror or exc} ({exc.filename})") from exc
    refuse_orphan_log(db.resolve())  # SQLite, opening the file, would delete that log
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    try:
        found = check_database(conn, str(db))
    finally:
        conn.close()
    if found == 0:
        raise StoreError(f"{db} is not a tidings database (no schema)")


def _repeat(conn: sqlite3.Connection, cutoff: float, *, commit: bool,
            on_chunk: Callable[[PruneReport], object] | None = None) -> PruneReport:
    total = PruneReport()
    sweep_from = 0
    while True:
        if commit:
            step = _commit_step(conn, cutoff, sweep_from, on_chunk)
        else:
            step = prune_step(conn, cutoff, sweep_from)
        total += step.report
        sweep_from = step.swept_to
        if not step.more:
            return total


def _commit_step(conn: sqlite3.Connection, cutoff: float, sweep_from: int,
                 on_chunk: Callable[[PruneReport], object] | None) -> PruneStep:
    """One :func:`prune_step` in a transaction of its own, *on_chunk* told once it committed.
    An exception that lands after the commit but before the step is returned (Ctrl-C: a
    signal is raised between two bytecodes) leaves no transaction open and no driver error:
    that chunk went, and *on_chunk* is told before it propagates."""
    step: PruneStep | None = None
    conn.execute("BEGIN IMMEDIATE")
    try:
        step = prune_step(conn, cutoff, sweep_from)
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        elif step is not None and on_chunk is not None and not isinstance(exc, sqlite3.Error):
            on_chunk(step.report)  # committed: COMMIT returned before the exception came
        raise
    if on_chunk is not None:
        on_chunk(step.report)
    return step
