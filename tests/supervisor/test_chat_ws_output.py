"""``tidings chat --url`` whose stdout fails (``> /dev/full``, a reader that left) in the same
moment as the connection drops: the two failures come out of one nursery together, and the chat
still ends with one line on stderr (none for a reader that left) and exit 1: never a
traceback, never a reconnect (stdout will not come back)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from ..unwritable_stdout import KINDS, assert_one_line_ending, open_unwritable

_BOTH_AT_ONCE = """
import argparse, sys, trio
from contextlib import asynccontextmanager
from tidings.channels import GatewayClosed
from tidings.supervisor import _chat_ws

class Client:
    # The line's send meets the drop just as the receiver prints a delivery: the receiver's
    # write fails in the same run of the scheduler as the sender's GatewayClosed is raised.
    welcome = {"session_id": "s", "last_seq": 0}
    session_id = "s"

    def __init__(self):
        self.sending, self.dropped = trio.Event(), trio.Event()
        self.last_heard = trio.current_time()  # (the chat's heartbeat reads it)

    def new_id(self):
        return "m1"

    async def send(self, frame):
        if frame.get("type") == "message":
            self.sending.set()
            await self.dropped.wait()
            raise GatewayClosed(1006, "dropped")
        await trio.lowlevel.checkpoint()

    async def ack(self, *ids):
        await trio.lowlevel.checkpoint()

    async def receive(self):
        await self.sending.wait()
        self.dropped.set()
        return {"type": "delivery", "session_id": "s", "seq": 1, "delivery_id": "d1",
                "kind": "message", "text": "one"}

    async def aclose(self):
        await trio.lowlevel.checkpoint()

class Connector:
    connects = 0

    @asynccontextmanager
    async def connect(self, *args, **kwargs):
        Connector.connects += 1
        if Connector.connects > 1:
            print("reconnected", file=sys.stderr)
        yield Client()

_chat_ws.GatewayClient = Connector()
sys.exit(_chat_ws.run(argparse.Namespace(
    web=False, url="ws://127.0.0.1:8765", token="chat-test-token", token_file=None,
    conversation="default", chunks=False)))
"""


@pytest.mark.parametrize("stdout", KINDS)
def test_a_stdout_failure_and_a_drop_at_once_end_the_chat_with_one_line(
        tmp_path: pathlib.Path, stdout: str) -> None:
    target = open_unwritable(stdout)
    try:
        result = subprocess.run([sys.executable, "-c", _BOTH_AT_ONCE], input=b"hello\n",
                                stdout=target, stderr=subprocess.PIPE, timeout=60,
                                cwd=tmp_path, check=False)
    finally:
        os.close(target)
    assert_one_line_ending(stdout, result.returncode, result.stderr.decode())
