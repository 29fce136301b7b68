"""Durable conversation bindings through the runtime: resolve, /new, /resume, /clear."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import SessionClosedError, SessionNotFoundError, ValidationError

from .conftest import rows

KEY = "ops:chat:c1"


async def test_the_first_message_creates_one_session_and_later_ones_reach_it(rt) -> None:
    session_id, created = await rt.resolve_conversation("ops", KEY)
    assert created is True
    assert await rt.resolve_conversation("ops", KEY) == (session_id, False)
    record = await rt.session(session_id)
    assert (record.channel, record.conversation_key, record.core_id) == ("ops", KEY, "default")


async def test_racing_first_messages_end_in_one_session(rt) -> None:
    results: list[tuple[str, bool]] = []

    async def first() -> None:
        results.append(await rt.resolve_conversation("ops", KEY))

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(first)
    assert len({session_id for session_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1


async def test_the_same_conversation_reaches_the_same_session_after_a_restart(
        db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id, _ = await rt.resolve_conversation("ops", KEY)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert await rt.resolve_conversation("ops", KEY) == (session_id, False)
        assert await rt.conversation_session("ops", KEY) == session_id


async def test_conversations_are_keyed_by_core_and_channel(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace, core_id="a") as rt:
        in_a, _ = await rt.resolve_conversation("ops", KEY)
        in_other_channel, _ = await rt.resolve_conversation("web", KEY)
    async with tidings.open_runtime(db_path, workspace=workspace, core_id="b") as rt:
        in_b, created = await rt.resolve_conversation("ops", KEY)
    assert created
    assert len({in_a, in_other_channel, in_b}) == 3


async def test_new_rebinds_to_a_fresh_session_and_resume_goes_back(rt) -> None:
    old, _ = await rt.resolve_conversation("ops", KEY)
    new = await rt.new_conversation_session("ops", KEY)
    assert new != old
    assert await rt.conversation_session("ops", KEY) == new
    assert (await rt.session(new)).conversation_key == KEY
    await rt.resume_conversation("ops", KEY, old)
    assert await rt.resolve_conversation("ops", KEY) == (old, False)


async def test_resume_only_reaches_sessions_the_conversation_owns(rt) -> None:
    mine, _ = await rt.resolve_conversation("ops", KEY)
    theirs, _ = await rt.resolve_conversation("ops", "ops:chat:c2")
    other_channel, _ = await rt.resolve_conversation("web", KEY)
    plain = await rt.create_session(channel="ops")
    for foreign in (theirs, other_channel, plain, "session_nope"):
        with pytest.raises(SessionNotFoundError, match="this conversation has no session"):
            await rt.resume_conversation("ops", KEY, foreign)
    assert await rt.conversation_session("ops", KEY) == mine  # nothing was rebound


async def test_clear_forgets_the_binding_and_closes_the_session(rt, db_path) -> None:
    old, _ = await rt.resolve_conversation("ops", KEY)
    assert await rt.forget_conversation("ops", KEY) == old
    assert await rt.conversation_session("ops", KEY) is None
    assert await rt.forget_conversation("ops", KEY) is None
    new, created = await rt.resolve_conversation("ops", KEY)
    assert created
    assert new != old
    assert rows(db_path, "SELECT state FROM sessions WHERE session_id = ?", old) == [("closed",)]
    with pytest.raises(SessionClosedError, match="cleared"):
        await rt.resume_conversation("ops", KEY, old)


@pytest.mark.parametrize(("args", "field"), [(("", KEY), "channel"), ((None, KEY), "channel"),
                                             (("ops", ""), "conversation_key")])
async def test_bad_conversation_arguments_name_their_field(rt, args, field) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.resolve_conversation(*args)
    assert caught.value.field == field


async def test_a_notice_goes_through_the_outbox_without_a_turn(rt) -> None:
    route = tidings.testing.MemoryRoute()
    session_id, _ = await rt.resolve_conversation("ops", KEY)
    rt.router.bind(session_id, route)
    handle = await rt.notify(session_id, "Session: idle", metadata={"command": "status"})
    assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert (outbound.kind, outbound.text, outbound.channel) == ("notice", "Session: idle", "ops")
    assert dict(outbound.metadata) == {"command": "status"}
    status = await rt.delivery_status(handle.delivery_id)
    assert status.owner_turn_id is None
    assert await rt.history(session_id) == []  # notices are transient


async def test_notify_rejects_bad_input_before_writing(rt) -> None:
    session_id, _ = await rt.resolve_conversation("ops", KEY)
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, "x", kind="message")
    assert caught.value.field == "kind"
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, "x", metadata={"bad": object()})
    assert caught.value.field == "metadata"
    with pytest.raises(SessionNotFoundError):
        await rt.notify("session_nope", "x")
    assert await rt.deliveries(session_id) == []


async def test_user_messages_enter_history_and_model_context(rt) -> None:
    session_id, _ = await rt.resolve_conversation("ops", KEY)
    assert await rt.session_has_turns(session_id) is False
    async with rt.open_turn(session_id) as ctx:
        await rt.record_user_message(session_id, "hello", turn_id=ctx.turn_id)
        await ctx.output.send_text("hi there")
    assert await rt.session_has_turns(session_id) is True
    history = await rt.history(session_id, model_context=True)
    assert [(m.role, m.text, m.turn_id) for m in history] == [
        ("user", "hello", ctx.turn_id), ("assistant", "hi there", ctx.turn_id)]
    assert history[0].delivery_id is None
