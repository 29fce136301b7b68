"""The gateway's client token: given, or generated once and kept 0600 beside the database.

``tidings serve`` with no token makes one on its first start (``secrets.token_urlsafe``),
writes it to ``<database>.token`` with mode 0600 (created exclusively, so two starts racing
agree on one), and reads it back on every later start. ``tidings serve`` creates it only once
the database is open (its own): a start that loses the database to another server, or cannot
open it, makes no token file, and so never removes one another server serves with. Clients
read the same file (``tidings chat`` does by default) or are given the token.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import secrets
import stat

import attrs

from tidings.actors._artifacts import DATABASE_SUFFIXES, TOKEN_SUFFIX
from tidings.actors._runtime_lock import LOCK_SUFFIX
from tidings.errors import ConfigError
from tidings.store._connect import make_folders
from tidings.supervisor._log import field

__all__ = ["MAX_TOKEN_FILE_BYTES", "MIN_TOKEN_LENGTH", "TokenSource", "create_token",
           "existing_token", "is_token", "read_token_file", "resolve_token", "token_key",
           "token_path"]

log = logging.getLogger("tidings.serve")

MIN_TOKEN_LENGTH = 8

MAX_TOKEN_FILE_BYTES = 4096
"""The largest token file read: a token and its line break, with room to spare (a generated
one is 43 characters)."""


@attrs.frozen
class TokenSource:
    """The token in use, the file it lives in (None when given directly) and whether this
    start created it."""

    token: str = attrs.field(repr=False)
    path: pathlib.Path | None
    created: bool = False


def token_path(db_path: str | os.PathLike[str]) -> pathlib.Path:
    """Where the generated token of the database at *db_path* is kept."""
    db = pathlib.Path(db_path).expanduser().absolute()
    return db.with_name(db.name + TOKEN_SUFFIX)


def read_token_file(path: pathlib.Path, *, field: str = "gateway.token_file") -> str:
    """The token stored at *path*. Raises :class:`ConfigError` naming *field*.

    Only a regular file of at most :data:`MAX_TOKEN_FILE_BYTES` is read: ``/dev/zero`` (or a
    large file named by mistake, the database itself) was read whole, for ever or into
    memory, and a named pipe blocked the start until something wrote to it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(field, f"no token file at {path}") from None
    except OSError as exc:
        raise ConfigError(field, f"cannot read {path}: {exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(field, f"{path} is not a regular file")
        data = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(field, f"cannot read {path}: {exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise ConfigError(field, f"{path} is over {MAX_TOKEN_FILE_BYTES} bytes: a token file "
                                 "holds one token")
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ConfigError(field, f"cannot read {path}: {exc}") from None
    if not is_token(token):
        raise ConfigError(field, f"{path} does not hold a token (at least "
                                 f"{MIN_TOKEN_LENGTH} printable characters, no spaces)")
    return token


def is_token(value: object) -> bool:
    """Whether *value* is a token the gateway takes: a string of at least
    :data:`MIN_TOKEN_LENGTH` printable characters, none of them a space. One rule for a token
    given, generated or read from a file, so a file's is refused naming the file."""
    return isinstance(value, str) and len(value) >= MIN_TOKEN_LENGTH and value.isprintable() \
        and not any(ch.isspace() for ch in value)


def resolve_token(given: str | None, token_file: pathlib.Path | None,
                  db_path: str | os.PathLike[str]) -> TokenSource:
    """The token to use: *given* as it is; else the one in *token_file* (default: beside the
    database), created there (0600) if it does not exist. Blocking (file I/O). Raises
    :class:`ConfigError`. ``tidings serve`` uses the two halves, :func:`existing_token` and
    :func:`create_token`, with the database opened in between."""
    return existing_token(given, token_file, db_path) or create_token(
        token_file or token_path(db_path), field=token_key(token_file))


def existing_token(given: str | None, token_file: pathlib.Path | None,
                   db_path: str | os.PathLike[str]) -> TokenSource | None:
    """*given*, or the token already in *token_file* (default: beside the database); None
    when that file does not exist yet and can be created (checked, not made). Blocking.
    Raises :class:`ConfigError`."""
    if given is not None:
        return TokenSource(given, None)
    if token_file is not None:
        _not_the_database(token_file, db_path)
    path = token_file or token_path(db_path)
    key = token_key(token_file)
    try:
        exists = path.exists()
    except OSError as exc:  # not ENOENT: a name too long, a folder it may not search...
        raise ConfigError(key, f"cannot read {path}: {exc.strerror or exc}") from None
    if exists:
        token = read_token_file(path, field=key)  # first: a path refused (a directory...)
        # is left as it is
        _tighten(path)
        return TokenSource(token, path)
    folder = _nearest_folder(path)
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        if token_file is None:  # the default is beside the database: the user gave that path
            raise ConfigError("serve.db", f"cannot create {db_path}: the database's folder "
                                          f"{folder} is not a writable directory")
        raise ConfigError("gateway.token_file", f"cannot create {path}: {folder} is not a "
                                                "writable directory")
    return None


def token_key(token_file: pathlib.Path | None) -> str:
    """The setting a token file's refusal names: ``gateway.token_file``, or ``serve.db`` for
    the default, which is beside the database (the user gave that path: ``--db``)."""
    return "serve.db" if token_file is None else "gateway.token_file"


def create_token(path: pathlib.Path, *, field: str = "gateway.token_file") -> TokenSource:
    """A new token written to *path* (0600, created exclusively: if another start made the
    file first, its token is used). Blocking. Raises :class:`ConfigError` naming *field*
    (:func:`token_key`).

    The token is written and synced in a temporary file beside *path*, which is then linked to
    *path* (``os.link`` fails if *path* exists): *path* never exists without its token. A file
    created first and written after was read empty by a client (``tidings chat``) in between,
    and a start killed in between (Ctrl-C, a kill) left the empty file, which every later start
    refused as holding no token."""
    token = secrets.token_urlsafe(32)
    try:
        make_folders(path.parent)  # 0700, as the database's: the token admits every client
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise ConfigError(field, f"cannot create {path}: {exc}") from None
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(token + "\n")
                file.flush()
                os.fsync(file.fileno())
        except OSError as exc:  # a full disk...
            raise ConfigError(field, f"cannot write {path}: {exc}") from None
        try:
            _publish(temporary, path)
        except FileExistsError:  # another start won the race: use its token
            return TokenSource(read_token_file(path), path)
        except OSError as exc:
            raise ConfigError(field, f"cannot create {path}: {exc}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return TokenSource(token, path, created=True)


def _publish(temporary: pathlib.Path, path: pathlib.Path) -> None:
    """Give the written *temporary* file the name *path*, unless *path* exists
    (``FileExistsError``). A hard link does both at once; a file system without hard links
    (FAT, some network mounts) gets a rename after a check instead, which only a race with
    another start on the same folder can get wrong (the last one's token is then kept)."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise
    except OSError:
        if path.exists():
            raise FileExistsError(path) from None
        os.rename(temporary, path)


_DATABASE_FILES = tuple(suffix for suffix in DATABASE_SUFFIXES if suffix != TOKEN_SUFFIX)
"""The runtime's own files beside the database but the token's (``DATABASE_SUFFIXES``, which
no turn may send either): the database, the ones SQLite keeps beside it (``<db>-wal``...)
and the runtime lock (``<db>.runtime.lock``: taken for the token file, the database was
made, then the lock's text refused as no token)."""


def _not_the_database(token_file: pathlib.Path, db_path: str | os.PathLike[str]) -> None:
    """Refuse (``gateway.token_file``) a token file that is the database, one of SQLite's
    files beside it or the runtime lock, however spelt (relative or absolute, through a
    symlink, a hard link). Checked before anything is made: ``tidings serve`` created the
    database first and refused the token file only after, leaving an empty database behind."""
    for suffix in _DATABASE_FILES:
        if _same_file(token_file, f"{os.fspath(db_path)}{suffix}"):
            what = ("the runtime lock of the database" if suffix == LOCK_SUFFIX
                    else f"SQLite's {suffix} file of the database" if suffix else "the database")
            raise ConfigError("gateway.token_file", f"{token_file} is {what} {db_path} "
                                                    "(serve.db): keep the token in another file")


def _same_file(one: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether *one* and *other* name one file, existing or not yet."""
    try:
        if os.path.realpath(one) == os.path.realpath(other):
            return True
        return os.path.samefile(one, other)
    except (OSError, ValueError):  # either missing (then realpath decided), or unreadable
        return False


def _nearest_folder(path: pathlib.Path) -> pathlib.Path:
    """The folder a file at *path* would be made in, or its nearest existing ancestor (the
    folders between are made with the file)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _tighten(path: pathlib.Path) -> None:
    """A token file others can read is made 0600 (and logged)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            path.chmod(0o600)
            log.warning("event=token_file_permissions path=%s was=%o now=600", field(path), mode)
    except OSError as exc:
        log.warning("event=token_file_permissions path=%s error=%s", field(path),
                    field(repr(exc)))
