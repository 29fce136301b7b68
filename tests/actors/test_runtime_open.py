"""Opening a runtime: bad arguments are refused by name before anything is created."""

from __future__ import annotations

import math

import pytest

import tidings
from tidings.errors import ValidationError


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
