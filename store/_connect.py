"""Opening SQLite connections the one way tidings uses them.

Every connection is in autocommit mode (``isolation_level=None``: the writer issues its own
``BEGIN IMMEDIATE``), WAL, with a busy timeout. The writer's durability is ``synchronous=FULL``
unless the caller asks for ``NORMAL``. The database directory is created 0700 and the database
file 0600 before SQLite touches it; SQLite gives its ``-wal`` / ``-shm`` files the database file's
mode.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sqlite3
from typing import Literal, get_args

from tidings.store._errors import DatabaseNotFoundError, StoreError, ValidationError
from tidings.store._schema import check_database

__all__ = ["Synchronous", "WriterConnection", "check_path", "check_synchronous", "check_writable",
           "checkpoint", "close_writer", "connect_reader", "connect_writer", "make_folders",
           "prepare_path", "refuse_orphan_log", "stat_database"]

Synchronous = Literal["FULL", "NORMAL"]


def check_synchronous(value: object, field: str) -> Synchronous:
    """*value* if it is a :data:`Synchronous` mode; else :class:`ValidationError` on *field*
    (each public entry point checks it before it creates or writes anything)."""
    if value not in get_args(Synchronous):
        raise ValidationError(field, f"must be 'FULL' or 'NORMAL', got {value!r:.80}")
    return value  # type: ignore[return-value]


def check_path(field: str, value: object) -> None:
    """Refuse *value* by *field* (:class:`ValidationError`) unless it is a non-empty path: a
    string or an ``os.PathLike`` of one (``""`` would be the current directory, bytes are no
    text), with no NUL character (no file name holds one: the first OS call on it raised a
    bare ``ValueError``) and no lone surrogate the file system cannot encode (U+D800: the
    first OS call raised a bare ``UnicodeEncodeError``; U+DCFF, a byte that is not UTF-8 as
    ``os.fsdecode`` gives it, is a path). Every public entry point that takes a
    database path checks it before it creates or reads anything."""
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str) or not path:
        raise ValidationError(field, f"must be a non-empty path (a string or a pathlib.Path), "
                                     f"got {value!r:.80}")
    if "\x00" in path:
        raise ValidationError(field, f"must not hold a NUL character, got {value!r:.80}")
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        raise ValidationError(field, f"is no path the file system can encode (lone surrogate "
                                     f"at index {exc.start})") from None


_BUSY_TIMEOUT_MS = 10_000
_WRITER_CACHE_KIB = 64 * 1024
_READER_CACHE_KIB = 16 * 1024


def prepare_path(path: str | os.PathLike[str]) -> pathlib.Path:
    """Resolve *path*, creating its directory (0700) and the empty database file (0600).

    Existing directories and files keep their modes: tidings never loosens or tightens what an
    operator set by hand.

    A database file, ``-wal`` or ``-shm`` there that this process may not write raises the
    system's :class:`OSError`, which names it, nothing created (:func:`check_writable`).

    A write-ahead log (``-wal``) that holds something beside a missing or empty database file
    is refused with :class:`StoreError`, nothing created: SQLite takes it for stale and
    deletes it, but tidings switches every database it makes to WAL with its first page
    already in the file, so such a log is a database's whose file was moved or removed after
    a crash (no checkpoint), and holds its last commits.
    """
    try:
        db = pathlib.Path(path).expanduser().resolve()
    except RuntimeError as exc:  # a symbolic link loop (pathlib's own error before 3.13,
        # whose OSError, ELOOP, the caller names as it names any): not a bare RuntimeError
        raise StoreError(f"cannot open the database {os.fspath(path)}: {exc}") from None
    if db.exists() and db.is_dir():
        raise StoreError(f"database path {str(db)!r} is a directory")
    refuse_orphan_log(db)
    check_writable(db)
    make_folders(db.parent)
    if not db.exists():
        fd = os.open(db, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
        os.close(fd)
    return db


def make_folders(folder: pathlib.Path) -> None:
    """Make *folder* and its missing parents 0700: they hold the database (the sessions'
    history, its runtime lock) or the gateway's token (which admits every client), and
    folders made with the umask's mode (0755) let any local user list them (and, under a
    loose umask, swap a file). Existing folders keep their modes (an operator's choice)."""
    missing = [d for d in (folder, *folder.parents) if not d.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)


def refuse_orphan_log(db: pathlib.Path) -> None:
    """Raise :class:`StoreError` when a write-ahead log that holds something is beside the
    missing or empty database file *db* (resolved). SQLite opening such a file, read-only
    too, takes the log for stale and deletes it; but it holds the last commits of a database
    whose file was moved, removed or emptied after a crash (see :func:`prepare_path`), so
    nothing may open the file until the operator has put it back or moved the log away.
    Blocking."""
    wal = db.with_name(db.name + "-wal")
    if (not db.exists() or db.stat().st_size == 0) and wal.is_file() and wal.stat().st_size:
        raise StoreError(
            f"database {str(db)!r} is {'empty' if db.exists() else 'missing'}, but its "
            f"write-ahead log {str(wal)!r} is there and may hold its last commits (was the "
            "database file moved or removed after a crash?): put the file back, or move the "
            "log away to start a new database")


def stat_database(db: pathlib.Path) -> os.stat_result:
    """*db*'s ``stat``, for a tool that reads a database that must exist already: raises
    :class:`DatabaseNotFoundError` when nothing is there (or a folder on the way is a file),
    and :class:`StoreError` naming it when the system will not look it up (a symbolic link
    loop, a name over the file system's limit, a folder this user may not search), which
    pathlib's ``exists()``, ``is_dir()`` and ``is_file()`` answer False for. Blocking."""
    try:
        return db.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise DatabaseNotFoundError(f"no database at {str(db)!r}") from None
    except OSError as exc:
        raise StoreError(f"cannot look at {str(db)!r}: {exc.strerror or exc}") from None


def check_writable(db: pathlib.Path) -> None:
    """Raise the system's :class:`OSError` (which names the file) if the database file *db*,
    its ``-wal`` or its ``-shm``, where there, is one this process may not write (0444,
    another user's, a read-only file system). Checked before SQLite opens it: SQLite opened
    such a database as far as reading it, which made its ``-wal`` and ``-shm`` with the
    file's mode, and only the first write failed ("attempt to write a readonly database");
    the read-only ``-shm`` left behind then refused every later open with that message,
    after the file's mode was put right too. Blocking."""
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if path.exists():
            os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC))


class WriterConnection(sqlite3.Connection):
    """The read-write connection. Its transactions are the writer's (``BEGIN IMMEDIATE`` ...
    ``COMMIT`` around a whole batch), so :meth:`commit` and :meth:`rollback`, which a ``Call``'s
    function may call out of sqlite3 habit, are refused with :class:`StoreError`, and so is
    :meth:`executescript`, which commits first: they ended the transaction of every write in
    the batch (the writer now answers those "may or may not have committed"); refused, the
    ``Call``'s own write fails alone. Nothing else changes: the writer runs its statements with
    ``execute``."""

    __slots__ = ()  # no instance dict: attribute lookups stay those of sqlite3.Connection

    def commit(self) -> None:
        raise StoreError("the writer commits its own transactions: a Call must not call "
                         "conn.commit() (what it writes commits with its batch)")

    def rollback(self) -> None:
        raise StoreError("the writer rolls back its own transactions: a Call must not call "
                         "conn.rollback() (raise instead: its write is then rolled back alone)")

    def executescript(self, sql_script: str) -> sqlite3.Cursor:
        raise StoreError("conn.executescript() commits the writer's transaction before it "
                         "runs: a Call must run each statement with conn.execute()")


def connect_writer(path: pathlib.Path, synchronous: Synchronous = "FULL") -> sqlite3.Connection:
    """Open the read-write connection (blocking: call it from a worker thread).

    *path* is opened as an absolute file name: SQLite built to take URI file names (as
    Debian's is) reads a relative ``file:x.db`` as a URI, and opened, made and migrated
    ``./x.db`` instead of the file given."""
    if synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f"synchronous: expected 'FULL' or 'NORMAL', got {synchronous!r}")
    conn = sqlite3.connect(os.path.abspath(path), isolation_level=None, check_same_thread=False,
                           cached_statements=512, factory=WriterConnection)
    try:
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        check_database(conn, str(path))  # before WAL: switching mode writes the file
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"could not switch {str(path)!r} to WAL (journal_mode={mode})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        # A large outbox's index pages stay hot: the default 2 MB cache made every claim on a
        # million-row database read pages back from the OS.
        conn.execute(f"PRAGMA cache_size = {-_WRITER_CACHE_KIB}")
        conn.execute("PRAGMA foreign_keys = OFF")
    except BaseException:
        conn.close()
        raise
    return conn


def close_writer(conn: sqlite3.Connection) -> None:
    """Close the read-write connection after copying the write-ahead log into the database
    file (blocking: call it from a worker thread).

    SQLite makes that copy (a checkpoint) itself when the last connection to a database
    closes, but the read pool's connections are still open when the writer stops, and they,
    closed last, are read-only and cannot make it: the last commits stayed in the ``-wal``
    file, and the database file copied alone after a stop (a backup, a move) lacked them. The
    checkpoint waits for no reader (see :func:`_checkpoint`); one that fails (a full disk)
    loses nothing, the log still has every commit.
    """
    try:
        _checkpoint(conn)
    finally:
        conn.close()


def checkpoint(path: pathlib.Path) -> None:
    """Copy the write-ahead log into the database file on a connection of its own, as
    :func:`close_writer` does, for a reader that may have held that copy back (blocking: call
    it from a worker thread). Opened ``mode=rw``: it never creates the file. Best effort, as
    there: one that fails loses nothing, the log still has every commit."""
    with contextlib.suppress(sqlite3.Error):
        conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, isolation_level=None)
        try:
            _checkpoint(conn)
        finally:
            conn.close()


def _checkpoint(conn: sqlite3.Connection) -> None:
    """Copy the log into the file and, when no reader is using it, empty it (``TRUNCATE``),
    waiting for nobody (no busy timeout: with a reader in the way it copies what it can, as a
    ``PASSIVE`` one). An emptied log is what a stop leaves: a log of some length beside a
    missing database file is then a crashed database's (:func:`prepare_path` refuses it),
    never a stopped one's whose file was removed to start anew."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def connect_reader(path: pathlib.Path) -> sqlite3.Connection:
    """Open a read-only connection (blocking: call it from a worker thread)."""
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None,
                           check_same_thread=False, cached_statements=256)
    try:
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
        conn.execute(f"PRAGMA cache_size = {-_READER_CACHE_KIB}")
    except BaseException:
        conn.close()
        raise
    return conn
