"""Bad arguments to the acking calls are refused by name, before anything is written.

A lone id given to ``confirm`` was read as its characters (nothing confirmed, no error, and the
ack window stayed full); an id that is not a string reached the store and came back as a
``StoreError`` about SQLite parameter binding. Each failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


async def _one_unacked(rt):
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=2)
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("a")
    await route.wait_delivered(1)
    return session_id, handle


@pytest.mark.parametrize("bad", ["lone", [1], [None], [""], [b"dlv"], [object()], [2 ** 70]])
async def test_confirm_refuses_what_is_not_a_list_of_delivery_ids(rt, bad) -> None:
    _, handle = await _one_unacked(rt)
    with pytest.raises(ValidationError) as caught:
        await rt.confirm([handle.delivery_id, *bad] if bad != "lone" else handle.delivery_id)
    assert caught.value.field == "delivery_ids"
    # Nothing was written: the row is still unacked, and a good ack still works.
    assert (await rt.delivery_status(handle.delivery_id)).status == "sending"
    assert await rt.confirm([handle.delivery_id]) == [handle.delivery_id]


@pytest.mark.parametrize("bad", ["lone", [7], [object()]])
async def test_requeue_refuses_what_is_not_a_list_of_delivery_ids(rt, bad) -> None:
    session_id, handle = await _one_unacked(rt)
    await rt.abandon_unacked(session_id)
    with pytest.raises(ValidationError) as caught:
        await rt.requeue(session_id, [handle.delivery_id, *bad] if bad != "lone"
                         else handle.delivery_id)
    assert caught.value.field == "delivery_ids"
    assert (await rt.delivery_status(handle.delivery_id)).status == "unknown"


async def test_confirm_refuses_an_argument_that_is_not_iterable_with_a_type_error(rt) -> None:
    with pytest.raises(TypeError, match="delivery_ids"):
        await rt.confirm(None)


@pytest.mark.parametrize("bad", [None, "", 3])
async def test_abandon_unacked_refuses_a_session_id_that_is_not_one(rt, bad) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.abandon_unacked(bad)
    assert caught.value.field == "session_id"
