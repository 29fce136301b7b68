"""The checks ``open_runtime`` makes of its arguments before the database (or its directory)
is created or this process registered in it: each bad argument is refused by name
(:class:`ValidationError`), so a mistake never leaves a half-made database behind."""

from __future__ import annotations

import os
import pathlib
import sqlite3
from collections.abc import Callable

from tidings.actors._status import check_id, check_seconds
from tidings.errors import StoreError, ValidationError
from tidings.store import check_executor, check_synchronous, read_database
from tidings.store._connect import check_path
from tidings.store._status import shown
from tidings.store._store import MAX_TIME, check_clock
from tidings.supervisor import FaultPlan, Intensity

__all__ = ["MAX_LEASE", "MAX_TIME", "check_arguments", "check_core_id_length",
           "check_private_files", "resolve_path", "resolve_roots"]

MAX_LEASE = 10 * 365 * 86400
"""The longest ``lease`` (10 years): each claim stores ``now + lease`` as a time, which must
stay one a reader can print (``inf`` or ``1e300`` cannot be)."""


def resolve_roots(workspace: str | os.PathLike[str],
                   artifact_root: str | os.PathLike[str] | None
                   ) -> tuple[pathlib.Path, pathlib.Path | None]:
    root = resolve_path("workspace", workspace)
    if not _look("workspace", workspace, root.is_dir):
        raise ValidationError("workspace", f"not a directory: {workspace}")
    if artifact_root is None:
        return root, None
    artifacts = resolve_path("artifact_root", artifact_root)
    # Missing is fine (the host may fill it); something else there is not.
    if _look("artifact_root", artifact_root, artifacts.exists) \
            and not _look("artifact_root", artifact_root, artifacts.is_dir):
        raise ValidationError("artifact_root", f"not a directory: {artifact_root}")
    return root, artifacts


def resolve_path(field: str, path: str | os.PathLike[str]) -> pathlib.Path:
    """*path* absolute, ``~`` expanded and symbolic links followed, or :class:`ValidationError`
    naming *field* when it cannot be (a link that leads back to itself: pathlib raised a bare
    ``RuntimeError`` naming nothing, and ``tidings serve`` died of it with a traceback)."""
    try:
        return pathlib.Path(path).expanduser().resolve()
    except (RuntimeError, OSError) as exc:
        raise ValidationError(field, f"cannot be resolved: {exc}") from None


def _look(field: str, given: object, look: Callable[[], bool]) -> bool:
    """``look()`` (a path's ``is_dir`` or ``exists``), or :class:`ValidationError` naming
    *field* when the path cannot even be looked at (a folder this user may not search, a name
    over the file system's limit): those raise for that, and the error, named by nothing, was
    taken for the database's."""
    try:
        return look()
    except OSError as exc:
        raise ValidationError(field, f"cannot read {given}: {exc.strerror or exc}") from None


def check_arguments(*, db_path: object, workspace: object, artifact_root: object,
                     writer: object, recover: object, core_id: object,
                     synchronous: object, grace: object, lease: object,
                     scan_interval: object, stranded_after: object, intensity: object,
                     fault_plan: object, clock: object) -> None:
    """Refuse bad ``open_runtime`` arguments by name, before the database (or its directory)
    is created or this process registered in it."""
    check_path("db_path", db_path)
    check_path("workspace", workspace)
    if artifact_root is not None:
        check_path("artifact_root", artifact_root)
    check_executor(writer, "writer")
    if recover not in ("at_open", "manual"):
        raise ValidationError("recover", f"must be 'at_open' or 'manual', got {recover!r}")
    # Stored in every session and conversation row: capped (MAX_ID_CHARS) by
    # check_core_id_length, which reads the database, unless the database has it already.
    check_id("core_id", core_id, max_chars=None)
    check_synchronous(synchronous, "synchronous")
    for field, value in (("grace", grace), ("lease", lease),
                         ("stranded_after", stranded_after)):
        check_seconds(field, value)
    if lease > MAX_LEASE:  # type: ignore[operator]
        raise ValidationError("lease", f"must be at most {MAX_LEASE} seconds (10 years): each "
                                       f"claim stores when it ends, got {shown(lease)}")
    check_seconds("scan_interval", scan_interval, positive=True)
    if intensity is not None and not isinstance(intensity, Intensity):
        raise ValidationError("intensity", f"must be an Intensity or None, got {intensity!r:.80}")
    if fault_plan is not None and not isinstance(fault_plan, FaultPlan):
        raise ValidationError("fault_plan", f"must be a FaultPlan or None, got "
                                            f"{fault_plan!r:.80}")
    check_clock(clock)


def check_private_files(value: object) -> tuple[pathlib.Path, ...]:
    """``open_runtime(private_files=...)``: a list or tuple of paths of files or folders (a
    folder covers what is under it; a lone path is refused: a string would be taken letter
    by letter), each made absolute (``~`` expanded) now, so a later change of the current
    directory does not move it. Symbolic links are not followed
    here: each send looks again at the name and at the file it leads to then. Raises
    :class:`ValidationError` naming ``private_files`` or ``private_files[i]``."""
    if not isinstance(value, list | tuple):
        raise ValidationError("private_files", f"must be a list or tuple of paths, got "
                                               f"{type(value).__name__}")
    paths = []
    for index, path in enumerate(value):
        field = f"private_files[{index}]"
        check_path(field, path)
        try:
            paths.append(pathlib.Path(path).expanduser().absolute())
        except (OSError, RuntimeError) as exc:  # no current directory; no home for ``~``
            raise ValidationError(field, f"cannot be made absolute: {exc}") from None
    return tuple(paths)


def check_core_id_length(db_path: str | os.PathLike[str], core_id: str) -> None:
    """Refuse *core_id*, over :data:`MAX_ID_CHARS`, by name unless the database at *db_path*
    has sessions under it: earlier versions took a core id of any length, and their database
    must still open with it (its conversations are bound under it). Blocking; creates
    nothing."""
    try:
        stored = read_database(db_path, _has_core_id, core_id)
    except StoreError:  # no database yet (or none that opens): nothing was stored under it
        stored = False
    if not stored:
        check_id("core_id", core_id)  # raises: over the cap


def _has_core_id(conn: sqlite3.Connection, core_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE core_id = ? LIMIT 1",
                        (core_id,)).fetchone() is not None
