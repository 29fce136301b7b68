"""Reading a child process's pipes in tests: all of one at once, or into a buffer from a task
of the test's nursery while the test talks to the child."""

from __future__ import annotations

import trio

__all__ = ["collect_into", "read_to_end"]


async def read_to_end(stream: trio.abc.ReceiveStream | None) -> bytes:
    """Everything *stream* (a child process's pipe) gives until it ends."""
    assert stream is not None
    data = b""
    async for chunk in stream:
        data += chunk
    return data


async def collect_into(stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
    """Append what *stream* gives to *into* as it comes, until it ends (``start_soon`` it:
    the test reads *into* meanwhile, and all of it once the child has exited)."""
    assert stream is not None
    async for chunk in stream:
        into += chunk
