"""The writer process's stderr, logged by its host: one record per line, in the host's log form.

The child's own failures reach the host as a last frame (``CRASHED``), but its interpreter may
write on stderr too: a Python warning, a ``sitecustomize`` or ``.pth`` print, a fatal error, a
faulthandler dump. Inherited, that stderr put those lines raw among the host's log lines, and
``tidings serve --log-json`` was then no longer one JSON object per line. The child's stderr
(and stdout) is a pipe instead, which :class:`StderrRelay` reads for as long as the writer
backend runs, logging each line on ``tidings.store`` (``event=writer_process_stderr``, the
line a JSON-quoted field: control characters escaped; undecodable bytes are lone surrogates,
which the log shows as the text ``\\udcff``).
"""

from __future__ import annotations

import json
import logging

import trio

from tidings.store._real_time import RealTimer

__all__ = ["LINE_LIMIT", "STDERR_GRACE", "StderrRelay"]

log = logging.getLogger("tidings.store")

LINE_LIMIT = 16 * 1024
"""Bytes of one record at most: a longer line (or output that never ends a line) is logged
in pieces of this size, so what the child writes never grows the host's memory."""

STDERR_GRACE = 2.0
"""Real seconds the host goes on reading once the child has exited. The pipe ends when the
child has, unless a process it started holds the pipe still: its end would never come. Real,
not trio's clock: under an autojump ``MockClock`` that grace passed the moment the loop was
idle, and what such a process wrote just after the child was dropped."""


class StderrRelay:
    """Logs the lines of the writer child's stderr (*stream*; *pid*, the child's, a field)."""

    def __init__(self, stream: trio.abc.ReceiveStream, pid: int) -> None:
        self._stream = stream
        self._pid = pid
        self._buffer = bytearray()
        # Shielded: the writer's cancellation (a crash, a stop) must not lose the lines the
        # child wrote just before; the relay ends at the pipe's end, or by child_exited.
        self._scope = trio.CancelScope(shield=True)
        self._timer: RealTimer | None = None  # the grace, once the child has exited
        self._ended = False

    async def run(self) -> None:
        """Log each line until the pipe ends (the child has exited), or :data:`STDERR_GRACE`
        after :meth:`child_exited`; a last line without a newline is logged too. Run it in the
        writer backend's nursery, beside the child, so the child never blocks on a full pipe."""
        try:
            with self._scope:
                while chunk := await self._stream.receive_some(1 << 16):
                    self._buffer += chunk
                    self._log_lines()
        finally:
            self._ended = True
            if self._timer is not None:  # no thread outlives the relay
                self._timer.close()
            if self._buffer:
                self._log(bytes(self._buffer))
                self._buffer.clear()

    def child_exited(self) -> None:
        """The child has exited, or will not be waited for (sync): read what is left in the
        pipe for at most :data:`STDERR_GRACE` more real seconds (a timer thread counts them,
        whatever trio's clock does, and cancels the read through the run's token; if no thread
        can start, trio's clock counts them: never a close that raises or waits for ever)."""
        if self._ended or self._timer is not None:
            return
        self._timer = RealTimer(self._scope, STDERR_GRACE)

    def _log_lines(self) -> None:
        buffer = self._buffer
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            self._log(bytes(buffer[start:end]))
            start = end + 1
        del buffer[:start]
        while len(buffer) >= LINE_LIMIT:  # a line too long for one record: its first part
            self._log(bytes(buffer[:LINE_LIMIT]))
            del buffer[:LINE_LIMIT]

    def _log(self, line: bytes) -> None:
        line = line.removesuffix(b"\r")
        if not line.strip():
            return
        for start in range(0, len(line), LINE_LIMIT):
            text = line[start:start + LINE_LIMIT].decode("utf-8", "surrogateescape")
            log.warning("event=writer_process_stderr pid=%d line=%s", self._pid,
                        json.dumps(text))

