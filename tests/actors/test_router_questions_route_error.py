"""What a host that asks a route itself (``rt.router.prompt_user`` / ``request_approval``) gets
when the route raises: the route's error, not the turn's ``route_failed`` answer.

README (Routing) said these calls give the "same fail-closed answers" right after saying that
a raising route makes ``ctx.prompt_user`` answer ``PromptAnswer(None, "route_failed")`` and
``ctx.request_approval`` deny with that reason; run, they raised the route's error. The
``route_failed`` net is the turn's (it logs, and takes a cancelled asker's ``Cancelled``
first); the router answers for no route and for expiry only. README and docstrings now say so."""

from __future__ import annotations

import pytest

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer


class _DownRoute:
    async def deliver(self, outbound) -> None:
        pass

    async def prompt_user(self, prompt) -> str:
        raise ConnectionError("the platform is down")

    async def request_approval(self, request) -> bool:
        raise ConnectionError("the platform is down")


async def test_a_raising_route_fails_a_turn_s_question_closed_and_a_host_s_with_its_error(
        rt) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _DownRoute())
    async with rt.open_turn(session_id) as ctx:
        assert await ctx.prompt_user("Colour?") == PromptAnswer(None, "route_failed")
        assert await ctx.request_approval("deploy") == ApprovalDecision(False, "route_failed")
    with pytest.raises(ConnectionError, match="the platform is down"):
        await rt.router.prompt_user(Prompt(session_id, "Colour?", "prompt_1"))
    with pytest.raises(ConnectionError, match="the platform is down"):
        await rt.router.request_approval(ApprovalRequest(session_id, "deploy", "request_1"))
    # without a route, both answer closed, as the turn's questions do
    other = await rt.create_session(channel="web")
    assert await rt.router.prompt_user(Prompt(other, "Colour?", "prompt_2")) == PromptAnswer(
        None, "no_interactive_route")
    assert await rt.router.request_approval(ApprovalRequest(other, "deploy", "request_2")) \
        == ApprovalDecision(False, "no_interactive_route")
