"""A runtime in a trio thread of its own, for sync tests that want one runtime across many
examples (hypothesis), instead of a ``trio.run`` per example.

::

    with RuntimeThread(db_path, workspace) as thread:
        session_id = thread.run(thread.rt.create_session)
        gateway = thread.enter(GatewayChannel(thread.rt, config).serving())

        @given(...)
        def example(...):
            thread.run(some_async_check, ...)

Everything runs in the thread's trio loop: :meth:`RuntimeThread.run` calls an async function
there and returns its result (or raises its exception) in the caller's thread;
:meth:`RuntimeThread.enter` enters an async context manager there that lasts until the thread
stops. Leaving the ``with`` block stops the loop (exiting those contexts, then the runtime) and
re-raises what the loop raised, if anything. A stopped one may be entered again (a new loop, the
runtime reopened); entering one that runs raises ``RuntimeError``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from tidings.actors import Runtime, open_runtime

__all__ = ["RuntimeThread"]

T = TypeVar("T")


class RuntimeThread:
    """See the module docstring. ``options`` go to :func:`tidings.open_runtime`."""

    def __init__(self, db_path: str | os.PathLike[str], workspace: str | os.PathLike[str],
                 **options: Any) -> None:
        self._args = (db_path, workspace)
        self._options = options
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._requests: trio.MemorySendChannel[_Enter] | None = None
        self.rt: Runtime | None = None

    def __enter__(self) -> RuntimeThread:
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("RuntimeThread: already running; leave its with block first")
        # A fresh start (one thread may be entered again once it stopped).
        self._ready = threading.Event()
        self._error = self._token = self._requests = self.rt = None
        self._thread = threading.Thread(target=self._main, name="tidings-runtime-thread",
                                        daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None and self._requests is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._requests.close, trio_token=self._token)
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error

    def run(self, async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await async_fn(*args)`` in the runtime's loop; return (or raise) its outcome.
        Outside the ``with`` block (before it, or after it ended), ``RuntimeError``."""
        return trio.from_thread.run(async_fn, *args, trio_token=self._running())

    def _running(self) -> trio.lowlevel.TrioToken:
        """The loop's token, if the loop runs. Said by a ``RuntimeError``, not an ``assert``
        (gone under ``python -O``: the call then ran with no token, and trio's error spoke of
        threads it did not create) or a bare ``trio.RunFinishedError`` after the block."""
        if self._token is None or self._thread is None or not self._thread.is_alive():
            raise RuntimeError("RuntimeThread: not running; call run() and enter() inside its "
                               "with block")
        return self._token

    def enter(self, context: contextlib.AbstractAsyncContextManager[T]) -> T:
        """Enter *context* in the runtime's loop until the thread stops; return its value.

        It is entered by the task that holds the runtime (a context's cancel scopes and
        nurseries must be entered and exited by one task), in the order of the calls. If the
        loop stops first (a ``BaseException`` from the context, the runtime giving up), it
        raises ``RuntimeError``; leaving the ``with`` block raises what stopped it."""
        request = _Enter(context)

        self._running()

        async def ask() -> None:
            assert self._requests is not None  # set with the token, which _running() checked
            await self._requests.send(request)
            with trio.CancelScope(shield=True):  # the serving task sets it, whatever happens
                await request.done.wait()

        with contextlib.suppress(trio.Cancelled, trio.RunFinishedError):  # the loop ended
            self.run(ask)
        if request.error is not None:
            raise request.error
        if not request.entered:
            raise RuntimeError("RuntimeThread: the loop stopped before the context was entered")
        return request.value  # type: ignore[no-any-return]

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self._error = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        send, receive = trio.open_memory_channel[_Enter](0)
        async with contextlib.AsyncExitStack() as stack, receive:
            self.rt = await stack.enter_async_context(
                open_runtime(*self._args, **self._options))
            self._requests = send
            self._token = trio.lowlevel.current_trio_token()
            self._ready.set()
            async for request in receive:  # until __exit__ closes the send side
                try:
                    request.value = await stack.enter_async_context(request.context)
                    request.entered = True
                except Exception as exc:  # noqa: BLE001 - raised in the caller's thread
                    request.error = exc
                finally:
                    request.done.set()


class _Enter:
    """A request to enter an async context manager in the serving task."""

    def __init__(self, context: contextlib.AbstractAsyncContextManager[Any]) -> None:
        self.context = context
        self.value: Any = None
        self.entered = False
        self.error: Exception | None = None
        self.done = trio.Event()
