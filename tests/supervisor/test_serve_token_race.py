"""Two ``tidings serve`` starting on one database at once: the one that loses never removes
the token file the other one serves with."""

from __future__ import annotations

import contextlib

import pytest

import tidings
from tidings.errors import StoreError
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import ServeFailed, serve
from tidings.supervisor._signals import StopControl
from tidings.supervisor._token import resolve_token, token_path


async def test_a_start_that_loses_the_database_leaves_the_winners_token_file(
        tmp_path, monkeypatch) -> None:
    db = tmp_path / "serve.db"
    winner: list[str] = []

    @contextlib.asynccontextmanager
    async def taken_meanwhile(*args, **kwargs):
        # The other server starts now: it finds (or makes) the token file, opens the
        # database first and serves with that token.
        winner.append(resolve_token(None, None, db).token)
        raise StoreError(f"database {str(db)!r} is already open in another runtime")
        yield  # pragma: no cover

    monkeypatch.setattr(tidings, "open_runtime", taken_meanwhile)
    config = load_config(db=str(db), port=0, workspace=str(tmp_path))
    with pytest.raises(ServeFailed, match="already open in another runtime"):
        await serve(config, StopControl())
    assert token_path(db).read_text().strip() == winner[0]  # its clients can still read it


async def test_a_token_file_that_cannot_be_made_is_refused_before_the_database(tmp_path) -> None:
    from tidings.errors import ConfigError

    (tmp_path / "a-file").write_text("not a folder\n")
    config = load_config(db=str(tmp_path / "serve.db"), port=0, workspace=str(tmp_path),
                         token_file=tmp_path / "a-file" / "serve.token")
    with pytest.raises(ConfigError, match=r"^gateway\.token_file: cannot create "):
        await serve(config, StopControl())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]  # no database


async def test_a_database_whose_folder_is_not_a_folder_is_refused_by_its_own_name(
        tmp_path) -> None:
    # The token file's default is beside the database, so its check meets the bad folder
    # first: the error names what the user gave (--db / serve.db), not a setting never set.
    from tidings.errors import ConfigError

    (tmp_path / "a-file").write_text("not a folder\n")
    config = load_config(db=str(tmp_path / "a-file" / "serve.db"), port=0,
                         workspace=str(tmp_path))
    with pytest.raises(ConfigError, match=r"^serve\.db: cannot create .*a-file.* the database"
                                          r"'s folder .* is not a writable directory"):
        await serve(config, StopControl())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]


async def test_a_default_token_file_that_cannot_be_written_is_refused_naming_the_database(
        tmp_path, monkeypatch) -> None:
    # The default is beside the database: a full disk as serve writes it names what the user
    # gave (--db / serve.db), as a refused read of that file does, not a setting never set.
    import os

    from tidings.errors import ConfigError

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    config = load_config(db=str(tmp_path / "serve.db"), port=0, workspace=str(tmp_path))
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(ConfigError, match=r"^serve\.db: cannot write .*No space left"):
        await serve(config, StopControl())
    assert not token_path(tmp_path / "serve.db").exists()
