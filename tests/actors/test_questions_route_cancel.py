"""What ``route_failed`` (e31f6aa) must not take: a cancel, or a request to stop.

``ctx.prompt_user`` / ``ctx.request_approval`` fail a question closed when its route raises an
``Exception`` (its platform is down). A ``KeyboardInterrupt`` (or any ``BaseException`` that is
not an ``Exception``) is a request to stop and goes on as it is, and so does a group holding
the turn's ``Cancelled``. A route whose platform library turns the turn's ``Cancelled`` into
an error of its own (a request it aborts, raised as ``ConnectionError``) has not failed to ask:
the turn is cancelled, and the agent gets its ``Cancelled``, not an answer ``route_failed``
(it would go on, with an answer nobody gave, in a turn that is over; and the log would blame
the route).
"""

from __future__ import annotations

import logging

import pytest
import trio

from tidings.testing import MemoryRoute

from .conftest import rows

ASKS = [lambda ctx: ctx.prompt_user("your name?"), lambda ctx: ctx.request_approval("deploy")]
ASK_IDS = ["prompt", "approval"]


class Raising(MemoryRoute):
    """Every question raises *error* (a class, made anew for each question)."""

    def __init__(self, error: type[BaseException]) -> None:
        super().__init__()
        self.error = error

    async def prompt_user(self, prompt):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        raise self.error("stop")

    async def request_approval(self, request):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        raise self.error("stop")


class Stop(BaseException):
    """A host's own request to stop (not an ``Exception``)."""


@pytest.mark.parametrize("ask", ASKS, ids=ASK_IDS)
@pytest.mark.parametrize("error", [KeyboardInterrupt, Stop])
async def test_a_request_to_stop_from_the_route_is_not_route_failed(rt, db_path, caplog, ask,
                                                                    error) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, Raising(error))
    answers: list[object] = []
    with caplog.at_level(logging.WARNING, logger="tidings.turns"), pytest.raises(error):
        async with rt.open_turn(session_id) as ctx:
            answers.append(await ask(ctx))
    assert answers == []
    assert [s for (s,) in rows(db_path, "SELECT status FROM turns")] == ["failed"]
    assert "question_route_failed" not in caplog.text


class AbortsOnCancel(MemoryRoute):
    """Shows the question, then waits for the answer; cancelled, its platform library raises
    its own error for the request it aborts (``group``: a nursery of the route's, whose child
    fails so, beside the ``Cancelled`` of its body)."""

    def __init__(self, group: bool = False) -> None:
        super().__init__()
        self.group = group
        self.asked = trio.Event()

    async def _wait(self) -> None:
        self.asked.set()
        if self.group:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._abort_on_cancel)
                await trio.sleep_forever()
        await self._abort_on_cancel()

    async def _abort_on_cancel(self) -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            raise ConnectionError("request aborted") from None

    async def prompt_user(self, prompt):  # type: ignore[no-untyped-def]
        await self._wait()

    async def request_approval(self, request):  # type: ignore[no-untyped-def]
        await self._wait()


async def _ask_then_cancel(rt, session_id, route, ask, answers) -> None:  # type: ignore[no-untyped-def]
    """Ask in a turn of *session_id*; once *route* shows the question, ``/cancel`` the turn."""
    async with rt.open_turn(session_id) as ctx, trio.open_nursery() as nursery:
        async def cancel_once_asked() -> None:
            await route.asked.wait()
            ctx.cancel("cancel_command")
        nursery.start_soon(cancel_once_asked)
        answers.append(await ask(ctx))


@pytest.mark.parametrize("ask", ASKS, ids=ASK_IDS)
async def test_a_route_that_turns_the_cancel_into_its_error_leaves_the_turn_cancelled(
        rt, db_path, caplog, ask) -> None:
    session_id = await rt.create_session(channel="web")
    route = AbortsOnCancel()
    rt.router.bind(session_id, route)
    answers: list[object] = []
    with caplog.at_level(logging.WARNING, logger="tidings.turns"):
        await _ask_then_cancel(rt, session_id, route, ask, answers)
    assert answers == []  # the agent got its Cancelled, not an answer
    assert rows(db_path, "SELECT status, reason FROM turns") == [
        ("cancelled", "cancel_command")]
    assert "question_route_failed" not in caplog.text


@pytest.mark.parametrize("ask", ASKS, ids=ASK_IDS)
async def test_a_group_with_the_turns_cancel_is_not_route_failed(rt, db_path, caplog,
                                                                 ask) -> None:
    session_id = await rt.create_session(channel="web")
    route = AbortsOnCancel(group=True)
    rt.router.bind(session_id, route)
    answers: list[object] = []
    with caplog.at_level(logging.WARNING, logger="tidings.turns"), \
            pytest.raises(BaseExceptionGroup) as caught:
        await _ask_then_cancel(rt, session_id, route, ask, answers)
    assert answers == []
    # the turn's scope took its Cancelled; the route's error goes on, as trio has it
    assert caught.value.subgroup(ConnectionError) is not None
    assert caught.value.subgroup(trio.Cancelled) is None
    assert "question_route_failed" not in caplog.text
