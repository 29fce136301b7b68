"""``dedupe_message_ids``: the id of ``/new``, ``/clear`` or ``/resume`` is written in the
transaction of the command's durable effect (the new session, the cleared one, the rebind).

Written after the command ran, a crash in between kept the effect without the id: the
platform's resend of the message (it got no answer) ran the command a second time, a third
session for one ``/new``, and a resent ``/clear`` cleared the session the user had started
since. The crash is the write of the id failing (a trigger refuses it), then a new runtime on
the same database: what a crash between the two writes left, or, once both are one
transaction, what a crash before it left (nothing).
"""

from __future__ import annotations

import pathlib

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import TidingsError
from tidings.store import Call

from .conftest import GatedAgent, RecordingChannel, rows

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)


def refuse_ids(conn: object) -> None:
    conn.execute("CREATE TEMP TRIGGER refuse_ids BEFORE INSERT ON client_messages "  # type: ignore[attr-defined]
                 "BEGIN SELECT RAISE(ABORT, 'the process died here'); END")


async def crash_while_handling(db_path: pathlib.Path, workspace: pathlib.Path, text: str,
                               message_id: str) -> None:
    """Handle *text* (id *message_id*) in a runtime whose write of the id fails, then stop
    it: the database is left as a crash before the id's write leaves it (with the command's
    effect, were that written apart)."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        await rt.store.commit([Call(refuse_ids)])
        with pytest.raises(TidingsError):
            await channel.say(text, message_id=message_id)
        await channel.wait_idle()


def events(db_path: pathlib.Path, kind: str) -> list[str]:
    return [session for (session,) in rows(
        db_path, "SELECT session_id FROM events WHERE type = ? ORDER BY event_seq", kind)]


async def start(db_path: pathlib.Path, workspace: pathlib.Path, *texts: str) -> list[str]:
    """Say *texts* (ids ``s0``, ``s1``...) in a runtime of its own; return the sessions the
    conversation was in after each."""
    sessions = []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        for n, text in enumerate(texts):
            await channel.say(text, message_id=f"s{n}")
            await channel.wait_idle()
            sessions.append(await rt.conversation_session("ops", "ops:chat:c1"))
    return sessions


async def test_a_resent_new_after_a_crash_starts_one_session(db_path, workspace) -> None:
    await start(db_path, workspace, "hello")
    await crash_while_handling(db_path, workspace, "/new", "m1")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        assert await channel.say("/new", message_id="m1") in ("command", "duplicate")
        await channel.wait_idle()
        assert await channel.say("/new", message_id="m1") == "duplicate"
    # the first message's session and the one /new started: no third
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(2,)]


async def test_a_resent_clear_after_a_crash_does_not_clear_the_next_session(
        db_path, workspace) -> None:
    [first] = await start(db_path, workspace, "hello")
    await crash_while_handling(db_path, workspace, "/clear", "m1")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        # The user speaks before the platform resends the /clear it got no answer for.
        assert await channel.say("hi", message_id="m2") == "started"
        await channel.wait_idle()
        assert await channel.say("/clear", message_id="m1") in ("command", "duplicate")
        await channel.wait_idle()
    # One /clear, one session cleared: the first (were the first /clear undone by the crash,
    # its resend clears it now); never the one "hi" started after it.
    assert events(db_path, "conversation.forgotten") == [first]


async def test_a_resent_resume_after_a_crash_does_not_undo_a_later_switch(
        db_path, workspace) -> None:
    first, _ = await start(db_path, workspace, "hello", "/new")
    await crash_while_handling(db_path, workspace, f"/resume {first}", "m1")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        await channel.say("/new", message_id="m2")
        await channel.wait_idle()
        assert await channel.say(f"/resume {first}", message_id="m1") in ("command",
                                                                            "duplicate")
        await channel.wait_idle()
    # Bound to the first session when it was made, then by /resume once (by the crashed
    # process, or by the resend if the crash undid it): never by both.
    assert [session for session in events(db_path, "conversation.bound")
            if session == first] == [first, first]
