"""A turn whose own scope was cancelled with no reason (trio's ``ctx.cancel_scope.cancel()``,
or its deadline) is recorded cancelled even if its body caught the ``Cancelled`` and returned,
as one cancelled with ``ctx.cancel(reason)`` is (README "Turns").

The end was decided by ``cancelled_caught``, which a body that swallows the ``Cancelled``
leaves False: the cut turn was recorded ``completed`` and the messages it held
(``inbound_ids``) were released, though its reply may never have been sent: the user's
message was lost, where recovery should have told them it went unanswered."""

from __future__ import annotations

import trio

from .conftest import rows


def _turn_row(db_path, turn_id: str) -> tuple:
    [row] = rows(db_path, "SELECT status, reason, error FROM turns WHERE turn_id = ?", turn_id)
    return row


async def test_a_swallowed_cancel_of_the_turns_own_scope_is_still_cancelled(
        rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    inbound_id = await rt.hold_inbound(session_id, notice="not answered")
    async with rt.open_turn(session_id, inbound_ids=[inbound_id]) as ctx:
        ctx.cancel_scope.cancel()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            pass  # a careless body
    assert _turn_row(db_path, ctx.turn_id) == ("cancelled", "cancelled", None)
    assert rows(db_path, "SELECT inbound_id FROM inbound_messages") == [(inbound_id,)]


async def test_a_swallowed_deadline_of_the_turn_is_still_a_timeout(
        rt, db_path, quick_autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        ctx.cancel_scope.deadline = trio.current_time() + 5
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            pass  # a careless body
    assert _turn_row(db_path, ctx.turn_id) == ("cancelled", "timeout", None)


async def test_a_turn_whose_scope_was_never_cancelled_completes(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    inbound_id = await rt.hold_inbound(session_id, notice="not answered")
    async with rt.open_turn(session_id, inbound_ids=[inbound_id]) as ctx:
        await trio.lowlevel.checkpoint()
    assert _turn_row(db_path, ctx.turn_id) == ("completed", None, None)
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
