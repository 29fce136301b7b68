"""Bad frames get an error frame and persist nothing; floods, silent clients and clients
that do not read are closed with a clear code."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed

from tidings.channels import GatewayConfig
from tidings.channels._directory import Conversation
from tidings.channels._gateway_client import open_transport
from tidings.channels._gateway_conn import Connection
from tidings.channels._gateway_frames import HELLO_MAX_BYTES

from ..real_time import fail_after_real
from .conftest import deliver_big_rows_until, hello_only


async def _counts(rt) -> tuple[int, int, int, int]:
    def read(conn) -> tuple[int, int, int, int]:
        return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                     for table in ("outbox", "messages", "client_messages", "turns"))
    return await rt.store.read(read)


async def test_bad_frames_get_error_frames_and_nothing_is_persisted(rt, serve_gateway,
                                                                    connect) -> None:
    async with serve_gateway(rt, max_frame_bytes=1024) as (_gateway, url), \
            connect(url, "alpha") as client:
        before = await _counts(rt)
        bad: list[tuple[str | bytes, str]] = [
            ("{not json", "bad_json"),
            (b"\xc3\x28 invalid utf-8", "bad_utf8"),
            ("[]", "not_an_object"),
            (json.dumps({"type": "shout"}), "unknown_type"),
            (json.dumps({"type": "message", "text": "hi"}), "missing_field"),
            (json.dumps({"type": "message", "text": ["hi"], "id": "m1"}), "bad_field"),
            (json.dumps({"type": "message", "text": "x" * 2000, "id": "m2"}), "frame_too_big"),
            (json.dumps({"type": "hello", "token": "t", "conversation": "a", "protocol": 1}),
             "duplicate_hello"),
            (json.dumps({"type": "answer", "prompt_id": "nope", "text": "x"}),
             "unknown_prompt"),
        ]
        with trio.fail_after(10):
            for raw, code in bad:
                await client.ws.send_message(raw)
                frame = await client.receive()
                assert (frame["type"], frame["code"]) == ("error", code), raw
                assert frame["message"]
        assert await _counts(rt) == before
        with trio.fail_after(10):  # the connection still works
            await client.send({"type": "ping"})
            assert await client.receive() == {"type": "pong"}


async def test_a_frame_far_over_the_limit_closes_the_connection(rt, serve_gateway,
                                                                connect) -> None:
    """Over four times ``max_frame_bytes`` and over the hello's allowance (the websocket's
    limit is the larger of the two: a hello may be ``HELLO_MAX_BYTES`` whatever the frame
    limit); between the frame limit and that, a frame gets an error and the connection
    stays."""
    async with serve_gateway(rt, max_frame_bytes=1024) as (_gateway, url), \
            connect(url, "alpha") as client:
        await client.ws.send_message("x" * 5000)
        with trio.fail_after(10):
            error = json.loads(await client.ws.get_message())
        assert (error["type"], error["code"]) == ("error", "frame_too_big")
        await client.ws.send_message("x" * (HELLO_MAX_BYTES + 1))
        with trio.fail_after(10), pytest.raises(ConnectionClosed) as caught:
            await client.ws.get_message()
        assert caught.value.reason.code == 1009


async def _ping_until_closed(ws) -> None:
    for _ in range(50):
        await ws.send_message(json.dumps({"type": "ping"}))
    while True:
        await ws.get_message()


async def test_a_flooding_client_is_closed_4029(rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt, rate=1.0, burst=5) as (_gateway, url), \
            connect(url, "alpha") as client:
        with trio.fail_after(10), pytest.raises(ConnectionClosed) as caught:
            await _ping_until_closed(client.ws)
        assert caught.value.reason.code == 4029
        assert "flooding" in caught.value.reason.reason


async def test_a_silent_client_is_pinged_then_dropped(rt, serve_gateway,
                                                     autojump_clock) -> None:
    # The heartbeat's seconds are trio's (autojump_clock): pinged after 20 s of silence,
    # dropped after 40, in no real time; the hang guard counts real seconds.
    heard = trio.current_time()  # at the latest, the server heard the hello after this
    async with serve_gateway(rt, heartbeat_s=20.0) as (_gateway, url), \
            open_transport(url) as ws:
        await ws.send_message(json.dumps({"type": "hello", "token": "gateway-test-token",
                                          "conversation": "alpha", "protocol": 1}))
        with fail_after_real(30):
            assert json.loads(await ws.get_message())["type"] == "welcome"
            assert json.loads(await ws.get_message()) == {"type": "ping"}
            pinged = trio.current_time()
            with pytest.raises(ConnectionClosed) as caught:  # it never answers
                await ws.get_message()
            dropped = trio.current_time()
        assert caught.value.reason.code == 4008
    assert pinged - heard >= 20
    assert dropped - heard >= 40


async def test_a_client_that_answers_pings_stays(rt, serve_gateway, connect,
                                                 autojump_clock) -> None:
    start = trio.current_time()
    async with serve_gateway(rt, heartbeat_s=20.0) as (_gateway, url), \
            connect(url, "alpha") as client:
        session_id = client.welcome["session_id"]
        with fail_after_real(30):  # hang guard: the heartbeat's seconds are trio's
            for _ in range(2):
                raw = json.loads(await client.ws.get_message())
                assert raw == {"type": "ping"}
                await client.send({"type": "pong"})
            # Received (pings answered) while the notify commits: a commit slower than two
            # heartbeats (a loaded machine) left the pings unanswered, and the server closed.
            frames: list[dict] = []

            async def receive() -> None:
                frames.append(await client.receive())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                handle = await rt.notify(session_id, "still here")
        assert frames[0]["delivery_id"] == handle.delivery_id
        assert trio.current_time() - start >= 40  # past when a silent client is dropped


class _StuckSocket:
    """A websocket whose peer never reads: every send blocks."""

    closed = None  # (the peer never closes)

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send_message(self, message: str) -> None:
        await trio.sleep_forever()

    async def get_message(self) -> str:
        await trio.sleep_forever()
        raise AssertionError


async def test_a_client_that_does_not_read_is_closed_4009_without_blocking_anyone(
        autojump_clock) -> None:
    settings = GatewayConfig(token="t" * 16, max_backlog=16)
    conn = Connection(_StuckSocket(), settings, conversation=Conversation("k", "alpha"),
                      client="c")

    async def no_replay(_conn: Connection) -> None:
        await trio.lowlevel.checkpoint()

    async def ignore(_conn: Connection, _frame: object) -> None:
        await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.run, {"type": "welcome"}, no_replay, ignore)
        await trio.testing.wait_all_tasks_blocked()
        for i in range(17):  # push never blocks: the 17th finds the queue full
            conn.push({"type": "delivery", "seq": i})
    assert conn.close_code == 4009
    assert "after_seq" in conn.close_reason
    assert conn.torn  # the welcome never went out whole: no close frame may follow it


async def _fill_until_closed(rt, gateway, conn, session_id: str) -> None:
    """Deliver big rows to a client that does not read until its backlog closes it."""
    with fail_after_real(30):  # real seconds: the mock clock moves only at jump()
        await deliver_big_rows_until(rt, gateway, session_id, lambda: not conn.alive,
                                     "the connection was never closed as too slow")


async def _read_to_the_close(ws) -> tuple[int, int]:
    """Read everything; how many frames came, and the close code."""
    frames = 0
    while True:
        try:
            await ws.get_message()
        except ConnectionClosed as exc:
            return frames, exc.reason.code
        frames += 1


async def test_a_too_slow_client_that_reads_again_gets_its_frames_then_4009(
        rt, serve_gateway, mock_clock) -> None:
    """The frame being written when a client is closed as too slow is finished, then the
    close frame follows: the client that reads again gets whole frames and ``4009`` (the
    writer was cancelled mid-frame and the close frame came after half a frame: the client
    read garbage, a 1007 'invalid frame payload' instead of 4009)."""
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, ack_window=5000, max_backlog=16) as (gateway, url), \
                open_transport(url) as ws:
            session_id = await hello_only(ws)
            [conn] = gateway.hub(gateway.conversation_named("alpha")).connections
            await _fill_until_closed(rt, gateway, conn, session_id)
            assert conn.close_code == 4009
            frames, code = await _read_to_the_close(ws)
            mock_clock.jump(10)  # whatever still waits for a close handshake gives up
        assert frames >= 1
        assert code == 4009
        assert not conn.torn


async def test_a_too_slow_client_that_never_reads_again_is_torn_down(
        rt, serve_gateway, mock_clock) -> None:
    """A frame still unfinished ``_FINISH_WAIT`` after the close is given up: the TCP stream
    is closed with no close frame after the half frame, and the server is done with it."""
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, ack_window=5000, max_backlog=16) as (gateway, url), \
                open_transport(url) as ws:
            session_id = await hello_only(ws)
            hub = gateway.hub(gateway.conversation_named("alpha"))
            [conn] = hub.connections
            await _fill_until_closed(rt, gateway, conn, session_id)
            mock_clock.jump(3)
            with fail_after_real(30):
                while hub.connections:
                    await trio.testing.wait_all_tasks_blocked()
                    await trio.lowlevel.checkpoint()
            assert conn.torn
            _frames, code = await _read_to_the_close(ws)
        assert code == 1006  # cut off: abnormal closure, never a garbled frame


@pytest.mark.parametrize(("frame", "field"), [
    ({"type": "sync", "session_id": "\ud800"}, "session_id"),
    ({"type": "ack", "delivery_ids": ["d\ud800"]}, "delivery_ids"),
    ({"type": "ack", "up_to_seq": 1, "session_id": "\ud800"}, "session_id"),
    ({"type": "message", "text": "hi", "id": "m\ud800"}, "id"),
    ({"type": "message", "text": "hi \udfff", "id": "m1"}, "text"),
])
async def test_a_field_with_a_lone_surrogate_is_refused_by_name(rt, serve_gateway, connect,
                                                                frame, field) -> None:
    """JSON may spell a lone surrogate (``"\\ud800"``): such an id can be neither looked up
    in SQLite nor sent back as UTF-8. It is a ``bad_field`` naming the field, the connection
    goes on and nothing is persisted (it was a 1011 with a traceback, the store's
    ``UnicodeEncodeError``, or the error frame's own ``ref`` breaking the writer)."""
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        before = await _counts(rt)
        await client.ws.send_message(json.dumps(frame))
        with trio.fail_after(10):
            error = await client.receive()
        assert (error["type"], error["code"], error["field"]) == ("error", "bad_field", field)
        assert "lone surrogate" in error["message"] or "Unicode" in error["message"]
        with trio.fail_after(10):  # the connection still works
            await client.send({"type": "ping"})
            assert await client.receive() == {"type": "pong"}
        assert await _counts(rt) == before


@pytest.mark.parametrize("field", ["session_id", "client"])
async def test_a_hello_field_with_a_lone_surrogate_is_closed_4000_naming_it(
        rt, serve_gateway, field) -> None:
    async with serve_gateway(rt) as (_gateway, url), open_transport(url) as ws:
        await ws.send_message(json.dumps({"type": "hello", "token": "gateway-test-token",
                                          "conversation": "alpha", "protocol": 1,
                                          field: "x\ud800"}))
        with trio.fail_after(10), pytest.raises(ConnectionClosed) as caught:
            await ws.get_message()
    assert caught.value.reason.code == 4000
    assert f"hello.{field}" in caught.value.reason.reason


class _SurrogateChunkAgent:
    """Streams a chunk with a lone surrogate (its reply is then refused by the output SDK)."""

    async def run(self, turn) -> None:
        await turn.send_chunk("half a pair: \ud83d")
        await turn.send_chunk(" and on")


async def test_a_server_frame_with_a_lone_surrogate_does_not_break_the_connection(
        rt, serve_gateway, connect) -> None:
    """An agent's text chunk with a lone surrogate cannot be sent as UTF-8: the lifecycle
    frame goes out with a JSON escape, and every connection of the conversation stays (the
    writer's ``UnicodeEncodeError`` closed them all 1011)."""
    async with serve_gateway(rt, agent=_SurrogateChunkAgent()) as (_gateway, url), \
            connect(url, "alpha") as client:
        await client.message("go")
        with trio.fail_after(10):
            frames = await client.receive_until(
                lambda frame: frame.get("event") in ("completed", "failed"))
        chunks = [frame["chunk"] for frame in frames if frame.get("event") == "text_chunk"]
        assert chunks == ["half a pair: \ud83d", " and on"]
        with trio.fail_after(10):  # still connected
            await client.send({"type": "ping"})
            assert await client.receive() == {"type": "pong"}
