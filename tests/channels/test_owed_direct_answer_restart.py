"""``dedupe_message_ids``: a session command's direct answer (no session: ``/clear`` or
``/cancel`` with none, a refused ``/resume`` with none) is owed on its message id's record,
written with it (schema v8), and cleared once it went out. A process that stops before it
went out leaves it there: after the restart, the platform's retry of the id (a
``duplicate``, which runs nothing) is sent it, once; one that went out is not sent again."""

from __future__ import annotations

import functools
import sqlite3

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig

from .conftest import RecordingChannel
from .test_owed_direct_answer import FailingOnce, PlatformDown, direct

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)

COMMANDS = [
    ("/clear", "clear", "Cleared. Your next message starts a new session."),
    ("/cancel", "cancel", "Nothing to cancel."),
    ("/resume sess_nope", "resume", "This conversation has no such session."),
]


def owed_on_records(db_path) -> list[tuple[str, str | None]]:
    """``(client_id, answer)`` of every message id record, by id."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT client_id, answer FROM client_messages "
                            "ORDER BY client_id").fetchall()
    finally:
        conn.close()


async def _answer_failed(db_path, workspace, text: str) -> None:
    """A process whose one direct answer failed (its id recorded) stops before the retry."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say(text, message_id="c1")
        assert direct(channel) == []


@pytest.mark.parametrize(("text", "command", "answer"), COMMANDS)
async def test_the_retry_after_a_restart_gets_the_direct_answer_owed_once(
        db_path, workspace, text, command, answer) -> None:
    await _answer_failed(db_path, workspace, text)
    assert owed_on_records(db_path) == [("c1", answer)]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == [(answer, command)]
        assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == [(answer, command)]  # once
        assert channel.directory.sessions() == []  # the command did not run again
    assert owed_on_records(db_path) == [("c1", None)]  # cleared once it went out
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == []


@pytest.mark.parametrize(("text", "command", "answer"), COMMANDS)
async def test_a_direct_answer_that_went_out_is_not_sent_again_after_a_restart(
        db_path, workspace, text, command, answer) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        assert await channel.say(text, message_id="c1") == "command"
        assert direct(channel) == [(answer, command)]
    assert owed_on_records(db_path) == [("c1", None)]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == []


async def test_an_answer_owed_from_before_a_restart_whose_send_fails_goes_to_the_next_retry(
        db_path, workspace) -> None:
    await _answer_failed(db_path, workspace, "/clear")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
        assert direct(channel) == []
        assert await channel.say("/clear", message_id="c1") == "duplicate"
        assert await channel.say("/clear", message_id="c1") == "duplicate"
        assert direct(channel) == [("Cleared. Your next message starts a new session.",
                                    "clear")]
    assert owed_on_records(db_path) == [("c1", None)]


async def test_twin_retries_after_a_restart_get_the_owed_answer_once(db_path,
                                                                     workspace) -> None:
    await _answer_failed(db_path, workspace, "/cancel")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        channel.platform.stall()
        outcomes: list[str] = []

        async def retry() -> None:
            outcomes.append(await channel.say("/cancel", message_id="c1"))

        with trio.fail_after(10):  # hang guard only
            async with trio.open_nursery() as nursery:
                nursery.start_soon(retry)
                await channel.platform.wait_attempted(1)  # the first is sending it
                nursery.start_soon(retry)
                await trio.testing.wait_all_tasks_blocked()
                channel.platform.release()
        assert outcomes == ["duplicate", "duplicate"]
        assert direct(channel) == [("Nothing to cancel.", "cancel")]


async def test_a_retry_while_the_next_message_sends_the_owed_answer_does_not_send_it_too(
        db_path, workspace) -> None:
    # The answer is owed here and on the id's record: the retry, coming while the
    # conversation's next message is sending it, must not take it from the record again.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/cancel", message_id="c1")
        channel.platform.stall()
        with trio.fail_after(10):  # hang guard only
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(channel.say, "hello", message_id="m1"))
                await channel.platform.wait_attempted(1)  # it pays the owed answer first
                assert await channel.say("/cancel", message_id="c1") == "duplicate"
                channel.platform.release()
            await channel.wait_idle()
        assert direct(channel) == [("Nothing to cancel.", "cancel")]
    assert owed_on_records(db_path)[0] == ("c1", None)


async def test_a_prune_keeps_the_id_record_that_owes_a_direct_answer(db_path,
                                                                     workspace) -> None:
    # However short the retention: pruned, the id's retry would run /clear again (clearing
    # the session the user started since) and the owed answer would be lost.
    await _answer_failed(db_path, workspace, "/clear")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert (await rt.prune(older_than=0)).client_messages == 0
        channel = RecordingChannel(rt, DEDUPE)
        assert await channel.say("/clear", message_id="c1") == "duplicate"
        assert direct(channel) == [("Cleared. Your next message starts a new session.",
                                    "clear")]
        assert (await rt.prune(older_than=0)).client_messages == 1  # paid: pruned as any
