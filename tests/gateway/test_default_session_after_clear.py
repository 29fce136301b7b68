"""An ``ack`` by ``up_to_seq`` or a ``sync`` without ``session_id`` means the conversation's
current session (README, Deliveries and acks). After ``/clear`` the conversation has none, and
the gateway used the session the connection said hello in instead: after ``/new`` and
``/clear`` that is an older session, so ``ack up_to_seq`` confirmed that session's rows
(``sent``: never replayed, though the client never meant them) and ``sync`` answered for it.
With no current session, both are refused as a missing ``session_id``: name it."""

from __future__ import annotations

import trio


async def _new_then_clear(rt, client, is_frame) -> str:
    """Hello session A gets an unacked row; ``/new`` then ``/clear`` leave no current
    session. Returns A."""
    hello_session = client.session_id
    handle = await rt.notify(hello_session, "a row in the hello's session")
    with trio.fail_after(20):
        await client.receive_until(is_frame("delivery", delivery_id=handle.delivery_id),
                                   ack=False)
        for text, command in (("/new", "new"), ("/clear", "clear")):
            await client.message(text)
            await client.receive_until(is_frame("delivery", command=command))
    return hello_session


async def _statuses(rt, session_id: str) -> list[str]:
    rows = await rt.stored_deliveries(session_id, statuses=("sending", "sent", "unknown"))
    return [row.status for row in rows]


async def test_an_ack_up_to_seq_after_clear_confirms_no_other_session(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        hello_session = await _new_then_clear(rt, client, is_frame)
        await client.ack_up_to(2)  # meant for the cleared session's rows
        await client.sync(hello_session)  # its answer comes after the ack's, if any
        with trio.fail_after(20):
            frames = await client.receive_until(is_frame("synced"))
        refused = [frame for frame in frames if frame["type"] == "error"]
        assert [(frame["code"], frame["field"]) for frame in refused] == [
            ("missing_field", "session_id")], frames
        assert await _statuses(rt, hello_session) == ["sending"]


async def test_a_sync_after_clear_answers_for_no_other_session(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        hello_session = await _new_then_clear(rt, client, is_frame)
        await client.sync()
        with trio.fail_after(20):
            [*_, answer] = await client.receive_until(
                lambda frame: frame.get("type") in ("synced", "error"))
        assert answer.get("session_id") != hello_session, answer
        assert answer["type"] == "error", answer
        assert (answer["code"], answer["field"]) == ("missing_field", "session_id")
        await client.sync(hello_session)  # named, it is answered
        with trio.fail_after(20):
            [*_, synced] = await client.receive_until(is_frame("synced"))
        assert synced["session_id"] == hello_session
