"""A question asked through a turn's context from a task outside the turn (the host's own
nursery: ``_may_ask`` lets it ask while the turn is open) is withdrawn when the turn ends:
the asker gets :class:`RuntimeClosedError`, as a question asked after the end does, and the
route's wait is cancelled (the gateway closes the question ``cancelled``). Before, the
question stayed on the person's screen for a turn that was over, its asker waiting for the
whole expiry (for ever without one): nobody could act on the answer."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import RuntimeClosedError


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
