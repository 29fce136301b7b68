"""Turn lifecycle: one terminal state, cancel reasons recorded before the cancel."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import ValidationError

from .conftest import rows


async def _turn_row(db_path, turn_id: str) -> tuple:
    [row] = rows(db_path, "SELECT status, reason, error FROM turns WHERE turn_id = ?", turn_id)
    return row


async def test_a_turn_that_returns_is_completed(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        assert (ctx.slot, ctx.mode, ctx.session_id) == ("output", "serial", session_id)
    assert await _turn_row(db_path, ctx.turn_id) == ("completed", None, None)


@pytest.mark.parametrize("reason", ["cancel_command", "clear", "steer", "timeout"])
async def test_a_cancelled_turn_records_its_first_reason(rt, db_path, reason) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        assert ctx.cancel(reason) is True
        assert ctx.cancel("shutdown") is False  # the first recorded reason wins
        await trio.sleep_forever()
    assert ctx.cancel_scope.cancelled_caught
    assert await _turn_row(db_path, ctx.turn_id) == ("cancelled", reason, None)


async def test_a_cancel_the_body_swallowed_still_ends_the_turn_cancelled(rt, db_path) -> None:
    """``ctx.cancel`` said yes: a body that caught the ``Cancelled`` and returned did not
    complete its turn (the row said ``completed`` with the cancel's reason)."""
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        assert ctx.cancel("cancel_command") is True
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            pass  # a careless body
    assert await _turn_row(db_path, ctx.turn_id) == ("cancelled", "cancel_command", None)


async def test_a_turn_cut_by_its_deadline_is_recorded_as_a_timeout(rt, db_path,
                                                                   quick_autojump_clock) -> None:
    """DESIGN (Lifecycle reasons): ``timeout`` is the turn's deadline, ``move_on_after`` or
    the scope's. A host turn cut so was recorded ``cancelled`` with no reason (its own scope's
    deadline) or with ``cancelled`` (a ``move_on_after`` around it), the reason for a cancel
    nobody chose, which leaves its held messages to be told "not answered" at the next
    start."""
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as own:
        own.cancel_scope.deadline = trio.current_time() + 5
        await trio.sleep_forever()
    with trio.move_on_after(5) as outer:
        async with rt.open_turn(session_id) as around:
            await trio.sleep_forever()
    assert outer.cancelled_caught
    assert await _turn_row(db_path, own.turn_id) == ("cancelled", "timeout", None)
    assert await _turn_row(db_path, around.turn_id) == ("cancelled", "timeout", None)


async def test_a_turn_cancelled_from_outside_by_no_deadline_is_still_cancelled(
        rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    with trio.CancelScope() as outer:
        async with rt.open_turn(session_id) as ctx:
            outer.cancel()
            await trio.sleep_forever()
    assert await _turn_row(db_path, ctx.turn_id) == ("cancelled", "cancelled", None)


async def test_a_turn_whose_own_scope_is_cancelled_with_no_reason_is_recorded_cancelled(
        rt, db_path) -> None:
    """``ctx.cancel_scope.cancel()`` (trio's own call, no reason given) cancels the turn as a
    cancel from outside does: recorded ``cancelled``, and its held message stays held for
    recovery to tell. Its row said ``cancelled`` with no reason at all, and the message was
    released as if a reason chosen for the turn (``steer``, ``/cancel``) had dealt with it."""
    session_id = await rt.create_session(channel="web")
    inbound_id = await rt.hold_inbound(session_id, notice="not answered")
    async with rt.open_turn(session_id, inbound_ids=[inbound_id]) as ctx:
        ctx.cancel_scope.cancel()
        await trio.sleep_forever()
    assert ctx.cancel_scope.cancelled_caught
    assert await _turn_row(db_path, ctx.turn_id) == ("cancelled", "cancelled", None)
    assert ctx.reason == "cancelled"
    assert rows(db_path, "SELECT inbound_id FROM inbound_messages") == [(inbound_id,)]


async def test_a_turn_that_raises_is_failed_and_the_error_propagates(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(KeyError):
        async with rt.open_turn(session_id) as ctx:
            raise KeyError("model exploded")
    status, reason, error = await _turn_row(db_path, ctx.turn_id)
    assert (status, reason) == ("failed", None)
    assert "KeyError" in error


async def test_an_unknown_cancel_reason_is_rejected(rt) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            ctx.cancel("because")
    assert caught.value.field == "reason"


@pytest.mark.parametrize(("kwargs", "field"), [({"slot": "sideways"}, "slot"),
                                               ({"mode": "eventually"}, "mode"),
                                               ({"history_policy": "all"}, "history_policy")])
async def test_bad_turn_arguments_name_their_field(rt, kwargs, field) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        async with rt.open_turn(session_id, **kwargs):
            pass
    assert caught.value.field == field


async def test_a_turn_cannot_send_after_it_ended(rt) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        pass
    with pytest.raises(RuntimeError, match="has ended"):
        await ctx.output.send_text("late")


async def test_a_turn_in_a_runtime_task_stopped_at_exit_records_shutdown(db_path,
                                                                        workspace) -> None:
    """``start_task`` cancels what still runs at exit with the reason ``shutdown`` before the
    runtime is marked closing; a turn it runs must record that reason, not a generic one."""
    opened = trio.Event()
    turn_ids: list[str] = []

    async def work(session_id: str) -> None:
        async with rt.open_turn(session_id) as ctx:
            turn_ids.append(ctx.turn_id)
            opened.set()
            await trio.sleep_forever()

    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.start_task("turn", work, session_id)
        await opened.wait()
    assert await _turn_row(db_path, turn_ids[0]) == ("cancelled", "shutdown", None)


async def test_a_turn_whose_nursery_is_cancelled_from_outside_records_a_cancel(
        db_path, workspace) -> None:
    """A nursery inside the turn turns the cancel into a group of ``Cancelled``: the turn
    was still cancelled, not failed (at exit: ``shutdown``; by a caller's own scope:
    ``cancelled``), and the message it held stays held for recovery to tell."""
    opened = trio.Event()
    turn_ids: list[str] = []

    async def work(session_id: str, inbound_id: str) -> None:
        async with rt.open_turn(session_id, inbound_ids=[inbound_id]) as ctx:
            turn_ids.append(ctx.turn_id)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.sleep_forever)
                opened.set()
                await trio.sleep_forever()

    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        held = [await rt.hold_inbound(session_id, notice=f"not answered {i}")
                for i in range(2)]
        with trio.CancelScope() as scope:  # the caller's own scope, no reason of the turn's
            async with trio.open_nursery() as nursery:
                nursery.start_soon(work, session_id, held[0])
                await opened.wait()
                scope.cancel()
        opened = trio.Event()
        rt.start_task("turn", work, session_id, held[1])
        await opened.wait()
    assert [await _turn_row(db_path, turn_id) for turn_id in turn_ids] == [
        ("cancelled", "cancelled", None), ("cancelled", "shutdown", None)]
    assert rows(db_path, "SELECT inbound_id FROM inbound_messages ORDER BY inbound_id") == sorted(
        (inbound_id,) for inbound_id in held)


async def test_serial_turns_of_one_session_run_one_at_a_time(rt, quick_autojump_clock) -> None:
    """Two serial turns opened at once in one session: the second begins only once the first
    has ended, so their history never interleaves; a parallel turn does not wait."""
    session_id = await rt.create_session(channel="web")
    second_entered = trio.Event()

    async def second() -> None:
        async with rt.open_turn(session_id) as ctx:
            second_entered.set()
            await ctx.output.send_text("second")

    with trio.fail_after(30):  # hang guard (mock clock)
        async with trio.open_nursery() as nursery, rt.open_turn(session_id) as ctx:
            nursery.start_soon(second)
            await ctx.output.send_text("first, 1")
            with trio.move_on_after(1):
                await second_entered.wait()
            assert not second_entered.is_set()  # still waiting for this one to end
            async with rt.open_turn(session_id, mode="parallel"):
                pass  # a parallel turn does not wait for the serial one
            await ctx.output.send_text("first, 2")
    assert [m.text for m in await rt.history(session_id)] == ["first, 1", "first, 2", "second"]
    assert session_id not in rt.serial_turns  # no slot kept for an idle session


async def test_a_serial_turn_inside_a_serial_turn_of_its_session_is_refused(rt) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id):
        with pytest.raises(ValidationError, match="already open"):
            async with rt.open_turn(session_id):
                pass


async def test_a_turn_id_already_in_use_is_refused_and_leaves_the_live_turn_alone(
        rt, db_path) -> None:
    """A host that reuses a running turn's id: the second ``open_turn`` fails naming
    ``turn_id``, and the live turn's row is not ended for it (it was marked ``failed`` by the
    failed call's end write, and the live turn's real end was then lost)."""
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id, mode="parallel", turn_id="T1") as ctx:
        with pytest.raises(ValidationError) as caught:
            async with rt.open_turn(session_id, mode="parallel", turn_id="T1"):
                pass  # never entered
        assert caught.value.field == "turn_id"
        assert rows(db_path, "SELECT status FROM turns WHERE turn_id = 'T1'") == [("running",)]
        await ctx.output.send_text("still mine")
    assert rows(db_path, "SELECT status FROM turns WHERE turn_id = 'T1'") == [("completed",)]


async def _enter(rt, session_id, **options) -> None:
    async with rt.open_turn(session_id, **options):
        pass


@pytest.mark.parametrize(("call", "field"), [
    (lambda rt, sid: rt.session([1]), "session_id"),
    (lambda rt, sid: rt.session(5), "session_id"),
    (lambda rt, sid: _enter(rt, [1]), "session_id"),
    (lambda rt, sid: _enter(rt, sid, turn_id=5), "turn_id"),
    (lambda rt, sid: _enter(rt, sid, turn_id=""), "turn_id"),
])
async def test_ids_that_are_not_strings_are_refused_by_name(rt, db_path, call, field) -> None:
    """They reached SQLite (a bare StoreError, "Error binding parameter"), or were stored as
    the text of a number."""
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await call(rt, session_id)
    assert caught.value.field == field
    assert rows(db_path, "SELECT count(*) FROM turns") == [(0,)]
