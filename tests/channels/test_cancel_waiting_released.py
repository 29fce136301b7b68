"""A waiting turn ``/cancel`` (or the stop button, ``cancel_turn``) cancelled has its messages
released by the cancel itself, as ``/clear`` releases the turns it drops: a crash after the
cancel (before the turn's worker got to it) leaves nothing for the next start to say about a
message the user had cancelled. Before, they stayed held until the worker reached the turn,
and the next start's recovery sent "your message was not answered" for it."""

from __future__ import annotations

import pathlib
import sqlite3
from contextlib import closing

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig

from ..real_time import fail_after_real
from .conftest import Lingering, RecordingChannel, rows


def _crash_copy(db_path: pathlib.Path, copy: pathlib.Path) -> None:
    """What a ``SIGKILL`` now would leave on disk: a consistent copy of the database."""
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)


def _not_answered(db_path: pathlib.Path) -> list[str]:
    return [text for (text,) in rows(db_path, "SELECT text FROM outbox WHERE kind = 'notice'")
            if "was not answered" in text]


async def _cancel(channel: RecordingChannel, how: str, n: int) -> None:
    """``/cancel``, or a press of the stop button (with a press id, or none)."""
    if how == "command":
        assert await channel.say("/cancel") == "command"
    else:
        press_id = f"press{n}" if how == "press_id" else None
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1",
                                         press_id=press_id) == "cancelled"


async def told_after_cancels(how: str, cancels: int, db_path: pathlib.Path,
                             workspace: pathlib.Path, tmp_path: pathlib.Path) -> list[str]:
    """Send "first" (its turn runs until stopped) and "second" (waiting behind it), cancel
    *cancels* times by *how*, copy the database as a crash now would leave it, run the next
    start's recovery on the copy and return the "not answered" notices it wrote."""
    agent = Lingering(stop=trio.Event())  # stops once told: the test copies the database
    copy = tmp_path / "crashed.db"
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                       agent=agent)
            try:
                assert await channel.say("first", message_id="m1") == "started"
                await agent.entered.wait()
                assert await channel.say("second", message_id="m2") == "queued"
                for n in range(1, cancels + 1):  # the running one, then (it is ending) the
                    await _cancel(channel, how, n)  # waiting one
                _crash_copy(db_path, copy)
            finally:
                agent.stop.set()  # (else the runtime's stop waits for it for ever)
        async with tidings.open_runtime(copy, workspace=workspace, grace=0) as again:
            await again.recover()
    return _not_answered(copy)


@pytest.mark.parametrize("how", ["command", "press", "press_id"])
async def test_a_crash_after_cancel_says_nothing_of_the_waiting_turn_it_cancelled(
        how, db_path, workspace, tmp_path, autojump_clock) -> None:
    told = await told_after_cancels(how, 2, db_path, workspace, tmp_path)
    # The next start on what the crash left: the waiting turn was dealt with.
    assert not any('"second"' in text for text in told), told
    # (the running one, cancelled too, neither: test_cancel_running_released.py)
    assert not any('"first"' in text for text in told), told
