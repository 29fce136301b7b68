"""A client's ``/new`` has its id written in the transaction that makes the new session.

Written after the command (as the gateway did for every message that is no turn), a write of
the id that failed after the new session was committed (as a crash between the two leaves
it) answered ``internal``; the client resent its message, and a second session was made for
one ``/new``. Now the id and the session are one commit: both or neither.
"""

from __future__ import annotations

from tidings.store import Call

from .test_messages import _until

KEY = "gateway:conv:alpha"


def refuse_ids(conn: object) -> None:
    conn.execute("CREATE TEMP TRIGGER refuse_ids BEFORE INSERT ON client_messages "  # type: ignore[attr-defined]
                 "BEGIN SELECT RAISE(ABORT, 'the disk said no'); END")


def allow_ids(conn: object) -> None:
    conn.execute("DROP TRIGGER temp.refuse_ids")  # type: ignore[attr-defined]


async def test_a_new_resent_after_its_id_could_not_be_written_makes_one_session(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as client:
        await client.message("hello", message_id="msg-0")
        await _until(client, is_frame("accepted", id="msg-0"))
        await gateway.wait_idle()
        first = await rt.conversation_session("gateway", KEY)
        await rt.store.commit([Call(refuse_ids)])
        await client.message("/new", message_id="msg-1")
        await _until(client, is_frame("error", ref="msg-1"))
        await rt.store.commit([Call(allow_ids)])
        await client.message("/new", message_id="msg-1")  # the client resends it
        [*_, accepted] = await _until(client, is_frame("accepted", id="msg-1"))
        await gateway.wait_idle()
    assert accepted["outcome"] == "command"
    sessions = [session for (session,) in await rt.store.read(
        lambda conn: conn.execute("SELECT session_id FROM sessions").fetchall())]
    assert len(sessions) == 2  # the first message's and the one /new made
    assert first in sessions
