"""A database migrated once per test run, copied where a test wants a new one.

Creating the schema (every migration, each a durable transaction) was most of the cost of
opening a runtime on a new file: some 50 ms of each test on a loaded 2-core machine, and of
each example of the fuzz and state-machine suites. A copy of a database migrated once is what
a first open finds after its migrations (the migrations write no rows), so the runtime opened
on it registers its epoch and runs as on a new file; each test still gets a file of its own.
Tests of creating or migrating a database keep using a path with nothing at it.
"""

from __future__ import annotations

import atexit
import functools
import os
import pathlib
import shutil
import tempfile

from tidings.store._connect import connect_writer, prepare_path
from tidings.store._schema import migrate

__all__ = ["fresh_database"]


@functools.cache
def _template() -> pathlib.Path:
    directory = pathlib.Path(tempfile.mkdtemp(prefix="tidings-template-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    db = prepare_path(directory / "template.db")
    conn = connect_writer(db)
    try:
        migrate(conn, str(db))
    finally:
        conn.close()  # the last connection: the log is checkpointed into the file and removed
    return db


def fresh_database(path: str | os.PathLike[str]) -> pathlib.Path:
    """Put a copy of the migrated template at *path* (which must not exist yet), its
    directory and file created with the modes the store gives them; return the path."""
    db = prepare_path(path)
    if db.stat().st_size:
        raise FileExistsError(f"{db} is not a new database")
    shutil.copyfile(_template(), db)
    return db
