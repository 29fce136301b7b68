"""A gateway client's session command, its server killed (``SIGKILL``) around the answer.

The gateway writes the message id of ``/new``, ``/resume``, ``/cancel`` and ``/clear`` with
the command's effect, so the client's resend of the id after a crash (``tidings chat``
resends what was not ``accepted`` when it reconnects) is a ``duplicate`` and runs nothing.
A child process serves the gateway; the test's client sends the command and the child is
killed at a chosen point: just before the answer is written (``before``), or once the client
got it (``after``), or once the command was handled, its answer queued but not read by the
client (``handled``). The test restarts on the database in-process, the client reconnects (with
``session_id`` and ``after_seq``, as ``tidings chat``) and resends the command's id: the
command ran once, and its answer comes exactly once, before the kill or after the restart.
So too a *direct* answer (no session: the conversation was cleared), which the gateway sends
as a ``notice`` frame: owed on the id's record until the client acks it (by ``message_ids``,
as ``tidings chat`` does and this test's client), so one queued and never read when the
server died is sent to the resend after the restart, and one acked is not.

The kill point is reached through the child's ``answer`` (it prints ``point`` and blocks
there), never through the clock.
"""

from __future__ import annotations

import pathlib
import signal
import sys
from typing import Any

import pytest
import trio

import tidings
from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig

TIMEOUT = 60
"""Real seconds a step may take before the test calls it a hang (a subprocess: real clock)."""

TOKEN = "kill-token"
NEW_SESSION = "Started a new session."
CLEARED = "Cleared. Your next message starts a new session."
NOTHING_TO_CANCEL = "Nothing to cancel."
CANCELLED = "Cancelled the running request."
NO_SUCH_SESSION = "This conversation has no such session."
RESUMED = "Resumed session {first}."

_CHILD = r"""
import sys
import trio
import tidings
from tidings.channels import EchoAgent, GatewayChannel, GatewayConfig

db, workspace, point, token = sys.argv[1:]


class KillPoint(GatewayChannel):
    # The answer of the message 'cmd': 'point' is printed before (or after) it is written,
    # then the process blocks there until it is killed.
    armed = False

    async def handle_inbound(self, inbound):
        self.armed = inbound.message_id == "cmd"
        if self.armed and point == "received":  # before anything of it is written
            print("point", flush=True)
            await trio.sleep_forever()
        outcome = await super().handle_inbound(inbound)
        if self.armed and point in ("handled", "acked"):  # its answer queued
            print("point", flush=True)
            if point == "handled":  # and never read by the client
                await trio.sleep_forever()
        return outcome

    async def answer(self, *args, **kwargs):
        if self.armed and point == "before":
            print("point", flush=True)
            await trio.sleep_forever()
        await super().answer(*args, **kwargs)
        if self.armed and point in ("written", "after"):
            print("point", flush=True)
            await trio.sleep_forever()


class Holding(EchoAgent):
    # A message 'hold' runs until it is cancelled (a turn for /cancel to stop).
    async def run(self, turn):
        if turn.text == "hold":
            await trio.sleep_forever()
        await super().run(turn)


async def main():
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        gateway = KillPoint(rt, GatewayConfig(token=token, port=0), agent=Holding())
        async with gateway.serving() as port:
            print("port", port, flush=True)
            await trio.sleep_forever()


trio.run(main)
"""


class _Child:
    """The serving child: its port, then its ``point`` line."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""

    async def line(self, prefix: bytes) -> bytes:
        assert self.process.stdout is not None
        with trio.fail_after(TIMEOUT):
            while True:
                *lines, rest = self.buffer.split(b"\n")
                for n, line in enumerate(lines):
                    if line.startswith(prefix):
                        self.buffer = b"\n".join([*lines[n + 1:], rest])
                        return line
                chunk = await self.process.stdout.receive_some()
                assert chunk, f"the child exited early ({await self.process.wait()})"
                self.buffer += chunk


def _answers(frames: list[dict[str, Any]]) -> list[str]:
    """The texts of the deliveries and notices in *frames*."""
    return [f["text"] for f in frames if f["type"] in ("delivery", "notice")]


async def _exchange(client: GatewayClient, text: str, message_id: str,
                    frames: list[dict[str, Any]]) -> None:
    """Send *text*, keep frames (acking deliveries) until it is accepted and answered."""
    await client.message(text, message_id=message_id)
    accepted = answered = False
    with trio.fail_after(TIMEOUT):
        while not (accepted and answered):
            frame = await _receive(client, frames)
            accepted = accepted or (frame["type"] == "accepted" and frame["id"] == message_id)
            answered = answered or text == "hold" or frame["type"] in ("delivery", "notice")


async def _receive(client: GatewayClient, frames: list[dict[str, Any]]) -> dict[str, Any]:
    frame = await client.receive()
    frames.append(frame)
    if frame["type"] == "delivery":
        await client.ack(frame["delivery_id"])
    elif frame["type"] == "notice" and frame.get("message_id"):  # as tidings chat
        await client.ack_notices(frame["message_id"])
    return frame


def _where(welcome: dict[str, Any], frames: list[dict[str, Any]]) -> str:
    """The session a client reconnects in: that of the last delivery it got, else its
    welcome's (as ``tidings chat`` follows the session)."""
    sessions = [f["session_id"] for f in frames if f["type"] == "delivery"]
    return sessions[-1] if sessions else welcome["session_id"]


def _statuses(frames: list[dict[str, Any]]) -> list[str]:
    return [text for text in _answers(frames) if text.startswith("Session:")]


async def _until(client: GatewayClient, frames: list[dict[str, Any]], done: Any) -> None:
    with trio.fail_after(TIMEOUT):
        while not done(await _receive(client, frames)):
            pass


@pytest.mark.parametrize(("setup", "command", "point", "answer"), [
    pytest.param(["hello"], "/new", "received", NEW_SESSION, id="new-received"),
    pytest.param(["hello"], "/new", "before", NEW_SESSION, id="new-before"),
    pytest.param(["hello"], "/new", "written", NEW_SESSION, id="new-written"),
    pytest.param(["hello"], "/new", "after", NEW_SESSION, id="new-after"),
    pytest.param(["hello"], "/clear", "before", CLEARED, id="clear-before"),
    pytest.param(["hello"], "/clear", "written", CLEARED, id="clear-written"),
    pytest.param(["hello"], "/clear", "after", CLEARED, id="clear-after"),
    pytest.param(["hello"], "/cancel", "before", NOTHING_TO_CANCEL, id="cancel-before"),
    pytest.param(["hello"], "/cancel", "written", NOTHING_TO_CANCEL, id="cancel-written"),
    pytest.param(["hello"], "/cancel", "after", NOTHING_TO_CANCEL, id="cancel-after"),
    pytest.param(["hold"], "/cancel", "before", CANCELLED, id="cancel-running-before"),
    pytest.param(["hold"], "/cancel", "written", CANCELLED, id="cancel-running-written"),
    pytest.param(["hold"], "/cancel", "after", CANCELLED, id="cancel-running-after"),
    pytest.param(["hello", "/new"], "/resume {first}", "before", RESUMED, id="resume-before"),
    pytest.param(["hello", "/new"], "/resume {first}", "written", RESUMED,
                 id="resume-written"),
    pytest.param(["hello", "/new"], "/resume {first}", "after", RESUMED, id="resume-after"),
    pytest.param(["hello"], "/resume sess_nope", "before", NO_SUCH_SESSION,
                 id="resume-refused-before"),
    # No session when it comes (a /clear before it): /new and a /resume that is not refused
    # answer in the session they bind.
    pytest.param(["/clear"], "/new", "before", NEW_SESSION, id="cleared-new-before"),
    pytest.param(["/clear"], "/new", "written", NEW_SESSION, id="cleared-new-written"),
    pytest.param(["hello", "/new", "/clear"], "/resume {first}", "before", RESUMED,
                 id="cleared-resume-before"),
    pytest.param(["hello", "/new", "/clear"], "/resume {first}", "written", RESUMED,
                 id="cleared-resume-written"),
    pytest.param(["/clear"], "/clear", "received", CLEARED, id="direct-clear-received"),
    pytest.param(["/clear"], "/clear", "before", CLEARED, id="direct-clear-before"),
    pytest.param(["/clear"], "/cancel", "before", NOTHING_TO_CANCEL,
                 id="direct-cancel-before"),
    pytest.param(["/clear"], "/resume sess_nope", "before", NO_SUCH_SESSION,
                 id="direct-resume-before"),
    # Its answer queued, unread when the server died: still owed on the id's record.
    pytest.param(["/clear"], "/clear", "handled", CLEARED, id="direct-clear-handled"),
    pytest.param(["/clear"], "/cancel", "handled", NOTHING_TO_CANCEL,
                 id="direct-cancel-handled"),
    pytest.param(["/clear"], "/resume sess_nope", "handled", NO_SUCH_SESSION,
                 id="direct-resume-handled"),
    # Read and acked before the kill: cleared, the resend gets nothing more.
    pytest.param(["/clear"], "/clear", "acked", CLEARED, id="direct-clear-acked"),
])
async def test_a_kill_around_a_gateway_commands_answer_answers_it_once(
        tmp_path: pathlib.Path, setup: list[str], command: str, point: str,
        answer: str) -> None:
    db = tmp_path / "kill.db"
    script = tmp_path / "gateway_command_kill_child.py"
    script.write_text(_CHILD)
    process = await trio.lowlevel.open_process(
        [sys.executable, str(script), str(db), str(tmp_path), point, TOKEN], stdout=-1)
    child = _Child(process)
    before: list[dict[str, Any]] = []
    try:
        port = int((await child.line(b"port ")).split()[1])
        url = f"ws://127.0.0.1:{port}"
        async with GatewayClient.connect(url, token=TOKEN, conversation="alpha") as client:
            welcome = client.welcome
            first = welcome["session_id"]
            command, answer = command.format(first=first), answer.format(first=first)
            for n, text in enumerate(setup):
                await _exchange(client, text, f"s{n}", before)
            del before[:]
            await client.message(command, message_id="cmd")
            await child.line(b"point")
            if point in ("after", "acked"):  # the client got it (and acked a notice)
                await _until(client, before, lambda f: f.get("text") == answer)
            if point == "acked":  # its ack handled, as the frames after it are
                await client.message("/status", message_id="probe0")
                await _until(client, before, lambda f: len(_statuses(before)) == 1)
            process.send_signal(signal.SIGKILL)
            with trio.fail_after(TIMEOUT):
                await process.wait()
            session_id = _where(welcome, before)
            after_seq = client.seen.get(session_id, 0)
    finally:
        process.kill()
        with trio.fail_after(TIMEOUT):
            await process.wait()
        assert process.stdout is not None
        await process.stdout.aclose()
    after: list[dict[str, Any]] = []
    async with tidings.open_runtime(db, workspace=tmp_path) as rt:
        gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0))
        try:
            async with gateway.serving() as port, GatewayClient.connect(
                    f"ws://127.0.0.1:{port}", token=TOKEN, conversation="alpha",
                    session_id=session_id, after_seq=after_seq) as client:
                await client.message(command, message_id="cmd")  # the resend
                await _until(client, after, lambda f: f["type"] == "accepted")
                await client.message("/status", message_id="probe")
                await _until(client, after, lambda f: len(_statuses(after)) == 1)
                if answer not in _answers(before + after):  # held: it may come later
                    await _until(client, after, lambda f: f.get("text") == answer)
                await client.message(command, message_id="cmd")  # once more: nothing new
                await _until(client, after, lambda f: f["type"] == "accepted")
                await client.message("/status", message_id="probe2")
                await _until(client, after, lambda f: len(_statuses(after)) == 2)
                await client.sync()
                await _until(client, after, lambda f: f["type"] == "synced")
        finally:
            with trio.CancelScope(shield=True):
                await gateway.aclose()
    # Killed before anything of it was written, the resend is its only run; else the resend
    # is a duplicate (the command ran before the kill), and so is the next one.
    resent = None if point == "received" else True
    accepted = [f for f in after if f["type"] == "accepted"]
    assert [(f["id"], f.get("duplicate")) for f in accepted] == [
        ("cmd", resent), ("probe", None), ("cmd", True), ("probe2", None)], accepted
    assert _answers(before + after).count(answer) == 1, (before, after)
