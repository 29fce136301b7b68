"""``settles=`` says "this reply answers the held message", and a ``visible=False`` send is
shown to nobody: taking both released the held message with no answer the user could see, and
no "not answered" notice either. Refused naming ``settles``, nothing written, the message still
held; a host that means to drop it says so with ``rt.release_inbound``."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError

from .conftest import rows


@pytest.mark.parametrize("send", [
    lambda out, held: out.send_text("quietly", visible=False, settles=[held]),
    lambda out, held: out.send(["quietly"], visible=False, history_policy="model_hidden",
                               settles=[held]),
], ids=["send_text", "send"])
async def test_an_invisible_reply_cannot_settle_a_held_message(rt, db_path, send,
                                                              autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    held = await rt.hold_inbound(session_id, notice="Not answered: please send it again")
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ValidationError) as caught:
                await send(ctx.output, held)
            assert caught.value.field == "settles"
            assert await rt.deliveries(session_id) == []
            assert await rt.history(session_id) == []
            assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(1,)]
            handle = await ctx.output.send_text("quietly", visible=False)  # without settles
        assert await handle.wait() == "delivered"
    await rt.release_inbound([held])  # the explicit way to let it go unanswered
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
