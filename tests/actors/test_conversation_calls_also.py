"""``also=`` of the conversation calls (``new_conversation_session``, ``resume_conversation``,
``forget_conversation``): store ops written in the same transaction as the change (a
channel's record of the command's message id). Anything but a list of ops is refused naming
``also``, before anything is written."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.store import Call, Execute

KEY = "ops:chat:c1"

CALLS = {
    "new": lambda rt, also: rt.new_conversation_session("ops", KEY, also=also),
    "resume": lambda rt, also: rt.resume_conversation("ops", KEY, "session_x", also=also),
    "forget": lambda rt, also: rt.forget_conversation("ops", KEY, also=also),
}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("also", ["INSERT", Execute("SELECT 1"), [1], [None], 5])
async def test_anything_but_a_list_of_ops_is_refused_naming_also(rt, call, also) -> None:
    session_id, _ = await rt.resolve_conversation("ops", KEY)
    with pytest.raises(ValidationError) as caught:
        await CALLS[call](rt, also)
    assert caught.value.field == "also"
    assert await rt.conversation_session("ops", KEY) == session_id  # nothing changed


@pytest.mark.parametrize("call", CALLS)
async def test_the_ops_are_written_with_the_change(rt, call) -> None:
    await rt.resolve_conversation("ops", KEY)
    seen: list[object] = []

    def read_binding(conn) -> None:  # type: ignore[no-untyped-def]
        seen.append(conn.execute("SELECT session_id FROM conversation_bindings").fetchall())

    try:
        await CALLS[call](rt, [Call(read_binding)])
    except LookupError:  # /resume of a session the conversation does not have
        pass
    assert len(seen) == 1
    assert seen[0] == ([] if call == "forget" else
                       [(await rt.conversation_session("ops", KEY),)])
