"""The running turn ``/cancel`` cancels has its messages released by the ``/cancel`` itself, as
a waiting one's are (test_cancel_waiting_released.py): a crash after the ``/cancel`` (before
the turn's end was written) leaves nothing for the next start to say about a message the user
had cancelled. Before, they stayed held until the turn's end released them, and the next
start's recovery sent "your message was not answered" for it.

Safe for the answer: a cancel the turn takes is one it took before it began writing its reply
(``ActiveTurn.finishing``), and it then ends cancelled, never completed; a later one is refused
(and releases nothing), so the reply still releases them in its own commit."""

from __future__ import annotations

import pathlib
import sqlite3
from contextlib import closing

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig

from ..real_time import fail_after_real
from .conftest import RecordingChannel, rows


class SlowToStop:
    """Works until cancelled, then stops only once ``stop`` is set: the turn has not ended,
    whatever the clock does, while the test copies the database."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.stop = trio.Event()

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk("working")
        self.entered.set()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await self.stop.wait()


def _crash_copy(db_path: pathlib.Path, copy: pathlib.Path) -> None:
    """What a ``SIGKILL`` now would leave on disk: a consistent copy of the database."""
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)


def _not_answered(db_path: pathlib.Path) -> list[str]:
    return [text for (text,) in rows(db_path, "SELECT text FROM outbox WHERE kind = 'notice'")
            if "was not answered" in text]


async def _cancel(channel: RecordingChannel, how: str) -> None:
    """``/cancel``, or a press of the stop button (with a press id, or none)."""
    if how == "command":
        assert await channel.say("/cancel") == "command"
    else:
        press_id = "press1" if how == "press_id" else None
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1",
                                         press_id=press_id) == "cancelled"


@pytest.mark.parametrize("how", ["command", "press", "press_id"])
async def test_a_crash_after_cancel_says_nothing_of_the_running_turn_it_cancelled(
        how, db_path, workspace, tmp_path, autojump_clock) -> None:
    agent = SlowToStop()
    copy = tmp_path / "crashed.db"
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                       agent=agent)
            try:
                assert await channel.say("first", message_id="m1") == "started"
                await agent.entered.wait()
                assert await channel.say("second", message_id="m2") == "queued"
                await _cancel(channel, how)  # the running one
                _crash_copy(db_path, copy)
            finally:
                agent.stop.set()  # (else the runtime's stop waits for it for ever)
        # The next start on what the crash left: the cancelled turn was dealt with; the one
        # behind it, neither run nor cancelled, was not.
        async with tidings.open_runtime(copy, workspace=workspace, grace=0) as again:
            await again.recover()
    told = _not_answered(copy)
    assert any('"second"' in text for text in told), told
    assert not any('"first"' in text for text in told), told

