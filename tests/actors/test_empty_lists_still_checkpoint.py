"""Every async call of the runtime is a checkpoint, whatever it is given (trio's rule: a
function that is a checkpoint only sometimes lets a loop that calls it starve the other tasks,
and cannot be cancelled, when its input happens to make it skip its work). ``requeue``,
``release_inbound`` and ``conversation_deliveries`` returned at once for an empty list, with
no checkpoint, where ``confirm`` and ``abandon_unacked`` take one."""

from __future__ import annotations

import pytest
from trio.testing import assert_checkpoints


@pytest.mark.parametrize("call", [
    lambda rt, sid: rt.requeue(sid, []),
    lambda rt, sid: rt.release_inbound([]),
    lambda rt, sid: rt.conversation_deliveries("web", "web:chat:1", []),
    lambda rt, sid: rt.confirm([]),
    lambda rt, sid: rt.abandon_unacked(sid),
], ids=["requeue", "release_inbound", "conversation_deliveries", "confirm", "abandon_unacked"])
async def test_an_async_call_given_nothing_to_do_is_still_a_checkpoint(rt, call) -> None:
    sid = await rt.create_session("web")
    with assert_checkpoints():
        await call(rt, sid)
