"""Opening a runtime: bad arguments are refused by name before anything is created."""

from __future__ import annotations

import math

import pytest
import trio

import tidings
from tidings.errors import StoreError, ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"synchronous": "OFF"}, "synchronous"),
    ({"grace": -1}, "grace"),
    ({"grace": math.nan}, "grace"),
    ({"grace": "2"}, "grace"),
    ({"lease": -1}, "lease"),
    ({"lease": "300"}, "lease"),
    ({"scan_interval": 0}, "scan_interval"),
    ({"scan_interval": "30"}, "scan_interval"),
    ({"stranded_after": -5}, "stranded_after"),
    ({"intensity": (3, 5.0)}, "intensity"),
    ({"fault_plan": []}, "fault_plan"),
    ({"clock": 12.0}, "clock"),
    ({"artifact_root": "FILE"}, "artifact_root"),
    ({"writer": "fork"}, "writer"),
    ({"core_id": ""}, "core_id"),
    ({"recover": "later"}, "recover"),
])
async def test_bad_runtime_arguments_are_refused_by_name_before_anything_is_created(
        db_path, workspace, tmp_path, kwargs, field) -> None:
    not_a_directory = tmp_path / "a_file"
    not_a_directory.write_text("x")
    kwargs = {key: not_a_directory if value == "FILE" else value
              for key, value in kwargs.items()}
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(db_path, workspace=workspace, **kwargs):
            pass
    assert caught.value.field == field
    assert not db_path.parent.exists()  # no directory, no database, no epoch registered


async def test_a_second_runtime_on_an_open_database_is_refused_and_harms_nothing(
        db_path, workspace) -> None:
    """Opening registers a new process epoch and recovers: a second runtime on a live database
    would take the first one's claims for a dead process's (``unknown``), record its running
    turn as failed and mark its queued rows ``unrouted``. It is refused instead."""
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace) as first:
            session_id = await first.create_session(channel="web")
            route = MemoryRoute()
            route.stall()
            first.router.bind(session_id, route)
            async with first.open_turn(session_id) as ctx:
                in_flight = await ctx.output.send_text("one")
                await route.wait_attempted(1)
                queued = await ctx.output.send_text("two")
                with pytest.raises(StoreError, match="already open"):
                    async with tidings.open_runtime(db_path, workspace=workspace):
                        pass
                route.release()
                assert await in_flight.wait() == "delivered"
                assert await queued.wait() == "delivered"
            [(status,)] = rows(db_path, "SELECT status FROM turns WHERE turn_id = ?",
                               ctx.turn_id)
            assert status == "completed"
        assert route.texts() == ["one", "two"]
        async with tidings.open_runtime(db_path, workspace=workspace) as again:  # closed: free
            assert (await again.delivery_status(queued.delivery_id)).status == "sent"
