"""CommandAgent: the guarded launcher runs with the host's environment, not the command's.

Each command starts through a Python launcher (the orphan guard's, ``_orphan_guard_child.py
exec``), which ran with the command's environment: one the interpreter cannot start in
failed the command (exit 127, the interpreter's loader error as its stderr) where a direct
spawn of the same command worked. Here: an ``LD_LIBRARY_PATH`` (a bundled toolchain's, a
conda environment's) holding a library of the name this interpreter's shared libpython has."""

from __future__ import annotations

import os
import pathlib
import sysconfig
from typing import Any

import pytest

from tidings.channels import CommandAgent

from ..real_time import fail_after_real

_LIBPYTHON = sysconfig.get_config_var("INSTSONAME")


@pytest.mark.skipif(os.name != "posix" or not sysconfig.get_config_var("Py_ENABLE_SHARED")
                    or not _LIBPYTHON, reason="an interpreter linked to a shared libpython")
async def test_a_command_starts_in_an_environment_the_interpreter_cannot_start_in(
        fake_turn: Any, tmp_path: pathlib.Path) -> None:
    (tmp_path / _LIBPYTHON).write_bytes(b"")  # not this interpreter's: no library at all
    turn = fake_turn("", text="")
    with fail_after_real(10):  # a guard against hanging, not a wait
        await CommandAgent(["/bin/sh", "-c", 'echo "started in $LD_LIBRARY_PATH"'],
                           env={"LD_LIBRARY_PATH": str(tmp_path)}).run(turn)
    assert turn.reply == f"started in {tmp_path}\n"
