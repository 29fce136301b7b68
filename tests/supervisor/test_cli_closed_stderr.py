"""The command line with stderr closed (``tidings ... 2>&-``): what it would say on stderr is
lost, nothing of it goes to stdout, and the exit code is the one it has with a stderr.

Python starts with ``sys.stderr`` None then, and argparse's ``error`` prints the usage with
``print_usage(sys.stderr)``, which takes None for "stdout": the usage went to stdout, into
whatever reads it (``tidings status --json 2>&- | jq`` read a usage for a report)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


def _run_closed(tmp_path: pathlib.Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = ["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m",
               "tidings.supervisor.cli", *argv]
    return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          text=True, timeout=60, cwd=tmp_path, check=False)


@pytest.mark.parametrize("argv", [
    [],  # no command: the help, on stderr
    ["nope"],  # argparse's invalid choice
    ["status", "--bogus"],  # a command's parser's error
    ["status", "--limit", "x"],  # a type's refusal
    ["status", "--db", "missing.db"],  # the command's own refusal
    ["status", "--db", "missing.db", "id", "--session", "s"],  # the command's parser.error
    ["serve", "--config", "missing.toml"],  # serve's refusal of its configuration
])
def test_a_refused_line_with_stderr_closed_prints_nothing_on_stdout(
        tmp_path: pathlib.Path, argv: list[str]) -> None:
    done = _run_closed(tmp_path, *argv)
    assert (done.returncode, done.stdout) == (2, "")


def test_help_asked_for_still_goes_to_stdout(tmp_path: pathlib.Path) -> None:
    done = _run_closed(tmp_path, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: tidings")


@pytest.mark.parametrize("writer", ["process", "thread"])
@pytest.mark.parametrize("redirect", [
    pytest.param("2>&-", id="closed"),
    pytest.param("2>/dev/full", id="full", marks=pytest.mark.skipif(
        not os.path.exists("/dev/full"), reason="no /dev/full")),
])
async def test_serve_with_the_writer_process_serves_and_stops_as_ever(
        tmp_path: pathlib.Path, redirect: str, writer: str) -> None:
    """Descriptor 2 left free was taken by the next one opened (trio's epoll), and the writer
    process, which takes its stderr for its stdout (``dup2(2, 1)``), found none there and
    could not start: ``tidings serve --writer process 2>&-`` ended at once, exit 1, saying
    nothing (it could not). It serves now, and a stop is exit 0. The README holds the same
    for a stderr it cannot write (``2>/dev/full``), with either writer: the log is lost,
    nothing else changes."""
    import fcntl
    import signal

    import trio

    # Told (SIGIO, by the kernel's directory notification) when a file is made in the folder:
    # the token file is made once the database and its writer are open. Ignored outside the
    # receiver: one it still holds at its end is raised again, and SIGIO's default ends us.
    ignored = signal.signal(signal.SIGIO, signal.SIG_IGN)
    try:
        with trio.open_signal_receiver(signal.SIGIO) as notified:
            folder = os.open(tmp_path, os.O_RDONLY)
            try:
                fcntl.fcntl(folder, fcntl.F_NOTIFY, fcntl.DN_CREATE | fcntl.DN_MULTISHOT)
                process = await trio.lowlevel.open_process(
                    ["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m",
                     "tidings.supervisor.cli", "serve", "--port", "0", "--writer", writer],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd=tmp_path)
                try:
                    with trio.fail_after(120):
                        async with trio.open_nursery() as nursery:
                            async def ended() -> None:
                                await process.wait()
                                nursery.cancel_scope.cancel()

                            nursery.start_soon(ended)
                            async for _ in notified:
                                if (tmp_path / "tidings.db.token").exists():
                                    nursery.cancel_scope.cancel()
                                    break
                        assert process.returncode is None, f"exit {process.returncode}"
                        process.send_signal(signal.SIGTERM)
                        assert await process.wait() == 0
                finally:
                    if process.returncode is None:
                        process.kill()
                        with trio.CancelScope(shield=True):
                            await process.wait()
            finally:
                os.close(folder)
    finally:
        signal.signal(signal.SIGIO, ignored)
    assert process.stdout is not None
    assert await process.stdout.receive_some() == b""  # nothing said on stdout instead
