"""``open_runtime`` refuses bad paths, core ids and clocks by name before anything is created:
a path of the wrong type died with a bare ``TypeError`` naming nothing, ``db_path=""`` was
taken for the current directory ("database path '/...' is a directory"), a core id with a lone
surrogate created the database and then failed every write with a ``StoreError``, a 5,000
character core id was stored in every session row, and a clock that returns no number was
taken (its strings stored as times)."""

from __future__ import annotations

import math
import os
import pathlib

import pytest
import trio

import tidings
from tidings.actors import MAX_ID_CHARS
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"core_id": "a\ud800"}, "core_id"),
    ({"core_id": "c" * (MAX_ID_CHARS + 1)}, "core_id"),
    ({"workspace": None}, "workspace"),
    ({"workspace": 3}, "workspace"),
    ({"workspace": ""}, "workspace"),
    ({"workspace": b"/tmp"}, "workspace"),
    ({"workspace": "work\x00space"}, "workspace"),  # a ValueError from the OS call before
    ({"artifact_root": 3}, "artifact_root"),
    ({"artifact_root": ""}, "artifact_root"),
    ({"artifact_root": pathlib.Path("art\x00ifacts")}, "artifact_root"),
    ({"clock": lambda: "now"}, "clock"),
    ({"clock": lambda: math.nan}, "clock"),
    ({"clock": lambda: True}, "clock"),
    ({"clock": lambda: 1e300}, "clock"),  # no time a reader could print
    ({"clock": lambda: -1.0}, "clock"),
])
async def test_bad_arguments_are_refused_by_name_before_anything_is_created(
        db_path, workspace, kwargs, field) -> None:
    kwargs = {"workspace": workspace, **kwargs}
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(db_path, **kwargs):
            pass
    assert caught.value.field == field
    assert not db_path.parent.exists()  # no directory, no database, no lock


@pytest.mark.parametrize("bad", [None, 3, "", b"state.db", ["state.db"], "state\x00.db"])
async def test_a_database_path_that_is_no_path_is_refused_by_name(tmp_path, workspace,
                                                                 bad) -> None:
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(bad, workspace=workspace):
            pass
    assert caught.value.field == "db_path"
    assert sorted(os.listdir(tmp_path)) == before


async def test_good_paths_core_ids_and_clocks_are_still_taken(tmp_path, workspace) -> None:
    db = tmp_path / "state" / "tidings.db"
    core_id = "core:é/1 " + "c" * (MAX_ID_CHARS - 10)
    async with tidings.open_runtime(str(db), workspace=str(workspace), core_id=core_id,
                                    artifact_root=pathlib.Path(tmp_path / "art"),
                                    clock=lambda: 1_700_000_000) as rt:
        session_id = await rt.create_session(channel="web")
    assert rows(db, "SELECT session_id, core_id, created_at FROM sessions") == [
        (session_id, core_id, 1_700_000_000)]


@pytest.mark.parametrize("lease", [math.inf, 1e300, 10 * 365 * 86400 + 1,
                                   pytest.param(10 ** 5000, id="10**5000")])  # no repr
async def test_a_lease_that_is_no_time_to_store_is_refused(db_path, workspace, lease) -> None:
    """Each claimed row stores ``now + lease`` as its lease's end: an infinite lease wrote
    ``inf``, which ``tidings status DELIVERY_ID`` could not print (an ``OverflowError``
    traceback) and ``--json`` printed as ``Infinity``, which is no JSON."""
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(db_path, workspace=workspace, lease=lease):
            pass
    assert caught.value.field == "lease"
    assert not db_path.parent.exists()


async def test_a_long_lease_is_still_taken(db_path, workspace) -> None:
    """Ten years, the longest lease: a claim stores it as its lease's end, and the row still
    goes out."""
    lease, now = 10 * 365 * 86400, 1_700_000_000
    route = MemoryRoute()
    route.stall()
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace, lease=lease,
                                        clock=lambda: now) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            handle = await rt.notify(session_id, "claimed")
            await route.wait_attempted(1)  # claimed: its lease is written
            status = await rt.delivery_status(handle.delivery_id)
            route.release()
            assert await handle.wait() == "delivered"
    assert (status.outbox_status, status.lease_expires_at) == ("sending", now + lease)
