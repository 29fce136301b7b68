"""A session command cut off while its effect's write is in flight is still answered, once.

With ``dedupe_message_ids`` the answer of ``/new``, ``/clear`` and ``/resume`` is held with
the command's effect and the record of its message id, in one transaction. A caller cancelled
(the platform gave up on the request, a stop) while that write was in flight left the write
to commit, and nothing after it ran: the answer stayed held, and only the next start sent it;
the platform's retry of the id was a ``duplicate`` that found nothing owed. A process that
ran on for days never told the user the command ran. Now the write and the answer's write
(bounded: a few store requests) are not cut off once the write is in flight: the answer is
written, the hold released, and the retry gets no second answer.
"""

from __future__ import annotations

import threading

import pytest
import trio
import trio.testing

import tidings
from tidings.store import Call

from .conftest import GatedAgent, RecordingChannel, rows
from .test_command_answer_held import DEDUPE, KEY, held, start

ANSWERS = {"new": "Started a new session.",
           "clear": "Cleared. Your next message starts a new session.",
           "resume": "Resumed session {old}."}


class _Gate:
    """Blocks the writer (its thread) inside the write of a command's effect: the insert of
    the answer's hold, in that transaction."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def wait(self) -> int:
        if not self.entered.is_set():
            self.entered.set()
            self.opened.wait(10)
        return 0

    def install(self, conn) -> None:
        conn.create_function("h109_gate", 0, self.wait)
        conn.execute("CREATE TEMP TRIGGER gate_effect AFTER INSERT ON inbound_messages "
                     "WHEN NEW.command IS NOT NULL BEGIN SELECT h109_gate(); END")


@pytest.mark.parametrize("command", ["new", "clear", "resume"])
async def test_a_command_cut_while_its_write_is_in_flight_is_answered_once(
        db_path, workspace, command) -> None:
    # The conversation has a session (s0), and a second one (s1) for /resume to leave.
    old, _ = await start(db_path, workspace, "hello", "/new")
    text = f"/resume {old}" if command == "resume" else f"/{command}"
    answer = ANSWERS[command].format(old=old)
    before = answers(db_path, command, answer)  # /new's own, from the start
    gate = _Gate()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        await rt.store.commit([Call(gate.install)])
        try:
            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    first = trio.CancelScope()

                    async def say_first() -> None:
                        with first:
                            await channel.say(text, message_id="cmd")

                    nursery.start_soon(say_first)
                    await trio.to_thread.run_sync(gate.entered.wait, abandon_on_cancel=True)
                    first.cancel()  # the platform gave up: the write is in flight
                    await trio.testing.wait_all_tasks_blocked()
                    gate.opened.set()
        finally:
            gate.opened.set()
        await rt.store.commit([Call(lambda conn: None)])  # behind the cut write: it ended
        # The caller is gone, and the answer is written all the same: no hold is left for
        # the next start, and nothing needs the platform to retry.
        assert held(db_path) == 0
        assert answers(db_path, command, answer) == before + 1
        with trio.fail_after(10):
            await channel.wait_for(lambda: answer in channel.notices())
        assert await channel.say(text, message_id="cmd") == "duplicate"  # the retry
        await channel.wait_idle()
        assert channel.notices().count(answer) == 1
    assert channel.owed_answers.of(KEY) == []
    assert answers(db_path, command, answer) == before + 1


def answers(db_path, command: str, answer: str) -> int:
    """How many answers *answer* to *command* were written (outbox rows)."""
    [(count,)] = rows(db_path, "SELECT count(*) FROM outbox WHERE metadata = ? AND text = ?",
                      f'{{"command": "{command}"}}', answer)
    return int(count)
