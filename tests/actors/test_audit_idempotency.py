"""Audit of issue 3's idempotency sentence: "repeating a key returns the original delivery and
creates or resets nothing", in the combinations the older tests leave out (another kind,
other content, another source, an unrouted, invisible, unknown or in-flight original, another
session, a parallel turn)."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.testing import MemoryRoute

from .conftest import rows, stalled_session


def _counts(db_path) -> tuple:
    """What a repeat must not add to: outbox rows, work items, history rows, artifacts, and
    ``delivery.queued`` events."""
    counts = [rows(db_path, f"SELECT count(*) FROM {table}")[0][0]
              for table in ("outbox", "work_items", "messages", "artifacts")]
    [(queued,)] = rows(db_path, "SELECT count(*) FROM events WHERE type = 'delivery.queued'")
    return (*counts, queued)


@pytest.mark.parametrize("repeat", ["progress", "notice", "send_notice", "send_control",
                                    "media_missing", "media_existing", "invisible",
                                    "model_hidden"])
async def test_a_repeated_key_with_other_content_or_kind_returns_the_original(
        rt, db_path, workspace, autojump_clock, repeat) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "control"})
    rt.router.bind(session_id, route)
    repeats = {
        "progress": lambda out: out.progress("other", idempotency_key="k"),
        "notice": lambda out: out.notice("other", idempotency_key="k"),
        "send_notice": lambda out: out.send(["a", "b"], kind="notice", idempotency_key="k"),
        "send_control": lambda out: out.send({"type": "control", "action": "go"},
                                             history_text="pressed", idempotency_key="k"),
        "media_missing": lambda out: out.send_image("gone.png", history_text="an image",
                                                    idempotency_key="k"),
        "media_existing": lambda out: out.send_image("chart.png", history_text="an image",
                                                     idempotency_key="k"),
        "invisible": lambda out: out.send_text("other", visible=False, idempotency_key="k"),
        "model_hidden": lambda out: out.send_text("other", history_policy="model_hidden",
                                                  idempotency_key="k"),
    }
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("original", idempotency_key="k")
            assert await first.wait() == "delivered"
            before = _counts(db_path)
            again = await repeats[repeat](ctx.output)
            assert (again.delivery_id, again.kind, again.seq) == (
                first.delivery_id, "message", first.seq)
            assert await again.wait() == "delivered"
            after = await ctx.output.send_text("after")  # anything re-queued goes before it
            assert await after.wait() == "delivered"
    assert before == (1, 1, 1, 0, 1)
    assert _counts(db_path)[3] == 0  # no artifact record for the repeat's media
    assert route.texts() == ["original", "after"]
    [message, _after] = await rt.history(session_id)
    assert (message.text, message.policy, message.visible, message.delivery_id) == (
        "original", "persist", True, first.delivery_id)
    status = await rt.delivery_status(first.delivery_id)
    assert (status.status, status.attempts) == ("sent", 1)


async def test_a_repeated_key_of_a_transient_progress_writes_no_history(
        rt, db_path, autojump_clock) -> None:
    """The original was a progress note (transient); the repeat asks for a persisted message
    in a serial output turn: it gets the progress note back, and no history row appears."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.progress("working", idempotency_key="k")
            again = await ctx.output.send_text("the answer", history_policy="persist",
                                               idempotency_key="k")
        assert (again.delivery_id, again.kind) == (first.delivery_id, "progress")
        assert await again.wait() == "delivered"
    assert await rt.history(session_id) == []
    assert route.texts() == ["working"]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(1,)]


async def test_a_repeated_key_of_an_unrouted_delivery_does_not_requeue_it(
        rt, db_path, autojump_clock) -> None:
    """``unrouted`` is a terminal state a repeat must leave alone: binding a route and repeating
    the key neither sends the row nor moves it back to ``queued``."""
    session_id = await rt.create_session(channel="web")
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("nobody hears", idempotency_key="k")
        assert await first.wait() == "unrouted"
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            again = await ctx.output.send_text("nobody hears", idempotency_key="k")
            assert again.delivery_id == first.delivery_id
            assert await again.wait() == "unrouted"
            after = await ctx.output.send_text("after")
        assert await after.wait() == "delivered"
    assert route.texts() == ["after"]
    assert rows(db_path, "SELECT status, attempts FROM outbox WHERE delivery_id = ?",
                first.delivery_id) == [("unrouted", 0)]


async def test_a_repeated_key_of_an_invisible_delivery_never_reaches_a_route(
        rt, db_path, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("kept quiet", visible=False, idempotency_key="k")
            again = await ctx.output.send_text("kept quiet", idempotency_key="k")  # visible
            assert again.delivery_id == first.delivery_id
            assert await again.wait() == "delivered"
            after = await ctx.output.send_text("after")
        assert await after.wait() == "delivered"
    assert route.texts() == ["after"]
    assert rows(db_path, "SELECT status, attempts FROM outbox WHERE delivery_id = ?",
                first.delivery_id) == [("sent", 0)]


async def test_a_repeated_key_while_the_original_is_in_flight_sends_it_once(
        rt, db_path, autojump_clock) -> None:
    session_id, route = await stalled_session(rt)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("slow", idempotency_key="k")
            await route.wait_attempted(1)
            again = await ctx.output.send_text("slow", idempotency_key="k")
            assert again.delivery_id == first.delivery_id
            assert again.status == "scheduled"
        route.release()
        assert await again.wait() == "delivered"
        assert await first.wait() == "delivered"
    assert [o.delivery_id for o in route.attempted] == [first.delivery_id]
    assert rows(db_path, "SELECT status, attempts FROM outbox") == [("sent", 1)]


async def test_a_key_is_per_session(rt, autojump_clock) -> None:
    one = await rt.create_session(channel="web")
    two = await rt.create_session(channel="web")
    routes = {one: MemoryRoute(), two: MemoryRoute()}
    for session_id, route in routes.items():
        rt.router.bind(session_id, route)
    handles = []
    with trio.fail_after(30):  # hang guard
        for session_id in (one, two):
            async with rt.open_turn(session_id) as ctx:
                handles.append(await ctx.output.send_text(f"to {session_id}",
                                                          idempotency_key="k"))
        assert [await h.wait() for h in handles] == ["delivered", "delivered"]
    assert handles[0].delivery_id != handles[1].delivery_id
    assert [routes[one].texts(), routes[two].texts()] == [[f"to {one}"], [f"to {two}"]]


async def test_a_repeat_from_a_parallel_turn_returns_the_persisted_original(
        rt, db_path, autojump_clock) -> None:
    """A parallel turn's default is transient: repeating the key of a persisted message from it
    returns the message (not an error, not a second row). Asking it for history is refused
    before the key is looked up (policy comes before everything but the source type)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("kept", idempotency_key="k")
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            again = await ctx.output.send_text("kept", idempotency_key="k")
            with pytest.raises(RuntimeError, match="may not write session history"):
                await ctx.output.send_text("kept", history_policy="persist",
                                           idempotency_key="k")
        assert again.delivery_id == first.delivery_id
        assert await again.wait() == "delivered"
    assert route.texts() == ["kept"]
    assert [m.text for m in await rt.history(session_id)] == ["kept"]


async def test_a_repeated_key_of_an_unknown_row_after_a_restart_resets_nothing(
        db_path, workspace, autojump_clock) -> None:
    """The original was ``sending`` when its runtime stopped, so the next start made it
    ``unknown``; the host's retry with its key must get that row back as it is (``unknown``,
    one attempt), not a re-queued or resent one."""
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as first_rt:
            session_id, route = await stalled_session(first_rt)
            async with first_rt.open_turn(session_id) as ctx:
                first = await ctx.output.send_text("maybe sent", idempotency_key="k")
            await route.wait_attempted(1)
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            again_route = MemoryRoute()
            rt.router.bind(session_id, again_route)
            async with rt.open_turn(session_id) as ctx:
                again = await ctx.output.send_text("maybe sent", idempotency_key="k")
                assert again.delivery_id == first.delivery_id
                assert await again.wait() == "unknown"
                after = await ctx.output.send_text("after")
            assert await after.wait() == "delivered"
            history = await rt.history(session_id)
    assert again_route.texts() == ["after"]
    assert rows(db_path, "SELECT status, attempts FROM outbox WHERE delivery_id = ?",
                first.delivery_id) == [("unknown", 1)]
    assert [m.text for m in history] == ["maybe sent", "after"]


async def test_a_repeated_key_of_a_failed_send_keeps_its_first_failure_text(
        rt, db_path, autojump_clock) -> None:
    """The repeat's own ``failure_history_text`` does not rewrite the row again: the rewrite
    happens on the first failure only, and a repeat resets nothing."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute(fail=ConnectionError("down")))
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("report", failure_history_text="(lost 1)",
                                               idempotency_key="k")
            assert await first.wait() == "failed"
            again = await ctx.output.send_text("report", failure_history_text="(lost 2)",
                                               idempotency_key="k")
            assert again.delivery_id == first.delivery_id
            assert await again.wait() == "failed"
    [message] = await rt.history(session_id)
    assert message.text == "(lost 1)"
    status = await rt.delivery_status(first.delivery_id)
    assert (status.status, status.attempts) == ("failed", 1)
    assert "down" in status.last_error


async def test_a_key_repeated_before_recovery_of_a_sending_row_resolves_unknown(
        db_path, workspace, autojump_clock) -> None:
    """The host retries its keyed send after a restart, before a manual recovery: the row is
    still ``sending`` (its claimant dead). The handle it gets must end when recovery records
    the row ``unknown``, and nothing is resent."""
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as first_rt:
            session_id, route = await stalled_session(first_rt)
            async with first_rt.open_turn(session_id) as ctx:
                first = await ctx.output.send_text("maybe sent", idempotency_key="k")
            await route.wait_attempted(1)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        recover="manual") as rt:
            again_route = MemoryRoute()
            rt.router.bind(session_id, again_route)
            async with rt.open_turn(session_id) as ctx:
                again = await ctx.output.send_text("maybe sent", idempotency_key="k")
            assert again.delivery_id == first.delivery_id
            await rt.recover()
            assert await again.wait() == "unknown"
    assert again_route.delivered == []
    assert rows(db_path, "SELECT status, attempts FROM outbox WHERE delivery_id = ?",
                first.delivery_id) == [("unknown", 1)]
