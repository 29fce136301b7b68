"""Admission: an unauthenticated connection is closed with a clear reason before anything
else happens; a malformed hello names its field."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed

from tidings.channels import GatewayChannel, GatewayClosed, GatewayConfig
from tidings.channels._gateway_client import open_transport

from ..real_time import fail_after_real


async def _first_close(url: str, *frames: str | bytes) -> tuple[int, str]:
    """Send *frames* on a raw connection; return the close code and reason it gets."""
    async with open_transport(url) as ws:
        for frame in frames:
            await ws.send_message(frame)
        with trio.fail_after(10):
            try:
                message = await ws.get_message()
            except ConnectionClosed as exc:
                return exc.reason.code, exc.reason.reason or ""
        raise AssertionError(f"expected a close, got {message!r}")


def _hello(**fields) -> str:
    return json.dumps({"type": "hello", "token": fields.pop("token", "gateway-test-token"),
                       "conversation": "alpha", "protocol": 1, **fields})


async def _sessions(rt) -> int:
    return len(await rt.store.read(lambda conn: conn.execute(
        "SELECT session_id FROM sessions").fetchall()))


async def test_a_bad_token_is_closed_4001_and_creates_nothing(rt, serve_gateway,
                                                              connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with pytest.raises(GatewayClosed) as caught:
            async with connect(url, "alpha", token="wrong-token-123"):
                raise AssertionError("admitted with a bad token")
        assert caught.value.code == 4001
        assert caught.value.reason == "unauthorized: bad token"
        assert await _sessions(rt) == 0


@pytest.mark.parametrize("first", [
    "not json", json.dumps({"type": "message", "text": "hi", "id": "m1"}),
    json.dumps({"type": "hello", "conversation": "alpha", "protocol": 1}),
])
async def test_a_first_frame_that_is_not_a_hello_with_a_token_is_refused(
        rt, serve_gateway, first) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        code, reason = await _first_close(url, first)
        assert (code, reason) == (4001, "unauthorized: the first frame must be a hello with a "
                                        "token")
        assert await _sessions(rt) == 0


async def test_no_hello_in_time_is_refused(rt, serve_gateway, autojump_clock) -> None:
    # hello_timeout's seconds are trio's (autojump_clock): the wait takes no real time, and
    # the refusal is seen to come when the timeout is up, not before.
    async with serve_gateway(rt, hello_timeout=10.0) as (_gateway, url):
        start = trio.current_time()
        async with open_transport(url) as ws:
            with fail_after_real(30), pytest.raises(ConnectionClosed) as caught:
                await ws.get_message()
            closed = trio.current_time()
        assert caught.value.reason.code == 4001
        assert "no hello within" in caught.value.reason.reason
    assert closed - start >= 10


async def test_the_token_is_checked_before_the_other_fields(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        assert (await _first_close(url, _hello(token="nope", protocol="x")))[0] == 4001


async def test_an_unknown_protocol_version_is_closed_4002(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        code, reason = await _first_close(url, _hello(protocol=2))
        assert code == 4002
        assert "this server speaks 1" in reason


async def test_a_malformed_hello_names_the_field(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        code, reason = await _first_close(url, _hello(after_seq=-4))
        assert code == 4000
        assert "after_seq" in reason
        code, reason = await _first_close(url, _hello(session_id="session_of_someone_else"))
        assert code == 4000
        assert "not a session of this conversation" in reason


async def test_a_session_of_another_conversation_cannot_be_named(rt, serve_gateway,
                                                                 connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "beta") as beta:
            other = beta.welcome["session_id"]
        code, reason = await _first_close(url, _hello(session_id=other, after_seq=0))
        assert code == 4000
        assert "session_id" in reason


async def test_two_names_are_two_sessions_and_one_name_is_one(rt, serve_gateway,
                                                              connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as a1, connect(url, "alpha") as a2, \
                connect(url, "beta") as b:
            assert a1.welcome["session_id"] == a2.welcome["session_id"]
            assert b.welcome["session_id"] != a1.welcome["session_id"]
        session = await rt.session(a1.welcome["session_id"])
        assert (session.channel, session.conversation_key) == ("gateway", "gateway:conv:alpha")


async def _read_until_closed(ws) -> None:
    while True:
        await ws.get_message()


async def _held_open(url: str, closes: list[tuple[int, str]], hello: str | None = None, *,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """A raw connection (that says *hello*, if given) kept open until the server closes it."""
    async with open_transport(url) as ws:
        if hello is not None:
            await ws.send_message(hello)
        task_status.started()
        with pytest.raises(ConnectionClosed) as caught:
            await _read_until_closed(ws)
        closes.append((caught.value.reason.code, caught.value.reason.reason or ""))


async def test_leaving_serving_closes_a_connection_still_waiting_for_its_hello(rt) -> None:
    """``serving()`` closes every connection with 1001 and waits for them: also one that has
    not said hello yet (it waited for the hello, up to ``hello_timeout``, holding the stop
    up, and a hello sent then was admitted after the sweep: the stop never ended)."""
    gateway = GatewayChannel(rt, GatewayConfig(token="gateway-test-token", port=0,
                                               hello_timeout=600))
    closes: list[tuple[int, str]] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, gateway.serving() as port:
            await nursery.start(_held_open, f"ws://127.0.0.1:{port}", closes)
            await trio.testing.wait_all_tasks_blocked()
        await gateway.aclose()
    assert closes == [(1001, "server shutting down")]


async def test_stop_accepting_closes_a_connection_waiting_for_its_hello(rt,
                                                                        serve_gateway) -> None:
    async with serve_gateway(rt, hello_timeout=600) as (gateway, url):
        closes: list[tuple[int, str]] = []
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                await nursery.start(_held_open, url, closes)
                await trio.testing.wait_all_tasks_blocked()
                gateway.stop_accepting()
        assert closes == [(1001, "server shutting down")]


async def test_a_hello_admitted_while_serving_is_leaving_is_refused(rt) -> None:
    """A connection whose admission is still reading the store when ``serving()`` sweeps
    its connections must not join after the sweep (nothing would close it)."""
    gateway = GatewayChannel(rt, GatewayConfig(token="gateway-test-token", port=0))
    real_last_seq = rt.last_seq
    admitting, proceed = trio.Event(), trio.Event()

    async def held_last_seq(session_id: str) -> int:
        admitting.set()
        await proceed.wait()
        return await real_last_seq(session_id)

    rt.last_seq = held_last_seq
    closes: list[tuple[int, str]] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, gateway.serving() as port:
            await nursery.start(_held_open, f"ws://127.0.0.1:{port}", closes, _hello())
            await admitting.wait()
            nursery.start_soon(_release_later, proceed)
        await gateway.aclose()
    assert closes == [(1001, "server shutting down")]


async def _release_later(proceed: trio.Event) -> None:
    await trio.testing.wait_all_tasks_blocked()
    proceed.set()
