"""The operator's status view: counts, recent deliveries and one delivery's story.

Everything reads the ``delivery_lifecycle`` view (effective status plus the claim underneath),
so the CLI, the runtime and a script see the same thing. The functions take a read connection
first (run them through ``Store.read``, or on a database with no runtime through
:func:`read_database`, which opens it read-only, creates nothing and registers no epoch).

Effective status filters are pushed down to ``outbox_status`` (only ``sending`` rows can read as
another status, ``unknown``), so ``--status`` uses the ``(status, updated_at)`` index.
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
import stat
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from tidings.store._connect import check_path, refuse_orphan_log, stat_database
from tidings.store._errors import (
    SchemaVersionError,
    StoreError,
    ValidationError,
)
from tidings.store._outbox import OUTBOX_STATUSES
from tidings.store._records import DeliveryStatus, RuntimeEvent
from tidings.store._schema import MAX_INTEGER, SCHEMA_VERSION, has_tidings_tables

__all__ = [
    "RECENT_FIELDS",
    "DeliveryReport",
    "ProcessEpoch",
    "StatusReport",
    "claimant_process",
    "delivery_report",
    "held_count",
    "latest_process",
    "owed_answer_count",
    "read_database",
    "recent_deliveries",
    "session_exists",
    "status_counts",
    "status_report",
]

T = TypeVar("T")

RECENT_FIELDS = ("delivery_id", "session_id", "status", "attempts", "last_error", "updated_at")
"""The fields of one ``recent`` row in :meth:`StatusReport.as_json` (pinned for scripts)."""

# effective status -> the outbox statuses that can read as it
_UNDERLYING = {status: (status,) for status in OUTBOX_STATUSES}
_UNDERLYING["unknown"] = ("unknown", "sending")


@attrs.frozen
class ProcessEpoch:
    """A process that opened the database as a runtime (its ``process_epochs`` row): the one
    a claim ``epoch:N`` names. Its pid and host let an operator check whether it still runs
    (a read cannot: probing the runtime lock safely is not possible), since its ``sending``
    rows read ``sending`` until the next start registers another process."""

    epoch: int
    pid: int
    hostname: str
    started_at: float


_EPOCH_COLUMNS = "epoch, pid, hostname, started_at"


@attrs.frozen
class StatusReport:
    """Counts per effective status (every status, zeros included, in lifecycle order) and the
    most recently updated deliveries, newest first, read in one snapshot."""

    counts: Mapping[str, int]
    recent: tuple[DeliveryStatus, ...]
    held: int = 0
    """Accepted messages not yet answered, told or cleared (``rt.hold_inbound``); those of a
    stopped process are told "not answered" at its next start. A count of now, of the session
    filter alone: ``since`` narrows the deliveries, not this. Not in :meth:`as_json`, whose
    shape is pinned."""
    owed_answers: int = 0
    """Command answers owed on message id records (schema v8: a direct answer that did not
    go out, for the platform's retry of the id), of the whole database (such an answer has
    no session: 0 under a session filter); a count of now. Not in :meth:`as_json`."""
    sending_claimant: ProcessEpoch | None = None
    """The process the effective ``sending`` rows are claimed by (the latest: a row another
    claimed reads ``unknown``), when the counts have any. Not in :meth:`as_json` either."""

    def as_json(self) -> dict[str, Any]:
        """``{"counts": {status: n}, "recent": [{RECENT_FIELDS...}]}``: stable for scripts."""
        return {"counts": dict(self.counts),
                "recent": [{field: getattr(row, field) for field in RECENT_FIELDS}
                           for row in self.recent]}


@attrs.frozen
class DeliveryReport:
    """One delivery (its lifecycle view) and every event it has recorded, oldest first."""

    delivery: DeliveryStatus
    events: tuple[RuntimeEvent, ...]
    claimed_by: ProcessEpoch | None = None
    """The process its ``claimant`` names, when that is one registered (not in
    :meth:`as_json`, whose shape is pinned)."""

    def as_json(self) -> dict[str, Any]:
        """The lifecycle fields of :class:`DeliveryStatus` plus ``"events": [...]``."""
        return {**self.delivery.as_dict(), "events": [event.as_dict() for event in self.events]}


def check_filters(*, status: str | None = None, since: float | None = None,
                  limit: int | None = None) -> None:
    """Raise :class:`ValidationError` naming the first bad filter."""
    if status is not None and status not in OUTBOX_STATUSES:
        raise ValidationError("status", f"must be one of {', '.join(OUTBOX_STATUSES)}, "
                                        f"got {shown(status)}")
    # NaN compares as NULL (nothing would match, silently); an int SQLite cannot store would
    # fail to bind with a bare OverflowError.
    if since is not None and (isinstance(since, bool) or not isinstance(since, int | float)
                              or since != since or abs(since) > MAX_INTEGER):
        raise ValidationError("since", f"must be unix seconds, got {shown(since)}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or not 0 <= limit <= MAX_INTEGER):
        raise ValidationError("limit", f"must be an int from 0 to {MAX_INTEGER}, "
                                       f"got {shown(limit)}")


def shown(value: object) -> str:
    """*value* as a refusal quotes it: its ``repr``, cut at 80 characters; an int past
    :data:`MAX_INTEGER` (either way) as that, not its digits: Python builds no ``repr`` of an
    int of more than 4300 digits (``ValueError``, which escaped the refusal naming nothing)."""
    if isinstance(value, int) and abs(value) > MAX_INTEGER:
        return f"an integer past {'-' if value < 0 else ''}{MAX_INTEGER}"
    return f"{value!r:.80}"


def filter_clause(session_id: str | None, status: str | None,
                  since: float | None) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (and its parameters) of the filters, on ``delivery_lifecycle``.

    An effective status is also pinned to the outbox statuses that can read as it, so the
    ``(status, updated_at)`` index finds the rows (the view's status is an expression).
    """
    clauses: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if status is not None:
        underlying = _UNDERLYING[status]
        clauses.append(f"outbox_status IN ({','.join('?' * len(underlying))}) AND status = ?")
        params += [*underlying, status]
    if since is not None:
        clauses.append("updated_at >= ?")
        params.append(since)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def status_counts(conn: sqlite3.Connection, *, session_id: str | None = None,
                  since: float | None = None) -> dict[str, int]:
    """Effective status -> number of deliveries, for every status (zeros included).

    Counted on the outbox's ``(status, updated_at)`` index (the view's work-item join would
    cost a lookup per row); then the ``sending`` rows the view reads as ``unknown`` (claimed by
    a process that is not the latest) are moved across, as the view decides.
    """
    check_filters(since=since)
    where, params = filter_clause(session_id, None, since)
    counts = dict.fromkeys(OUTBOX_STATUSES, 0)
    for status, n in conn.execute(
            f"SELECT status, count(*) FROM outbox{where} GROUP BY status", params):
        counts[status] = n
    if counts["sending"]:
        where, params = filter_clause(session_id, "unknown", since)
        moved = conn.execute(f"SELECT count(*) FROM delivery_lifecycle{where} "
                             "AND outbox_status = 'sending'", params).fetchone()[0]
        counts["sending"] -= moved
        counts["unknown"] += moved
    return counts


def recent_deliveries(conn: sqlite3.Connection, *, session_id: str | None = None,
                      status: str | None = None, since: float | None = None,
                      limit: int | None = 20) -> list[DeliveryStatus]:
    """Deliveries matching the filters, most recently updated first (``limit=None``: all).

    With a limit, each outbox status that can match gives its own newest *limit* rows off the
    ``(status, updated_at)`` index and those are merged: the outbox statuses split the rows, so
    the newest overall are among them. No index has ``updated_at`` first, so one query would
    read, join and sort the whole outbox to show twenty rows.
    """
    check_filters(status=status, since=since, limit=limit)
    where, params = filter_clause(session_id, status, since)
    sql = f"SELECT {DeliveryStatus.COLUMNS} FROM delivery_lifecycle{where}"
    order = " ORDER BY updated_at DESC, delivery_id"
    if limit is None:
        return [_delivery(row) for row in conn.execute(sql + order, params)]
    sql += (" AND" if where else " WHERE") + " outbox_status = ?" + order + " LIMIT ?"
    rows = [_delivery(row)
            for outbox_status in (_UNDERLYING[status] if status else OUTBOX_STATUSES)
            for row in conn.execute(sql, [*params, outbox_status, limit])]
    rows.sort(key=lambda row: (-row.updated_at, row.delivery_id))
    return rows[:limit]


def status_report(conn: sqlite3.Connection, *, session_id: str | None = None,
                  status: str | None = None, since: float | None = None,
                  limit: int | None = 20) -> StatusReport:
    """Counts (filtered by session and since; the status filter narrows only ``recent``) and
    the most recent rows, in one read transaction."""
    check_filters(status=status, since=since, limit=limit)
    counts = status_counts(conn, session_id=session_id, since=since)
    return StatusReport(counts,
                        tuple(recent_deliveries(conn, session_id=session_id, status=status,
                                                since=since, limit=limit)),
                        held_count(conn, session_id=session_id),
                        0 if session_id is not None else owed_answer_count(conn),
                        latest_process(conn) if counts["sending"] else None)


def _delivery(row: tuple[Any, ...]) -> DeliveryStatus:
    """One row of ``delivery_lifecycle``, the work item of an ``unrouted`` delivery read as
    ``unrouted``: a database older than schema v9, read as it is (read-only readers do not
    migrate), still says ``completed`` for it, the word of a sent one (v9's migration
    corrects the rows themselves)."""
    delivery = DeliveryStatus.from_row(row)
    if delivery.outbox_status == "unrouted" and delivery.work_status == "completed":
        return attrs.evolve(delivery, work_status="unrouted")
    return delivery


def latest_process(conn: sqlite3.Connection) -> ProcessEpoch | None:
    """The process registered last (the one the view takes for alive), or None if none was."""
    row = conn.execute(f"SELECT {_EPOCH_COLUMNS} FROM process_epochs "
                       "ORDER BY epoch DESC LIMIT 1").fetchone()
    return None if row is None else ProcessEpoch(*row)


def claimant_process(conn: sqlite3.Connection, claimant: str | None) -> ProcessEpoch | None:
    """The process a claim names (``epoch:N``, as a runtime claims rows), or None: no claim,
    another form, or an epoch with no row."""
    prefix, _, number = (claimant or "").partition(":")
    if prefix != "epoch" or not number.isascii() or not number.isdigit():
        return None
    epoch = int(number)
    if epoch > MAX_INTEGER:
        return None
    row = conn.execute(f"SELECT {_EPOCH_COLUMNS} FROM process_epochs WHERE epoch = ?",
                       (epoch,)).fetchone()
    return None if row is None else ProcessEpoch(*row)


def held_count(conn: sqlite3.Connection, *, session_id: str | None = None) -> int:
    """How many accepted messages are held now (of *session_id*, or all); 0 in a database
    older than the table (read-only readers do not migrate). No time filter: a held message
    is current whenever it was received."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                    "AND name = 'inbound_messages'").fetchone() is None:
        return 0
    if session_id is None:
        return int(conn.execute("SELECT count(*) FROM inbound_messages").fetchone()[0])
    return int(conn.execute("SELECT count(*) FROM inbound_messages WHERE session_id = ?",
                            (session_id,)).fetchone()[0])


def owed_answer_count(conn: sqlite3.Connection) -> int:
    """How many message id records owe their command's direct answer now (see
    ``tidings.store._inbound.owe_direct_answer``); 0 in a database older than schema v8
    (read-only readers do not migrate)."""
    columns = [row[1] for row in conn.execute("PRAGMA table_info(client_messages)")]
    if "answer" not in columns:
        return 0
    return int(conn.execute("SELECT count(*) FROM client_messages "
                            "WHERE answer IS NOT NULL").fetchone()[0])


def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether a session of id *session_id* exists: a filter by an id no session has shows
    zero counts, which an operator would read as an idle session (a typo looks like one).
    Sessions are never deleted (pruning keeps them), so no row means there was none."""
    return conn.execute("SELECT 1 FROM sessions WHERE session_id = ?",
                        (session_id,)).fetchone() is not None


def delivery_report(conn: sqlite3.Connection, delivery_id: str) -> DeliveryReport | None:
    """The delivery and its events, or None when there is no such delivery."""
    row = conn.execute(f"SELECT {DeliveryStatus.COLUMNS} FROM delivery_lifecycle "
                       "WHERE delivery_id = ?", (delivery_id,)).fetchone()
    if row is None:
        return None
    events = conn.execute(f"SELECT {RuntimeEvent.COLUMNS} FROM events WHERE delivery_id = ? "
                          "ORDER BY event_seq", (delivery_id,))
    delivery = _delivery(row)
    return DeliveryReport(delivery, tuple(RuntimeEvent.from_row(event) for event in events),
                          claimant_process(conn, delivery.claimant))


_BUSY_TIMEOUT_MS = 10_000
"""How long a read waits for a lock another program holds on the database (a ``sqlite3``
shell in ``locking_mode=EXCLUSIVE``, a tool rewriting the file) before it says so."""

_READ_ATTEMPTS = 5
"""Reads of a log-less database that found it changed before :func:`read_database` gives up."""


def read_database(path: str | os.PathLike[str], fn: Callable[..., T], *args: Any,
                  **kwargs: Any) -> T:
    """Run ``fn(conn, *args, **kwargs)`` on a read-only connection to the database at *path*,
    in one read transaction (one that *fn* ends itself, with ``conn.commit()`` say, is not an
    error, as in the read pool).

    Blocking (call it from a worker thread inside trio). Creates nothing and writes nothing: a
    database whose write-ahead log exists is read through it (``mode=ro``); one with no log (no
    process has it open, everything is in the main file) is opened ``immutable``, since a
    read-only WAL connection would otherwise create the ``-wal``/``-shm`` files.

    An ``immutable`` connection takes no lock, so a runtime that opens the database meanwhile
    and checkpoints could change the file under the read, and *fn* would see half of a later
    transaction. So the main file's identity (inode, size, modification time) is taken before
    and after such a read, and the read is done again (*fn* runs again) when the file changed
    or a log appeared; after a few such reads it gives up with :class:`StoreError`.

    Raises :class:`ValidationError` naming ``path`` when it is no non-empty path (``""``, a
    NUL character, bytes; a leading ``~`` with no home to expand it to),
    :class:`DatabaseNotFoundError` when *path* does not exist,
    :class:`SchemaVersionError` for a newer schema and :class:`StoreError` for a directory,
    anything else that is not a regular file (a named pipe, a device), a file that is not a
    tidings database, a path the system will not look up (a name over its limit, a folder
    this user may not search), a database another program holds locked (said as locked,
    after waiting :data:`_BUSY_TIMEOUT_MS` for it: not "not a tidings database"), or an empty
    file beside a ``-wal`` that holds something (:func:`refuse_orphan_log`: SQLite would
    delete that log, the commits in it with it).
    ``TypeError`` naming ``fn`` if it is not callable (before: raised from inside the read).
    """
    check_path("path", path)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    db = _expanded(path)
    mode = stat_database(db).st_mode  # (a symbolic link loop is said as such, not as missing)
    if stat.S_ISDIR(mode):  # something is there: "no database" would send the user elsewhere
        raise StoreError(f"{str(db)!r} is a directory, not a database file")
    if not stat.S_ISREG(mode):  # a named pipe, a device (/dev/null): something, but no file
        raise StoreError(f"{str(db)!r} is not a regular file, so not a database")
    try:
        db = db.resolve()
    except OSError as exc:  # (the system looked it up a moment ago: only a race gets here)
        raise StoreError(f"cannot look at {str(db)!r}: {exc.strerror or exc}") from None
    refuse_orphan_log(db)  # (SQLite would delete that log, the last commits in it)
    wal = db.with_name(db.name + "-wal")
    for _ in range(_READ_ATTEMPTS):
        if wal.exists():
            return _read(db, "mode=ro", fn, args, kwargs)
        before = _identity(db)
        try:
            result = _read(db, "mode=ro&immutable=1", fn, args, kwargs)
        except Exception:
            if wal.exists() or _identity(db) != before:
                continue  # what failed may be the torn view itself: read again
            raise
        if not wal.exists() and _identity(db) == before:
            return result
    raise StoreError(f"{str(db)!r} kept changing while it was read (a runtime starting or "
                     "stopping on it?); try again")


def _expanded(path: str | os.PathLike[str]) -> pathlib.Path:
    """*path* with a leading ``~`` expanded, or :class:`ValidationError` naming ``path`` when
    there is no home to expand it to (``~nosuchuser/x.db``, no ``HOME`` and no password
    entry): pathlib raises a bare ``RuntimeError``, and ``tidings status`` ended in a
    traceback."""
    try:
        return pathlib.Path(path).expanduser()
    except RuntimeError:
        raise ValidationError("path", f"{os.fspath(path)!r:.80} starts with ~, but there is no "
                                      "home directory to expand it to (HOME is not set, or no "
                                      "such user): give the whole path") from None


def _identity(db: pathlib.Path) -> tuple[int, int, int] | None:
    try:
        stat = db.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _read(db: pathlib.Path, query: str, fn: Callable[..., T], args: tuple[Any, ...],
          kwargs: Mapping[str, Any]) -> T:
    """One read of *db* opened with the URI *query*, in one read transaction."""
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?{query}", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {str(db)!r}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
        version = _version(conn, db)
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{db} has schema version {version}, newer than this tidings understands "
                f"({SCHEMA_VERSION}); upgrade tidings")
        if version < 1:
            raise StoreError(f"{db} is not a tidings database (no schema)")
        if not has_tidings_tables(conn):  # another program's, numbered as ours
            raise StoreError(f"{db} is not a tidings database (schema version {version}, but "
                             "not the tidings tables)")
        conn.execute("BEGIN")
        try:
            return fn(conn, *args, **kwargs)
        finally:
            if conn.in_transaction:  # fn may have ended it (conn.commit() out of habit), as
                conn.execute("ROLLBACK")  # the read pool allows
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {str(db)!r}: {exc}") from exc
    finally:
        conn.close()


def _version(conn: sqlite3.Connection, db: pathlib.Path) -> int:
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        # Only SQLite's "file is not a database" says what the file is; a lock another
        # program holds or an I/O error says why it cannot be read now.
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
            raise StoreError(f"cannot read {str(db)!r}: {exc} (another program holds a lock "
                             f"on it; try again)") from exc
        if exc.sqlite_errorcode != sqlite3.SQLITE_NOTADB:
            raise StoreError(f"cannot read {str(db)!r}: {exc}") from exc
        raise StoreError(f"{db} is not a tidings database ({exc})") from exc
