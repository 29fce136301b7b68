"""A question whose ``expires_at`` passes while the route asks is ``expired``, also when the
route's platform library ends the request the expiry aborted with an error of its own.

The router cancels the route's ``prompt_user`` / ``request_approval`` at ``expires_at`` (README,
Routing: "the wait is cancelled at the question's expires_at, the answer then expired"). A route
whose library answers that cancel by raising its own error (a client that turns an aborted
request into ``ConnectionError("request aborted")``, as ``ctx``'s questions already allow for
when the asker is cancelled) made the router raise that error instead: a host asking itself
got the platform's error, and a turn's question ``route_failed`` (logged as a failure of the
platform) for what was only a question nobody answered in time."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer


class _AbortingRoute:
    """Waits for an answer that never comes; a cancelled request ends in the platform
    library's own error, as some clients end an aborted request."""

    def __init__(self) -> None:
        self.asked = 0

    async def deliver(self, outbound) -> None:
        pass

    async def _wait(self) -> None:
        self.asked += 1
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            raise ConnectionError("request aborted") from None

    async def prompt_user(self, prompt) -> str:
        await self._wait()
        return "never"

    async def request_approval(self, request) -> bool:
        await self._wait()
        return True


async def test_a_question_past_its_expiry_is_expired_when_the_route_ends_it_with_its_error(
        rt, quick_autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = _AbortingRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(60):  # hang guard (trio's clock jumps)
        soon = rt.store.clock() + 5
        assert await rt.router.prompt_user(Prompt(session_id, "Colour?", "prompt_1",
                                                  expires_at=soon)) \
            == PromptAnswer(None, "expired")
        soon = rt.store.clock() + 5
        assert await rt.router.request_approval(ApprovalRequest(
            session_id, "deploy", "request_1", expires_at=soon)) \
            == ApprovalDecision(False, "expired")
        async with rt.open_turn(session_id) as ctx:
            assert await ctx.prompt_user("Colour?", expires_in=5) \
                == PromptAnswer(None, "expired")
            assert await ctx.request_approval("deploy", expires_in=5) \
                == ApprovalDecision(False, "expired")
    assert route.asked == 4  # each was asked, then expired


async def test_a_route_error_before_the_expiry_is_still_the_route_s_error(
        rt, quick_autojump_clock) -> None:
    """Only an error that ends a wait the expiry cancelled is taken for the expiry."""

    class _Down(_AbortingRoute):
        async def prompt_user(self, prompt) -> str:
            raise ConnectionError("the platform is down")

    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _Down())
    with trio.fail_after(60), pytest.raises(ConnectionError, match="the platform is down"):
        await rt.router.prompt_user(Prompt(session_id, "Colour?", "prompt_1",
                                           expires_at=rt.store.clock() + 5))
