"""A held command answer owed to the retry is sent once, even while its first write is in flight.

With ``dedupe_message_ids`` the answer of ``/cancel`` is held with its message id and, when
its write fails or its caller is cancelled, owed to the platform's retry of its id as well (the
retry sends it unless the hold is gone: "the first write committed after all"). A caller
cancelled while the write is in flight leaves that write to commit (``Store.commit``). A retry
that came meanwhile read the hold as still there (the first write had not committed yet) and
wrote the answer a second time: the user was told "Nothing to cancel." twice. (The answer of
``/new``, ``/clear`` and ``/resume`` is written with no cut once their effect's write is on its
way: see test_command_cut_in_write.py.)
"""

from __future__ import annotations

import threading

import trio
import trio.testing

import tidings
from tidings.store import Call

from .conftest import GatedAgent, RecordingChannel, rows
from .test_command_answer_held import DEDUPE, KEY, held, start

NOTHING_TO_CANCEL = "Nothing to cancel."


class _Gate:
    """Blocks the writer (its thread) inside the first write of a command's answer."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def wait(self) -> int:
        if not self.entered.is_set():
            self.entered.set()
            self.opened.wait(10)
        return 0

    def install(self, conn) -> None:
        conn.create_function("h98_gate", 0, self.wait)
        conn.execute("CREATE TEMP TRIGGER gate_answers AFTER INSERT ON outbox "
                     "WHEN NEW.metadata LIKE '%\"command\"%' "
                     "BEGIN SELECT h98_gate(); END")


async def test_a_retry_during_the_cancelled_first_write_sends_the_answer_once(
        db_path, workspace) -> None:
    await start(db_path, workspace, "hello")
    gate = _Gate()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        commit = rt.store.commit
        retried = trio.Event()

        async def observed_commit(ops, **kwargs):
            # The retry's first write, once it took what was owed (pays it): queued behind
            # the gated first write before it awaits anything.
            if gate.entered.is_set() and channel.owed_answers.of(KEY) == []:
                retried.set()
            return await commit(ops, **kwargs)

        await rt.store.commit([Call(gate.install)])
        rt.store.commit = observed_commit
        try:
            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    first = trio.CancelScope()

                    async def say_first() -> None:
                        with first:
                            await channel.say("/cancel", message_id="cmd")

                    nursery.start_soon(say_first)
                    await trio.to_thread.run_sync(gate.entered.wait, abandon_on_cancel=True)
                    first.cancel()  # the platform gave up on the request: the write is in flight
                    await trio.testing.wait_all_tasks_blocked()
                    assert channel.owed_answers.of(KEY) == ["cmd"]
                    outcome: list[str] = []

                    async def retry() -> None:
                        outcome.append(await channel.say("/cancel", message_id="cmd"))

                    nursery.start_soon(retry)  # the platform's retry, while the write waits
                    await retried.wait()
                    await trio.testing.wait_all_tasks_blocked()
                    gate.opened.set()
        finally:
            gate.opened.set()
        assert outcome == ["duplicate"]
        with trio.fail_after(10):
            await channel.wait_for(lambda: NOTHING_TO_CANCEL in channel.notices())
        await channel.wait_idle()
    assert held(db_path) == 0
    # Each answer written is delivered: one row, one answer.
    assert rows(db_path, "SELECT text FROM outbox WHERE metadata = '{\"command\": \"cancel\"}'"
                ) == [(NOTHING_TO_CANCEL,)]
