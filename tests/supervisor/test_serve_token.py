"""The client token: generated once, 0600 beside the database, reused after."""

from __future__ import annotations

import os
import pathlib
import stat

import pytest

from tidings.errors import ConfigError
from tidings.supervisor._token import resolve_token, token_path


def test_a_token_is_generated_once_and_reused(tmp_path) -> None:
    db = tmp_path / "state" / "tidings.db"
    first = resolve_token(None, None, db)
    assert first.created
    assert first.path == token_path(db) == tmp_path / "state" / "tidings.db.token"
    assert stat.S_IMODE(os.stat(first.path).st_mode) == 0o600
    assert len(first.token) >= 32
    again = resolve_token(None, None, db)
    assert (again.token, again.created) == (first.token, False)


def test_a_given_token_is_used_as_it_is(tmp_path) -> None:
    source = resolve_token("given-token", None, tmp_path / "tidings.db")
    assert (source.token, source.path) == ("given-token", None)
    assert not token_path(tmp_path / "tidings.db").exists()


def test_a_token_file_others_can_read_is_tightened(tmp_path) -> None:
    path = tmp_path / "custom.token"
    path.write_text("a-long-enough-token\n")
    path.chmod(0o644)
    assert resolve_token(None, path, tmp_path / "x.db").token == "a-long-enough-token"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_token_file_that_holds_no_token_is_refused(tmp_path) -> None:
    path = tmp_path / "empty.token"
    path.write_text("\n")
    with pytest.raises(ConfigError) as caught:
        resolve_token(None, path, tmp_path / "x.db")
    assert caught.value.field == "gateway.token_file"


def test_a_token_file_with_a_control_character_is_refused_by_the_files_name(tmp_path) -> None:
    # The gateway takes printable tokens only: a file it read one from is what is wrong, not
    # a gateway.token setting the user never wrote.
    from tidings.channels import GatewayConfig
    from tidings.supervisor._token import read_token_file

    path = tmp_path / "bell.token"
    path.write_text("abc\adefghij\n")
    with pytest.raises(ConfigError) as caught:
        GatewayConfig(token=resolve_token(None, path, tmp_path / "x.db").token)
    assert caught.value.field == "gateway.token_file"
    with pytest.raises(ConfigError) as caught:
        read_token_file(path, field="--token-file")
    assert caught.value.field == "--token-file"
    assert "printable" in str(caught.value)


def test_a_token_file_that_is_refused_keeps_its_mode(tmp_path) -> None:
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with pytest.raises(ConfigError, match=r"gateway\.token_file"):
        resolve_token(None, folder, tmp_path / "x.db")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755  # a directory is not chmod-ed 0600
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    empty.chmod(0o644)
    with pytest.raises(ConfigError, match="does not hold a token"):
        resolve_token(None, empty, tmp_path / "x.db")
    assert stat.S_IMODE(empty.stat().st_mode) == 0o644


def test_a_token_that_cannot_be_written_leaves_no_file_behind(tmp_path, monkeypatch) -> None:
    # A full disk (or any write error) after the file was created: refused by name, and the
    # empty file is not left there, where every later start refused it as holding no token.
    db = tmp_path / "tidings.db"

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", disk_full)
        with pytest.raises(ConfigError, match="No space left on device") as caught:
            resolve_token(None, None, db)
    # The default is beside the database: the user gave that path (as a refused read says).
    assert caught.value.field == "serve.db"
    assert os.listdir(tmp_path) == []  # neither the token file nor a temporary one
    assert resolve_token(None, None, db).created  # the next start makes it


def test_the_token_file_never_exists_without_its_token(tmp_path, monkeypatch) -> None:
    # It was created first and written after: a client reading it in between (tidings chat)
    # read it empty, and a start killed in between left the empty file, which every later
    # start refused as holding no token.
    db = tmp_path / "tidings.db"
    seen_while_writing: list[bool] = []
    real_fsync = os.fsync

    def watched_fsync(fd: int) -> None:
        seen_while_writing.append(token_path(db).exists())
        real_fsync(fd)

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", watched_fsync)
        made = resolve_token(None, None, db)
    assert seen_while_writing == [False]
    assert made.created
    assert token_path(db).read_text() == made.token + "\n"
    assert stat.S_IMODE(os.stat(made.path).st_mode) == 0o600
    assert os.listdir(tmp_path) == [token_path(db).name]  # no temporary file left


def test_a_start_stopped_while_writing_its_token_leaves_no_file(tmp_path, monkeypatch) -> None:
    db = tmp_path / "tidings.db"

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", interrupted)
        with pytest.raises(KeyboardInterrupt):
            resolve_token(None, None, db)
    assert os.listdir(tmp_path) == []
    assert resolve_token(None, None, db).created  # the next start makes it


def test_a_token_made_meanwhile_by_another_start_is_used(tmp_path, monkeypatch) -> None:
    db = tmp_path / "tidings.db"
    real_link = os.link

    def other_start_first(source, target) -> None:
        pathlib.Path(target).write_text("the-other-starts-token\n")
        real_link(source, target)

    with monkeypatch.context() as patched:
        patched.setattr(os, "link", other_start_first)
        source = resolve_token(None, None, db)
    assert (source.token, source.created) == ("the-other-starts-token", False)
    assert os.listdir(tmp_path) == [token_path(db).name]


@pytest.mark.parametrize("other_start_first", [False, True])
def test_a_token_is_made_on_a_file_system_without_hard_links(tmp_path, monkeypatch,
                                                              other_start_first) -> None:
    db = tmp_path / "tidings.db"

    def no_hard_links(source, target) -> None:
        if other_start_first:
            pathlib.Path(target).write_text("the-other-starts-token\n")
        raise OSError(1, "Operation not permitted")

    with monkeypatch.context() as patched:
        patched.setattr(os, "link", no_hard_links)
        source = resolve_token(None, None, db)
    assert source.created is not other_start_first
    assert token_path(db).read_text() == source.token + "\n"
    assert os.listdir(tmp_path) == [token_path(db).name]


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "large"])
def test_a_token_file_that_is_no_small_regular_file_is_refused_at_once(tmp_path, kind) -> None:
    # /dev/zero was read for ever (and a large file named by mistake, the database itself,
    # read whole into memory); a named pipe blocked the start until something wrote to it.
    from tidings.supervisor._token import MAX_TOKEN_FILE_BYTES, read_token_file

    if kind == "dev-zero":
        path = pathlib.Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "token.fifo"
        os.mkfifo(path)
    else:
        path = tmp_path / "big.token"
        path.write_text("a" * (MAX_TOKEN_FILE_BYTES + 1))
    with pytest.raises(ConfigError) as caught:
        read_token_file(path, field="--token-file")
    assert caught.value.field == "--token-file"
    assert ("not a regular file" if kind != "large" else "over 4096 bytes") in str(caught.value)


def test_a_bad_token_file_beside_the_database_is_refused_naming_serve_db(tmp_path) -> None:
    # The default token file is the database's (<db>.token): the user gave serve.db, not
    # gateway.token_file, and was told to fix a setting they never wrote.
    db = tmp_path / "x.db"
    (tmp_path / "x.db.token").write_text("short\n")
    with pytest.raises(ConfigError) as caught:
        resolve_token(None, None, db)
    assert caught.value.field == "serve.db"
    assert "x.db.token" in str(caught.value)


def test_a_token_file_given_that_cannot_be_written_is_refused_naming_its_key(
        tmp_path, monkeypatch) -> None:
    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", disk_full)
        with pytest.raises(ConfigError, match="No space left on device") as caught:
            resolve_token(None, tmp_path / "gateway.token", tmp_path / "tidings.db")
    assert caught.value.field == "gateway.token_file"
    assert os.listdir(tmp_path) == []
