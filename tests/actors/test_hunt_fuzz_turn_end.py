"""A send still checking its paths when its turn ends is refused, not written after the end
(README "Errors": ``RuntimeClosedError`` for a send from a turn that has ended; "Turns":
serial turns' history never interleaves)."""

from __future__ import annotations

import threading

import trio

from tidings.errors import RuntimeClosedError

from .conftest import rows


async def test_a_media_send_whose_turn_ends_while_its_path_resolves_writes_nothing(
        rt, workspace, db_path, monkeypatch) -> None:
    from tidings.actors import _sdk

    (workspace / "pic.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    started, go = threading.Event(), threading.Event()
    resolve_all = _sdk._resolve_all

    def gated(*args):  # the path check (in a worker thread) waits until the test says go
        started.set()
        go.wait(10)
        return resolve_all(*args)

    monkeypatch.setattr(_sdk, "_resolve_all", gated)
    outcome: dict[str, object] = {}
    done = trio.Event()

    async def send(ctx) -> None:
        try:
            outcome["handle"] = await ctx.output.send_image("pic.png", history_text="a chart")
        except RuntimeClosedError as exc:
            outcome["error"] = exc
        finally:
            done.set()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            async with rt.open_turn(session_id) as first:
                nursery.start_soon(send, first)
                await trio.to_thread.run_sync(started.wait, 10)
            # The first turn has ended (its end is recorded) while its send checks its path.
            async with rt.open_turn(session_id) as second:
                await second.output.send_text("the second turn speaks")
                go.set()
                await done.wait()
    assert isinstance(outcome.get("error"), RuntimeClosedError), outcome
    assert rows(db_path, "SELECT text FROM messages ORDER BY rowid") == [
        ("the second turn speaks",)]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(1,)]
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]
