"""``/clear`` whose write fails changes nothing: the running turn runs on, the waiting ones
still wait, and the conversation keeps its session; the command fails (``handle_inbound``
raises, as for any write that failed), so the platform's retry clears, once.

Before, ``/clear`` cancelled the running turn and dropped the waiting ones (each ended
``cancelled`` with reason ``clear``) before it wrote the forget: a write that failed left the
old session in place, its turns cut as if cleared, and the next message answered there. The
failure is a trigger that refuses the forget's write (the disk full, the database locked)."""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import TidingsError
from tidings.store import Call
from tidings.supervisor._testing_invariants import lifecycle_violations

from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel, rows

KEY = "ops:chat:c1"


def refuse_forget(conn: object) -> None:
    conn.execute("CREATE TEMP TRIGGER refuse_forget BEFORE DELETE ON conversation_bindings "  # type: ignore[attr-defined]
                 "BEGIN SELECT RAISE(ABORT, 'the disk is full'); END")


def allow_forget(conn: object) -> None:
    conn.execute("DROP TRIGGER temp.refuse_forget")  # type: ignore[attr-defined]


def ends(channel: RecordingChannel) -> list[tuple[str | None, str, str | None]]:
    return [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.type not in ("text_chunk", "tool_call")]


@pytest.mark.parametrize("dedupe", [False, True])
async def test_a_clear_whose_write_fails_cancels_and_drops_nothing(db_path, workspace,
                                                                   dedupe) -> None:
    agent = GatedAgent()
    config = ChannelConfig(name="ops", dispatch_mode="followup", dedupe_message_ids=dedupe)
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            channel = RecordingChannel(rt, config, agent=agent)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.wait_turns(1)
            assert await channel.say("second", message_id="m2") == "queued"
            [session_id] = channel.directory.sessions()
            await rt.store.commit([Call(refuse_forget)])
            with pytest.raises(TidingsError):
                await channel.say("/clear", message_id="c1")
            # Nothing of it took effect: the turn runs on, the waiting one waits, and the
            # conversation is still in its session.
            assert ends(channel) == [("m1", "started", None)]
            assert channel.dispatch.turn_running(session_id)
            assert await rt.conversation_session("ops", KEY) == session_id
            await rt.store.commit([Call(allow_forget)])
            agent.block = False  # "second" runs through
            agent.release()
            await channel.wait_idle()
            assert [turn.text for turn in agent.turns] == ["first", "second"]
            assert ends(channel) == [("m1", "started", None), ("m1", "completed", None),
                                     ("m2", "started", None), ("m2", "completed", None)]
            # The platform's retry clears, once.
            assert await channel.say("/clear", message_id="c1") == "command"
            await channel.wait_idle()
            assert await rt.conversation_session("ops", KEY) is None
        assert lifecycle_violations(channel.events) == []
    assert rows(db_path, "SELECT count(*) FROM events WHERE type = 'conversation.forgotten'"
                ) == [(1,)]
