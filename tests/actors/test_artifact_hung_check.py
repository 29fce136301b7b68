"""A path send's checks (resolving, stat) run in a worker thread: a cancel must not wait for a
file system that hangs (a dead network mount) in them (DESIGN.md "Artifacts")."""

from __future__ import annotations

import functools
import pathlib
import threading

import trio

from tidings.testing import MemoryRoute

HUNG = "hung.png"


async def test_a_cancelled_send_does_not_wait_for_a_hung_path_check(
        rt, workspace, monkeypatch) -> None:
    """The thread was not abandoned on a cancel, so a turn cancelled (a stop, a /clear, a
    turn timeout) while its send stat'ed a file on a hung mount stayed until the file system
    answered, if ever. The check only reads and its result is dropped: abandoned, the send
    ends at the cancel, and the turn's next send goes on as if it had not been made."""
    entered, release = threading.Event(), threading.Event()
    finished = threading.Event()
    resolve = pathlib.Path.resolve

    def hanging_resolve(self, strict=False):
        if self.name == HUNG:  # a file system that does not answer (bounded: not a test hang)
            entered.set()
            release.wait(10)
            finished.set()
        return resolve(self, strict=strict)

    monkeypatch.setattr(pathlib.Path, "resolve", hanging_resolve)
    (workspace / HUNG).write_bytes(b"\x89PNG")
    (workspace / "notes.txt").write_text("mine")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file"})
    rt.router.bind(session_id, route)
    try:
        with trio.fail_after(30):  # hang guard (a real clock: trio's default here)
            async with rt.open_turn(session_id) as ctx:
                with trio.CancelScope() as scope:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(functools.partial(
                            ctx.output.send_image, HUNG, history_policy="transient"))
                        await trio.to_thread.run_sync(entered.wait, 10)
                        assert entered.is_set()
                        scope.cancel()
                assert scope.cancelled_caught
                assert not finished.is_set(), "the cancelled send waited for the check"
                # The abandoned thread holds a token of the runtime's own path-check limiter
                # until the file system answers, not one of trio's default limiter, which the
                # rest of the process shares (40 hung checks left it no thread at all).
                assert trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0
                assert rt.path_checks.borrowed_tokens == 1
                assert await rt.deliveries(session_id) == []
                notes = await ctx.output.send_file("notes.txt", history_policy="transient")
            assert await notes.wait() == "delivered"
    finally:
        release.set()
    assert [o.blocks[0].name for o in route.delivered] == ["notes.txt"]
