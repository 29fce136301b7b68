"""``open_runtime`` removes the lock file it made when the database does not open (0f948c0).
Another opener may have opened that file just before, and lock it just after the remover let
go: it then held a lock on a file no longer at ``<database>.runtime.lock``, which excludes
nobody, and a third opener made a new file, locked it too, and two runtimes ran on one
database (each recovering the other's work as a dead process's). A lock is now kept only on
the file at the path; else the opener tries again. (Also: the file removed between an
opener's failed create and its open escaped as a bare ``FileNotFoundError``.)

The interleaving needs two openers' system calls to alternate, which no public call makes
happen on demand: the test drives the runtime's lock functions and places the remover's
let-go right before the second opener's ``flock``."""

from __future__ import annotations

import fcntl
import os

import pytest

from tidings.actors import _runtime_lock
from tidings.errors import StoreError


def test_a_lock_on_a_lock_file_its_maker_removed_is_not_kept(tmp_path, monkeypatch) -> None:
    db = tmp_path / "tidings.db"
    first, created = _runtime_lock.lock_database(db)  # the opener whose database will not open
    assert created is not None
    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        if fd != first and created.exists():  # the second opener has opened the file
            _runtime_lock.unlock_database(first, created)  # the first's database did not open
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    second, _ = _runtime_lock.lock_database(db)
    monkeypatch.setattr(fcntl, "flock", real_flock)
    try:
        with pytest.raises(StoreError, match="already open in another runtime"):
            _runtime_lock.lock_database(db)  # (the lock it took would leak: this test failed)
    finally:
        os.close(second)


def test_a_lock_file_removed_before_it_is_opened_is_made_again(tmp_path,
                                                               monkeypatch) -> None:
    db = tmp_path / "tidings.db"
    first, created = _runtime_lock.lock_database(db)
    assert created is not None
    real_open = os.open

    def open_(path, flags, *args):
        if flags & os.O_EXCL == 0 and created.exists():  # its create found the file there
            _runtime_lock.unlock_database(first, created)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_)
    second, made = _runtime_lock.lock_database(db)
    monkeypatch.setattr(os, "open", real_open)
    os.close(second)
    assert made == created  # made again, by this opener
