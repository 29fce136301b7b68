"""History policies, visibility, slot defaults and failure history (DESIGN.md "History")."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import HistoryPolicyError, ValidationError
from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows


async def _bound(rt, **options):
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(**options)
    rt.router.bind(session_id, route)
    return session_id, route


async def test_persisted_text_writes_message_outbox_and_work_item_together(rt, db_path) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("Done")
        # durable as soon as send_text returned, before any delivery outcome
        [(owner, work_id, message_id)] = rows(
            db_path, "SELECT owner_turn_id, work_id, history_message_id FROM outbox "
                     "WHERE delivery_id = ?", handle.delivery_id)
        assert owner == ctx.turn_id
    [(kind, subject, parent)] = rows(db_path, "SELECT kind, subject_id, parent_work_id FROM "
                                              "work_items WHERE work_id = ?", work_id)
    assert (kind, subject, parent) == ("delivery.send", handle.delivery_id, None)
    assert work_id != owner  # the work item has its own id, not the turn's
    [message] = await rt.history(session_id)
    assert (message.message_id, message.delivery_id, message.text) == (
        message_id, handle.delivery_id, "Done")
    assert (message.role, message.kind, message.policy) == ("assistant", "text", "persist")
    assert message.visible
    assert message.model_visible


async def test_transient_sends_write_no_history(rt) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("a", history_policy="transient")
        await ctx.output.send_text("b", write_history=False)
        await ctx.output.progress("working")
        await ctx.output.notice("fyi")
        await ctx.input.send_text("input slots default to transient")
    assert await rt.history(session_id) == []


async def test_model_hidden_history_is_kept_but_not_in_model_context(rt) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("seen by all")
        await ctx.output.send_text("user only", history_policy="model_hidden")
    everything = await rt.history(session_id)
    assert [(m.text, m.model_visible) for m in everything] == [("seen by all", True),
                                                               ("user only", False)]
    assert [m.text for m in await rt.history(session_id, model_context=True)] == ["seen by all"]


@pytest.mark.parametrize("policy", ["persist", "model_hidden"])
async def test_invisible_history_is_written_and_nothing_is_sent(rt, policy) -> None:
    session_id, route = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("note to self", history_policy=policy, visible=False)
    assert await handle.wait() == "delivered"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.outbox_status, status.attempts) == ("sent", 0)
    assert route.attempted == []
    [message] = await rt.history(session_id)
    assert not message.visible
    assert message.model_visible == (policy == "persist")


async def test_invisible_and_transient_is_rejected(rt) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", history_policy="transient", visible=False)
        assert caught.value.field == "visible"
        with pytest.raises(ValidationError, match="visible"):
            await ctx.input.send_text("x", visible=False)  # input defaults to transient


async def test_write_history_maps_to_policies(rt) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id, slot="input") as ctx:
        await ctx.input.send_text("kept", write_history=True)
        await ctx.input.send_text("hidden", write_history=False, history_policy="model_hidden")
        await ctx.input.send_text("gone", write_history=False)
    assert [(m.text, m.policy) for m in await rt.history(session_id)] == [
        ("kept", "persist"), ("hidden", "model_hidden")]


@pytest.mark.parametrize("mode", ["parallel", "background"])
async def test_parallel_and_background_turns_may_not_write_history(rt, mode) -> None:
    session_id, _route = await _bound(rt)
    async with rt.open_turn(session_id, mode=mode) as ctx:
        handle = await ctx.output.send_text("defaults to transient")
        with pytest.raises(RuntimeError, match="may not write session history"):
            await ctx.output.send_text("x", history_policy="persist")
        with pytest.raises(HistoryPolicyError):
            await ctx.output.send_text("x", write_history=True)
    assert await handle.wait() == "delivered"
    assert await rt.history(session_id) == []
    with pytest.raises(RuntimeError):
        async with rt.open_turn(session_id, mode=mode, history_policy="model_hidden"):
            pass


async def test_a_turn_default_policy_is_overridden_by_a_request(rt) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id, history_policy="model_hidden") as ctx:
        await ctx.output.send_text("turn default")
        await ctx.output.send_text("request wins", history_policy="persist")
    assert [(m.text, m.policy) for m in await rt.history(session_id)] == [
        ("turn default", "model_hidden"), ("request wins", "persist")]


async def test_failure_history_text_replaces_the_body_on_first_failure_only(rt) -> None:
    session_id, _route = await _bound(rt, fail=RuntimeError("down"))
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text(
            "Here is your report", failure_history_text="(the report could not be delivered)")
        plain = await ctx.output.send_text("no failure text")
    assert await handle.wait() == "failed"
    assert await plain.wait() == "failed"
    first, second = await rt.history(session_id)
    assert first.text == "(the report could not be delivered)"
    assert (first.policy, first.visible, first.model_visible, first.delivery_id) == (
        "persist", True, True, handle.delivery_id)
    assert second.text == "no failure text"  # the row stays when delivery fails


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"history_policy": "forever"}, "history_policy"),
    ({"write_history": "yes"}, "write_history"),
    ({"visible": "no"}, "visible"),
    ({"delivery_metadata": {"x": object()}}, "delivery_metadata"),
])
async def test_bad_controls_name_their_field_and_write_nothing(rt, db_path, kwargs,
                                                               field) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", **kwargs)
    assert caught.value.field == field
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM messages") == [(0,)]


async def test_progress_and_notice_refuse_history_controls(rt) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError):
            await ctx.output.progress("x", history_policy="persist")  # type: ignore[call-arg]
        with pytest.raises(ValidationError, match="visible"):
            await ctx.output.notice("x", visible=False)
        with pytest.raises(ValidationError, match="always transient"):
            await ctx.output.send("x", kind="progress", history_policy="persist")
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send("x", kind="shout")
        assert caught.value.field == "kind"
        for kind in ("progress", "notice"):  # the argument that asked for history is named
            with pytest.raises(ValidationError, match="always transient") as caught:
                await ctx.output.send("x", kind=kind, write_history=True)
            assert caught.value.field == "write_history"
            with pytest.raises(ValidationError, match="always transient") as caught:
                await ctx.output.send("x", kind=kind, history_policy="model_hidden")
            assert caught.value.field == "history_policy"


async def test_failure_history_text_is_in_history_when_wait_returns_failed(rt) -> None:
    session_id, route = await _bound(rt, fail=ConnectionError("down"))
    route.stall()
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("the report",
                                            failure_history_text="(not delivered)")
    returned = trio.Event()
    seen: list[tuple[str, list[str]]] = []

    async def waiter() -> None:
        outcome = await handle.wait()
        # read right away: the rewrite must already be durable when wait() returns
        seen.append((outcome, [m.text for m in await rt.history(session_id)]))
        returned.set()

    with trio.fail_after(30):  # hang guard
        await route.wait_attempted(1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            async with writer_gate(rt.store) as gate:
                route.release()  # the route raises; ``failed`` queues behind the gate
                # Quiescence: the writer thread is held inside the gate, so the lane and the
                # waiter are both blocked on it.
                await trio.testing.wait_all_tasks_blocked()
                assert not returned.is_set()
                assert handle.status == "scheduled"
                assert [m.text for m in await rt.history(session_id)] == ["the report"]
                gate.release()
            await returned.wait()
    assert seen == [("failed", ["(not delivered)"])]
    assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "failed"
