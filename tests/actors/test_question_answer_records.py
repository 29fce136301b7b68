"""What a route answers a question with, as a record of its own: an ``ApprovalDecision`` whose
``allowed`` is no real bool, or a ``PromptAnswer`` whose ``text`` is neither a string nor None.

The router hands a route's ``ApprovalDecision`` (and ``PromptAnswer``) to the agent as it is.
An adapter that builds one from its platform's payload (``ApprovalDecision(payload["ok"])``,
where the payload says ``"false"``, ``"no"`` or ``0``) made a decision that reads allowed to
every ``if decision.allowed:``: the request the person denied went ahead. The records refuse
such a field when they are made, naming it, so the route's call raises and the question fails
closed (``route_failed``, logged), as any route that raises does."""

from __future__ import annotations

import pytest

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer
from tidings.errors import NotABoolError


class _PayloadRoute:
    """Answers an approval with ``ApprovalDecision(<the platform's value>)``."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def deliver(self, outbound) -> None:
        pass

    async def request_approval(self, request) -> ApprovalDecision:
        return ApprovalDecision(self.value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["false", "no", 1, None])
async def test_a_decision_whose_allowed_is_no_bool_is_refused_and_denies(rt, value) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _PayloadRoute(value))
    async with rt.open_turn(session_id) as ctx:
        decision = await ctx.request_approval("deploy")
    assert (decision.allowed, decision.reason) == (False, "route_failed")
    with pytest.raises(NotABoolError) as caught:
        ApprovalDecision(value)  # type: ignore[arg-type]
    assert caught.value.field == "allowed"
    with pytest.raises(NotABoolError):  # a host asking itself gets the route's error
        await rt.router.request_approval(ApprovalRequest(session_id, "deploy", "request_1"))


async def test_a_decision_of_a_real_bool_is_taken_as_it_is(rt) -> None:
    session_id = await rt.create_session(channel="web")
    for value in (True, False):
        rt.router.bind(session_id, _PayloadRoute(value))
        async with rt.open_turn(session_id) as ctx:
            assert await ctx.request_approval("deploy") == ApprovalDecision(value)


class _AnswerRoute:
    """Answers a prompt with ``PromptAnswer(<the platform's value>)``."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def deliver(self, outbound) -> None:
        pass

    async def prompt_user(self, prompt) -> PromptAnswer:
        return PromptAnswer(self.value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [42, b"blue", ["blue"]])
async def test_an_answer_whose_text_is_no_string_is_refused_and_fails_closed(rt, value) -> None:
    """The agent's ``turn.prompt_user`` returns ``str | None``: ``42`` from a platform's JSON
    reached it as it was, and its ``answer.strip()`` failed the turn."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _AnswerRoute(value))
    async with rt.open_turn(session_id) as ctx:
        answer = await ctx.prompt_user("how many?")
    assert (answer.text, answer.reason) == (None, "route_failed")
    with pytest.raises(TypeError, match=r"^text: "):
        PromptAnswer(value)  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # a host asking itself gets the route's error
        await rt.router.prompt_user(Prompt(session_id, "how many?", "prompt_1"))


async def test_an_answer_of_text_or_none_is_taken_as_it_is(rt) -> None:
    session_id = await rt.create_session(channel="web")
    for value in ("3", "", None):
        rt.router.bind(session_id, _AnswerRoute(value))
        async with rt.open_turn(session_id) as ctx:
            assert await ctx.prompt_user("how many?") == PromptAnswer(value)
