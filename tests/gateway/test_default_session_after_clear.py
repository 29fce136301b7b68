"""An ``ack`` by ``up_to_seq`` or a ``sync`` without ``session_id`` means the conversation's
current session (README, Deliveries and acks), and after ``/clear``, until its next session,
the one it cleared. The gateway used the session the connection said hello in instead: after
``/new`` and ``/clear`` that is an older session, so ``ack up_to_seq`` confirmed that session's
rows (``sent``: never replayed, though the client never meant them) and ``sync`` answered for
it, not for the session whose rows ("Cleared.") the client had just got."""

from __future__ import annotations

import trio


async def _new_then_clear(rt, client, is_frame) -> tuple[str, dict]:
    """Hello session A gets an unacked row; ``/new`` (session B) then ``/clear``. Returns A
    and the delivery frame of "Cleared." (in B)."""
    hello_session = client.session_id
    handle = await rt.notify(hello_session, "a row in the hello's session")
    with trio.fail_after(20):
        await client.receive_until(is_frame("delivery", delivery_id=handle.delivery_id),
                                   ack=False)
        await client.message("/new")
        await client.receive_until(is_frame("delivery", command="new"))
        await client.message("/clear")
        [*_, cleared] = await client.receive_until(is_frame("delivery", command="clear"),
                                                   ack=False)
    assert cleared["session_id"] != hello_session
    return hello_session, cleared


async def _statuses(rt, session_id: str) -> list[str]:
    rows = await rt.stored_deliveries(session_id, statuses=("sending", "sent", "unknown"))
    return [row.status for row in rows]


async def test_an_ack_up_to_seq_after_clear_is_of_the_cleared_session(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        hello_session, cleared = await _new_then_clear(rt, client, is_frame)
        await client.ack_up_to(cleared["seq"])  # the rows it just got, "Cleared." last
        await client.sync(hello_session)  # its answer comes after the ack's, if any
        with trio.fail_after(20):
            frames = await client.receive_until(is_frame("synced"))
        assert [frame for frame in frames if frame["type"] == "error"] == []
        assert await _statuses(rt, hello_session) == ["sending"]
        assert await _statuses(rt, cleared["session_id"]) == ["sent", "sent"]


async def test_a_sync_after_clear_answers_for_the_cleared_session(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        _hello_session, cleared = await _new_then_clear(rt, client, is_frame)
        await client.sync()
        with trio.fail_after(20):
            [*_, synced] = await client.receive_until(is_frame("synced"))
        assert synced == {"type": "synced", "session_id": cleared["session_id"],
                          "last_seq": cleared["seq"]}
        await client.message("again")  # the next message starts the next session
        with trio.fail_after(20):
            [*_, started] = await client.receive_until(is_frame("accepted"))
            await client.sync()
            [*_, synced] = await client.receive_until(is_frame("synced"))
        assert started["outcome"] == "started"
        assert synced["session_id"] not in (cleared["session_id"], _hello_session)
