"""``tidings chat --url`` input (:func:`input_lines`): a closed stdin and a pipe carrying a
very long line."""

from __future__ import annotations

import os
import socket
import sys

import pytest
import trio
import trio.testing

from tidings.supervisor._chat_input import input_lines


async def test_a_closed_stdin_is_the_end_of_input(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``tidings chat <&-``: Python sets sys.stdin to None; the chat ended with a traceback
    # (AttributeError from the line reader) instead of as at the end of input.
    monkeypatch.setattr(sys, "stdin", None)
    with trio.fail_after(10):  # a guard against hanging, not a wait
        assert [line async for line in input_lines()] == []


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_SETPIPE_SZ"),
                    reason="sizes the pipe (Linux)")
async def test_a_very_long_line_is_read_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each read appended to the whole pending line and split it again: a 16 MiB line coming
    # 4 KiB a read took minutes (quadratic), where the thread reader took a fraction of a second.
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 4096)  # so each read gives at most 4 KiB
    size = 16 << 20
    writer = trio.lowlevel.FdStream(write_end)

    async def write() -> None:
        async with writer:
            await writer.send_all(b"first\n" + b"x" * size + b"\nlast")

    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            with trio.fail_after(10):  # linear: well under a second
                lines = [line async for line in input_lines()]
    assert [len(line) for line in lines] == [6, size + 1, 4]
    assert lines[0] == "first\n"
    assert lines[2] == "last"
    assert lines[1] == "x" * size + "\n"


async def test_reading_a_socket_stdin_leaves_a_stdout_on_the_same_socket_blocking(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Under socat, inetd or systemd socket activation stdin and stdout are one socket, and
    # O_NONBLOCK belongs to that open socket, not to a descriptor: the reader made it
    # non-blocking, so stdout was too, and answers the peer did not read at once were lost
    # (the chat still exited 0). A blocking write sends all of it, however slow the peer.
    ours, peer = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    size = 4 << 20  # more than any socket buffer: a non-blocking write sends only part
    with ours, peer, open(os.dup(ours.fileno()), encoding="utf-8") as stdin, \
            open(os.dup(ours.fileno()), "wb", buffering=0) as stdout:  # noqa: ASYNC230
        monkeypatch.setattr(sys, "stdin", stdin)
        lines: list[str] = []
        received = 0

        async def read_input() -> None:
            lines.extend([line async for line in input_lines()])

        async def drain(tsock: trio.socket.SocketType) -> None:
            nonlocal received
            while received < size:
                received += len(await tsock.recv(65536))

        with trio.fail_after(10):  # a guard against hanging, not a wait
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_input)
                await trio.testing.wait_all_tasks_blocked()  # the reader waits for input
                tpeer = trio.socket.from_stdlib_socket(peer)
                nursery.start_soon(drain, tpeer)
                written = await trio.to_thread.run_sync(stdout.write, b"x" * size)
                assert written == size
                await tpeer.send(b"bye\n")
                tpeer.shutdown(socket.SHUT_WR)
        assert lines == ["bye\n"]
        assert received == size


async def test_lines_split_across_reads_bad_bytes_and_a_last_line_without_newline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    pieces = [b"caf\xc3", b"\xa9 ok\nbad \xff", b" byte\r\nlast line, no newline"]
    writer = trio.lowlevel.FdStream(write_end)
    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        lines: list[str] = []

        async def read_input() -> None:
            lines.extend([line async for line in input_lines()])

        with trio.fail_after(10):  # a guard against hanging, not a wait
            async with trio.open_nursery() as nursery, writer:
                nursery.start_soon(read_input)
                for piece in pieces:  # one read each: the reader takes it before the next
                    await trio.testing.wait_all_tasks_blocked()
                    await writer.send_all(piece)
    assert lines == ["café ok\n", "bad \udcff byte\r\n", "last line, no newline"]


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_SETPIPE_SZ"),
                    reason="sizes the pipe (Linux)")
async def test_a_line_over_the_limit_is_refused_and_dropped_without_being_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `cat bigfile.bin | tidings chat`: the reader held each line whole until its newline,
    # however long; past the server's frame limit it is now refused and its bytes dropped.
    import fcntl
    import tracemalloc

    from tidings.supervisor._chat_input import LineTooLong

    read_end, write_end = os.pipe()
    fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 65536)
    size = 16 << 20
    writer = trio.lowlevel.FdStream(write_end)
    asked = 0

    async def limit() -> int:
        nonlocal asked
        asked += 1
        return 100_000

    async def write() -> None:
        piece = b"y" * 65536  # written a piece at a time: only what the reader holds counts
        async with writer:
            await writer.send_all(b"short\n" + b"x" * 100_000 + b"\n")
            for _ in range(size // len(piece)):
                await writer.send_all(piece)
            await writer.send_all(b"\nafter\n")
            for _ in range(size // len(piece)):
                await writer.send_all(piece)

    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        tracemalloc.start()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                with trio.fail_after(20):  # a guard against hanging, not a wait
                    lines = [line async for line in input_lines(max_line_bytes=limit)]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert lines == ["short\n", "x" * 100_000 + "\n", LineTooLong(100_000), "after\n",
                     LineTooLong(100_000)]
    assert peak < 2 << 20  # the limit and a read or two, not the 16 MiB lines
    assert asked >= 2  # asked once for each line


async def test_a_regular_file_is_bounded_by_the_same_limit(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `tidings chat --url < big.bin`: a regular file is read by the terminal's stdin_lines,
    # which held each line whole, whatever the server's frame limit.
    from tidings.supervisor._chat_input import LineTooLong

    async def limit() -> int:
        return 100_000

    path = tmp_path / "big.bin"
    path.write_bytes(b"short\n" + b"x" * 300_000 + b"\nafter\n")
    with path.open(encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        with trio.fail_after(10):  # a guard against hanging, not a wait
            lines = [line async for line in input_lines(max_line_bytes=limit)]
    assert lines == ["short\n", LineTooLong(100_000), "after\n"]


async def test_a_piped_line_is_held_to_the_limit_as_the_terminal_reader_holds_a_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `producer | tidings chat --local` reads its pipe here, with a message text's cap, as
    # stdin_lines reads a file: the limit counts a line's text, its "\r\n" not included, and
    # every line over it is refused. Before, a line whose end came in the read that took it
    # over the limit was yielded whole (for the chat to send a text over the cap), and the
    # limit counted a "\r" that its "\n" had not followed yet.
    from tidings.supervisor._chat_input import LineTooLong

    async def limit() -> int:
        return 100_000

    read_end, write_end = os.pipe()
    pieces = [b"x" * 100_000 + b"\r", b"\n",  # the limit and a CRLF: taken
              b"y" * 70_000, b"y" * 30_001 + b"\n",  # one over, its end in the last read
              b"z" * 100_001 + b"\r\n",  # one over, and a CRLF
              b"after\n"]
    writer = trio.lowlevel.FdStream(write_end)
    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        lines: list[str | LineTooLong] = []

        async def read_input() -> None:
            lines.extend([line async for line in input_lines(max_line_bytes=limit)])

        with trio.fail_after(10):  # a guard against hanging, not a wait
            async with trio.open_nursery() as nursery, writer:
                nursery.start_soon(read_input)
                for piece in pieces:  # read whole before the next is written
                    await trio.testing.wait_all_tasks_blocked()
                    await writer.send_all(piece)
    assert lines == ["x" * 100_000 + "\r\n", LineTooLong(100_000), LineTooLong(100_000),
                     "after\n"]


async def test_a_piped_line_shorter_than_a_read_is_refused_over_the_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The README: a piped line over the server's max_frame_bytes is dropped as soon as that
    # many of its bytes are read, and `! not sent` adds "the rest of it is skipped". The limit
    # was asked only about a line longer than one read (64 KiB): under a smaller frame limit
    # a shorter line was yielded whole, refused without that, where stdin_lines (a file)
    # refused it as read.
    from tidings.supervisor._chat_input import LineTooLong

    async def limit() -> int:
        return 10

    read_end, write_end = os.pipe()
    os.write(write_end, b"0123456789\n0123456789\r\n0123456789a\nok\n")
    os.close(write_end)
    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        with trio.fail_after(10):  # a guard against hanging, not a wait
            lines = [line async for line in input_lines(max_line_bytes=limit)]
    assert lines == ["0123456789\n", "0123456789\r\n", LineTooLong(10), "ok\n"]
