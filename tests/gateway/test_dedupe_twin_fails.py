"""A message id sent again on another connection while its first copy is still being
handled (a client that lost its connection and resends on a new one): the copy waits for the
first and is then looked up, so it is a duplicate only of a message that was handled.

It was answered ``accepted`` (``pending``, a duplicate) at once, and a first copy that then
failed (the store refused its write: a full disk) left the message handled by nobody, though
the client had been told it was accepted: lost."""

from __future__ import annotations

import pytest
import trio

from tidings.channels._gateway_conn import Connection
from tidings.errors import StoreError

from .test_messages import _until


@pytest.fixture
def twin_arrival(monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """Set when a second connection's frame reaches the gateway: every frame but the hello
    is charged to its connection's rate right before it is handled, with no checkpoint
    between, so the copy has reached its message id's check when this is set."""
    arrived = trio.Event()
    first: list[Connection] = []
    charge = Connection.charge

    def charging(conn: Connection, cost: float = 1.0) -> bool:
        if not first:
            first.append(conn)
        elif conn is not first[0]:
            arrived.set()
        return charge(conn, cost)

    monkeypatch.setattr(Connection, "charge", charging)
    return arrived


async def _user_texts(rt, conversation: str) -> list[str]:
    session_id = await rt.conversation_session("gateway", f"gateway:conv:{conversation}")
    return [m.text for m in await rt.history(session_id) if m.role == "user"]


async def test_a_copy_of_a_message_whose_first_copy_fails_is_handled(
        rt, serve_gateway, connect, is_frame, twin_arrival) -> None:
    async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as one, \
            connect(url, "alpha") as two:
        handle = gateway.handle_inbound
        calls = 0

        async def first_fails(inbound):  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            if calls == 1:
                await twin_arrival.wait()
                raise StoreError("database or disk is full")
            return await handle(inbound)

        gateway.handle_inbound = first_fails
        await one.message("keep me", message_id="msg-1")
        await two.message("keep me", message_id="msg-1")
        [*_, refused] = await _until(one, is_frame("error", ref="msg-1"))
        assert refused["code"] == "internal"
        [*_, accepted] = await _until(two, is_frame("accepted", id="msg-1"))
        assert accepted["outcome"] == "started"
        assert "duplicate" not in accepted
        await gateway.wait_idle()
        assert await _user_texts(rt, "alpha") == ["keep me"]


async def test_a_copy_of_a_message_still_being_handled_is_its_duplicate(
        rt, serve_gateway, connect, is_frame, twin_arrival) -> None:
    """The copy is answered with the first copy's outcome once that was recorded, and runs
    no second turn."""
    async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as one, \
            connect(url, "alpha") as two:
        handle = gateway.handle_inbound

        async def first_waits(inbound):  # type: ignore[no-untyped-def]
            await twin_arrival.wait()
            return await handle(inbound)

        gateway.handle_inbound = first_waits
        await one.message("once only", message_id="msg-1")
        await two.message("once only", message_id="msg-1")
        [*_, first] = await _until(one, is_frame("accepted", id="msg-1"))
        [*_, copy] = await _until(two, is_frame("accepted", id="msg-1"))
        assert first["outcome"] == "started"
        assert "duplicate" not in first
        # running: whether its turn has not ended yet, which the echo's may have by then
        assert copy == {"type": "accepted", "id": "msg-1", "outcome": "started",
                        "duplicate": True, "running": copy.get("running")}
        assert isinstance(copy["running"], bool)
        await gateway.wait_idle()
        assert await _user_texts(rt, "alpha") == ["once only"]
