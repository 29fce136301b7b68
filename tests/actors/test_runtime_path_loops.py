"""A database path, ``workspace`` or ``artifact_root`` that is a symbolic link leading back to
itself made ``open_runtime`` raise a bare ``RuntimeError("Symlink loop from ...")`` from
pathlib, named by nothing and outside the error taxonomy (``tidings serve`` died of it with a
traceback). Each is refused by name now, before anything is created."""

from __future__ import annotations

import os

import pytest

import tidings
from tidings.errors import ValidationError


@pytest.mark.parametrize("field", ["db_path", "workspace", "artifact_root"])
async def test_a_path_that_is_a_symlink_loop_is_refused_by_name(tmp_path, workspace,
                                                                field) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    loop = folder / "loop"
    loop.symlink_to(loop)
    paths = {"db_path": folder / "tidings.db", "workspace": workspace, "artifact_root": None,
             field: loop}
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(paths["db_path"], workspace=paths["workspace"],
                                        artifact_root=paths["artifact_root"]):
            pass
    assert caught.value.field == field
    assert "cannot be resolved" in str(caught.value)
    assert os.listdir(folder) == ["loop"]  # no database, no lock file
