"""A process given a sparse one-TiB file on its stdin (one line, no newline: what a long
line's skip reads through), signalled once it has read so far: the set-up of the tests of a
signal or a cancel that comes while a file is read (``tidings chat --local < big.bin``, a
host's own ``stdin_lines``)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import trio

from .pipes import collect_into

__all__ = ["LINUX_PROC", "signal_while_reading"]

LINUX_PROC = pytest.mark.skipif(not pathlib.Path("/proc/self/fdinfo").is_dir(),
                                reason="Linux's /proc")
"""The mark of such a test: how far another process has read is read from /proc."""


def _read_from(pid: int) -> int:
    """How far the process *pid* has read its stdin (a file): its offset, from Linux's /proc."""
    for line in pathlib.Path(f"/proc/{pid}/fdinfo/0").read_text().splitlines():
        if line.startswith("pos:"):
            return int(line.split()[1])
    raise AssertionError("no pos in fdinfo")


async def signal_while_reading(code: str, args: list[str], tmp_path: pathlib.Path,
                               signum: int, *, past: int) -> tuple[int, str]:
    """Run ``python -c code *args`` in *tmp_path* with the big file on its stdin, send it
    *signum* once it has read more than *past* bytes, and return its exit code and stderr."""
    big = tmp_path / "big.bin"
    with big.open("wb") as file:
        try:
            file.truncate(1 << 40)  # one line of a TiB (sparse: no disk), no newline
        except OSError:
            pytest.skip("no sparse file of a TiB here")
    with big.open("rb") as stdin:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", code, *args], stdin=stdin, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, cwd=tmp_path)
    assert process.stderr is not None
    stderr = bytearray()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect_into, process.stderr, stderr)
            with trio.fail_after(60):
                while True:  # polled: no event tells when another process reads
                    if _read_from(process.pid) > past:
                        break
                    await trio.sleep(0.01)
                process.send_signal(signum)
                returncode = await process.wait()
    finally:
        process.kill()
        await process.wait()
    return returncode, stderr.decode()
