"""Property: however plain messages, ``/new``, ``/resume``, ``/clear``, ``/cancel``, stop-button
presses (``cancel_turn``, a press id repeated or not), a stalled platform released later and
one runtime restart interleave over two conversations of a channel, once everything settles:

- no outbox row of the conversations' sessions is left ``queued`` or ``sending``;
- the dispatcher holds no session (``rt.dispatcher.unheld``: a switch's hold was released once);
- every row reaches the platform at most once, and each session's rows in seq order;
- a switch's answer ("Started a new session.", "Resumed session ...") reaches the platform
  after every message or notice of the conversation's other sessions queued before the
  command, unless :data:`SWITCH_ANSWER_WAIT` passed first (virtual time: an autojump clock),
  except those of a session held for a switch that waits for the session switched to (the
  circle :meth:`AnswerOrder.earlier` breaks: ``/new`` then ``/resume`` of the session left);
- a repeated press id returns what its first press returned.

The rows that exist when the runtime restarts, and those recovery writes as it opens, are left
out of the answer-order check: a restarted channel does not know what its predecessor queued,
and a switch's answer does not wait for the rows a hand-back re-queues. A call that the
stalled platform holds (a direct answer waits for it) goes on in the background after five
virtual seconds. Each example runs its own ``trio.run`` on a fresh database.
"""

from __future__ import annotations

import pathlib
import tempfile
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidings
from tidings.actors import Outbound
from tidings.actors._acking import REPLAYABLE_STATUSES
from tidings.channels import ChannelConfig, Inbound
from tidings.channels._answer_order import SWITCH_ANSWER_WAIT

from ..database_template import fresh_database
from ..io_clock import io_clock
from ..real_time import fail_after_real
from .conftest import RecordingChannel

CHATS = ("c1", "c2")
_CONV = st.sampled_from(CHATS)
OPS = st.lists(st.one_of(
    st.tuples(st.just("msg"), _CONV),
    st.tuples(st.just("new"), _CONV),
    st.tuples(st.just("resume"), _CONV, st.integers(0, 3)),
    st.tuples(st.just("clear"), _CONV),
    st.tuples(st.just("cancel"), _CONV),
    st.tuples(st.just("press"), _CONV, st.sampled_from([None, "p1", "p2"])),
    st.tuples(st.just("stall")),
    st.tuples(st.just("release")),
    st.tuples(st.just("tick"), st.sampled_from([0.5, 1.5, 40.0])),
    st.tuples(st.just("restart"))), min_size=1, max_size=12)

SWITCH_ANSWERS = ("Started a new session.", "Resumed session ")


class SlowAgent:
    """Takes a virtual second, then replies ``r:`` and the message's text."""

    async def run(self, turn: Any) -> None:
        await trio.sleep(1)
        await turn.send_chunk("r:" + turn.text)


class LoggingChannel(RecordingChannel):
    """Records every delivery its platform accepted in a log shared across restarts, with the
    trio time it was accepted at."""

    def __init__(self, rt: Any, log: list[tuple[float, Outbound]]) -> None:
        super().__init__(rt, ChannelConfig(name="ops"), agent=SlowAgent())
        self.log = log

    async def deliver(self, outbound: Outbound) -> None:
        await super().deliver(outbound)
        self.log.append((trio.current_time(), outbound))


class World:
    """What one example did and saw."""

    def __init__(self) -> None:
        self.log: list[tuple[float, Outbound]] = []
        self.sessions: dict[str, list[str]] = {chat: [] for chat in CHATS}
        self.switches: list[tuple[float, str, str, set[str]]] = []  # t, chat, answer, earlier
        self.holds: list[tuple[str, str, set[str]]] = []  # session, its answer, sessions awaited
        self.presses: dict[tuple[str, str], str] = {}
        self.before_restart: set[str] = set()
        self.said = 0

    def waiting_for(self, target: str, pending: set[str]) -> set[str]:
        """The sessions held for a switch whose answer is in *pending* that wait, directly or
        through other such sessions, for *target*."""
        waits: dict[str, set[str]] = {}
        for session_id, answer, sessions in self.holds:
            if answer in pending:
                waits.setdefault(session_id, set()).update(sessions)
        found: set[str] = set()
        for held in waits:
            seen: set[str] = set()
            todo = [held]
            while todo:
                for other in waits.get(todo.pop(), set()) - seen:
                    seen.add(other)
                    todo.append(other)
            if target in seen:
                found.add(held)
        return found

    def all_sessions(self) -> set[str]:
        return {s for sessions in self.sessions.values() for s in sessions}


async def _rows(rt: Any, session_id: str, statuses: tuple[str, ...]) -> list[Any]:
    return await rt.stored_deliveries(session_id, statuses=statuses, limit=1000)


async def _note_session(world: World, channel: LoggingChannel, chat: str) -> None:
    conversation = channel.conversation_for(Inbound(chat_id=chat, sender_id="u1", text="x"))
    session_id = await channel.runtime.conversation_session("ops", conversation.key)
    if session_id is not None and session_id not in world.sessions[chat]:
        world.sessions[chat].append(session_id)


async def _switch(world: World, rt: Any, channel: LoggingChannel, chat: str, text: str) -> None:
    earlier: dict[str, str] = {}  # delivery id -> session, of the rows on their way now
    for session_id in world.sessions[chat]:
        for row in await _rows(rt, session_id, ("queued", "sending")):
            if row.outbound.kind in ("message", "notice"):
                earlier[row.outbound.delivery_id] = session_id
    known = {sid: {r.outbound.delivery_id for r in await _rows(rt, sid, ("queued", "sending",
                                                                          "sent", "unknown"))}
             for sid in world.all_sessions()}
    start = trio.current_time()
    assert await channel.say(text, chat_id=chat) == "command"
    await _note_session(world, channel, chat)
    for session_id in world.sessions[chat]:
        for row in await _rows(rt, session_id, ("queued", "sending", "sent", "unknown")):
            if (row.outbound.delivery_id not in known.get(session_id, set())
                    and row.outbound.text.startswith(SWITCH_ANSWERS)):
                # Earlier rows of the session switched to are its lane's own order; those of
                # a session held for a switch that waits for this one are not waited for
                # (a circle: see AnswerOrder.earlier).
                skip = world.waiting_for(session_id, pending=set(earlier))
                others = {d: s for d, s in earlier.items() if s != session_id and s not in skip}
                world.switches.append((start, chat, row.outbound.delivery_id, set(others)))
                world.holds.append((session_id, row.outbound.delivery_id, set(others.values())))


async def _apply(world: World, rt: Any, channel: LoggingChannel, op: tuple[Any, ...]) -> None:
    name = op[0]
    if name in ("msg", "cancel", "clear"):
        chat = op[1]
        world.said += 1
        text = {"msg": f"m{world.said}", "cancel": "/cancel", "clear": "/clear"}[name]
        await channel.say(text, chat_id=chat)
        await _note_session(world, channel, chat)
    elif name == "new":
        await _switch(world, rt, channel, op[1], "/new")
    elif name == "resume":
        sessions = world.sessions[op[1]]
        if sessions:
            target = sessions[op[2] % len(sessions)]
            await _switch(world, rt, channel, op[1], f"/resume {target}")
    elif name == "press":
        chat, press = op[1], op[2]
        outcome = await channel.cancel_turn(chat_id=chat, sender_id="u1", press_id=press)
        if press is not None:
            first = world.presses.setdefault((chat, press), outcome)
            assert outcome == first, (chat, press, first, outcome)
    elif name == "stall":
        channel.platform.stall()
    elif name == "release":
        channel.platform.release()
    elif name == "tick":
        await trio.sleep(op[1])


async def _step(nursery: trio.Nursery, world: World, rt: Any, channel: LoggingChannel,
                op: tuple[Any, ...]) -> None:
    """Apply *op*; a call held by the stalled platform (a direct answer waits for it) goes on
    in the background after a few virtual seconds, as a platform's next update would come."""
    done = trio.Event()

    async def apply() -> None:
        try:
            await _apply(world, rt, channel, op)
        finally:
            done.set()

    nursery.start_soon(apply)
    with trio.move_on_after(5):
        await done.wait()


async def _settled(world: World, rt: Any, channel: LoggingChannel) -> bool:
    await channel.wait_idle()
    for session_id in world.all_sessions():
        if await _rows(rt, session_id, ("queued", "sending")):
            return False
        if rt.dispatcher.unheld(session_id) is not None or not rt.dispatcher.settled(session_id):
            return False
    return True


async def _settle(world: World, rt: Any, channel: LoggingChannel) -> None:
    """Release the platform, then wait (virtual seconds) until nothing is on its way: every
    row ended, no session held (``Dispatcher.unheld``), every lane idle
    (``Dispatcher.settled``). A hold leaked or a row stuck fails here."""
    channel.platform.release()
    for _ in range(int(10 * SWITCH_ANSWER_WAIT)):
        if await _settled(world, rt, channel):
            return
        await trio.sleep(1)
    raise AssertionError(f"not settled after {10 * SWITCH_ANSWER_WAIT} s: {world.log}")


async def _run(ops: list[tuple[Any, ...]], directory: pathlib.Path) -> World:
    world = World()
    db = fresh_database(directory / "state" / "tidings.db")
    workspace = directory / "ws"
    workspace.mkdir()
    restarted = False
    steps = iter(ops)
    with fail_after_real(30):  # a guard against hanging, not a wait
        while True:
            async with tidings.open_runtime(db, workspace=workspace, grace=0.5) as rt:
                channel = LoggingChannel(rt, world.log)
                restart = False
                for session_id in world.all_sessions():  # after a restart: its rows, and
                    # recovery's "not answered" notices (handed back, not queued by the
                    # channel: a switch's answer does not wait for them, left as a finding)
                    world.before_restart |= {r.outbound.delivery_id
                                             for r in await _rows(rt, session_id,
                                                                  REPLAYABLE_STATUSES)}
                async with trio.open_nursery() as nursery:
                    for op in steps:
                        if op[0] == "restart":
                            if restarted:
                                continue
                            restart = restarted = True
                            break
                        await _step(nursery, world, rt, channel, op)
                    if not restart:
                        await _settle(world, rt, channel)
                    channel.platform.release()  # the calls still waiting may end
                if not restart:
                    return world
                for session_id in world.all_sessions():
                    world.before_restart |= {r.outbound.delivery_id
                                             for r in await _rows(rt, session_id,
                                                                  REPLAYABLE_STATUSES)}
                channel.close()


def _check(world: World) -> None:
    ids = [outbound.delivery_id for _, outbound in world.log if outbound.session_id]
    assert len(ids) == len(set(ids)), "a row reached the platform twice"
    seqs: dict[str, int] = {}
    for _, outbound in world.log:
        if outbound.session_id:
            assert outbound.seq > seqs.get(outbound.session_id, 0), outbound
            seqs[outbound.session_id] = outbound.seq
    at = {outbound.delivery_id: (i, t) for i, (t, outbound) in enumerate(world.log)}
    for start, chat, answer, earlier in world.switches:
        if answer not in at:
            continue
        index, when = at[answer]
        if when - start >= SWITCH_ANSWER_WAIT:
            continue
        for delivery_id in earlier - world.before_restart:
            if delivery_id in at:
                assert at[delivery_id][0] < index, (chat, world.log[index][1].text,
                                                    delivery_id, [o.text for _, o in world.log])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_switches_and_stops_keep_every_row_once_in_order(ops) -> None:
    with tempfile.TemporaryDirectory() as directory:
        world = trio.run(_run, ops, pathlib.Path(directory), clock=io_clock(threshold=0.005))
    _check(world)
