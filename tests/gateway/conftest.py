"""Fixtures for the gateway tests: a gateway on port 0 over the shared runtime fixture."""

from __future__ import annotations

import io
import json
import pathlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import Prompt, Runtime
from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig

from ..database_template import fresh_database

TOKEN = "gateway-test-token"


@pytest.fixture
async def rt(db_path: pathlib.Path, workspace: pathlib.Path) -> AsyncIterator[Runtime]:
    """tests/conftest.py's ``rt``, on a copy of a migrated database (not a new file: see
    tests/database_template.py): creating the schema was a good part of each gateway test."""
    async with tidings.open_runtime(fresh_database(db_path), workspace=workspace) as runtime:
        yield runtime


@asynccontextmanager
async def serving_gateway(rt: Runtime, agent: Any = None, *,
                          gateway_class: type[GatewayChannel] = GatewayChannel,
                          **settings: Any) -> AsyncIterator[tuple[GatewayChannel, str]]:
    """A gateway (of *gateway_class*, with *settings*) serving on a free port of 127.0.0.1:
    it and its ``ws://`` url; closed at the end."""
    gateway = gateway_class(rt, GatewayConfig(token=TOKEN, port=0, **settings), agent=agent)
    try:
        async with gateway.serving() as port:
            yield gateway, f"ws://127.0.0.1:{port}"
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()


@pytest.fixture
def serve_gateway() -> Callable[..., Any]:
    """``async with serve_gateway(rt, agent=None, gateway_class=..., **settings) as (gateway,
    url)``: :func:`serving_gateway`."""
    return serving_gateway


@pytest.fixture
def connect() -> Callable[..., Any]:
    """``async with connect(url, conversation, **hello) as client`` (the test token)."""
    def open_client(url: str, conversation: str, **hello: Any) -> Any:
        hello.setdefault("token", TOKEN)
        return GatewayClient.connect(url, conversation=conversation, **hello)
    return open_client


async def _wait_status(rt: Runtime, delivery_id: str, status: str) -> None:
    async for event in rt.events(after_seq=0):
        if event.delivery_id == delivery_id and event.type == f"delivery.{status}":
            return


@pytest.fixture
def wait_status() -> Callable[..., Any]:
    """``await wait_status(rt, delivery_id, "sent")``: follow the runtime's events until the
    delivery records that status (no polling)."""
    return _wait_status


async def _asked_at_once(rt: Runtime, session_id: str) -> list[Any]:
    """The answer to a question asked now, if it came before the run loop went idle (a
    question with no client that may answer fails closed at once, ``no_interactive_route``)."""
    answers: list[Any] = []

    async def ask() -> None:
        answers.append(await rt.router.prompt_user(Prompt(session_id, "still there?", "p1")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()
    return answers


@pytest.fixture
def asked_at_once() -> Callable[..., Any]:
    """``await asked_at_once(rt, session_id)``: the answers (none, or one) to a question asked
    now that came before every task blocked."""
    return _asked_at_once


async def handed_to(gateway: GatewayChannel, delivery_id: str) -> None:
    """Until the gateway's deliver() has given the row to a connection (``gateway.sent``).
    Its ``sending`` event is no such sign: the lane calls deliver() after that commit, and may
    first wait for a worker thread (a read), which ``wait_all_tasks_blocked`` counts as
    blocked. A test that looked at the connection then (its queue, whether it is alive) went
    on a row early, and that row, handed over after the client closed, waited in deliver()
    for the next client, holding the lane: the test waited for good for a later row (on a
    clock that never moves, tests/until.py's sleeps would not return either)."""
    while delivery_id not in gateway.sent:
        await trio.testing.wait_all_tasks_blocked()
        await trio.lowlevel.checkpoint()


async def hello_only(ws: Any) -> str:
    """Say hello to conversation ``alpha`` on the raw websocket *ws* (a client that will then
    read nothing); the session id of the welcome."""
    await ws.send_message(json.dumps({"type": "hello", "token": "gateway-test-token",
                                      "conversation": "alpha", "protocol": 1}))
    return json.loads(await ws.get_message())["session_id"]


async def deliver_big_rows_until(rt: Runtime, gateway: GatewayChannel, session_id: str,
                                 done: Callable[[], object], never: str) -> Any:
    """Deliver 60 kB rows to a client that reads nothing until ``done()`` (asked after each
    row): the connection's writer is then stuck in a frame. The lane's budget is lifted (a
    client that does not read does not ack either, and within the default ``lane_bytes`` the
    session would stop at ~1 MiB unacked, which the socket's buffers take). Each row is handed
    to the connection (:func:`handed_to`) before ``done()`` is asked, so none is left in the
    lane's hands to reach the gateway after the test's next step. Returns the first row's
    handle; raises AssertionError(*never*) if 2,000 rows were not enough."""
    rt.dispatcher.lane_bytes = 1 << 30
    big = "x" * 60_000
    first = None
    for _ in range(2000):
        handle = await rt.notify(session_id, big)
        first = first or handle
        await _wait_status(rt, handle.delivery_id, "sending")
        await handed_to(gateway, handle.delivery_id)
        if done():
            return first
    raise AssertionError(never)


def frame_is(frame_type: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    def match(frame: dict[str, Any]) -> bool:
        return frame.get("type") == frame_type and all(frame.get(k) == v
                                                        for k, v in fields.items())
    return match


@pytest.fixture
def is_frame() -> Callable[..., Any]:
    """``is_frame("delivery", kind="message")``: a predicate for ``receive_until``."""
    return frame_is


class GatedClient:
    """``GatewayClient`` whose reconnects (every connect after the first) wait for ``back``."""

    def __init__(self) -> None:
        self.back = trio.Event()
        self.connects = 0

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[GatewayClient]:
        self.connects += 1
        if self.connects > 1:
            await self.back.wait()
        async with GatewayClient.connect(*args, **kwargs) as client:
            yield client


class Asker:
    """An agent: ``ask:Q`` prompts the person with Q and replies ``answer: <answer>``;
    anything else is echoed."""

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        if turn.text.startswith("ask:"):
            answer = await turn.prompt_user(turn.text[4:], timeout=60)
            await turn.send_chunk(f"answer: {answer}")
        else:
            await turn.send_chunk(turn.prompt)


class Transcript(io.StringIO):
    """What a chat client printed, with a wait for a line to show up."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = trio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        self.changed.set()
        self.changed = trio.Event()
        return written

    async def wait_for(self, found: Callable[[str], bool]) -> None:
        while not any(found(line) for line in self.getvalue().splitlines()):
            await self.changed.wait()


class DeliverParking:
    """Parks a session's lane at its first schedule point inside its route's ``deliver()``,
    for certain: :meth:`checkpoint` stands in for ``trio.lowlevel.checkpoint``
    (``monkeypatch.setattr(trio.lowlevel, "checkpoint", parking.checkpoint)``) and waits, in
    that task only and once, until :attr:`go` is set; :attr:`parked` says it is there. Set
    :attr:`session_id` before the row is written."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.session_id: str | None = None
        self.parked = trio.Event()
        self.go = trio.Event()
        self._original = trio.lowlevel.checkpoint

    def _in_deliver(self) -> bool:
        """The running task is the session's lane, inside its route's deliver()."""
        dispatcher = self.rt.dispatcher
        lane = dispatcher.lane(self.session_id) if self.session_id is not None else None
        sup = dispatcher.supervisor
        return (lane is not None and lane.delivering and lane.name is not None
                and sup is not None
                and sup.child_task(lane.name) is trio.lowlevel.current_task())

    async def checkpoint(self) -> None:
        if not self.parked.is_set() and self._in_deliver():
            self.parked.set()
            await self.go.wait()
        await self._original()
