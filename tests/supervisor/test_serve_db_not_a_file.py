"""``tidings serve --db`` naming something that is no regular file (a named pipe, a device such
as ``/dev/null``): SQLite opened it and failed with ``disk I/O error``, a reason that sent the
operator looking at the disk, and beside ``/dev/null`` it made ``/dev/null-journal``. The
start is refused as a directory there is, saying what the path is, and nothing is made
beside it. ``tidings status`` and ``tidings prune`` said it already."""

from __future__ import annotations

import os

import pytest

from tidings.supervisor._config import load_config
from tidings.supervisor._serve import ServeFailed, serve
from tidings.supervisor._signals import StopControl


async def test_a_database_path_that_is_a_named_pipe_is_refused_saying_so(tmp_path) -> None:
    db = tmp_path / "serve.db"
    os.mkfifo(db)
    config = load_config(db=str(db), port=0, workspace=str(tmp_path))
    with pytest.raises(ServeFailed, match=r"serve\.db.*is not a regular file"):
        await serve(config, StopControl())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["serve.db"]  # nothing beside
