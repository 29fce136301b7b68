"""What the writer process's interpreter writes on stderr is logged by its host, line by line.

The writer child (``writer="process"``, what ``tidings serve --writer process`` runs) inherited
its host's stderr. Its own failures reach the host as a last frame (``CRASHED``), but whatever
else its interpreter wrote there (a Python warning, a ``sitecustomize`` or ``.pth`` print, a
fatal error, a faulthandler dump) landed raw among the host's log lines: ``--log-json`` was no
longer one JSON object per line. The child's stderr (and stdout) is now a pipe the host reads
for as long as the writer runs, each line a record of ``tidings.store``
(``event=writer_process_stderr``), down to the last lines of a child that died.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

import pytest
import trio

from tidings.errors import StoreError
from tidings.store import Execute, open_store, prepare_store
from tidings.supervisor._logging import parse_fields

from ..real_time import fail_after_real

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the writer child's pipes")

_HOOK = """\
import os, sys, warnings
import tidings.store._writer_child as child

print("a banner printed as the interpreter starts")
_real = child.{name}

def _hooked(*args, **kwargs):
{body}
    return _real(*args, **kwargs)

child.{name} = _hooked
"""

_SAYS = """\
    sys.stderr.write("a line from the writer's interpreter\\n")
    warnings.warn("an old setting", UserWarning)
    sys.stderr.flush()
    sys.stderr.buffer.write(b"bad \\xff byte\\x1b[0m\\n")
    sys.stderr.buffer.flush()
    print("printed on stdout", flush=True)
"""


def _hooked(tmp_path, monkeypatch, name: str, body: str) -> None:
    """The writer child, started with the host's ``sys.path``, runs *body* (indented code)
    each time it calls *name*, before the real one."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_HOOK.format(name=name, body=body))
    monkeypatch.syspath_prepend(str(hooks))


async def _commit_in_a_writer_process(tmp_path, caplog, *, seconds: float = 30) -> None:
    """Log ``tidings`` from INFO, then open ``a.db`` with ``writer="process"``, commit one
    batch and close it, failing after ``seconds`` real seconds (the writer is a real child)."""
    caplog.set_level(logging.INFO, logger="tidings")
    with fail_after_real(seconds):
        async with open_store(tmp_path / "a.db", writer="process") as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT)")])


def _leaves(error: BaseException | None) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [] if error is None else [error]


def _relayed(caplog) -> list[str]:
    """The ``line`` of each ``writer_process_stderr`` record, checked for its form."""
    lines = []
    for record in caplog.records:
        if "writer_process_stderr" not in record.getMessage():
            continue
        assert record.name == "tidings.store"
        assert record.levelno == logging.WARNING
        fields = parse_fields(record.getMessage())
        assert fields is not None, record.getMessage()  # key=value throughout
        assert fields["event"] == "writer_process_stderr"
        assert int(fields["pid"]) > 0
        lines.append(fields["line"])
    return lines


async def test_what_the_writer_process_writes_on_stderr_is_logged_by_its_host(
        tmp_path, monkeypatch, capfd, caplog) -> None:
    _hooked(tmp_path, monkeypatch, "connect_writer", _SAYS)
    await _commit_in_a_writer_process(tmp_path, caplog)
    lines = _relayed(caplog)
    assert "a banner printed as the interpreter starts" in lines
    assert "a line from the writer's interpreter" in lines
    assert any(line.endswith("UserWarning: an old setting") for line in lines), lines
    assert "bad \udcff byte\x1b[0m" in lines  # undecodable bytes and controls kept, escaped
    assert "printed on stdout" in lines
    out, err = capfd.readouterr()
    for text in ("banner", "interpreter", "old setting", "bad", "printed"):
        assert text not in err, err
        assert text not in out, out


async def test_the_last_lines_of_a_writer_process_that_died_are_logged(
        tmp_path, monkeypatch, capfd, caplog) -> None:
    """A child that dies without a word on its answers pipe (``os._exit``: a fatal error, a
    segfault) wrote why on stderr just before: those lines, down to one with no newline, are
    logged, though the writer fails at once."""
    _hooked(tmp_path, monkeypatch, "execute_batch",
            "    sys.stderr.write('Fatal Python error: last words\\nno newline at the end')\n"
            "    sys.stderr.flush()\n"
            "    os._exit(3)\n")
    raised: Exception | None = None
    try:
        await _commit_in_a_writer_process(tmp_path, caplog)
    except Exception as exc:  # noqa: BLE001 - a StoreError, or a group holding them
        raised = exc
    assert any(isinstance(leaf, StoreError) and "writer process" in str(leaf)
               for leaf in _leaves(raised)), repr(raised)
    lines = _relayed(caplog)
    assert lines[-2:] == ["Fatal Python error: last words", "no newline at the end"], lines
    assert "last words" not in capfd.readouterr().err


async def test_a_writer_process_that_writes_more_than_a_pipe_holds_does_not_block(
        tmp_path, monkeypatch, caplog) -> None:
    """Before it says ready and while it commits, the child writes more than the pipe holds
    (64 KiB on Linux): the host reads it as it comes, so the child never waits on it."""
    _hooked(tmp_path, monkeypatch, "connect_writer",
            "    for n in range(3000):\n"
            "        sys.stderr.write(f'line {n} ' + 'x' * 100 + '\\n')\n"
            "    sys.stderr.write('y' * 200_000 + '\\n')\n"
            "    sys.stderr.flush()\n")
    from tidings.store import _writer_stderr

    await _commit_in_a_writer_process(tmp_path, caplog, seconds=60)
    lines = _relayed(caplog)
    numbered = [line for line in lines if line.startswith("line ")]
    assert numbered == [f"line {n} " + "x" * 100 for n in range(3000)]
    long_line = [line for line in lines if line.startswith("y")]
    # a line longer than one record takes is cut in records of at most LINE_LIMIT bytes
    assert "".join(long_line) == "y" * 200_000
    assert all(len(piece) <= _writer_stderr.LINE_LIMIT for piece in long_line)


async def test_a_process_the_writer_started_keeps_no_stop_waiting(
        tmp_path, monkeypatch, caplog) -> None:
    """A process the child started (a hook's helper) holds the pipe's write end after the
    child is gone, so its end never comes: the host stops reading ``STDERR_GRACE`` after the
    child exited, and what was written until then is logged."""
    pid_file = tmp_path / "helper.pid"
    _hooked(tmp_path, monkeypatch, "connect_writer",
            "    import subprocess\n"
            "    helper = subprocess.Popen(\n"
            "        [sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            f"    open({str(pid_file)!r}, 'w').write(str(helper.pid))\n"
            "    sys.stderr.write('started a helper\\n')\n"
            "    sys.stderr.flush()\n")
    from tidings.store import _writer_stderr

    monkeypatch.setattr(_writer_stderr, "STDERR_GRACE", 0.2)
    try:
        await _commit_in_a_writer_process(tmp_path, caplog)
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert "started a helper" in _relayed(caplog)


@pytest.mark.parametrize("failing", ["pipe 1", "pipe 2", "pipe 3", "spawn"])
async def test_a_writer_child_that_cannot_be_spawned_leaves_no_descriptor_open(
        tmp_path, monkeypatch, failing) -> None:
    pipe, popen = os.pipe, subprocess.Popen
    pipes = 0

    def counted_pipe() -> tuple[int, int]:  # the process is out of descriptors (EMFILE)
        nonlocal pipes
        pipes += 1
        if failing == f"pipe {pipes}":
            raise OSError(24, "Too many open files")
        return pipe()

    def failing_popen(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    await prepare_store(tmp_path / "a.db")  # its files made, so only the writer opens more
    before = sorted(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "pipe", counted_pipe)
    if failing == "spawn":
        monkeypatch.setattr(subprocess, "Popen", failing_popen)
    with pytest.raises(OSError, match=r"Too many open files|Cannot allocate memory"):
        async with open_store(tmp_path / "a.db", writer="process"):
            pass
    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(subprocess, "Popen", popen)
    assert pipes == (3 if failing == "spawn" else int(failing[-1]))
    assert sorted(os.listdir("/proc/self/fd")) == before


async def test_a_writer_process_leaves_no_descriptor_open(tmp_path) -> None:
    await prepare_store(tmp_path / "a.db")
    before = sorted(os.listdir("/proc/self/fd"))
    with fail_after_real(30):
        for _ in range(2):
            async with open_store(tmp_path / "a.db", writer="process") as store:
                await store.commit([Execute("CREATE TABLE IF NOT EXISTS kv (k TEXT)")])
            await trio.lowlevel.checkpoint()
    assert sorted(os.listdir("/proc/self/fd")) == before
