"""SIGTERM / SIGINT / SIGHUP for ``tidings serve``: the first asks for a graceful stop, the
second for an immediate one.

SIGHUP is what a closed terminal (or a lost ssh session) sends: left to its default it killed
the server outright, with no grace for running turns. It is watched only when it is not
ignored already: ``nohup tidings serve`` (SIGHUP ignored) means "keep running when the terminal
goes", and watching it would undo that.

:class:`StopControl` is the seam: the signal watcher calls :meth:`StopControl.request`, and so
can a test or an embedding host, without signals.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

from tidings.supervisor._log import field

__all__ = ["StopControl", "stop_signals", "watch_signals"]

log = logging.getLogger("tidings.serve")


class StopControl:
    """Two events: ``graceful`` (set by the first request) and ``immediate`` (the second).

    :meth:`on_immediate` callbacks run (synchronously) when the second request comes: they
    reach waits that no task watching ``immediate`` is left to cut, such as the runtime's
    own exit waiting for its lanes.
    """

    def __init__(self) -> None:
        self.graceful = trio.Event()
        self.immediate = trio.Event()
        self.requests = 0
        self._callbacks: list[Callable[[], None]] = []

    def request(self, why: str = "requested") -> None:
        """Ask to stop; a second request asks to stop at once. Never blocks."""
        self.requests += 1
        if self.requests == 1:
            log.info("event=stop_requested signal=%s mode=graceful", field(why))
            self.graceful.set()
        else:
            log.warning("event=stop_requested signal=%s mode=immediate", field(why))
            self.graceful.set()
            if not self.immediate.is_set():
                self.immediate.set()
                for callback in list(self._callbacks):
                    callback()

    @contextmanager
    def on_immediate(self, callback: Callable[[], None]) -> Iterator[None]:
        """Call *callback* (sync, must not raise) on the second request while inside this
        context; at once if it came already."""
        if self.immediate.is_set():
            callback()
        self._callbacks.append(callback)
        try:
            yield
        finally:
            self._callbacks.remove(callback)


def stop_signals() -> list[signal.Signals]:
    """The signals that stop ``tidings serve``: SIGTERM, SIGINT, and SIGHUP where the platform
    has it and it is not ignored (``nohup``)."""
    stops = [signal.SIGTERM, signal.SIGINT]
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) != signal.SIG_IGN:
        stops.append(hangup)
    return stops


async def watch_signals(control: StopControl, *,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Turn each of the :func:`stop_signals` into :meth:`StopControl.request` until cancelled
    (main thread only; while it runs, Ctrl-C does not raise ``KeyboardInterrupt``), then put
    their handlers back as they were.

    Every signal received counts: ``trio.open_signal_receiver`` keeps one of a signal not yet
    taken, so a second Ctrl-C (or SIGTERM, SIGHUP) that came while the event loop was busy
    (importing a slow agent, say) was lost, and the stop was the graceful one after a whole
    start, not the immediate one a second signal asks for. The handler hands each one to the
    loop (``run_sync_soon``, signal-safe), none merged. (The kernel, and Python's own C
    handler, still merge a signal sent again before the first was received at all.)"""
    token = trio.lowlevel.current_trio_token()

    def handler(signum: int, frame: object) -> None:
        token.run_sync_soon(control.request, signal.Signals(signum).name)

    before: dict[signal.Signals, Any] = {}
    try:
        for signum in stop_signals():
            before[signum] = signal.signal(signum, handler)
        task_status.started()
        await trio.sleep_forever()
    finally:
        for signum, handled in before.items():
            signal.signal(signum, handled)
