"""Routes that misbehave: odd errors from ``deliver()``, odd attributes, rebinding mid-delivery."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


class _Unprintable(Exception):
    """An error whose ``str()`` itself raises (a broken ``__str__`` in a platform library)."""

    def __str__(self) -> str:
        raise RuntimeError("no text for this error")


async def _bound(rt, route):
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    return session_id


@pytest.mark.parametrize(("error", "recorded"), [
    pytest.param(_Unprintable(), "_Unprintable: <str() raised RuntimeError>", id="str-raises"),
    # Bytes a platform library decoded with ``surrogateescape`` (a file name, a process's
    # output) reach an error's text as lone surrogates, which SQLite cannot store: recording
    # ``failed`` with them raised, crashed the session's lane and left the delivery
    # ``unknown`` ("the session route crashed"), as if it might have been sent.
    pytest.param(ValueError(b"cannot open \xff.png".decode("utf-8", "surrogateescape")),
                 "ValueError: cannot open \\udcff.png", id="lone-surrogate"),
])
async def test_an_odd_error_still_makes_the_delivery_failed(rt, error, recorded) -> None:
    session_id = await _bound(rt, MemoryRoute(fail=error))
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x")
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "failed"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.status, status.attempts, status.last_error) == ("failed", 1, recorded)


class _RaisingAttributes:
    """A route whose ``capabilities`` or ``ack_window`` property raises (or whose capabilities
    iterable fails while it is read)."""

    def __init__(self, broken: str) -> None:
        self.broken = broken

    @property
    def capabilities(self):
        if self.broken == "capabilities":
            raise RuntimeError("the platform client is not configured")
        if self.broken == "capabilities_iteration":
            return _failing_iteration()
        return None

    @property
    def ack_window(self):
        if self.broken == "ack_window":
            raise KeyError("ack_window")
        return None

    async def deliver(self, outbound) -> None:
        pass


def _failing_iteration():
    yield "image"
    raise ValueError("lost the platform's list")


@pytest.mark.parametrize(("broken", "field"), [("capabilities", "capabilities"),
                                               ("capabilities_iteration", "capabilities"),
                                               ("ack_window", "ack_window")])
async def test_bind_refuses_a_route_whose_attribute_raises_by_name(rt, broken, field) -> None:
    """bind() refuses a route that breaks its attributes with ValidationError naming the
    attribute (its docstring), whatever the attribute raised; the live route stays."""
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    rt.router.bind(session_id, live)
    with pytest.raises(ValidationError) as caught:
        rt.router.bind(session_id, _RaisingAttributes(broken))
    assert caught.value.field == field
    assert rt.router.binding(session_id).route is live


class _NurseryRoute:
    """A route that sends through a nursery of its own: trio wraps what its tasks raise in an
    ExceptionGroup (strict exception groups)."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = errors

    async def deliver(self, outbound) -> None:
        async def part(error: Exception) -> None:
            raise error

        async with trio.open_nursery() as nursery:
            for error in self.errors:
                nursery.start_soon(part, error)


async def test_last_error_of_a_route_that_fails_in_its_own_nursery_says_what_failed(rt) -> None:
    """A failure inside the route's own nursery arrives as an ExceptionGroup: the delivery is
    failed, and last_error says what failed, not only 'Exceptions from Trio nursery'."""
    one = await _bound(rt, _NurseryRoute(ConnectionError("platform down")))
    two = await _bound(rt, _NurseryRoute(ConnectionError("upload refused"),
                                         TimeoutError("caption timed out")))
    handles = []
    for session_id in (one, two):
        async with rt.open_turn(session_id) as ctx:
            handles.append(await ctx.output.send_text("x"))
    with trio.fail_after(30):  # hang guard
        assert [await handle.wait() for handle in handles] == ["failed", "failed"]
    first, second = [await rt.delivery_status(handle.delivery_id) for handle in handles]
    assert (first.attempts, first.last_error) == (1, "ConnectionError: platform down")
    assert "ConnectionError: upload refused" in second.last_error
    assert "TimeoutError: caption timed out" in second.last_error


class _Interrupt(BaseException):
    """What a Ctrl-C is to a route: a ``BaseException`` that is not an ``Exception``."""


class _InterruptingRoute:
    async def deliver(self, outbound) -> None:
        raise _Interrupt("stop everything")


async def test_an_interrupt_from_deliver_while_a_turn_is_open_ends_the_runtime(
        db_path, workspace) -> None:
    """A ``BaseException`` that is not an ``Exception`` from ``deliver()`` is no delivery
    failure: it goes through the runtime to the host. A turn still open meanwhile records its
    end in a shielded write on the way out; the writer was cancelled with everything else, so
    that write is answered (the store is closed) instead of waiting forever for a writer that
    will not run again, and ``open_runtime`` raises the interrupt."""
    import tidings

    async def run() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await _bound(rt, _InterruptingRoute())
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("x")
                await trio.sleep_forever()  # the interrupt ends it

    with trio.fail_after(30):  # hang guard
        with pytest.raises(_Interrupt):
            await run()
