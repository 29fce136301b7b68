"""``dedupe_message_ids``: the answer of ``/new``, ``/resume``, ``/cancel`` or ``/clear`` (in a
session) outlives a crash between the command's effect and its answer.

The effect commits with the command's message id, so the platform's retry of the message is
a ``duplicate`` and runs nothing; the answer is written after. Before, a crash in between
kept the effect and lost the answer: the user never learned that the command ran. Now the
answer is held (``inbound_messages``) in the effect's transaction and released in the one
that writes it, so the next start sends it (``/clear``'s into the session it closed, as the
answer: metadata ``command``), and the retry hands it back: once.

The crash is the answer's write failing (a trigger refuses it) and the runtime stopping: what
a kill between the two writes leaves (``tests/recovery/test_command_answer_kill.py`` kills a
real process there).
"""

from __future__ import annotations

import json
import pathlib

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import TidingsError
from tidings.store import Call

from .conftest import GatedAgent, RecordingChannel, rows

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)
KEY = "ops:chat:c1"


def refuse_answers(conn: object) -> None:
    conn.execute("CREATE TEMP TRIGGER refuse_answers BEFORE INSERT ON outbox "  # type: ignore[attr-defined]
                 "WHEN NEW.metadata LIKE '%\"command\"%' "
                 "BEGIN SELECT RAISE(ABORT, 'the process died here'); END")


def held(db_path: pathlib.Path) -> int:
    [(count,)] = rows(db_path, "SELECT count(*) FROM inbound_messages")
    return int(count)


async def start(db_path: pathlib.Path, workspace: pathlib.Path, *texts: str) -> list[str]:
    """Say *texts* (ids ``s0``, ``s1``...); return the conversation's session after each."""
    sessions = []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        for n, text in enumerate(texts):
            await channel.say(text, message_id=f"s{n}")
            await channel.wait_idle()
            sessions.append(await rt.conversation_session("ops", KEY))
    return sessions


async def crash_answering(db_path: pathlib.Path, workspace: pathlib.Path, text: str, *,
                          busy: bool = False) -> None:
    """Handle *text* (id ``cmd``) in a runtime whose write of a command's answer fails, then
    stop: the database as a crash between the effect and the answer leaves it. *busy*: a
    turn runs meanwhile (``/cancel`` has something to cancel)."""
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        if busy:
            assert await channel.say("working?", message_id="busy") == "started"
            await agent.wait_turns(1)
        await rt.store.commit([Call(refuse_answers)])
        with pytest.raises(TidingsError):
            await channel.say(text, message_id="cmd")
        assert channel.notices() == []


async def retried(db_path: pathlib.Path, workspace: pathlib.Path, text: str,
                  coming: str | None = None) -> list[str]:
    """Restart, let the platform retry *text* (id ``cmd``), wait for *coming* (an answer
    handed back), then ``/status``: the notices delivered (``/status``'s aside)."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        assert await channel.say(text, message_id="cmd") == "duplicate"
        if coming is not None:
            with trio.fail_after(10):
                await channel.wait_for(lambda: coming in channel.notices())
        assert await channel.say("/status", message_id="probe") == "command"
        await channel.wait_for(lambda: any(n.startswith("Session:")
                                           for n in channel.notices()))
        assert await channel.say(text, message_id="cmd") == "duplicate"
        return [n for n in channel.notices() if not n.startswith("Session:")]


async def test_a_crash_before_the_answer_to_new_answers_it_after_the_restart(
        db_path, workspace) -> None:
    await start(db_path, workspace, "hello")
    await crash_answering(db_path, workspace, "/new")
    assert held(db_path) == 1
    assert await retried(db_path, workspace, "/new") == ["Started a new session."]
    assert held(db_path) == 0
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(2,)]  # /new ran once


async def test_a_crash_before_the_answer_to_resume_answers_it_after_the_restart(
        db_path, workspace) -> None:
    first, _ = await start(db_path, workspace, "hello", "/new")
    await crash_answering(db_path, workspace, f"/resume {first}")
    assert await retried(db_path, workspace, f"/resume {first}") == [
        f"Resumed session {first}."]
    assert held(db_path) == 0


@pytest.mark.parametrize(("target", "answer"), [
    ("sess_nope", "This conversation has no such session."),
    ("cleared", "That session was cleared; it cannot be resumed."),
])
async def test_a_crash_before_a_resume_refusal_answers_it_after_the_restart(
        db_path, workspace, target, answer) -> None:
    sessions = await start(db_path, workspace, "hello", "/clear", "again")
    if target == "cleared":
        target = sessions[0]
    await crash_answering(db_path, workspace, f"/resume {target}")
    assert await retried(db_path, workspace, f"/resume {target}") == [answer]
    assert held(db_path) == 0


async def test_a_crash_before_the_answer_to_cancel_answers_it_after_the_restart(
        db_path, workspace) -> None:
    await crash_answering(db_path, workspace, "/cancel", busy=True)
    # The turn was cancelled before the crash (its end, cancelled, dealt with its message).
    assert await retried(db_path, workspace, "/cancel") == ["Cancelled the running request."]
    assert held(db_path) == 0


async def test_a_crash_before_the_answer_to_clear_answers_it_in_the_cleared_session(
        db_path, workspace) -> None:
    [first] = await start(db_path, workspace, "hello")
    await crash_answering(db_path, workspace, "/clear")
    [(held_in, command)] = rows(db_path, "SELECT session_id, command FROM inbound_messages")
    assert (held_in, command) == (first, "clear")
    cleared = "Cleared. Your next message starts a new session."
    assert await retried(db_path, workspace, "/clear", coming=cleared) == [cleared]
    assert held(db_path) == 0
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]  # nothing new started
    [(metadata,)] = rows(db_path, "SELECT metadata FROM outbox WHERE session_id = ? "
                                  "AND kind = 'notice'", first)
    assert json.loads(metadata) == {"command": "clear"}  # the answer, not "not answered"


@pytest.mark.parametrize("text", ["/new", "/cancel", "/resume sess_nope", "/clear"])
async def test_an_answer_written_releases_its_hold_so_no_restart_sends_it_again(
        db_path, workspace, text) -> None:
    await start(db_path, workspace, "hello")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        assert await channel.say(text, message_id="cmd") == "command"
        await channel.wait_for(lambda: len(channel.notices()) == 1)
        answer = channel.notices()
    assert held(db_path) == 0
    assert await retried(db_path, workspace, text) == []
    assert len(answer) == 1


async def test_without_dedupe_nothing_is_held(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig("ops"), agent=GatedAgent(block=False))
        await rt.store.commit([Call(refuse_answers)])
        with pytest.raises(TidingsError):
            await channel.say("/new", message_id="cmd")
    assert held(db_path) == 0


def allow_answers(conn: object) -> None:
    conn.execute("DROP TRIGGER temp.refuse_answers")  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "message_id"), [("/new", "cmd"), ("hi", "later")])
async def test_an_answer_whose_write_failed_goes_out_in_the_same_process(
        db_path, workspace, text, message_id) -> None:
    """The answer's write failed (the store refused it) and the process runs on: the
    platform's retry (a duplicate), or the conversation's next message, gets it, releasing
    its hold, so no restart sends it again."""
    await start(db_path, workspace, "hello")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        await rt.store.commit([Call(refuse_answers)])
        with pytest.raises(TidingsError):
            await channel.say("/new", message_id="cmd")
        await rt.store.commit([Call(allow_answers)])
        await channel.say(text, message_id=message_id)
        with trio.fail_after(10):
            await channel.wait_for(lambda: "Started a new session." in channel.notices())
        await channel.wait_idle()
    assert held(db_path) == 0
    assert await retried(db_path, workspace, "/new") == []
