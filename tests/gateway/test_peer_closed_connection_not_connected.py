"""A connection whose client closed first (its close frame came in) counted as connected until
the gateway's leave ran: the server's own close did (45d980f, see
tests/gateway/test_closing_connection_not_connected.py), the client's did not. A frame being
written when the client's close came holds the connection that long (the close's answer waits
for it, and the client that sent the close need not read any more); a delivery broadcast
meanwhile was queued on it, never written (the websocket takes nothing after a close) and
became ``unknown`` at the leave, where with nobody connected it goes ``unrouted`` and the
next client's hello hands it back. A question asked then was put to nobody. A connection whose
peer closed counts for neither."""

from __future__ import annotations

import json

import trio
import trio.testing
import wsproto
from wsproto.events import AcceptConnection, CloseConnection, Message, Request, TextMessage

from ..real_time import fail_after_real
from .conftest import deliver_big_rows_until

TOKEN = "gateway-test-token"


class _RawClient:
    """A websocket client by hand (wsproto over TCP): it reads only when told to, so it can
    send its close frame while the server is stuck writing to it, and read nothing after."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)

    async def send(self, event: object) -> None:
        await self.stream.send_all(self.ws.send(event))

    async def next_event(self) -> object:
        while True:
            for event in self.ws.events():
                return event
            self.ws.receive_data(await self.stream.receive_some(65536))

    async def hello(self, port: int) -> str:
        await self.send(Request(host=f"127.0.0.1:{port}", target="/"))
        assert isinstance(await self.next_event(), AcceptConnection)
        await self.send(Message(data=json.dumps({
            "type": "hello", "token": TOKEN, "conversation": "alpha", "protocol": 1})))
        event = await self.next_event()
        assert isinstance(event, TextMessage)
        return json.loads(event.data)["session_id"]


async def _settle() -> None:
    await trio.testing.wait_all_tasks_blocked()
    await trio.lowlevel.checkpoint()


async def _given_up(mock_clock) -> None:
    """Past the heartbeat's time (2 x 20 s: it closes the connection), then past the 2 s its
    frame being written gets to finish."""
    mock_clock.jump(2 * 20 + 1)
    await _settle()
    mock_clock.jump(3)
    await _settle()


async def _closed_while_writing(rt, gateway, raw: _RawClient, port: int):
    """Say hello on *raw*, deliver big rows to it (it reads nothing) until the connection's
    writer is stuck in a frame and one more waits in its queue (the queue is far from full:
    nothing is closed as too slow), then send a close frame and read nothing more. The
    connection stays while its frame is being written. Returns the conversation's hub, the
    session id and the first row's handle."""
    session_id = await raw.hello(port)
    hub = gateway.hub(gateway.conversation_named("alpha"))
    [conn] = hub.connections
    first = await deliver_big_rows_until(rt, gateway, session_id, lambda: conn.queued_bytes,
                                         "the writer never got stuck")
    assert conn.alive
    await raw.send(CloseConnection(code=1000))  # and reads nothing more
    await _settle()
    assert hub.connections == [conn]  # its frame is still being written
    return hub, session_id, first


async def _open(url: str) -> tuple[_RawClient, int]:
    port = int(url.rsplit(":", 1)[1])
    return _RawClient(await trio.open_tcp_stream("127.0.0.1", port)), port


async def test_a_delivery_after_the_client_closed_reaches_the_next_client(
        rt, serve_gateway, connect, is_frame, wait_status, mock_clock) -> None:
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, max_backlog=10_000, max_backlog_bytes=1 << 30,
                                 ack_window=5000) as (gateway, url):
            raw, port = await _open(url)
            async with raw.stream:
                hub, session_id, first = await _closed_while_writing(
                    rt, gateway, raw, port)
                late = await rt.notify(session_id, "late")
                await wait_status(rt, late.delivery_id, "unrouted")  # taken by nobody
                await _given_up(mock_clock)  # the heartbeat gives up on it: the connection leaves
                await wait_status(rt, first.delivery_id, "unknown")
                assert hub.connections == []
                assert (await rt.delivery_status(late.delivery_id)).status == "unrouted"
            async with connect(url, "alpha", session_id=session_id) as client:
                await client.receive_until(is_frame("delivery", text="late"))  # (acked)
                await wait_status(rt, late.delivery_id, "sent")


async def test_a_question_after_the_client_closed_is_answered_at_once(
        rt, serve_gateway, mock_clock, asked_at_once) -> None:
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, max_backlog=10_000, max_backlog_bytes=1 << 30,
                                 ack_window=5000) as (gateway, url):
            raw, port = await _open(url)
            async with raw.stream:
                _hub, session_id, _first = await _closed_while_writing(
                    rt, gateway, raw, port)
                answers = await asked_at_once(rt, session_id)
                assert [(answer.text, answer.reason) for answer in answers] == [
                    (None, "no_interactive_route")]
                await _given_up(mock_clock)
