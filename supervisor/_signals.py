"""SIGTERM / SIGINT for ``tidings serve``: the first asks for a graceful stop, the second for
an immediate one.

:class:`StopControl` is the seam: the signal watcher calls :meth:`StopControl.request`, and so
can a test or an embedding host, without signals.
"""

from __future__ import annotations

import logging
import signal

import trio

from tidings.supervisor._log import field

__all__ = ["StopControl", "watch_signals"]

log = logging.getLogger("tidings.serve")


class StopControl:
    """Two events: ``graceful`` (set by the first request) and ``immediate`` (the second)."""

    def __init__(self) -> None:
        self.graceful = trio.Event()
        self.immediate = trio.Event()
        self.requests = 0

    def request(self, why: str = "requested") -> None:
        """Ask to stop; a second request asks to stop at once. Never blocks."""
        self.requests += 1
        if self.requests == 1:
            log.info("event=stop_requested signal=%s mode=graceful", field(why))
            self.graceful.set()
        else:
            log.warning("event=stop_requested signal=%s mode=immediate", field(why))
            self.graceful.set()
            self.immediate.set()


async def watch_signals(control: StopControl, *,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Turn SIGTERM / SIGINT into :meth:`StopControl.request` until cancelled (main thread
    only; while it runs, Ctrl-C does not raise ``KeyboardInterrupt``)."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            control.request(signal.Signals(signum).name)
