"""SIGTERM / SIGINT / SIGHUP for the commands: ``tidings serve``'s first asks for a graceful
stop, the second for an immediate one; they end ``tidings chat`` as a cancel, and cut
``tidings prune`` between two of its statements, each with its exit code.

SIGHUP is what a closed terminal (or a lost ssh session) sends: left to its default it killed
the server outright, with no grace for running turns. It is watched only when it is not
ignored already: ``nohup tidings serve`` (SIGHUP ignored) means "keep running when the terminal
goes", and watching it would undo that.

:class:`StopControl` is the seam: the signal watcher calls :meth:`StopControl.request`, and so
can a test or an embedding host, without signals. :func:`ending_signals` picks the signals a
command may take as its own (those with their default action); :func:`raising_signals` turns
them into :class:`Signalled` for a command that blocks, as Ctrl-C is ``KeyboardInterrupt``.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import trio

from tidings.supervisor._log import field

__all__ = ["ENDING", "Signalled", "StopControl", "ending_signals", "raising_signals",
           "stop_signals", "watch_signals"]

log = logging.getLogger("tidings.serve")

ENDING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                if hasattr(signal, name))
"""The signals that end a command before its end (see :func:`ending_signals`): Ctrl-C,
SIGTERM, and SIGHUP (its terminal closed, an ssh session lost), which end the chat as a cancel
as ``--local`` and ``serve`` stop on it (SIGHUP had killed it by its default action, with no
close frame and a terminal left in readline's modes), and cut ``tidings prune`` as Ctrl-C
does."""


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


def ending_signals(*signums: int) -> dict[int, int]:
    """Of *signums* (SIGINT, SIGTERM, SIGHUP), those that end the chat as a cancel
    (:func:`~tidings.supervisor._chat_ws.until_signalled`; ``tidings prune`` too, see
    :func:`raising_signals`), each with its exit code, 128 + the signal (Ctrl-C 130, SIGTERM
    143, SIGHUP 129): SIGINT when it has Python's default handler, SIGTERM and SIGHUP when they
    have their default action, which killed the chat outright (``kill PID``, ``timeout 600
    tidings chat``; a closed terminal window or a lost ssh session, SIGHUP): one typed into
    on a terminal left it in readline's modes, no echo, and ``--local``'s runtime did not
    close. One ignored (a background job of a shell without job control, ``nohup``) or
    handled by the host program is left so; from a thread other than the main one, which
    alone gets signals, none."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    default = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    if hasattr(signal, "SIGHUP"):  # (not on Windows)
        default[signal.SIGHUP] = signal.SIG_DFL
    return {signum: 128 + signum for signum in signums
            if signal.getsignal(signum) == default[signum]}


class Signalled(BaseException):
    """A signal of :func:`raising_signals` came: what Ctrl-C's ``KeyboardInterrupt`` is to
    SIGINT, for SIGTERM and SIGHUP (a ``BaseException`` too, so that no ``except Exception``
    takes it for a failure). *signum* is the signal, *exit_code* the command's exit code."""

    def __init__(self, signum: int, exit_code: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = exit_code


@contextmanager
def raising_signals(signals: Mapping[int, int]) -> Iterator[None]:
    """While inside, the first of *signals* (signal to exit code: :func:`ending_signals`)
    raises :class:`Signalled` in the main thread, between two bytecodes as Ctrl-C raises
    ``KeyboardInterrupt``, so a command that blocks (``tidings prune``) unwinds (a transaction
    rolled back, a lock given back) and says what it did instead of dying on the spot; the
    handlers are put back on the way out. A signal after the first, while it unwinds, is let
    go: GNU ``timeout`` sends its SIGTERM to the command and then to its process group, and
    the second must not cut the rollback the first started. For a command in ``trio.run``,
    :func:`~tidings.supervisor._chat_ws.until_signalled` instead."""
    came: list[int] = []

    def handler(signum: int, frame: object) -> None:
        came.append(signum)
        if len(came) == 1:
            raise Signalled(signum, signals[signum])

    before: dict[int, Any] = {}
    try:
        for signum in signals:
            before[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, handled in before.items():
            signal.signal(signum, handled)
