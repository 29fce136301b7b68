"""A client's ``/new`` whose answer a crash cut off gets it after the restart, once.

The gateway writes a command's id with its effect, so the client's resend after a crash is a
duplicate that runs nothing; the answer was written after, and a crash in between lost it.
Now it is held with the effect and sent at the next start: the client's hello gets it (a row
of its conversation left ``unrouted``), and the resend is a duplicate. The crash is the
answer's write failing (a trigger refuses it) and the runtime stopping.
"""

from __future__ import annotations

import tidings
from tidings.channels import GatewayChannel, GatewayConfig
from tidings.store import Call

from ..database_template import fresh_database
from .conftest import TOKEN
from .test_messages import _until


def refuse_answers(conn: object) -> None:
    conn.execute("CREATE TEMP TRIGGER refuse_answers BEFORE INSERT ON outbox "  # type: ignore[attr-defined]
                 "WHEN NEW.metadata LIKE '%\"command\"%' "
                 "BEGIN SELECT RAISE(ABORT, 'the process died here'); END")


async def test_a_new_whose_answer_a_crash_cut_off_is_answered_after_the_restart(
        db_path, workspace, connect, is_frame) -> None:
    fresh_database(db_path)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0))
        async with gateway.serving() as port, \
                connect(f"ws://127.0.0.1:{port}", "alpha") as client:
            await client.message("hello", message_id="msg-0")
            await _until(client, is_frame("delivery", kind="message"))
            await gateway.wait_idle()
            await rt.store.commit([Call(refuse_answers)])
            await client.message("/new", message_id="msg-1")
            await _until(client, is_frame("error", ref="msg-1"))
            gateway.close()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0))
        async with gateway.serving() as port, \
                connect(f"ws://127.0.0.1:{port}", "alpha") as client:
            frames = await _until(client, is_frame("delivery", kind="notice"))
            await client.message("/new", message_id="msg-1")  # the client resends it
            frames += await _until(client, is_frame("accepted", id="msg-1"))
            await client.message("/status", message_id="msg-2")
            frames += await _until(client, lambda f: f["type"] == "delivery"
                                   and f["text"].startswith("Session:"))
            gateway.close()
    answers = [f for f in frames if f["type"] == "delivery"
               and f["text"] == "Started a new session."]
    assert len(answers) == 1, frames
    assert [f["duplicate"] for f in frames if f["type"] == "accepted"] == [True]
