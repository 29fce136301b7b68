"""Artifact sources: where a media send's file comes from, checked before anything is written.

A source is a path inside the resolved workspace or the session's artifact root (symlinks
resolved; ``..`` components and escapes rejected, also through :class:`ArtifactRef`), an http(s)
URL, or an :class:`ArtifactRef`. A path that is the runtime's own is refused even inside the
workspace (where ``tidings serve``'s defaults put the database and the artifacts directory):
another session's artifact root, the database and the files beside it
(:data:`DATABASE_SUFFIXES`). A plain string is a URL when it starts with a scheme and
``://`` (``ftp://...``, refused as not http(s)), or with one of :data:`URL_SCHEMES` and a
colon (``https:...``, ``data:...``, ``javascript:...``: never a file, even if one has that
name); any other string is a path, so ``notes:v2.txt`` is the file of that name. A
``pathlib.Path``, a ``./`` prefix or an ``ArtifactRef``'s ``path=`` is always a path, and its
``url=`` always a URL. A raw dict is refused with a message that says what to use.
"""

from __future__ import annotations

import os
import pathlib
import re
import stat
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tidings.actors._blocks import lone_surrogate
from tidings.actors._runtime_lock import LOCK_SUFFIX
from tidings.errors import ArtifactError, ValidationError

__all__ = ["DATABASE_SUFFIXES", "MAX_NAME_BYTES", "TOKEN_SUFFIX", "URL_SCHEMES", "ArtifactRef",
           "ResolvedSource", "check_file_name", "check_session_name", "check_source_type",
           "looks_like_url", "names_own_directory", "resolve_source"]

MAX_NAME_BYTES = 255
"""The longest file name (``NAME_MAX``) common file systems take, in bytes: a caller-chosen
session id names the session's artifact directory."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(//)?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# In a file name also the C1 controls (NEL, U+0085, is a line break to ``str.splitlines``,
# so to the ``email`` package that writes an upload's headers; CSI, U+009B, a terminal's
# escape) and Unicode's line and paragraph separators, which ``splitlines`` breaks at too.
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Never in a host name, percent-decoded (the URL standard's forbidden domain code points, and
# what RFC 3986 does not allow): see _host_problem. The parser's own delimiters (``/?#@:[]``)
# cannot be in a parsed host.
_NOT_IN_HOSTS = frozenset('<>\\^|%"`{}')

URL_SCHEMES = ("http", "https", "data", "javascript", "vbscript", "blob", "mailto")
"""Schemes that make a plain string a URL even without ``//``: http(s) (so ``https:x`` is a
bad URL, not a missing file) and the common URL schemes that never have one. A string with
one of them is never read as a path, whatever the workspace holds."""


TOKEN_SUFFIX = ".token"
"""``tidings serve``'s default gateway token file is ``<database>`` + this."""

DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal", LOCK_SUFFIX, TOKEN_SUFFIX)
"""The runtime's own files beside the database, ``<database>`` + each: the database (every
session's history), SQLite's journals, the runtime lock, and the gateway token ``tidings
serve`` keeps there by default. Never an artifact, wherever the workspace is."""


@attrs.frozen
class ArtifactRef:
    """A reference to an artifact the host already has: a path (or an http(s) URL) with its
    presentation. The path obeys the same root rules as a plain path source."""

    path: str | os.PathLike[str] | None = None
    url: str | None = None
    name: str | None = None
    media_type: str | None = None
    summary: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ResolvedSource:
    """A checked source: ``kind`` is ``path`` or ``url``; ``location`` an absolute path or URL."""

    kind: str
    location: str
    name: str
    ref: ArtifactRef | None = None


def check_source_type(source: object, field: str = "source") -> None:
    """Raise ``TypeError`` for a source of the wrong type (checked before any history rule),
    an ``ArtifactRef``'s ``path=`` and ``url=`` included."""
    if isinstance(source, Mapping):
        raise TypeError(
            f"{field}: a raw artifact dict is not accepted; pass the file as a path, URL or "
            "ArtifactRef, and describe it with summary=... and artifact_metadata=...")
    if not isinstance(source, str | os.PathLike | ArtifactRef):
        raise TypeError(f"{field}: expected a path, an http(s) URL or an ArtifactRef, "
                        f"got {type(source).__name__}")
    if isinstance(source, os.PathLike) and not isinstance(source, str | pathlib.PurePath) \
            and not isinstance(os.fspath(source), str):  # a path is written as text
        raise TypeError(f"{field}: expected a path-like object of a str path, got one of "
                        f"{type(os.fspath(source)).__name__}")
    if isinstance(source, ArtifactRef):
        if isinstance(source.path, ArtifactRef):
            raise TypeError(f"{field}.path: expected a path, got an ArtifactRef")
        if source.path is not None:
            check_source_type(source.path, f"{field}.path")
        if source.url is not None and not isinstance(source.url, str):
            raise TypeError(f"{field}.url: expected str, got {type(source.url).__name__}")


def looks_like_url(text: str) -> bool:
    """Whether the plain string *text* is a URL source: a scheme followed by ``://``, or one of
    :data:`URL_SCHEMES` (any case) followed by ``:``. ``notes:v2.txt`` is not one."""
    match = _SCHEME.match(text)
    return match is not None and (match.group(2) is not None
                                  or match.group(1).lower() in URL_SCHEMES)


def names_own_directory(session_id: str) -> bool:
    """Whether ``<artifacts>/<session_id>`` is a directory of the session's own: one plain path
    component. ``..``, ``/``, ``.`` or ``a/b`` would make it the database directory, the
    filesystem root, every session's artifacts or inside another session's; such a session
    has no artifact root (its files must be in the workspace). Nor has one whose id is over
    :data:`MAX_NAME_BYTES` of UTF-8 (earlier versions stored such ids): no file system takes
    that name."""
    return (bool(session_id) and session_id not in (".", "..") and "\x00" not in session_id
            and not any(sep and sep in session_id for sep in (os.sep, os.altsep))
            and len(session_id.encode("utf-8", "surrogatepass")) <= MAX_NAME_BYTES)


def check_file_name(field: str, value: str) -> str:
    """*value* (text already) as an artifact's ``name``, what a route calls the file (an
    upload's name, a file an adapter saves by it), or :class:`ValidationError` naming *field*:
    one plain file name of at most :data:`MAX_NAME_BYTES`, so not ``.`` or ``..``, no ``/`` or
    backslash, no control character (C0, DEL or C1) or Unicode line or paragraph separator
    (U+2028, U+2029: line breaks to ``str.splitlines``, as NEL is). An agent chooses it, and
    what an agent writes can be steered by what it read: a name such as
    ``../../.ssh/authorized_keys`` must not reach a route that trusts it."""
    problem = _name_problem(value)
    if problem is not None:
        raise ValidationError(field, f"must be a plain file name: {problem}, got {value!r:.80}")
    return value


def _name_problem(value: str) -> str | None:
    if value in (".", ".."):
        return "not '.' or '..'"
    if "/" in value or "\\" in value:
        return "no '/' or backslash (it is no path)"
    if _NAME_CONTROL.search(value):
        return "no control character or line break"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"at most {MAX_NAME_BYTES} bytes of UTF-8"
    return None


def check_session_name(field: str, value: object) -> str:
    """*value* as a new session's id, or :class:`ValidationError` naming *field*: it must be
    usable as one plain path component on any system (its artifact root is
    ``<artifacts>/<session_id>``), so ``.``, ``..``, ``/``, ``\\``, NUL and lone surrogates are
    refused before anything is written. Generated ids (``session_*``, ``session_child_*``)
    always pass; :func:`names_own_directory` still guards sessions made before this check."""
    if not isinstance(value, str) or not value:
        raise ValidationError(field, f"must be a non-empty string, got {value!r:.80}")
    if value in (".", ".."):
        raise ValidationError(field, f"{value!r} is not usable as a session's directory name")
    for char, name in (("/", "'/'"), ("\\", "a backslash"), ("\x00", "NUL")):
        if char in value:
            raise ValidationError(field, f"may not contain {name} (it must be one plain "
                                         f"path component), got {value!r:.80}")
    lone = lone_surrogate(value)
    if lone is not None:
        raise ValidationError(field, f"is not valid Unicode (lone surrogate at index {lone})")
    return value


def resolve_source(source: str | os.PathLike[str] | ArtifactRef, *, workspace: pathlib.Path,
                   artifact_root: pathlib.Path | None, field: str = "source",
                   artifacts: pathlib.Path | None = None,
                   databases: Sequence[pathlib.Path] = (),
                   private: Sequence[pathlib.Path] = (),
                   name: str | None = None) -> ResolvedSource:
    """Check *source* against the roots and return where it really is (blocking: stats files).
    *artifact_root* is None for a session with none (see :func:`names_own_directory`).
    *artifacts* is every session's artifacts directory and *databases* the database's paths
    (the file, and the symbolic link it was opened by, if any: files such as the gateway
    token are kept beside the name given), and *private* the host's secrets (absolute paths:
    ``tidings serve``'s gateway token file, wherever it is): what is theirs is the runtime's
    own, refused even inside the workspace. *name* is one chosen for it elsewhere (a
    ready-made block's, checked already): it, or an ``ArtifactRef``'s, is the source's name;
    else a file's own name must be a plain file name (:func:`check_file_name`), as a chosen
    one must.

    Raises :class:`ArtifactError` naming *field* for a path outside both roots (after resolving
    symlinks; a session's root that is itself a link is not followed: see :func:`_in_place`),
    the runtime's own, a file whose own name is no plain file name (none chosen), a ``..``
    component, a missing or non-regular file, a path that cannot be resolved (a symbolic link
    loop on its way, or a workspace made one since the runtime opened), a non-http(s) URL (or
    one the URL parser refuses, one holding an ASCII control character, or whose host is no
    host name: see :func:`_host_problem`), or one that is not valid UTF-8.
    """
    check_source_type(source, field)
    if isinstance(source, ArtifactRef):
        if (source.path is None) == (source.url is None):
            raise ArtifactError(field, "an ArtifactRef needs exactly one of path= or url=")
        # path= is always a path (a file may be named ``notes:v2.txt``) and url= always a URL.
        if source.url is not None:  # their types: checked by check_source_type
            resolved = _resolve_url(source.url, f"{field}.url", may_be_a_file=False)
        else:
            assert source.path is not None
            resolved = _resolve_path(os.fspath(source.path), workspace, artifact_root,
                                     f"{field}.path", artifacts, databases, private,
                                     bool(source.name))
        return attrs.evolve(resolved, name=source.name or resolved.name, ref=source)
    text = os.fspath(source)
    if isinstance(source, str) and looks_like_url(text):
        resolved = _resolve_url(text, field)
    else:
        resolved = _resolve_path(text, workspace, artifact_root, field, artifacts, databases,
                                 private, bool(name))
    return attrs.evolve(resolved, name=name) if name else resolved


def _resolve_url(text: str, field: str, *, may_be_a_file: bool = True) -> ResolvedSource:
    """*text* checked as an http(s) URL, or :class:`ArtifactError` naming *field*.
    *may_be_a_file*: a string source (a file may have a URL-like name), whose refusal of
    another scheme says how to send such a file; not an ``ArtifactRef``'s ``url=``."""
    # The parser drops tabs and line breaks first (``ex\tample.com`` parses as
    # ``example.com``): what it checks would not be what is stored and sent.
    if _CONTROL.search(text):
        raise ArtifactError(field, "not a valid URL: it holds an ASCII control character "
                                   "(a tab, a line break, NUL, ...)")
    try:  # the parser refuses some URLs itself (an unclosed IPv6 host: ``http://[::1/x``),
        parsed = urllib.parse.urlsplit(text)
        _ = parsed.port  # and a port that is no port only when it is read
    except ValueError as exc:
        raise ArtifactError(field, f"not a valid URL: {exc}") from None
    if parsed.scheme.lower() not in ("http", "https"):
        hint = " (a file named so: pass a pathlib.Path or './name')" if may_be_a_file else ""
        raise ArtifactError(field, f"only http(s) URLs are allowed, got a {parsed.scheme!r} "
                                   f"URL{hint}")
    if not parsed.hostname:
        raise ArtifactError(field, "the URL has no host")
    problem = _host_problem(parsed.hostname)
    if problem is not None:
        raise ArtifactError(field, f"not a valid URL: its host {parsed.hostname!r:.80} is no "
                                   f"host name ({problem})")
    _check_utf8(text, field)
    # The path's last part, decoded, if it is a plain file name (``/a/..``, ``%2E%2E``,
    # ``%0A`` are not: see check_file_name); else the host.
    name = pathlib.PurePosixPath(urllib.parse.unquote(parsed.path)).name
    if not name or _name_problem(name) is not None:
        name = parsed.hostname
    return ResolvedSource("url", text, name)


def _resolve_path(text: str, workspace: pathlib.Path, artifact_root: pathlib.Path | None,
                  field: str, artifacts: pathlib.Path | None = None,
                  databases: Sequence[pathlib.Path] = (),
                  private: Sequence[pathlib.Path] = (), named: bool = False
                  ) -> ResolvedSource:
    if not text or "\x00" in text:
        raise ArtifactError(field, "the path is empty or contains a NUL character")
    _check_utf8(text, field)  # before resolving: "\ud800" is no file name the OS can encode
    raw = pathlib.Path(text)
    if ".." in raw.parts:
        raise ArtifactError(field, "'..' is not allowed in artifact paths")
    candidate = raw if raw.is_absolute() else workspace / raw
    try:
        resolved = candidate.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise ArtifactError(field, _missing(text, raw, artifact_root)) from None
    except (OSError, RuntimeError) as exc:  # loops, permissions, a name over the limit
        # Its text holds the path again: the reason alone (a path may be megabytes).
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ArtifactError(field, f"cannot resolve {text!r:.80}: {reason:.120}") from None
    home = _resolved(workspace)
    if home is None:  # swapped for a link loop since the runtime opened: nothing is in it
        raise ArtifactError(field, f"cannot resolve {text!r:.80}: the workspace cannot be "
                                   "resolved (a symbolic link loop)")
    roots = [home]
    own = None if artifact_root is None else _in_place(artifact_root)
    if own is not None:
        roots.append(own)
    if not any(resolved.is_relative_to(root) for root in roots):
        raise ArtifactError(field, "the path resolves outside the workspace and the session's "
                                   "artifact root")
    if _runtimes_own(resolved, roots[0], own, artifacts, databases, private):
        raise ArtifactError(field, "the path is the runtime's own (the database or a file "
                                   "beside it, a private file such as the gateway's token, "
                                   "or another session's artifacts), not the workspace's")
    if not resolved.is_file():
        raise ArtifactError(field, f"not a regular file: {text!r:.80}")
    location = str(resolved)
    _check_utf8(location, field)
    # The name the route gets, unless one is chosen: an agent wrote the file under it, so it
    # is held to what a chosen name is (a line break, a backslash: see check_file_name).
    problem = None if named else _name_problem(resolved.name)
    if problem is not None:
        raise ArtifactError(field, f"the file's name {resolved.name!r:.80} is no plain file "
                                   f"name ({problem}); choose one: ArtifactRef(path=..., "
                                   "name=...)")
    return ResolvedSource("path", location, resolved.name)


def _missing(text: str, raw: pathlib.Path, artifact_root: pathlib.Path | None) -> str:
    """The refusal of a path with no file: a relative one was looked for in the workspace
    only, which it says, and, when the session's artifact root has a file by that name, that
    it is sent by its full path there (a relative path never means the artifact root: one
    name could mean two files)."""
    if raw.is_absolute():
        return f"no such file: {text!r:.80}"
    hint = ""
    try:
        if artifact_root is not None and (artifact_root / raw).is_file():
            hint = ("; the session's artifact root has it: give its full path "
                    "(rt.artifact_root_for(session_id) / name)")
    except OSError:  # (a name over the limit, a loop: no hint, the refusal stands)
        pass
    return f"no such file in the workspace: {text!r:.80}{hint}"


def _host_problem(host: str) -> str | None:
    """What makes *host* (a parsed URL's, lowercased; ASCII controls refused already) no host
    name, or None. The parser takes any text between ``//`` and the path for one: ``..``,
    ``a\\b``, ``a b``, which no client fetches (a browser reads ``https://..\\..\\x`` as
    host ``..``, path ``/x``), and a URL with no plain last part is named after its host, so
    such a host would be what a route calls the file (see :func:`check_file_name`). Refused:
    ``.``, ``..``, over :data:`MAX_NAME_BYTES` (DNS names have at most 253 characters), and
    whitespace, a control character or a code point URL parsers refuse in a domain, once
    percent-decoded as they decode it (``ex%41mple.com`` is ``example.com``, ``x%0Ay`` holds
    a line break). An IPv6 literal (``[::1]``, here without its brackets: it has a colon) is
    the parser's to check."""
    if ":" in host:
        return None
    if len(host.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"at most {MAX_NAME_BYTES} bytes of UTF-8"
    decoded = urllib.parse.unquote(host)
    if decoded in (".", ".."):
        return "not '.' or '..'"
    bad = next((char for char in decoded if char in _NOT_IN_HOSTS or char.isspace()
                or _CONTROL.match(char)), None)
    return None if bad is None else f"no {bad!r} in it"


def _runtimes_own(resolved: pathlib.Path, workspace: pathlib.Path, own: pathlib.Path | None,
                  artifacts: pathlib.Path | None, databases: Sequence[pathlib.Path],
                  private: Sequence[pathlib.Path] = ()) -> bool:
    """Whether the resolved path *resolved* is one of the database's files
    (:data:`DATABASE_SUFFIXES`, beside each of *databases*: a symbolic link's name is the one
    ``tidings serve`` keeps its token by, while SQLite keeps its journals beside the file the
    link leads to), one of the *private* files or in one of the *private* folders (where
    each leads now), by name, or by identity (the same file or folder under another name; a
    hard link made outside a private folder to a file in it is not told), or in
    *artifacts* outside the session's own root *own* (where it is: :func:`_in_place`), where
    the (resolved) *workspace* holds *artifacts*: a workspace that is the artifacts directory,
    or inside it, is the host's choice to share it, and one outside it gives no access to it
    anyway. The artifacts directory is told by its name and by its identity
    (:func:`_in_others_artifacts`)."""
    if artifacts is not None:
        base = _resolved(artifacts)
        if base is not None and base != workspace and base.is_relative_to(workspace) \
                and resolved.is_relative_to(base) \
                and not (own is not None and resolved.is_relative_to(own)):
            return True
        if _in_others_artifacts(resolved, workspace, own, artifacts):
            return True
    if any(resolved.parent == database.parent and resolved.name in {
            database.name + suffix for suffix in DATABASE_SUFFIXES} for database in databases):
        return True
    if any(_covers(_resolved(path), resolved) for path in private):
        return True
    # The same file under another name: on a case-insensitive file system ``TIDINGS.DB``
    # for ``tidings.db`` (which any turn can name; resolving keeps the case given), or a
    # hard link. Told by its identity.
    try:
        found = resolved.stat()
    except OSError:
        return False
    kept = [database.with_name(database.name + suffix) for database in databases
            for suffix in DATABASE_SUFFIXES]
    folders = set()
    for path in (*kept, *private):
        try:
            seen = os.stat(path)
        except OSError:
            continue
        if _identity(seen) == _identity(found):
            return True
        if stat.S_ISDIR(seen.st_mode):  # a private folder (the kept files are files)
            folders.add(_identity(seen))
    return bool(folders) and _in_folders(resolved, folders)


def _covers(private: pathlib.Path | None, resolved: pathlib.Path) -> bool:
    """Whether the private path *private* (resolved: where a link there leads) is the
    resolved path *resolved* or, a folder, holds it."""
    return private is not None and (resolved == private or resolved.is_relative_to(private))


def _in_folders(resolved: pathlib.Path, folders: set[tuple[int, int]]) -> bool:
    """Whether a folder of the resolved path *resolved* is one of *folders* (identities):
    a private folder under another name (another case on a case-insensitive file system, a
    bind mount), which :func:`_covers` cannot tell by the name."""
    for folder in resolved.parents:
        try:
            if _identity(os.lstat(folder)) in folders:
                return True
        except OSError:
            return False
    return False


def _in_others_artifacts(resolved: pathlib.Path, workspace: pathlib.Path,
                         own: pathlib.Path | None, artifacts: pathlib.Path) -> bool:
    """:func:`_runtimes_own`'s artifacts rule told by identity: whether a folder of the
    resolved path *resolved*, going up from it, is the artifacts directory before it is the
    session's own root *own* or the (resolved) *workspace*. Resolving keeps the case given, so the
    names alone missed the directory under another name: ``Artifacts/<other session>/...``
    on a case-insensitive file system (macOS's, Windows') with ``tidings serve``'s defaults,
    a workspace or ``artifact_root`` given in another case, or a bind mount of it."""
    try:
        base = _identity(os.stat(artifacts))
        stop = {_identity(os.stat(workspace))}
    except OSError:  # no artifacts directory (yet): no session has a file in it
        return False
    if own is not None:
        try:  # not followed, as in _in_place: through a link is where the link leads
            stop.add(_identity(os.lstat(own)))
        except OSError:
            pass
    for folder in resolved.parents:
        try:
            found = _identity(os.lstat(folder))
        except OSError:
            return False
        if found in stop:
            return False
        if found == base:
            return True
    return False


def _identity(found: os.stat_result) -> tuple[int, int]:
    return found.st_dev, found.st_ino


def _in_place(artifact_root: pathlib.Path) -> pathlib.Path | None:
    """The session's root where it is: its directory resolved, the root itself not followed.
    Whoever can make it (an agent saving its first file there; the artifacts directory is in
    the workspace with ``tidings serve``'s defaults) can make it a symbolic link instead, to
    ``/`` or to another session's root: what is through it is then where the link leads,
    outside the root, as through a link inside it. None where its directory cannot be
    resolved (see :func:`_resolved`): the session has no root there."""
    parent = _resolved(artifact_root.parent)
    return None if parent is None else parent / artifact_root.name


def _resolved(path: pathlib.Path) -> pathlib.Path | None:
    """*path* resolved, or None for a symbolic link loop (this Python's ``resolve`` raises
    ``RuntimeError`` for one even when not strict): a resolved file is never through it.
    The artifacts directory is in the workspace with ``tidings serve``'s defaults, so a
    turn's agent can make it one: every path send of every session raised that bare
    ``RuntimeError``, naming no argument, a workspace file's too."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def _check_utf8(location: str, field: str) -> None:
    """A path or URL is written as UTF-8 text: a name made of non-UTF-8 bytes (decoded with
    surrogates) cannot be, so it is refused here rather than by SQLite in the writer."""
    if lone_surrogate(location) is not None:
        raise ArtifactError(field, "the path or URL is not valid UTF-8 text")
