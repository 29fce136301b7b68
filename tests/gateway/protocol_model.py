"""The harness of tests/gateway/test_protocol_property.py: devices speaking the websocket
protocol to a real ``GatewayChannel``, and what they saw.

A :class:`Device` keeps one connection at a time (a task reading every frame into its log, so
a server ping is answered and nothing waits unread) and what it saw over all of them: the seqs
of each session, the ``accepted`` answers, the lifecycle ends. :class:`World` runs one program
(a list of operations) against a gateway on a fresh database and checks the protocol's promises
once every device is back and the runtime is idle (see :func:`check`)."""

from __future__ import annotations

import collections
import contextlib
import pathlib
import re
import sqlite3
from typing import Any

import attrs
import trio
import trio.testing

import tidings
from tidings.channels import (
    ChannelConfig,
    GatewayChannel,
    GatewayClient,
    GatewayClosed,
    GatewayConfig,
)

from ..database_template import fresh_database
from ..real_time import fail_after_real

__all__ = ["TOKEN", "Agent", "Device", "RecordingGateway", "World", "check", "run_program"]

TOKEN = "protocol-property-token"
TOKENS = re.compile(r"\b(?:echo|hold)-(\d+)\b")
END_EVENTS = ("completed", "cancelled", "failed")
WAIT = 120.0  # virtual seconds any one wait may take (a switch answer is held up to 30)


class Agent:
    """``hold-N`` waits until a release let messages up to N go; ``echo-N`` answers at once.
    Counts how often each message's turn reached it (a resent id must never run twice)."""

    def __init__(self) -> None:
        self.released = 0  # hold-N with N <= released may answer
        self.changed = trio.Event()
        self.runs: collections.Counter[str] = collections.Counter()

    def release(self, up_to: int) -> None:
        self.released = max(self.released, up_to)
        self.changed.set()
        self.changed = trio.Event()

    async def run(self, turn: Any) -> None:
        numbers = TOKENS.findall(turn.text)
        self.runs.update(numbers)
        if "hold-" in turn.text:
            while max(map(int, numbers)) > self.released:
                await self.changed.wait()
        await turn.send_chunk(turn.text)


class RecordingGateway(GatewayChannel):
    """The gateway, recording every lifecycle event it is told (server side: the frames go
    only to the devices connected then)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: list[tuple[str, str, str | None, str | None]] = []

    def on_task_lifecycle(self, event: Any) -> None:
        if event.type != "text_chunk":
            self.events.append((event.type, event.session_id, event.message_id,
                                getattr(event, "reason", None)))
        super().on_task_lifecycle(event)


@attrs.define(eq=False)
class Device:
    """One device of a conversation; at most one connection open at a time."""

    name: str
    conversation: str
    client: GatewayClient | None = None
    scope: trio.CancelScope | None = None
    gone: trio.Event | None = None
    connections: int = 0
    auto_ack: bool = False
    # (connection number, frame), every frame of every connection
    log: list[tuple[int, dict[str, Any]]] = attrs.Factory(list)
    unacked: list[str] = attrs.Factory(list)  # delivery ids of this connection, not acked
    seen: dict[str, set[int]] = attrs.Factory(dict)  # session -> seqs got
    last_session: str | None = None  # the session of the last delivery got
    missed: bool = False  # joined without after_seq once something was said: rows missed
    closed_by_server: list[tuple[int, int | None, str | None]] = attrs.Factory(list)
    changed: trio.Event = attrs.Factory(trio.Event)

    def record(self, frame: dict[str, Any]) -> None:
        self.log.append((self.connections, frame))
        if frame.get("type") == "delivery":
            self.seen.setdefault(frame["session_id"], set()).add(frame["seq"])
            self.last_session = frame["session_id"]
            self.unacked.append(frame["delivery_id"])
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, found: Any, what: str, *, start: int = 0) -> dict[str, Any]:
        """The first frame of the current connection from ``log[start]`` on for which
        ``found(frame)``."""
        with trio.move_on_after(WAIT):
            while True:
                for number, frame in self.log[start:]:
                    if number == self.connections and found(frame):
                        return frame
                if self.client is None:
                    raise AssertionError(f"{self.name}: closed while waiting for {what}: "
                                         f"{self.closed_by_server}")
                await self.changed.wait()
        raise AssertionError(f"{self.name}: no {what} within {WAIT} virtual seconds")


class World:
    """One program's run: the gateway, the devices, what was sent and accepted."""

    def __init__(self, rt: Any, gateway: RecordingGateway, url: str, agent: Agent,
                 devices: list[Device], nursery: trio.Nursery, db: pathlib.Path) -> None:
        self.rt, self.gateway, self.url, self.agent, self.db = rt, gateway, url, agent, db
        self.devices = devices
        self.nursery = nursery
        self.said = 0
        # conversation -> [(client id, text)], every id sent there (commands too)
        self.ids: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
        # conversation -> [(client id, accepted frame, the session after it)]
        self.accepted: dict[str, list[tuple[str, dict[str, Any], str | None]]] = \
            collections.defaultdict(list)
        self.sessions: dict[str, list[str]] = collections.defaultdict(list)
        self.resent: list[tuple[str, dict[str, Any]]] = []
        self.wrong: list[str] = []  # what (e) and (f) saw wrong as the program ran

    # --- connections ---------------------------------------------------------------------

    async def connect(self, device: Device, hello: dict[str, Any]) -> None:
        device.connections += 1
        device.unacked.clear()
        device.gone = trio.Event()
        before = list(self.gateway.events)
        await self.nursery.start(self._connection, device, hello)
        self._check_running(device, before)
        await self._note_session(device.conversation)

    def _check_running(self, device: Device, before: list[Any]) -> None:
        """(e) ``welcome.running``: the conversation's turns whose ``started`` went out
        before the connection and that have not ended."""
        _, welcome = device.log[-1]
        running = set(welcome["running"])
        groups = [ids for _, ids in _groups(self, device.conversation)]
        for ids in groups:
            started = [e[2] for e in before if e[0] == "started" and e[2] in ids]
            if started and not self.ended(ids) and started[-1] not in running:
                self.wrong.append(f"(e) {device.name}'s welcome {welcome} leaves out the "
                                  f"running turn of {started[-1]}")
            mine = running & set(ids)
            if mine and (self.ended(ids, before) or not self.ended(ids, ("started",))):
                self.wrong.append(f"(e) {device.name}'s welcome {welcome} lists {mine}, "
                                  f"not running")
        strangers = running - {i for ids in groups for i in ids}
        if strangers:
            self.wrong.append(f"(e) {device.name}'s welcome lists {strangers}: no message of "
                              f"its conversation")

    def ended(self, ids: list[str], events: Any = END_EVENTS) -> bool:
        """Whether a turn of the messages *ids* ended (with *events* a tuple of event names:
        had one of those; with a list: ended in that list of events)."""
        names, seen = (events, self.gateway.events) if isinstance(events, tuple) \
            else (END_EVENTS, events)
        return any(e[0] in names and e[2] in ids for e in seen)

    async def _connection(self, device: Device, hello: dict[str, Any], *,
                          task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        assert device.gone is not None
        gone = device.gone
        try:
            async with GatewayClient.connect(self.url, token=TOKEN,
                                             conversation=device.conversation,
                                             **hello) as client:
                with trio.CancelScope() as scope:
                    device.client, device.scope = client, scope
                    device.record(dict(client.welcome, hello=hello))
                    task_status.started()
                    try:
                        while True:
                            frame = await client.receive()
                            device.record(frame)
                            if device.auto_ack and frame.get("type") == "delivery":
                                await client.ack(frame["delivery_id"])
                    except GatewayClosed as exc:
                        device.closed_by_server.append((device.connections, exc.code,
                                                        exc.reason))
                await client.aclose()
        finally:
            device.client = device.scope = None
            device.changed.set()
            gone.set()

    async def drop(self, device: Device) -> None:
        if device.scope is not None and device.gone is not None:
            device.scope.cancel()
            await device.gone.wait()
            await self._left(device)

    async def _left(self, device: Device) -> None:
        """Until the gateway counts the device's connection out of its conversation."""
        key = self.gateway.conversation_named(device.conversation).key
        mine = sum(1 for d in self.devices
                   if d.conversation == device.conversation and d.client is not None)
        with trio.move_on_after(WAIT):
            while True:
                hub = self.gateway.hubs.get(key)
                if len(hub.connections if hub is not None else ()) <= mine:
                    return
                await trio.testing.wait_all_tasks_blocked()
                await trio.lowlevel.checkpoint()
        raise AssertionError(f"{device.name}'s connection never left the conversation")

    # --- messages ------------------------------------------------------------------------

    async def say(self, device: Device, text: str, client_id: str | None = None
                  ) -> dict[str, Any] | None:
        """Send a message (a new id unless *client_id*); its ``accepted`` answer."""
        if device.client is None:
            return None
        if client_id is None:
            self.said += 1
            client_id = f"{device.conversation}-{self.said}"
            self.ids[device.conversation].append((client_id, text))
        start = len(device.log)
        try:
            await device.client.message(text, message_id=client_id)
        except GatewayClosed:
            return None
        accepted = await device.wait_for(
            lambda f: f.get("type") == "accepted" and f.get("id") == client_id,
            f"accepted {client_id}", start=start)
        session = await self._note_session(device.conversation)
        self.accepted[device.conversation].append((client_id, accepted, session))
        return accepted

    async def ack(self, device: Device) -> None:
        """Ack what the connection got, then ``sync``: once ``synced`` came, the ack was
        handled (one connection's frames are handled in order)."""
        client = device.client
        if client is None:
            return
        ids, device.unacked[:] = list(device.unacked), []
        start = len(device.log)
        try:
            await client.ack(*ids)
            await client.sync()
        except GatewayClosed:
            return
        await device.wait_for(lambda f: f.get("type") == "synced", "synced", start=start)

    async def race(self, device: Device, other: Device, command: str, hold: bool) -> None:
        """*device* sends a message while *other* sends *command*, at once (two devices'
        frames are handled only as they reach the conversation: either may go first)."""
        if other is device or other.conversation != device.conversation \
                or device.client is None or other.client is None:
            return
        conversation = device.conversation
        answers: dict[str, dict[str, Any]] = {}
        sent = []
        for one, text in ((device, f"{'hold' if hold else 'echo'}-{self.said + 1}"),
                          (other, f"/{command}")):
            self.said += 1
            client_id = f"{conversation}-{self.said}"
            self.ids[conversation].append((client_id, text))
            sent.append((one, client_id, text, len(one.log)))

        async def send(one: Device, client_id: str, text: str, start: int) -> None:
            try:
                assert one.client is not None
                await one.client.message(text, message_id=client_id)
            except GatewayClosed:
                return
            answers[client_id] = await one.wait_for(
                lambda f: f.get("type") == "accepted" and f.get("id") == client_id,
                f"accepted {client_id}", start=start)

        async with trio.open_nursery() as nursery:
            for args in sent:
                nursery.start_soon(send, *args)
        await self._note_session(conversation)
        for _, client_id, _, _ in sent:
            if client_id in answers:
                self.accepted[conversation].append(
                    (client_id, answers[client_id], self.session_of(conversation, client_id)))

    def session_of(self, conversation: str, client_id: str) -> str | None:
        """The session the gateway recorded the message *client_id* in (its turn's)."""
        with contextlib.closing(sqlite3.connect(self.db)) as conn:
            row = conn.execute("SELECT session_id FROM client_messages WHERE client_id = ? "
                               "AND conversation_key = ?",
                               (client_id, self.gateway.conversation_named(conversation).key)
                               ).fetchone()
        return None if row is None else row[0]

    async def twin(self, device: Device, other: Device, hold: bool) -> None:
        """A new id sent on two connections at once (a client's retry on a second one while
        the first is handled): (d) one is handled, the other is its duplicate."""
        if other is device or other.conversation != device.conversation \
                or device.client is None or other.client is None:
            return
        self.said += 1
        client_id = f"{device.conversation}-{self.said}"
        text = f"{'hold' if hold else 'echo'}-{self.said}"
        self.ids[device.conversation].append((client_id, text))
        answers: list[dict[str, Any] | None] = []
        starts = [len(device.log), len(other.log)]

        async def send(one: Device) -> None:
            if one.client is not None:
                try:
                    await one.client.message(text, message_id=client_id)
                except GatewayClosed:
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send, device)
            nursery.start_soon(send, other)
        for one, start in zip((device, other), starts, strict=True):
            answers.append(await one.wait_for(
                lambda f: f.get("type") == "accepted" and f.get("id") == client_id,
                f"accepted {client_id}", start=start))
        session = await self._note_session(device.conversation)
        firsts = [a for a in answers if a is not None and not a.get("duplicate")]
        if len(firsts) != 1:
            self.wrong.append(f"(d) {client_id} sent on two devices at once: {answers}")
        for answer in firsts[:1]:
            self.accepted[device.conversation].append((client_id, answer, session))

    async def resend(self, device: Device, client_id: str, text: str) -> None:
        """Send *client_id* again; (f) its answer's ``running`` says whether the turn that
        answers it has not ended."""
        [ids] = [ids for _, ids in _groups(self, device.conversation)
                 if client_id in ids] or [[]]
        ended_before = self.ended(ids)
        accepted = await self.say(device, text, client_id)
        if accepted is None:
            return
        self.resent.append((client_id, accepted))
        running = accepted.get("running")
        if (not ids or ended_before) and running is not False:
            self.wrong.append(f"(f) resent {client_id}, whose turn ended (or that made none): "
                              f"{accepted}")
        if ids and not self.ended(ids) and running is not True:
            self.wrong.append(f"(f) resent {client_id}, whose turn has not ended: {accepted}")

    async def _note_session(self, conversation: str) -> str | None:
        key = self.gateway.conversation_named(conversation).key
        session = await self.rt.conversation_session("gateway", key)
        if session is not None and session not in self.sessions[conversation]:
            self.sessions[conversation].append(session)
        return session

    # --- the program -----------------------------------------------------------------------

    def _device(self, op: tuple[Any, ...]) -> Device:
        return self.devices[op[1] % len(self.devices)]

    async def apply(self, op: tuple[Any, ...]) -> None:
        name = op[0]
        if name == "release":
            self.agent.release(self.said)
            return
        if name == "idle":
            self.agent.release(self.said)
            await self.gateway.wait_idle()
            return
        device = self._device(op)
        if name == "connect":
            if device.client is None:
                await self.rejoin(device, with_after_seq=op[2])
        elif name == "drop":
            await self.drop(device)
        elif name == "bounce":
            await self.drop(device)
            await self.rejoin(device, with_after_seq=op[2])
        elif name == "ack":
            await self.ack(device)
        elif name == "send":
            word = "hold" if op[2] else "echo"
            await self.say(device, f"{word}-{self.said + 1}")
        elif name == "resend":
            sent = self.ids[device.conversation]
            if sent and device.client is not None:
                client_id, text = sent[op[2] % len(sent)]
                await self.resend(device, client_id, text)
        elif name == "race":
            await self.race(device, self.devices[op[2] % len(self.devices)], op[3], op[4])
        elif name == "twin":
            await self.twin(device, self.devices[op[2] % len(self.devices)], op[3])
        elif name in ("new", "clear", "cancel"):
            await self.say(device, f"/{name}")
        elif name == "resume":
            sessions = self.sessions[device.conversation]
            if sessions:
                await self.say(device, f"/resume {sessions[op[2] % len(sessions)]}")
        else:
            raise AssertionError(f"unknown operation {op!r}")

    async def rejoin(self, device: Device, *, with_after_seq: bool) -> None:
        device.missed = device.missed or (not with_after_seq and self.said > 0)
        await self.connect(device, self.hello(device, with_after_seq=with_after_seq))

    def hello(self, device: Device, *, with_after_seq: bool) -> dict[str, Any]:
        """A reconnecting client's hello: the session of the last delivery it got and the
        highest seq it has there (``after_seq=0`` if it got none)."""
        if not with_after_seq:
            return {}
        if device.last_session is None:
            return {"after_seq": 0}
        return {"session_id": device.last_session,
                "after_seq": max(device.seen[device.last_session])}

    def final_hello(self, device: Device, current: str | None) -> dict[str, Any]:
        """The hello of the last reconnect. A device that always came back with its
        ``after_seq`` says what any client says (:meth:`hello`). One that joined without it
        once something was said missed the rows sent before (README: such a hello replays
        nothing); a client that knows it lacks them names the current session and the
        highest seq below which it has every row."""
        if not device.missed or current is None or not device.seen.get(current):
            return self.hello(device, with_after_seq=True)
        have = device.seen[current]
        after = 0
        while after + 1 in have:
            after += 1
        return {"session_id": current, "after_seq": after}

    async def settle(self) -> dict[str, str | None]:
        """Let every turn end, then bring every device back with its ``after_seq`` (acking
        all it gets) and wait until each has what ``sync`` says it can get. The conversations'
        current sessions."""
        self.agent.release(self.said)
        await self.gateway.wait_idle()
        before = {d.conversation: await self._note_session(d.conversation)
                  for d in self.devices}
        for device in self.devices:
            await self.drop(device)
        for device in self.devices:
            device.auto_ack = True
            await self.connect(device, self.final_hello(device, before[device.conversation]))
        await self.gateway.wait_idle()
        # (after a /clear, the first hello starts the conversation's next session)
        current = {d.conversation: await self._note_session(d.conversation)
                   for d in self.devices}
        for device in self.devices:
            session = current[device.conversation]
            if session is None:
                continue
            assert device.client is not None, (device.name, device.closed_by_server)
            start = len(device.log)
            await device.client.sync(session)
            synced = await device.wait_for(lambda f: f.get("type") == "synced", "synced",
                                           start=start)
            expected = await self.expected(session, synced["last_seq"])
            with trio.move_on_after(WAIT):
                while not expected <= device.seen.get(session, set()):
                    await device.changed.wait()
        return current

    async def expected(self, session: str, last_seq: int) -> set[int]:
        """The seqs of the session a client gets (message and notice rows that did not
        fail), up to *last_seq*."""
        rows = await self.rt.stored_deliveries(session, kinds=("message", "notice"), limit=1000)
        return {row.outbound.seq for row in rows if row.outbound.seq <= last_seq}


async def run_program(devices: list[tuple[str, str]], mode: str, ops: list[tuple[Any, ...]],
                      directory: pathlib.Path, *, ack_window: int = 32) -> None:
    """Run *ops* over *devices* (``(name, conversation)``) on a gateway of dispatch *mode*
    and *ack_window* on a fresh database in *directory*, settle, and :func:`check` what
    happened."""
    db = fresh_database(directory / "state" / "tidings.db")
    workspace = directory / "ws"
    workspace.mkdir()
    agent = Agent()
    with fail_after_real(20):  # a hang guard, not a wait
        async with tidings.open_runtime(db, workspace=workspace) as rt:
            gateway = RecordingGateway(rt, GatewayConfig(token=TOKEN, port=0,
                                                         heartbeat_s=3600.0, rate=1e6,
                                                         burst=100_000,
                                                         ack_window=ack_window),
                                       ChannelConfig("gateway", dispatch_mode=mode),
                                       agent=agent)
            try:
                async with gateway.serving() as port, trio.open_nursery() as nursery:
                    world = World(rt, gateway, f"ws://127.0.0.1:{port}", agent,
                                  [Device(n, c) for n, c in devices], nursery, db)
                    for op in ops:
                        await world.apply(op)
                    current = await world.settle()
                    await check(world, current)
                    for device in world.devices:
                        await world.drop(device)
            finally:
                with trio.CancelScope(shield=True):
                    await gateway.aclose()


def _story(device: Device) -> list[Any]:
    """What *device* was told, for a failure's message: each connection's welcome (its
    session, last_seq, replay) and deliveries ``(connection, session, seq, kind)``, and the
    server's closes."""
    story: list[Any] = []
    for number, frame in device.log:
        if frame.get("type") == "welcome":
            story.append((number, "welcome", frame["hello"], frame["session_id"],
                          frame["last_seq"], frame["replay"]))
        elif frame.get("type") == "delivery":
            story.append((number, frame["session_id"], frame["seq"], frame["kind"],
                          frame.get("command")))
    return [*story, device.closed_by_server]


def _groups(world: World, conversation: str) -> list[tuple[str | None, list[str]]]:
    """The turns the conversation's messages made, as ``(session, [client ids])``: a
    ``started`` or ``queued`` message begins one; a ``merged`` one joins the last turn of its
    session (the one waiting there)."""
    groups: list[tuple[str | None, list[str]]] = []
    for client_id, accepted, session in world.accepted[conversation]:
        if accepted.get("duplicate"):
            continue
        outcome = accepted["outcome"]
        if outcome in ("started", "queued"):
            groups.append((session, [client_id]))
        elif outcome == "merged":
            waiting = [g for g in groups if g[0] == session]
            assert waiting, f"{client_id} merged into no turn of {session}"
            waiting[-1][1].append(client_id)
    return groups


async def check(world: World, current: dict[str, str | None]) -> None:
    """The protocol's promises, once every device is back and the runtime idle."""
    rt, gateway = world.rt, world.gateway
    ends = [e for e in gateway.events if e[0] in END_EVENTS]
    starts = collections.Counter(e[2] for e in gateway.events if e[0] == "started")
    grouped: set[str] = set()
    for conversation in world.accepted:
        for session, ids in _groups(world, conversation):
            grouped.update(ids)
            # (a) every accepted message's turn ended exactly once
            found = [e for e in ends if e[2] in ids]
            assert len(found) == 1, (f"(a) the turn of {ids} (session {session}) ended "
                                     f"{len(found)} times: {found}; events {gateway.events}")
    for event in ends:
        assert event[2] in grouped, f"(a) an end of no accepted message: {event}"
    for device in world.devices:
        per_device = collections.Counter(
            f["message_id"] for _, f in device.log
            if f.get("type") == "lifecycle" and f.get("event") in END_EVENTS)
        twice = [i for i, n in per_device.items() if n > 1]
        assert not twice, f"(a) {device.name} was told twice of the end of {twice}"
    # (b) only sessions of the device's own conversation
    owners: dict[str, str] = {}
    for device in world.devices:
        key = gateway.conversation_named(device.conversation).key
        for _, frame in device.log:
            session = frame.get("session_id") if frame.get("type") == "delivery" else None
            if session is None:
                continue
            if session not in owners:
                owners[session] = (await rt.session(session)).conversation_key
            assert owners[session] == key, (f"(b) {device.name} of {key} got a delivery "
                                            f"of {session}, of {owners[session]}: {frame}")
    # (c) the current session whole, and each connection's deliveries in order, once each
    for device in world.devices:
        by_connection: dict[tuple[int, str], list[int]] = collections.defaultdict(list)
        for number, frame in device.log:
            if frame.get("type") == "delivery":
                by_connection[number, frame["session_id"]].append(frame["seq"])
        for (number, session), seqs in by_connection.items():
            assert seqs == sorted(set(seqs)), (f"(c) {device.name}'s connection {number} got "
                                               f"{session}'s seqs {seqs}")
        session = current[device.conversation]
        if session is None:
            continue
        expected = await world.expected(session, await rt.last_seq(session))
        missing = expected - device.seen.get(session, set())
        assert not missing, (f"(c) {device.name} lacks seqs {sorted(missing)} of the "
                             f"current session {session}; it saw {_story(device)}")
    # (d) a resent id never ran twice
    for client_id, accepted in world.resent:
        assert accepted.get("duplicate") is True, f"(d) resent {client_id}: {accepted}"
    twice = [i for i, n in starts.items() if n > 1]
    assert not twice, f"(d) turns of {twice} started twice: {gateway.events}"
    ran = [t for t, n in world.agent.runs.items() if n > 1]
    assert not ran, f"(d) the agent ran messages {ran} twice"
    for conversation, sessions in world.sessions.items():
        said: collections.Counter[str] = collections.Counter()
        for session in sessions:
            for message in await rt.history(session):
                if message.role == "user":
                    said.update(TOKENS.findall(message.text))
        twice = [t for t, n in said.items() if n > 1]
        assert not twice, f"(d) {conversation}'s history has messages {twice} twice"
    assert not world.wrong, "\n".join(world.wrong)
    for device in world.devices:
        unexpected = [c for c in device.closed_by_server if c[1] != 1000]
        assert not unexpected, f"{device.name} was closed by the server: {unexpected}"
