"""A session command's answer survives a ``SIGKILL`` between its effect and its answer.

With ``dedupe_message_ids`` the effect of ``/new``, ``/resume`` or ``/clear`` commits with the
command's message id, so the platform's retry of the message is a ``duplicate`` and does not
run the command again; the answer commits after. A child process handles the command and is
killed (``SIGKILL``) at a chosen point: just before the answer is written (``before``), or
once it was written and delivered (``after``: it must not be sent again). The test restarts
on the database in-process, and the platform retries the command's id: the user must get the
answer exactly once, from the killed process or after the restart, never none, never two.
So too a *direct* answer (``/clear``, ``/cancel`` or a refused ``/resume`` when the
conversation has no session): owed on the id's record, written with it, the retry after the
restart is sent it.

The kill point is reached through the child's ``answer`` (it prints ``point`` and blocks
there), never through the clock.
"""

from __future__ import annotations

import pathlib
import signal
import sys

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.testing import MemoryChannel

TIMEOUT = 60
"""Real seconds a step may take before the test calls it a hang (a subprocess: real clock)."""

NEW_SESSION = "Started a new session."
CLEARED = "Cleared. Your next message starts a new session."
NOTHING_TO_CANCEL = "Nothing to cancel."
NO_SUCH_SESSION = "This conversation has no such session."

_CHILD = r"""
import sys
import trio
import tidings
from tidings.channels import ChannelConfig
from tidings.testing import MemoryChannel

db, workspace, point, *texts = sys.argv[1:]


class KillPoint(MemoryChannel):
    # The last command's answer: 'point' is printed before (or after) it is written, then
    # the process blocks there until it is killed.
    armed = False

    async def deliver(self, outbound):
        await super().deliver(outbound)
        print("delivered", outbound.text.replace("\n", " "), flush=True)

    async def answer(self, *args, **kwargs):
        if self.armed and point == "before":
            print("point", flush=True)
            await trio.sleep_forever()
        await super().answer(*args, **kwargs)
        if self.armed and point == "after":
            # Once delivered: a row a kill finds being sent is "unknown" and never sent
            # again (the outbox's rule, not a command's).
            text = args[2]
            await self.wait_for(lambda: text in self.texts())
            print("point", flush=True)
            await trio.sleep_forever()


async def main():
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        channel = KillPoint(rt, ChannelConfig("ops", dedupe_message_ids=True))
        *first, last = texts
        for n, text in enumerate(first):
            await channel.say(text, message_id=f"s{n}")
            await channel.wait_idle()
        channel.armed = True
        await channel.say(last, message_id="cmd")


trio.run(main)
"""


async def _run_child(tmp: pathlib.Path, db: pathlib.Path, point: str,
                     texts: list[str]) -> list[str]:
    """Run the child until it prints ``point``, kill it; return the texts it delivered."""
    script = tmp / "command_kill_child.py"
    script.write_text(_CHILD)
    process = await trio.lowlevel.open_process(
        [sys.executable, str(script), str(db), str(tmp), point, *texts], stdout=-1)
    assert process.stdout is not None
    delivered: list[str] = []
    buffer = b""
    try:
        with trio.fail_after(TIMEOUT):
            while True:
                chunk = await process.stdout.receive_some()
                assert chunk, f"the child exited before the kill point ({await process.wait()})"
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                delivered += [line.decode()[len("delivered "):] for line in lines
                              if line.startswith(b"delivered ")]
                if b"point" in lines:
                    break
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        with trio.fail_after(TIMEOUT):
            await process.wait()
        await process.stdout.aclose()
    return delivered


async def _restart_and_retry(db: pathlib.Path, workspace: pathlib.Path, text: str,
                             coming: str | None) -> list[str]:
    """Restart on *db*, let the platform retry *text* (id ``cmd``), wait for *coming* (an
    answer the retry hands back from a session), then ``/status``; return the texts
    delivered (``/status``'s aside)."""
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        channel = MemoryChannel(rt, ChannelConfig("ops", dedupe_message_ids=True))
        with trio.fail_after(TIMEOUT):
            assert await channel.say(text, message_id="cmd") == "duplicate"
            if coming is not None:
                await channel.wait_for(lambda: coming in channel.texts())
            assert await channel.say("/status", message_id="probe") == "command"
            await channel.wait_for(lambda: any(t.startswith("Session:")
                                               for t in channel.texts()))
            assert await channel.say(text, message_id="cmd") == "duplicate"
        return [t for t in channel.texts() if not t.startswith("Session:")]


@pytest.mark.parametrize(("texts", "point", "answer", "in_session"), [
    pytest.param(["/new"], "before", NEW_SESSION, True, id="new-before"),
    pytest.param(["/new"], "after", NEW_SESSION, True, id="new-after"),
    pytest.param(["/new", "/clear"], "before", CLEARED, True, id="clear-before"),
    pytest.param(["/new", "/clear"], "after", CLEARED, True, id="clear-after"),
    pytest.param(["/clear"], "before", CLEARED, False, id="direct-before"),
    pytest.param(["/cancel"], "before", NOTHING_TO_CANCEL, False, id="direct-cancel-before"),
    pytest.param(["/resume sess_nope"], "before", NO_SUCH_SESSION, False,
                 id="direct-resume-before"),
])
async def test_a_kill_between_a_commands_effect_and_its_answer_answers_it_once(
        tmp_path, texts, point, answer, in_session) -> None:
    db = tmp_path / "kill.db"
    before = await _run_child(tmp_path, db, point, texts)
    # Not given before the kill, an answer in a session comes after the restart (a direct
    # one would be given by the retry itself).
    coming = answer if in_session and answer not in before else None
    after = await _restart_and_retry(db, tmp_path, texts[-1], coming)
    assert (before + after).count(answer) == 1, (point, before, after)
