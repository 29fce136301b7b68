"""Property: however a turn's questions (``ctx.prompt_user``, ``ctx.request_approval``) meet
their route's answers (an allow, a denial, a platform's ``"false"`` or ``0``, text, ``None``,
an error, a wait that never ends, an error raised when the wait is cancelled), their own
``expires_in``, a missing route and the turn's cancel from another task (README "Routing"):

- each question the turn asked ends in exactly what the first of these says: the turn's cancel
  (the asker gets ``Cancelled``; the turn ends ``cancelled`` with its reason), the expiry
  (``expired``), the route's answer (an approval allows only for ``True``, ``"allow"`` or an
  allowing ``ApprovalDecision``; a prompt's answer is its text, ``None`` and an answer with no
  text are ``declined``, anything else its ``str()``), a route error (``route_failed``), no route
  (``no_interactive_route``);
- the route is asked nothing after the turn's cancel, and each of its waits has ended when the
  turn has;
- the turn records one end: ``completed``, or ``cancelled`` with its reason.

Times are virtual and chosen so no two can tie. Each example runs its own ``trio.run`` on a
fresh database.
"""

from __future__ import annotations

import math
import pathlib
import tempfile
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidings
from tidings.actors import ApprovalDecision, PromptAnswer

from ..database_template import fresh_database
from ..io_clock import io_clock
from ..real_time import fail_after_real

ANSWERS = (True, "allow", False, "deny", 0, "false", None, "yes", 42,
           ApprovalDecision(True), ApprovalDecision(False), ApprovalDecision(False, "nope"),
           PromptAnswer("typed"), PromptAnswer(None), PromptAnswer(None, "busy"))

QUESTION = st.tuples(
    st.sampled_from(("prompt", "approval")),
    st.one_of(st.tuples(st.just("answer"), st.sampled_from(ANSWERS)),
              st.tuples(st.just("raise"), st.none()),
              st.tuples(st.just("hang"), st.none()),
              st.tuples(st.just("raise_on_cancel"), st.none())),
    st.sampled_from((0.0, 1.0, 3.0)),  # the route's delay before it answers or raises
    st.sampled_from((None, 1.5, 4.0)))  # expires_in

TURN = st.tuples(st.lists(QUESTION, min_size=1, max_size=3),
                 st.sampled_from((0.25, 2.25, 6.25, 100.25)),  # when another task cancels it
                 st.booleans())  # whether a route is bound


class Boom(Exception):
    """What a failing route raises."""


@attrs.define
class Asked:
    """One question the route was handed."""

    at: float
    ended: bool = False


class ScriptedRoute:
    """Answers the questions it is asked as the script says, in order."""

    def __init__(self, script: list[tuple[Any, ...]]) -> None:
        self.script = list(script)
        self.asked: list[Asked] = []

    async def deliver(self, outbound: object) -> None:
        await trio.lowlevel.checkpoint()

    async def prompt_user(self, prompt: object) -> object:
        return await self._answer()

    async def request_approval(self, request: object) -> object:
        return await self._answer()

    async def _answer(self) -> object:
        _, (how, value), delay, _ = self.script[len(self.asked)]
        asked = Asked(trio.current_time())
        self.asked.append(asked)
        try:
            if how == "hang":
                await trio.sleep_forever()
            if how == "raise_on_cancel":
                try:
                    await trio.sleep_forever()
                except trio.Cancelled:
                    raise Boom("the platform's own error for a cancelled request") from None
            await trio.sleep(delay)
            if how == "raise":
                raise Boom("the platform refused")
            return value
        finally:
            asked.ended = True


def _expected(kind: str, how: str, value: object, delay: float,
              expires_in: float | None) -> tuple[object, str | None]:
    """What a question the turn's cancel does not cut ends in: (allowed or text, reason)."""
    answers_at = math.inf if how in ("hang", "raise_on_cancel") else delay
    if expires_in is not None and expires_in < answers_at:
        return (False if kind == "approval" else None), "expired"
    if how == "raise":
        return (False if kind == "approval" else None), "route_failed"
    if kind == "approval":
        if value is True or value == "allow":
            return True, None
        if isinstance(value, ApprovalDecision):
            return value.allowed, (value.reason or ("denied" if not value.allowed else None))
        return False, "denied"
    if isinstance(value, PromptAnswer):
        return value.text, (value.reason or ("declined" if value.text is None else None))
    if value is None:
        return None, "declined"
    return str(value), None


async def _run(turn: tuple[Any, ...], directory: pathlib.Path) -> None:
    questions, cancel_at, bound = turn
    db = fresh_database(directory / "state" / "tidings.db")
    workspace = directory / "ws"
    workspace.mkdir()
    route = ScriptedRoute(questions)
    got: list[tuple[float, object]] = []
    cancelled_at: list[float] = []
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            if bound:
                rt.router.bind(session_id, route)
            async with trio.open_nursery() as nursery:
                async with rt.open_turn(session_id) as ctx:
                    async def cancel_later() -> None:
                        await trio.sleep(cancel_at)
                        if ctx.cancel("steer"):
                            cancelled_at.append(trio.current_time())
                    nursery.start_soon(cancel_later)
                    start = trio.current_time()
                    for kind, _, _, expires_in in questions:
                        if kind == "prompt":
                            answer = await ctx.prompt_user("Which one?", expires_in=expires_in)
                            got.append((trio.current_time(), (answer.text, answer.reason)))
                        else:
                            decision = await ctx.request_approval("deploy",
                                                                  expires_in=expires_in)
                            got.append((trio.current_time(),
                                        (decision.allowed, decision.reason)))
                turn_id = ctx.turn_id
                nursery.cancel_scope.cancel()
            feed = rt.events(after_seq=0)
        ends = [event async for event in feed
                if event.type in ("turn.completed", "turn.cancelled", "turn.failed")
                and event.data.get("turn_id") == turn_id]
    _check(turn, route, got, cancelled_at, start, ends)


def _check(turn: tuple[Any, ...], route: ScriptedRoute, got: list[tuple[float, object]],
           cancelled_at: list[float], start: float, ends: list[Any]) -> None:
    questions, _, bound = turn
    cut = cancelled_at[0] if cancelled_at else math.inf
    now = start
    for i, (kind, (how, value), delay, expires_in) in enumerate(questions):
        if now >= cut:  # the turn was cancelled before this question
            assert len(got) == i, (got, questions)
            break
        if not bound:
            expected: tuple[object, str | None] = (
                (False if kind == "approval" else None), "no_interactive_route")
            answered_at = now
        else:
            expected = _expected(kind, how, value, delay, expires_in)
            answers_at = math.inf if how in ("hang", "raise_on_cancel") else delay
            answered_at = now + min(answers_at, math.inf if expires_in is None else expires_in)
        if answered_at >= cut:  # the cancel cut this question: no answer, nothing after it
            assert len(got) == i, (got, questions)
            break
        # (an expiry is unix seconds, made from the wall clock: a fraction of a millisecond off)
        assert got[i][0] == pytest.approx(answered_at, abs=0.01), (i, got, questions)
        assert got[i][1] == expected, (i, got, questions)
        now = got[i][0]
    else:
        assert len(got) == len(questions), (got, questions)
    assert all(asked.at < cut for asked in route.asked), (route.asked, cut)
    assert all(asked.ended for asked in route.asked), route.asked
    [end] = ends
    if cancelled_at:
        assert end.type == "turn.cancelled", end
        assert end.data["reason"] == "steer", end
    else:
        assert end.type == "turn.completed", end


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TURN)
def test_a_turns_questions_end_in_what_came_first(turn) -> None:
    with tempfile.TemporaryDirectory() as directory:
        trio.run(_run, turn, pathlib.Path(directory), clock=io_clock(threshold=0.005))
