"""The database's runtime lock: one runtime per database, in any process.

An exclusive ``flock`` on ``<database>.runtime.lock`` beside the database, taken before the
store opens and held until the runtime has closed; the kernel drops it when its holder dies.
``tidings status`` and ``read_database`` take no lock."""

from __future__ import annotations

import fcntl
import os
import pathlib

from tidings.actors._runtime_checks import resolve_path
from tidings.errors import DatabaseInUseError, StoreError
from tidings.store._connect import make_folders

__all__ = ["HOLDERS", "LOCK_SUFFIX", "DatabaseInUseError", "lock_database",
           "release_database", "unlock_database"]

LOCK_SUFFIX = ".runtime.lock"
"""The runtime lock's file is ``<database>`` + this, beside the database."""

_held: set[int] = set()
"""The descriptors of the locks this process holds. An ``flock`` belongs to the open file, and
a forked child (a host's ``multiprocessing`` worker: no exec, so ``O_CLOEXEC`` does nothing)
shares it: the lock would outlive the runtime's close, and a kill of the host, for as long as
the child lived. A forked child closes its copies at once (its close leaves the lock held by
the parent's descriptor)."""


HOLDERS = {"runtime": ("is already open in another runtime", ""),
           "prune": ("is being pruned by tidings prune", ": try again once it has finished")}
"""What may hold the lock (the word after the pid in the lock file), and how a refusal says
it. A lock file of an older version holds the pid alone: a runtime's."""


def _close_held_in_child() -> None:
    for fd in _held:
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


def lock_database(db_path: str | os.PathLike[str], *,
                  holder: str = "runtime") -> tuple[int, pathlib.Path | None]:
    """Take the database's runtime lock and return its file descriptor (blocking), and the
    lock file's path if this call created it (:func:`unlock_database` removes it then, should
    the database not open: nothing is left beside a file that is no database).

    An exclusive ``flock`` on ``<database>.runtime.lock`` (created 0600, with the holder's pid
    and *holder*, a key of :data:`HOLDERS`, in it, so a refusal says what holds it: a start
    while ``tidings prune`` ran was told of 'another runtime' that was not there; a symbolic
    link there is followed, its target made if missing), held until the
    runtime has closed; the kernel drops it when its holder dies. A
    second runtime on a live database, in this process or another, is refused: its start-up
    would register a newer epoch and recover, taking the live runtime's claims for a dead
    process's (``unknown``), its running turns for dead ones and its queued rows for
    unrouted ones: :class:`DatabaseInUseError`. A lock file the system refuses (another
    user's, a read-only folder, a full disk, a directory there, a name over its limit) is a
    :class:`StoreError` naming the database and the system's reason: the bare ``OSError``
    escaped ``open_runtime``, which says it refuses a path it cannot use with ``StoreError``.
    """
    if holder not in HOLDERS:
        raise ValueError(f"holder must be one of {', '.join(HOLDERS)}, got {holder!r}")
    db = resolve_path("db_path", db_path)
    try:
        return _lock(db, holder)
    except OSError as exc:  # (BlockingIOError, the lock held, is DatabaseInUseError)
        where = exc.filename if exc.filename is not None else db.name + LOCK_SUFFIX
        raise StoreError(f"cannot open the database {str(db)!r}: cannot take its runtime "
                         f"lock ({where}: {exc.strerror or exc})") from exc


def _lock(db: pathlib.Path, holder: str) -> tuple[int, pathlib.Path | None]:
    if db.is_dir():
        raise StoreError(f"database path {str(db)!r} is a directory")
    if db.exists() and not db.is_file():  # a named pipe, a device (/dev/null): SQLite said
        # 'disk I/O error', and made <path>-journal beside a device
        raise StoreError(f"database path {str(db)!r} is not a regular file, so not a database")
    make_folders(db.parent)  # 0700, as the store creates them
    # A symbolic link there (into a tmpfs the last reboot emptied, say) is followed: the lock
    # file is its target. The exclusive create below refuses any link, even to nothing, and
    # the plain open then finds no file: that would be taken for a removed one, for ever.
    lock = pathlib.Path(os.path.realpath(db.with_name(db.name + LOCK_SUFFIX)))
    while True:  # again when the file was removed (by its maker, see below) under this call
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            created: pathlib.Path | None = lock
        except FileExistsError:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            created = None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not _is_at(fd, lock):
                # An opener whose database did not open removed the file it had made
                # (:func:`unlock_database`) between this call's open and its lock: a lock on
                # that file excludes nobody (the next opener makes a new one).
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {holder}\n".encode(), 0)
            _held.add(fd)
        except BlockingIOError:
            found = os.pread(fd, 64, 0).decode(errors="replace").split()
            os.close(fd)
            raise _in_use(db, found) from None
        except BaseException:
            os.close(fd)
            raise
        return fd, created


def _in_use(db: pathlib.Path, found: list[str]) -> DatabaseInUseError:
    """The refusal for a lock held by what its file says (*found*: its words): a pid and a
    holder, or a pid alone (an older version's runtime), or nothing (a holder that has not
    written yet)."""
    pid = found[0] if found and found[0].isdigit() else None
    holder = found[1] if len(found) > 1 and found[1] in HOLDERS else "runtime"
    what, hint = HOLDERS[holder]
    return DatabaseInUseError(f"database {str(db)!r} {what}" + (f" (pid {pid})" if pid else "")
                              + hint, holder)


def _is_at(fd: int, path: pathlib.Path) -> bool:
    """Whether the open file *fd* is the file at *path* now (not one removed from it)."""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def unlock_database(fd: int, created: pathlib.Path | None) -> None:
    """Let go of a lock :func:`lock_database` took for a database that did not open,
    removing the lock file if it made it (still holding it: another opener either shares the
    old file and is refused, or makes a new one once this is gone; one that opened the old
    file and locks it after this lets go sees it is gone and makes a new one too)."""
    try:
        if created is not None:
            created.unlink(missing_ok=True)
    finally:
        release_database(fd)


def release_database(fd: int) -> None:
    """Let go of the lock :func:`lock_database` took (the runtime has closed): the database is
    free for another runtime. The lock file stays."""
    _held.discard(fd)
    os.close(fd)
