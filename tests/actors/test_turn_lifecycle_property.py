"""Property: however host turns of two sessions interleave (serial, parallel and background;
bodies that complete, fail, cancel themselves with a reason or twice, run into their own
deadline or a host's ``move_on_after``, are cancelled by trio's own ``cancel()`` of their scope
or from outside), once every turn has ended (README "Turns", "Events"):

- every turn that began records exactly one end, after its begin, and the end says what the
  body did: ``turn.completed``; ``turn.failed`` with the error; ``turn.cancelled`` with the
  first recorded reason (``ctx.cancel`` answers False to the second), ``timeout`` for a
  deadline (the turn's own or the host's), ``cancelled`` for a cancel that gave no reason;
- serial turns of one session never overlap and begin in the order they were opened;
- a serial turn's history rows are its own, in the order it sent them, and no other turn's
  rows come between them; parallel and background turns write no history;
- every send that returned a handle is delivered, once, and no row is left queued or sending.

Each example runs its own ``trio.run`` on a fresh database, on a virtual clock.
"""

from __future__ import annotations

import itertools
import pathlib
import tempfile
from typing import Any

import attrs
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidings
from tidings.testing import MemoryRoute

from ..database_template import fresh_database
from ..io_clock import io_clock
from ..real_time import fail_after_real

BODIES = ("complete", "raise", "cancel:steer", "cancel:clear", "cancel:cancel_command",
          "cancel:timeout", "twice", "deadline", "outside", "scope", "external")

OPS = st.lists(st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 1),
              st.sampled_from(("serial", "serial", "parallel", "background")),
              st.sampled_from(BODIES), st.sampled_from((0.0, 0.5, 2.0))),
    st.tuples(st.just("tick"), st.sampled_from((0.0, 0.3, 1.0, 3.0))),
    st.tuples(st.just("cut"))), min_size=1, max_size=14)


class Boom(Exception):
    """What a failing body raises."""


@attrs.define
class Launch:
    """One turn the host opened, and what it saw."""

    index: int
    session_id: str
    mode: str
    body: str
    delay: float
    turn_id: str | None = None
    sends: list[str] = attrs.Factory(list)  # texts whose send returned a handle, in order
    handles: list[Any] = attrs.Factory(list)
    answers: tuple[bool, bool] | None = None  # ctx.cancel's answers of a "twice" body
    scope: trio.CancelScope = attrs.Factory(trio.CancelScope)


def _expected_end(body: str) -> tuple[str, str | None]:
    """The terminal event type and reason the body's ending should be recorded with."""
    if body == "complete":
        return "turn.completed", None
    if body == "raise":
        return "turn.failed", None
    if body.startswith("cancel:"):
        return "turn.cancelled", body.split(":", 1)[1]
    return "turn.cancelled", {"twice": "steer", "deadline": "timeout", "outside": "timeout",
                              "scope": "cancelled", "external": "cancelled"}[body]


async def _send(launch: Launch, ctx: Any, text: str) -> None:
    handle = await ctx.output.send_text(text)
    launch.sends.append(text)
    launch.handles.append(handle)


async def _body(launch: Launch, ctx: Any) -> None:
    body, delay = launch.body, launch.delay
    await _send(launch, ctx, f"{launch.index}:a")
    if body == "complete":
        await trio.sleep(delay)
        await _send(launch, ctx, f"{launch.index}:b")
    elif body == "raise":
        await trio.sleep(delay)
        raise Boom(f"turn {launch.index} failed")
    elif body.startswith("cancel:"):
        await trio.sleep(delay)
        ctx.cancel(body.split(":", 1)[1])
        await trio.sleep_forever()
    elif body == "twice":
        launch.answers = (ctx.cancel("steer"), ctx.cancel("clear"))
        await trio.sleep_forever()
    elif body == "deadline":
        ctx.cancel_scope.deadline = trio.current_time() + delay
        await trio.sleep_forever()
    elif body == "scope":
        await trio.sleep(delay)
        ctx.cancel_scope.cancel()
        await trio.sleep_forever()
    else:  # "outside", "external": until the host's deadline or cancel
        await trio.sleep_forever()


async def _host_turn(rt: Any, launch: Launch) -> None:
    if launch.body == "outside":
        launch.scope.deadline = trio.current_time() + launch.delay + 0.25
    with launch.scope:
        try:
            async with rt.open_turn(launch.session_id, mode=launch.mode) as ctx:
                launch.turn_id = ctx.turn_id
                await _body(launch, ctx)
        except Boom:
            pass


async def _run(ops: list[tuple[Any, ...]], directory: pathlib.Path
               ) -> tuple[list[Launch], dict[str, list[Any]], list[Any], MemoryRoute]:
    db = fresh_database(directory / "state" / "tidings.db")
    workspace = directory / "ws"
    workspace.mkdir()
    launches: list[Launch] = []
    route = MemoryRoute()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db, workspace=workspace) as rt:
            sessions = [await rt.create_session(channel="web") for _ in range(2)]
            for session_id in sessions:
                rt.router.bind(session_id, route)
            async with trio.open_nursery() as nursery:
                for op in ops:
                    if op[0] == "turn":
                        launch = Launch(len(launches), sessions[op[1]], *op[2:])
                        launches.append(launch)
                        nursery.start_soon(_host_turn, rt, launch)
                        await trio.lowlevel.checkpoint()  # opened in this order
                    elif op[0] == "tick":
                        await trio.sleep(op[1])
                    else:  # "cut": the oldest external turn not yet cancelled
                        for launch in launches:
                            if launch.body == "external" and not launch.scope.cancel_called:
                                launch.scope.cancel()
                                break
                await trio.sleep(5)  # every body's own delay has passed
                for launch in launches:
                    if launch.body == "external":
                        launch.scope.cancel()
            outcomes = [await handle.wait() for launch in launches for handle in launch.handles]
            assert set(outcomes) <= {"delivered"}, outcomes
            history = {session_id: await rt.history(session_id) for session_id in sessions}
            for session_id in sessions:
                left = [d for d in await rt.deliveries(session_id=session_id)
                        if d.status in ("queued", "sending")]
                assert not left, left
            feed = rt.events(after_seq=0)
        events = [event async for event in feed]  # the runtime has closed: what is left
    return launches, history, events, route


def _check(launches: list[Launch], history: dict[str, list[Any]], events: list[Any],
           route: MemoryRoute) -> None:
    began: dict[str, int] = {}
    ends: dict[str, list[Any]] = {}
    for event in events:
        turn_id = event.data.get("turn_id") if event.type.startswith("turn.") else None
        if event.type == "turn.started":
            assert turn_id not in began, event
            began[turn_id] = event.seq
        elif turn_id is not None:
            ends.setdefault(turn_id, []).append(event)
    assert set(ends) <= set(began), "a turn ended that never began"
    spans: dict[str, list[tuple[int, int, int]]] = {}
    for launch in launches:
        if launch.turn_id is None:  # cut before it began (waiting for its serial slot)
            assert launch.body in ("outside", "external"), launch
            continue
        assert launch.turn_id in began, launch
        [end] = ends.get(launch.turn_id, [None])
        assert end is not None, launch
        assert end.seq > began[launch.turn_id], (launch, end)
        kind, reason = _expected_end(launch.body)
        assert end.type == kind, (launch, end)
        if reason is not None:
            assert end.data.get("reason") == reason, (launch, end)
        if launch.body == "raise":
            assert "Boom" in end.data.get("error", ""), (launch, end)
        if launch.body == "twice":
            assert launch.answers == (True, False), launch
        if launch.mode == "serial":
            spans.setdefault(launch.session_id, []).append(
                (launch.index, began[launch.turn_id], end.seq))
    for session_id, turns in spans.items():
        by_begin = sorted(turns, key=lambda span: span[1])
        assert [index for index, _, _ in by_begin] == sorted(index for index, _, _ in turns), (
            "serial turns began out of the order they were opened", session_id, by_begin)
        for (_, _, end), (_, begin, _) in itertools.pairwise(by_begin):
            assert end < begin, ("serial turns overlapped", session_id, by_begin)
    by_turn = {launch.turn_id: launch for launch in launches if launch.turn_id}
    for session_id, rows in history.items():
        owners = [row.turn_id for row in rows]
        for turn_id in set(owners):
            launch = by_turn[turn_id]
            assert launch.mode == "serial", (launch, rows)
            assert launch.session_id == session_id, (launch, rows)
            first = owners.index(turn_id)
            mine = rows[first:first + owners.count(turn_id)]
            assert [row.turn_id for row in mine] == [turn_id] * len(mine), (
                "a serial turn's history was interleaved", [r.text for r in rows])
            assert [row.text for row in mine] == launch.sends, (launch, [r.text for r in mine])
    in_history = {row.turn_id for rows in history.values() for row in rows}
    for launch in launches:
        if launch.mode == "serial" and launch.sends:
            assert launch.turn_id in in_history, launch
    sent = [handle.delivery_id for launch in launches for handle in launch.handles]
    delivered = [outbound.delivery_id for outbound in route.delivered]
    assert sorted(delivered) == sorted(sent), "a send was not delivered exactly once"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_turns_record_one_end_that_says_what_their_body_did(ops) -> None:
    with tempfile.TemporaryDirectory() as directory:
        outcome = trio.run(_run, ops, pathlib.Path(directory), clock=io_clock(threshold=0.005))
    _check(*outcome)
