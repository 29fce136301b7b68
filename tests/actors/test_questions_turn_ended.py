"""A question asked through a turn's context from a task outside the turn (the host's own
nursery: ``_may_ask`` lets it ask while the turn is open) is withdrawn when the turn ends:
the asker gets :class:`RuntimeClosedError`, as a question asked after the end does, and the
route's wait is cancelled (the gateway closes the question ``cancelled``). Before, the
question stayed on the person's screen for a turn that was over, its asker waiting for the
whole expiry (for ever without one): nobody could act on the answer."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import RuntimeClosedError
from tidings.testing import MemoryRoute


class WaitingRoute:
    """A route whose questions wait until cancelled (a person who has not answered yet)."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.withdrawn = trio.Event()

    async def deliver(self, outbound) -> None:
        await trio.lowlevel.checkpoint()

    async def _wait(self) -> None:
        self.asked.set()
        try:
            await trio.sleep_forever()
        finally:
            self.withdrawn.set()

    async def prompt_user(self, prompt) -> str:
        await self._wait()
        return "never"

    async def request_approval(self, request) -> str:
        await self._wait()
        return "allow"


@pytest.mark.parametrize("ask", [lambda ctx: ctx.prompt_user("still there?"),
                                 lambda ctx: ctx.request_approval("deploy")],
                         ids=["prompt", "approval"])
async def test_a_question_from_outside_the_turn_is_withdrawn_when_it_ends(rt, ask) -> None:
    session_id = await rt.create_session(channel="web")
    route = WaitingRoute()
    rt.router.bind(session_id, route)
    outcome: list[object] = []

    async def asker(ctx) -> None:
        try:
            outcome.append(await ask(ctx))
        except RuntimeClosedError as exc:
            outcome.append(exc)

    with trio.fail_after(10):  # hang guard: the asker used to wait for ever
        async with trio.open_nursery() as nursery, rt.open_turn(session_id) as ctx:
            nursery.start_soon(asker, ctx)
            await route.asked.wait()
    assert route.withdrawn.is_set()
    [error] = outcome
    assert isinstance(error, RuntimeClosedError), error


@pytest.mark.parametrize("ask", [lambda ctx: ctx.prompt_user("still there?"),
                                 lambda ctx: ctx.request_approval("deploy")],
                         ids=["prompt", "approval"])
async def test_a_turn_asks_nothing_once_the_runtime_has_stopped(db_path, workspace,
                                                                 ask) -> None:
    """README (Errors): RuntimeClosedError for 'a send or question from a turn that has
    ended, or while the runtime stops'. A send was refused, but a question was asked (and
    answered) from a host's turn still open after its runtime stopped."""
    go = trio.Event()
    outcome: list[object] = []

    async def host_turn(rt, session_id, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            task_status.started()
            await go.wait()
            try:
                outcome.append(await ask(ctx))
            except RuntimeClosedError as exc:
                outcome.append(exc)

    with trio.fail_after(30):  # hang guard
        async with trio.open_nursery() as nursery:
            async with tidings.open_runtime(db_path, workspace=workspace) as rt:
                session_id = await rt.create_session(channel="web")
                route = MemoryRoute()
                route.answers.append("yes")
                route.decisions.append("allow")
                rt.router.bind(session_id, route)
                await nursery.start(host_turn, rt, session_id)
            assert rt.closing
            go.set()
    [error] = outcome
    assert isinstance(error, RuntimeClosedError), error
    assert (route.prompts, route.approvals) == ([], [])
